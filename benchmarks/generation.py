"""Generation over real PDFs against the scripted provider: what survives, and what it costs.

Copies the real papers of ../shared/papers (and the bundled sample) into a temporary folder
and runs ``python -m pytest_researchqa generate`` on them through litellm against the local
scripted server (tests/llm_server.py), whose ``gen-mixed`` model quotes each paper's own
pypdf text and mixes in paraphrased, altered and fabricated quotes, with lognormal latency.
Prints, per run:

* wall time of a cold run (PDF extraction, calls, checking) and of a re-run (all replies
  cached: no call; extraction cached; what is left is the plugin's own checking and writing);
* passages checked, verbatim at first, repaired and dropped; rows kept of rows generated;
* a re-check of the written file against each paper as the plugin reads it: the share of
  expected passages found (must be 100%).

    python benchmarks/generation.py [--model gen-mixed] [--median 0.5] [--concurrency 5]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from llm_server import ScriptedLLM  # noqa: E402

from pytest_researchqa.__main__ import main as cli  # noqa: E402
from pytest_researchqa.families.citation.loaders import load_dataset  # noqa: E402
from pytest_researchqa.families.citation.matcher import match_index  # noqa: E402
from pytest_researchqa.families.citation.metrics import check_expected_passages  # noqa: E402
from pytest_researchqa.papers import PaperStore  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="gen-mixed")
    parser.add_argument("--median", type=float, default=0.5, help="median server latency per call, seconds")
    parser.add_argument("--concurrency", type=int, default=5)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="researchqa-generation-"))
    papers = work / "papers"
    papers.mkdir()
    sources = sorted((ROOT.parent / "shared" / "papers").glob("*.pdf")) + sorted((ROOT / "datasets" / "sample"
                                                                                   / "papers").glob("*.pdf"))
    for source in sources:
        shutil.copy(source, papers / source.name)
    out = work / "rows.yaml"
    with ScriptedLLM(latency_s=args.median, latency_sigma=0.6, seed=1) as server:
        argv = ["generate", str(papers), "--model", f"openai/{args.model}", "--out", str(out),
                "--param", f"api_base={server.url}", "--param", "api_key=bench",
                "--concurrency", str(args.concurrency), "--cache-dir", str(work / "cache")]
        timings = []
        for _ in range(2):
            started = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                cli(argv)
            timings.append(time.perf_counter() - started)
        calls = server.calls()
    report = json.loads(out.with_name("rows.report.json").read_text())
    totals = report["totals"]
    dataset = load_dataset(out)
    store = PaperStore(papers, work / "cache")
    found = total = 0
    for row in dataset.rows:
        hits, count = check_expected_passages(row, match_index(store.get(row.paper_id))).counts
        found, total = found + hits, total + count
    print(f"papers: {totals['papers']} ({len(sources) - 3} real PDFs from ../shared/papers, 3 sample PDFs), "
          f"{totals['failed']} failed; model {args.model}, median latency {args.median}s, "
          f"concurrency {args.concurrency}")
    print(f"cold run: {timings[0]:.1f}s wall, {calls} calls; re-run: {timings[1]:.2f}s wall, 0 new calls "
          f"(server saw {calls} in all)")
    print(f"passages: {totals['checked']} checked, {totals['verbatim']} verbatim at first, "
          f"{totals['repaired']} repaired, {totals['dropped']} dropped")
    print(f"rows: {totals['rows_kept']} kept of {totals['rows_generated']} generated")
    print(f"re-check of the written file: {found}/{total} expected passages found "
          f"({100 * found / max(total, 1):.1f}%)")
    shutil.rmtree(work, ignore_errors=True)
    return 0 if found == total else 1


if __name__ == "__main__":
    raise SystemExit(main())
