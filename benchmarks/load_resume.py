"""A model run at load, killed with SIGKILL halfway, run again: nothing lost, nothing paid twice.

Writes a synthetic dataset (benchmarks/full_scale.py's generator: papers as text, evidence cut
verbatim), starts the scripted OpenAI-compatible server of tests/llm_server.py on 127.0.0.1 with
the ``flaky-5`` model (a 500 on the first attempt of one prompt in twenty), and runs, from a fresh
folder exactly as a user would:

    python -m pytest -n 2 --researchqa-model=openai/flaky-5 --researchqa-dataset=... --researchqa-save=load

It kills the whole process group with SIGKILL once about half the answers are on disk (counted
in the answer cache), runs the same command again, and prints:

* rows; answers on disk at the kill; requests and distinct questions each run sent;
* questions asked again by the second run although their answer was on disk (must be 0);
* rows missing from the second run's saved run (must be 0) and rows in error (must be 0);
* wall time of each run.

Exits 1 when an invariant fails.

    python benchmarks/load_resume.py [--rows 20000] [--kill-at 0.5] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from full_scale import ROWS, write_dataset  # noqa: E402
from llm_server import ScriptedLLM  # noqa: E402

MODEL = "openai/flaky-5"


def command(url: str, dataset: Path, cache: Path) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
            f"--researchqa-model={MODEL}", f"--researchqa-model-param={MODEL}:api_base={url}",
            f"--researchqa-model-param={MODEL}:api_key=load", f"--researchqa-dataset={dataset}",
            f"--researchqa-cache-dir={cache}", "--researchqa-save=load"]


def answers_on_disk(cache: Path) -> int:
    folder = cache / "answers"
    return sum(1 for _ in folder.rglob("*.json")) if folder.is_dir() else 0


def saved_rows(project: Path) -> list[dict]:
    runs = sorted((project / ".researchqa" / "runs").glob("*-load"))
    rows_file = runs[-1] / "rows.jsonl" if runs else None
    if rows_file is None or not rows_file.is_file():
        return []
    return [json.loads(line) for line in rows_file.read_text(encoding="utf-8").splitlines() if line.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=20_000, help="rows in the synthetic dataset")
    parser.add_argument("--kill-at", type=float, default=0.5, help="fraction of answers on disk at the kill")
    parser.add_argument("--keep", type=Path, help="work in this folder (default: a temporary one)")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="researchqa-load-"))
    base.mkdir(parents=True, exist_ok=True)
    made = write_dataset(base / "data", args.rows / ROWS)
    project, cache = base / "project", base / "cache"
    # Each row its own question, so "asked again" can be read off the questions the server saw.
    dataset = base / "data" / "unique-questions.jsonl"
    rows_text = made["shuffled"].read_text(encoding="utf-8").splitlines()
    dataset.write_text("".join(json.dumps({**row, "question": f"{row['question']} ({row['row_id']})"}) + "\n"
                               for row in map(json.loads, rows_text)), encoding="utf-8")
    project.mkdir(exist_ok=True)
    rows = int(str(made["rows"]))
    print(f"dataset: {rows} rows over {made['n_papers']} papers, {base}")

    failed = False
    with ScriptedLLM() as server:
        run = command(server.url, dataset, cache)
        started = time.monotonic()
        first = subprocess.Popen(run, cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 start_new_session=True)
        target = int(rows * args.kill_at)
        while first.poll() is None and answers_on_disk(cache) < target:
            time.sleep(0.2)
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        first_wall = time.monotonic() - started
        on_disk = answers_on_disk(cache)
        kept = {json.loads(f.read_text(encoding="utf-8"))["question"] for f in (cache / "answers").rglob("*.json")}
        asked_first = server.questions()
        requests_first = len(server.requests)

        started = time.monotonic()
        second = subprocess.run(run, cwd=project, capture_output=True, text=True)
        second_wall = time.monotonic() - started
        (base / "second-run.txt").write_text(second.stdout + second.stderr, encoding="utf-8")
        asked_second = server.questions()[len(asked_first):]
        requests_second = len(server.requests) - requests_first

    answered_first = set(asked_first)
    # A question whose answer reached the disk before the kill must not be asked again; one that was
    # in flight at the kill is asked again, as it should be.
    repeated = len(set(asked_second) & kept)
    records = saved_rows(project)
    lost = rows - len({r["row_id"] for r in records})
    errors = sum(1 for r in records if r.get("error"))
    print(f"run 1 (killed): {first_wall:.1f} s, {requests_first} requests, {len(answered_first)} distinct "
          f"questions, {on_disk} answers on disk at the kill (target {target})")
    print(f"run 2: {second_wall:.1f} s, {requests_second} requests, exit {second.returncode}")
    print(f"questions answered on disk before the kill and asked again: {repeated}")
    print(f"rows lost: {lost}; rows in error: {errors}")
    if repeated:
        print("FAILED: answers on disk were paid for again")
        failed = True
    if lost or errors:
        print("FAILED: rows lost or in error")
        print(second.stdout[-3000:])
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
