"""Pipelined model calls versus batch barriers, against a local server with lognormal latency.

Runs N rows through the plugin's real path (the citation family's model system -> litellm -> a local
OpenAI-compatible server on 127.0.0.1 whose latency is lognormal, sigma 0.6)
at concurrency C, and prints:

* efficiency = (sum of per-row latencies / C) / wall time: 1.0 means every
  slot was busy all the time; a batch-of-C barrier design scores about 0.55;
* the same workload replayed as batches of C that wait for their slowest row;
* the plugin's own overhead per row: wall time of the whole path minus the
  server's latency, measured over cached re-reads and over fresh calls (``--solo``
  fresh rows one at a time: their median, and their lower quartile, which a
  machine shared with other work inflates less).

    python benchmarks/model_pipeline.py [--rows 100] [--concurrency 5] [--median 0.4] [--solo 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from llm_server import ScriptedLLM  # noqa: E402

from pytest_researchqa.families.citation.loaders import load_dataset  # noqa: E402
from pytest_researchqa.families.citation.model_system import CitedAnswerSystem  # noqa: E402
from pytest_researchqa.families.citation.rows import Row  # noqa: E402
from pytest_researchqa.llm.cache import AnswerCache  # noqa: E402
from pytest_researchqa.llm.engine import ModelRunner  # noqa: E402
from pytest_researchqa.llm.system import ModelSpec  # noqa: E402
from pytest_researchqa.papers import PaperStore  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=5)
    parser.add_argument("--median", type=float, default=0.4, help="median server latency, seconds")
    parser.add_argument("--solo", type=int, default=20, help="fresh rows asked one at a time for the overhead")
    args = parser.parse_args()

    dataset = load_dataset(ROOT / "datasets" / "sample" / "sample.yaml")
    store = PaperStore(ROOT / "datasets" / "sample" / "papers", Path(tempfile.mkdtemp()))
    base = dataset.rows
    rows = [Row.model_validate({**base[i % len(base)].model_dump(), "row_id": f"r{i}",
                                "question": f"{base[i % len(base)].question} (variant {i})"})
            for i in range(args.rows)]
    papers = {r.paper_id: store.get(r.paper_id) for r in rows}
    import litellm  # noqa: F401  -- import once, outside the timings

    with ScriptedLLM(latency_s=args.median, latency_sigma=0.6, seed=7) as server:
        cache_dir = Path(tempfile.mkdtemp())
        runner = ModelRunner(concurrency=args.concurrency)
        spec = ModelSpec("openai/good", {"api_base": server.url, "api_key": "bench"})
        system = CitedAnswerSystem(spec, runner, AnswerCache(cache_dir))
        # Warm-up call (first-call setup in litellm and the HTTP client), not timed.
        warm = Row.model_validate({**rows[0].model_dump(), "row_id": "warm", "question": "warm up?"})
        system.answer(warm, papers[warm.paper_id])

        started = time.perf_counter()
        for row in rows:
            system.prefetch(row, papers[row.paper_id])
        answers = [system.answer(row, papers[row.paper_id]) for row in rows]
        wall = time.perf_counter() - started
        latencies = [a.meta["latency_s"] for a in answers]
        efficiency = (sum(latencies) / args.concurrency) / wall

        # A batch-barrier design on the same latencies: each batch waits for its slowest row.
        batches = [latencies[i : i + args.concurrency] for i in range(0, len(latencies), args.concurrency)]
        barrier_wall = sum(max(batch) for batch in batches)
        barrier_efficiency = (sum(latencies) / args.concurrency) / barrier_wall

        # Overhead per fresh row: each call's time in the plugin minus its time on the wire.
        overheads = []
        for i in range(args.solo):
            row = Row.model_validate({**rows[i % len(rows)].model_dump(), "row_id": f"solo{i}", "question": f"solo {i}?"})
            tick = time.perf_counter()
            answer = system.answer(row, papers[row.paper_id])
            overheads.append(time.perf_counter() - tick - answer.meta["latency_s"])
        # Overhead of a cached row: the whole path with no call at all.
        tick = time.perf_counter()
        for row in rows:
            system.answer(row, papers[row.paper_id])
        cached_per_row = (time.perf_counter() - tick) / len(rows)
        runner.close()

    print(f"{args.rows} rows, concurrency {args.concurrency}, lognormal latency median {args.median}s sigma 0.6")
    print(f"  server calls: {server.calls()} (max in flight {server.max_in_flight})")
    print(f"  pipelined wall {wall:.2f} s; sum of latencies {sum(latencies):.1f} s")
    print(f"  efficiency {efficiency:.3f} (target >= 0.9 {'MET' if efficiency >= 0.9 else 'MISSED'}); "
          f"batch barrier on the same latencies {barrier_efficiency:.3f}")
    print(f"  plugin overhead per fresh row: median {statistics.median(overheads) * 1000:.2f} ms "
          f"(target <= 1 ms {'MET' if statistics.median(overheads) <= 0.001 else 'MISSED'}); "
          f"per cached row {cached_per_row * 1000:.2f} ms")
    print(f"  fresh rows one at a time: {len(overheads)}, lower quartile {statistics.quantiles(overheads, n=4)[0] * 1000:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
