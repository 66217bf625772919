"""The plugin at the seed's scale: every figure a ratio to a reference measured in the same loop.

Generates a synthetic dataset the size of the seed's (6,211 rows over 494 papers of 30-60 KB,
1,999 lookup / 1,999 comprehension / 992 multi-hop / 1,221 adversarial; seeded), with every
expected passage cut verbatim from its paper's text, written twice: grouped by paper and
shuffled. Then runs pytest as a user does, reference and measured command in turn (A B A B),
and prints the median of each pair's ratio beside its goal (docs/performance.md explains each):

* collection only, and a whole oracle run, against bare pytest with as many trivial params;
* a bm25 run against the oracle run, and its peak memory (one process);
* ``-n 2`` against serial, for bm25 and for oracle (beside bare pytest's own ``-n 2``/serial), and the
  CPU of the ``-n 2`` process tree against serial's;
* the ceiling of ``-n 2`` here (``ceiling``): bare pytest whose rows each burn a bm25 row's CPU, ``-n 2``
  against serial: what xdist itself allows on this machine, whatever the plugin does;
* ``-n 2`` against serial for a CPU-bound system of one's own (``busy``: each row burns the ceiling's CPU, then
  answers with the oracle's citations), beside the ceiling: what ``-n 2`` pays once rows cost CPU (bm25's
  rows, about 1 ms each now, no longer do);
* oracle + bm25 in one run against the two single-system runs (CPU);
* the figures of benchmarks/model_pipeline.py, matcher_accuracy.py and startup_cost.py are
  printed by those scripts (``--with-others`` runs them too).

Rows below their bar are reported as xfailed (the default policy), so no run pays pytest's full
failure rendering for them; runs still use ``--tb=no`` so that reference and plugin runs print alike.

    python benchmarks/full_scale.py [--scale 0.1] [--pairs 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
ROWS, PAPERS = 6211, 494
TYPE_MIX = {"lookup": 1999, "comprehension": 1999, "multi_hop": 992, "adversarial": 1221}
SECTIONS = ("Abstract", "Introduction", "Methods", "Results", "Discussion", "Limitations")
DOMAINS = ("biology", "physics", "education", "economics", "medicine", "computer_science", "ecology", "chemistry")
_COMMON = ("the of and in to a with for was were by on that as from at this we these which between than after "
           "all both each more most its their under over during while using across into").split()
BUSY_ROW_S = 0.005  # CPU a bm25 row cost when the issue was written: the ceiling's rows and the busy system's
BASE_ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONHASHSEED": "0"}
BASE_ENV.pop("PYTEST_ADDOPTS", None)


# -- the dataset --------------------------------------------------------------------------------
def _vocabulary(rng: random.Random, size: int = 4000) -> list[str]:
    syllables = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"] + ["qu", "th", "st", "tr"]
    return ["".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(size)]


def _sentence(rng: random.Random, vocabulary: list[str]) -> str:
    words = [rng.choice(_COMMON) if rng.random() < 0.35 else rng.choice(vocabulary)
             for _ in range(rng.randint(10, 26))]
    if rng.random() < 0.3:
        words.insert(rng.randrange(len(words)), f"{rng.randint(2, 999)}.{rng.randint(0, 9)}")
    return words[0].capitalize() + " " + " ".join(words[1:]) + "."


def _paper(rng: random.Random, vocabulary: list[str]) -> tuple[str, dict[str, list[str]]]:
    """A paper of 30-60 KB: sections of sentences (returned too, to cut evidence from)."""
    target = rng.randint(30_000, 60_000)
    sections: dict[str, list[str]] = {name: [] for name in SECTIONS}
    size = 0
    while size < target:
        name = rng.choice(SECTIONS)
        sentence = _sentence(rng, vocabulary)
        sections[name].append(sentence)
        size += len(sentence) + 1
    parts = []
    for name in SECTIONS:
        body = sections[name]
        lines = [" ".join(body[i:i + 5]) for i in range(0, len(body), 5)]  # paragraphs of 5 sentences
        parts.append(name + "\n" + "\n".join(lines))
    return "\n\n".join(parts) + "\n", sections


def _evidence(rng: random.Random, sentences: list[str]) -> str:
    """One or two consecutive sentences of a section, verbatim (they are joined by one space in the text)."""
    if not sentences:
        return ""
    start = rng.randrange(len(sentences))
    take = 2 if rng.random() < 0.4 and start + 1 < len(sentences) and start % 5 != 4 else 1
    return " ".join(sentences[start:start + take])


def write_dataset(folder: Path, scale: float, seed: int = 24) -> dict[str, Path]:
    """papers/<id>.txt and two .jsonl files (grouped by paper, shuffled); returns their paths."""
    rng = random.Random(seed)
    vocabulary = _vocabulary(rng)
    n_papers = max(2, round(PAPERS * scale))
    types = [t for t, n in TYPE_MIX.items() for _ in range(max(1, round(n * scale)))]
    rng.shuffle(types)
    (folder / "papers").mkdir(parents=True, exist_ok=True)
    papers = []
    for number in range(n_papers):
        paper_id = f"paper-{number:04d}"
        text, sections = _paper(rng, vocabulary)
        (folder / "papers" / f"{paper_id}.txt").write_text(text, encoding="utf-8")
        papers.append((paper_id, rng.choice(DOMAINS), {k: v for k, v in sections.items() if v}))
    rows = []
    for number, question_type in enumerate(types):
        paper_id, domain, sections = papers[number * n_papers // len(types)]
        names = rng.sample(sorted(sections), k=2 if question_type == "multi_hop" else 1)
        references = [{"section_label": name,
                       "alternatives": [_evidence(rng, sections[name]) for _ in range(rng.randint(1, 3))]}
                      for name in names]
        first = references[0]["alternatives"][0].split()
        question = "What does the paper say about " + " ".join(first[2:7]) + "?"
        row = {"row_id": f"r{number:05d}", "paper_id": paper_id, "domain": domain, "question_type": question_type,
               "question": question, "expected_answer": " ".join(first[:12]),
               "expected_references": json.dumps(references),
               "metadata_section": names[0]}
        if question_type == "adversarial":
            row["expected_refusal"] = True
            row["metadata_false_premise"] = "The paper reports no such thing."
        if question_type == "multi_hop":
            row["metadata_required_sections"] = names
        rows.append(row)
    grouped = folder / "grouped.jsonl"
    grouped.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    rng.shuffle(rows)
    shuffled = folder / "shuffled.jsonl"
    shuffled.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    bare = folder / "bare"
    bare.mkdir(exist_ok=True)
    (bare / "test_bare.py").write_text(
        "import pytest\n\n\n"
        f"@pytest.mark.parametrize('i', range({len(rows)}))\n"
        "def test_question(i):\n    assert i >= 0\n", encoding="utf-8")
    # Bare pytest with the plugin's quick exit (activation._quick_exit): how much of a ratio is pytest's own exit.
    (bare / "quick_exit.py").write_text("import atexit\nimport gc\n\natexit.register(gc.freeze)\n", encoding="utf-8")
    (bare / "test_busy.py").write_text(  # the ceiling of `-n 2` (see main): a bm25 row's CPU, nothing else
        "import time\n\nimport pytest\n\n\n"
        f"@pytest.mark.parametrize('i', range({len(rows)}))\n"
        f"def test_busy(i):\n    end = time.thread_time() + {BUSY_ROW_S}\n"
        "    while time.thread_time() < end:\n        pass\n", encoding="utf-8")
    (folder / "project").mkdir(exist_ok=True)
    (folder / "project" / "busy_system.py").write_text(  # a CPU-bound system of one's own (the `busy` figure)
        "import time\n\nfrom pytest_researchqa import Answer\n\n\n"
        "def answer(question, paper, *, row):\n"
        "    \"\"\"The oracle's citations, after as much CPU as the ceiling's rows burn.\"\"\"\n"
        f"    end = time.thread_time() + {BUSY_ROW_S}\n"
        "    while time.thread_time() < end:\n        pass\n"
        "    quotes = [section.alternatives[0] for section in row.expected_references]\n"
        "    return Answer(text=' '.join(quotes), citations=quotes)\n", encoding="utf-8")
    return {"grouped": grouped, "shuffled": shuffled, "papers": folder / "papers", "bare": bare,
            "project": folder / "project", "rows": Path(str(len(rows))), "n_papers": Path(str(n_papers))}


# -- running pytest -----------------------------------------------------------------------------
@dataclass
class Run:
    wall: float
    cpu: float
    peak_process_mib: float
    peak_tree_mib: float
    returncode: int
    tail: str


def _tree(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as stream:
                    todo.extend(int(p) for p in stream.read().split())
        except OSError:
            pass
    return found


def _rss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as stream:
            return int(stream.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, IndexError, ValueError):
        return 0.0


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> Run:
    """One pytest run as a process tree: wall, CPU of the whole tree, peak RSS of one process and of the tree."""
    before = os.times()
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd,
                               env=env or BASE_ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    peaks = [0.0, 0.0]

    def sample() -> None:
        while process.poll() is None:
            sizes = [_rss_mib(p) for p in _tree(process.pid)]
            peaks[0], peaks[1] = max(peaks[0], max(sizes, default=0)), max(peaks[1], sum(sizes))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output, _ = process.communicate()
    wall = time.perf_counter() - started
    sampler.join()
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    tail = (output.decode(errors="replace").strip().splitlines() or [""])[-1]
    if process.returncode not in (0, 1):  # 1: rows below their bar fail (see the module docstring)
        print(f"  warning: pytest {' '.join(args[-4:])} exited {process.returncode}: {tail}", flush=True)
    return Run(wall, cpu, peaks[0], peaks[1], process.returncode, tail)


def interleaved(pairs: int, a: tuple, b: tuple) -> tuple[list[Run], list[Run]]:
    """A then B, ``pairs`` times (after one unmeasured warm-up of each)."""
    runs_a, runs_b = interleaved_all(pairs, a, b)
    return runs_a, runs_b


def interleaved_all(rounds: int, *commands: tuple) -> list[list[Run]]:
    """Each command in turn, ``rounds`` times (after one unmeasured warm-up of each)."""
    for command in commands:
        run(*command)
    runs: list[list[Run]] = [[] for _ in commands]
    for _ in range(rounds):
        for each, command in zip(runs, commands):
            each.append(run(*command))
    return runs


def median_ratio(runs_a: list[Run], runs_b: list[Run], what: str = "wall") -> float:
    return statistics.median(getattr(x, what) / max(getattr(y, what), 1e-9) for x, y in zip(runs_a, runs_b))


def med(runs: list[Run], what: str) -> float:
    return statistics.median(getattr(r, what) for r in runs)


# -- the table ----------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the seed's rows and papers")
    parser.add_argument("--pairs", type=int, default=3, help="measured A/B pairs per figure (median quoted)")
    parser.add_argument("--keep", type=Path, help="write the dataset here (and reuse it)")
    parser.add_argument("--only", default="", help="comma-separated figures to run (collect,oracle,bm25,xdist,ceiling,busy,two)")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="researchqa-full-scale-"))
    made = write_dataset(folder, args.scale)
    n_rows, n_papers = int(str(made["rows"])), int(str(made["n_papers"]))
    print(f"synthetic dataset: {n_rows} rows over {n_papers} papers (scale {args.scale}), {folder}")
    print(f"each figure: median of {args.pairs} interleaved pairs (A B A B ...), after one warm-up pair")
    only = set(filter(None, args.only.split(",")))
    project, bare = made["project"], made["bare"]

    def ours(dataset: str, *systems: str, extra: tuple[str, ...] = ()) -> tuple:
        options = ["-q", "--tb=no", "-p", "no:randomly", "--researchqa-run",
                   "--researchqa-dataset", str(made[dataset]), "--researchqa-papers", str(made["papers"]),
                   "--researchqa-results", str(folder / "runs"), "--researchqa-cache-dir", str(folder / "cache")]
        for system in systems:
            options += ["--researchqa-system", system]
        return ([*options, *extra], project)

    def plain(*extra: str, tests: str = "test_bare.py") -> tuple:
        return (["-q", "--tb=no", "-p", "no:randomly", "-p", "no:researchqa", *extra, tests], bare)

    def plain_quick_exit(*extra: str) -> tuple:
        return ([*plain(*extra)[0][:-1], "-p", "quick_exit", "test_bare.py"], bare,
                {**BASE_ENV, "PYTHONPATH": str(bare)})

    lines: list[str] = []

    def report(measure: str, reference: str, value: str, goal: str, met: Optional[bool]) -> None:
        verdict = "" if met is None else "MET" if met else "not met"  # None: a reference, no goal of its own
        line = f"{measure:<38} {reference:<34} {value:<30} {goal:<26} {verdict}"
        lines.append(line)
        print(line, flush=True)

    print(f"{'measure':<38} {'reference':<34} {'now':<30} {'goal':<26}")
    def against_bare(measure: str, *extra: str) -> None:
        """Ours against bare pytest, and (indented, no goal) against bare pytest exiting as the plugin does."""
        a, b, c = interleaved_all(args.pairs, ours("shuffled", "oracle", extra=extra), plain(*extra),
                                  plain_quick_exit(*extra))
        ratio = median_ratio(a, b)
        per_row = (med(a, "wall") - med(b, "wall")) / n_rows * 1000
        report(measure, f"bare pytest {med(b, 'wall'):.2f} s", f"{ratio:.2f}x (+{per_row:.3f} ms/row)",
               "<= 1.5x", ratio <= 1.5)
        print(f"{'  (against bare with the quick exit)':<38} {'bare pytest ' + format(med(c, 'wall'), '.2f') + ' s':<34} "
              f"{median_ratio(a, c):.2f}x", flush=True)

    if not only or "collect" in only:
        against_bare("collection only", "--collect-only")
    if not only or "oracle" in only:
        against_bare("full run, oracle, serial")
    if not only or "bm25" in only:
        for order in ("shuffled", "grouped"):
            a, b = interleaved(args.pairs, ours(order, "bm25"), ours(order, "oracle"))
            ratio, peak = median_ratio(a, b), max(r.peak_process_mib for r in a)
            report(f"full run, bm25, serial ({order})", f"oracle run {med(b, 'wall'):.2f} s",
                   f"{ratio:.2f}x, peak {peak:.0f} MiB", "<= 2x; peak <= 300 MiB", ratio <= 2 and peak <= 300)
    if not only or "xdist" in only:
        a, b = interleaved(args.pairs, ours("shuffled", "bm25", extra=("-n", "2")), ours("shuffled", "bm25"))
        speedup = 1 / median_ratio(a, b)
        tree = statistics.median(x.peak_tree_mib / max(y.peak_process_mib, 1e-9) for x, y in zip(a, b))
        report("-n 2 vs serial, bm25", f"serial {med(b, 'wall'):.2f} s",
               f"{speedup:.2f}x faster, tree {tree:.2f}x", ">= 1.5x faster; tree <= 1.2x",
               speedup >= 1.5 and tree <= 1.2)
        print(f"{'  (CPU of the -n 2 tree / serial)':<38} {'serial ' + format(med(b, 'cpu'), '.2f') + ' s CPU':<34} "
              f"{median_ratio(a, b, 'cpu'):.2f}x", flush=True)
        a, b = interleaved(args.pairs, ours("shuffled", "oracle", extra=("-n", "2")), ours("shuffled", "oracle"))
        c, d = interleaved(args.pairs, plain("-n", "2"), plain())
        ours_ratio, bare_ratio = median_ratio(a, b), median_ratio(c, d)
        report("-n 2 vs serial, oracle", f"bare's -n 2/serial {bare_ratio:.2f}x", f"{ours_ratio:.2f}x",
               "no worse than bare's", ours_ratio <= bare_ratio * 1.05)
    ceiling: Optional[float] = None
    if not only or "ceiling" in only or "busy" in only:
        # What xdist itself allows on this machine: bare pytest, each row BUSY_ROW_S of CPU and nothing else.
        a, b = interleaved(args.pairs, plain("-n", "2", tests="test_busy.py"), plain(tests="test_busy.py"))
        ceiling = 1 / median_ratio(a, b)
        report(f"ceiling: bare -n 2, {BUSY_ROW_S * 1000:.0f} ms CPU rows", f"bare serial {med(b, 'wall'):.2f} s",
               f"{ceiling:.2f}x faster, CPU {median_ratio(a, b, 'cpu'):.2f}x", "(what -n 2 can reach)", None)
    if not only or "busy" in only:
        # A CPU-bound system of one's own (busy_system.py: the ceiling's CPU a row, then the oracle's citations),
        # -n 2 against serial: what -n 2 pays for a system whose rows cost what bm25's once did.
        busy = "--researchqa-system=busy_system:answer"
        env = {**BASE_ENV, "PYTHONPATH": str(project)}
        a, b = interleaved(args.pairs, ([*ours("shuffled", extra=("-n", "2"))[0], busy], project, env),
                           ([*ours("shuffled")[0], busy], project, env))
        speedup = 1 / median_ratio(a, b)
        report(f"-n 2 vs serial, {BUSY_ROW_S * 1000:.0f} ms CPU system", f"serial {med(b, 'wall'):.2f} s",
               f"{speedup:.2f}x faster" + (f", {speedup / ceiling:.2f} of bare's" if ceiling else ""),
               ">= 1.5x faster", speedup >= 1.5)
    if not only or "two" in only:
        both, single_b = interleaved(args.pairs, ours("shuffled", "oracle", "bm25"), ours("shuffled", "bm25"))
        single_o = [run(*ours("shuffled", "oracle")) for _ in range(args.pairs)]
        ratio = statistics.median(x.cpu / (y.cpu + z.cpu) for x, y, z in zip(both, single_b, single_o))
        report("two systems in one run (CPU)", f"sum of singles {med(single_b, 'cpu') + med(single_o, 'cpu'):.1f} s",
               f"{ratio:.2f}x", "<= 1.1x", ratio <= 1.1)
    print("matcher, plugin overhead per model row, start-up: benchmarks/matcher_accuracy.py, "
          "benchmarks/model_pipeline.py, benchmarks/startup_cost.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
