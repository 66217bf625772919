"""A load run killed with SIGKILL half-way, then re-run: nothing lost, nothing asked twice, no row errors.

    python benchmarks/load_resume.py              # 20,000 rows, 5% faults, -n 2, kill at 50%
    python benchmarks/load_resume.py --rows 400   # scaled down (tests/test_llm.py runs this size)

It writes a synthetic dataset (benchmarks/full_scale.py's ``write_dataset``), starts the scripted
local OpenAI-compatible server of tests/llm_server.py with a share of prompts that fault on their
first attempt (a 429 or a 500, chosen by the prompt's hash), and runs ``python -m pytest -n 2
--researchqa-model=openai/good ...`` from a fresh folder as a user would. When about half the
answers are in the answer cache it kills pytest's whole process group with SIGKILL, re-runs the
same command, and checks: every question asked of the server at most once successfully (none
already answered asked again), every dataset row in run 2's saved run, no row errors. Exit 1 if
any of these fails. It also counts the claims the killed run held (calls in flight): run 2 must not
wait on them.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

from full_scale import ROWS, write_dataset  # noqa: E402
from llm_server import ScriptedLLM, is_repair, prompt_of  # noqa: E402

MODEL = "openai/good"


@dataclass
class Figures:
    rows: int
    answers_before_kill: int
    claims_at_kill: int
    calls_run1: int
    calls_run2: int
    asked_twice: int
    in_flight: int
    most_in_flight: int
    most_in_flight_run1: int
    rows_lost: int
    row_errors: int
    wall_run1_s: float
    wall_run2_s: float
    returncode_run2: int
    tail: str

    @property
    def ok(self) -> bool:
        return self.asked_twice == 0 and self.rows_lost == 0 and self.row_errors == 0 and self.answers_before_kill > 0

    def report(self) -> str:
        return "\n".join([
            f"rows                         {self.rows:,}",
            f"answers on disk at the kill  {self.answers_before_kill:,}",
            f"claims held at the kill      {self.claims_at_kill} (calls in flight, locks their owners took down)",
            f"calls, run 1 (killed)        {self.calls_run1:,}",
            f"calls, run 2 (re-run)        {self.calls_run2:,}",
            f"answers asked twice          {self.asked_twice}",
            f"answered at the kill, unsaved {self.in_flight} (asked again by run 2)",
            f"most calls in flight at once {self.most_in_flight} (run 1: {self.most_in_flight_run1})",
            f"rows lost                    {self.rows_lost}",
            f"row errors                   {self.row_errors}",
            f"wall, run 1 to the kill      {self.wall_run1_s:.1f} s",
            f"wall, run 2                  {self.wall_run2_s:.1f} s",
            "invariants                   " + ("hold" if self.ok else "FAIL")])


def _answered(requests: list[dict]) -> collections.Counter:
    """How many times each prompt got a good answer (faulted first attempts and repair turns aside)."""
    return collections.Counter(prompt_of(body) for body in requests if body.get("_status") == 200 and not is_repair(body))


def _question(prompt: str) -> str:
    return prompt.rsplit("QUESTION:", 1)[-1].strip()


def _by_question(requests: list[dict]) -> collections.Counter:
    """Good answers per question asked (as the answers on disk and the dataset's rows are counted)."""
    counts: collections.Counter = collections.Counter()
    for prompt, times in _answered(requests).items():
        counts[_question(prompt)] += times
    return counts


def held_claims(claims_file: Path) -> int:
    """Claims held now on a cache folder's claims file: the file's record locks the kernel lists in
    /proc/locks ("1: POSIX  ADVISORY  WRITE <pid> <major>:<minor>:<inode> <start> <end>"); 0 where
    there is no such list (not Linux) or no such file yet."""
    try:
        inode = claims_file.stat().st_ino
        table = Path("/proc/locks").read_text()
    except OSError:
        return 0
    held = 0
    for line in table.splitlines():
        fields = line.split()
        if "->" not in fields and len(fields) >= 6 and fields[1] == "POSIX" and fields[5].endswith(f":{inode}"):
            held += 1
    return held


def measure(rows: int = ROWS, fault_rate: float = 0.05, workers: int = 2, kill_at: float = 0.5,
            folder: Path | None = None, latency_s: float = 0.0, timeout_s: float = 7200,
            extra: list[str] | None = None, rerun_workers: int | None = None) -> Figures:
    """``rerun_workers``: the re-run's ``-n`` (default: ``workers``, the same command again; 0 runs it without
    xdist, one interpreter: what the resume reads is on disk, whichever process layout reads it)."""
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(folder or scratch)
        made = write_dataset(base / "data", rows / ROWS)
        total = int(str(made["rows"]))
        work = base / "project"
        work.mkdir(parents=True, exist_ok=True)
        answers = work / "cache" / "answers"
        with ScriptedLLM(latency_s=latency_s, fault_rate=fault_rate) as server:
            args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-q",
                    f"--researchqa-model={MODEL}",
                    f"--researchqa-model-param={MODEL}:api_base={server.url}",
                    f"--researchqa-model-param={MODEL}:api_key=t",
                    f"--researchqa-dataset={made['shuffled']}", f"--researchqa-papers={made['papers']}",
                    f"--researchqa-cache-dir={work / 'cache'}", "--researchqa-save=load", *(extra or [])]
            env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
            start = time.monotonic()
            log = (base / "run1.log").open("w")
            first = subprocess.Popen([*args, "-n", str(workers)], cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
            while first.poll() is None and time.monotonic() - start < timeout_s:
                if answers.exists() and sum(1 for _ in answers.rglob("*.json")) >= total * kill_at:
                    break
                time.sleep(0.05)
            # A call in flight holds a claim: a lock on one byte of answers/claims.lock, counted just before
            # the kill; the kernel drops the locks with their owners (llm/cache.py).
            claims = held_claims(answers / "claims.lock")
            if first.poll() is None:
                os.killpg(first.pid, signal.SIGKILL)
            first.wait()
            log.close()
            wall1 = time.monotonic() - start
            # One file a row's answer (rows asking the same question of a paper each have theirs).
            on_disk = collections.Counter(json.loads(f.read_text())["question"].strip() for f in answers.rglob("*.json"))
            kept = sum(on_disk.values())
            calls1, most_in_flight_run1 = len(server.requests), server.max_in_flight
            start = time.monotonic()
            rerun = workers if rerun_workers is None else rerun_workers
            second = subprocess.run([*args, "-n", str(rerun)], cwd=work, env=env, capture_output=True, text=True, timeout=timeout_s)
            wall2 = time.monotonic() - start
            requests = list(server.requests)
        # Paid twice: run 2 asking a question more often than the rows asking it that had no answer on disk
        # (the synthetic dataset asks a few questions of several rows). Answered in run 1 but not yet on disk
        # at the kill ("in flight"): asking those again is the resume.
        rows_asking = collections.Counter(json.loads(line)["question"].strip()
                                          for line in Path(made["shuffled"]).read_text().splitlines() if line.strip())
        run1, run2 = _by_question(requests[:calls1]), _by_question(requests[calls1:])
        asked_twice = sum(max(0, run2[q] - (rows_asking[q] - on_disk[q])) for q in run2)
        in_flight = sum(max(0, run1[q] - on_disk[q]) for q in run1)
        runs = sorted((work / ".researchqa" / "runs").glob("*-load"))
        saved = [json.loads(line) for line in (runs[-1] / "rows.jsonl").read_text().splitlines()] if runs else []
        dataset_ids = {json.loads(line)["row_id"] for line in Path(made["shuffled"]).read_text().splitlines()
                       if line.strip()}
        saved_ids = {r["row_id"] for r in saved if r.get("system") == MODEL}
        errors = sum(1 for r in saved if r.get("error"))
        return Figures(total, kept, claims, calls1, len(requests) - calls1, asked_twice, in_flight, server.max_in_flight,
                       most_in_flight_run1, len(dataset_ids - saved_ids), errors,
                       wall1, wall2, second.returncode, (second.stdout + second.stderr)[-2000:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20000, help="dataset rows (default 20,000)")
    parser.add_argument("--fault-rate", type=float, default=0.05)
    parser.add_argument("--kill-at", type=float, default=0.5, help="share of answers on disk at the kill")
    parser.add_argument("-n", "--workers", type=int, default=2)
    parser.add_argument("--folder", type=Path, help="keep the data, project and runs here (default: a temp folder)")
    options = parser.parse_args()
    figures = measure(options.rows, options.fault_rate, options.workers, options.kill_at, options.folder)
    print(f"load_resume: {options.rows:,} rows asked, {options.fault_rate:.0%} faults, -n {options.workers}, "
          f"SIGKILL at {options.kill_at:.0%}")
    print(figures.report())
    if not figures.ok:
        print(figures.tail)
    return 0 if figures.ok else 1


if __name__ == "__main__":
    sys.exit(main())
