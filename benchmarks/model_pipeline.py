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
  machine shared with other work inflates less). "The server's latency" there is
  the time the plugin measures around litellm's ``acompletion``: litellm's own work
  inside that call (request set-up, response parsing, pricing) is not counted;
* the reference for that figure, in the same run: each fresh row is paired with a
  bare ``litellm.acompletion`` of the same request (its question changed) on the
  same server and event loop, in turn first and second. Both are timed against
  the server's own time (its sleep and the composing of its reply, recorded per
  request): litellm's own cost per call (with the HTTP round trip), and the whole
  path per fresh row; the whole less litellm's is the plugin's share (it should
  agree with the overhead figure above, which excludes litellm by its definition).

    python benchmarks/model_pipeline.py [--rows 100] [--concurrency 5] [--median 0.4] [--solo 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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


class TimedServer(ScriptedLLM):
    """The scripted server, recording for each request the latency it drew (its sleep) plus the time it took to
    compose its reply (a search of the paper, in this process): the server's own time, which is not litellm's."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.delays: list[float] = []

    def respond(self, body: dict[str, Any]) -> tuple[int, object, float]:
        started = time.perf_counter()
        status, payload, delay = super().respond(body)
        self.delays.append(delay + time.perf_counter() - started)
        return status, payload, delay


def bare_call(runner: ModelRunner, body: dict[str, Any], api_base: str, question: str) -> float:
    """A bare ``litellm.acompletion`` of the request ``body`` (the plugin's, its question changed) on the runner's
    loop: the time around its await."""
    import litellm

    prompt = body["messages"][0]["content"].rsplit("QUESTION:", 1)[0] + f"QUESTION: {question}"
    kwargs = {k: body[k] for k in ("response_format", "max_tokens") if k in body}

    async def call() -> float:
        started = time.perf_counter()
        await litellm.acompletion(model="openai/good", messages=[{"role": "user", "content": prompt}],
                                  api_base=api_base, api_key="bench", timeout=120, num_retries=0, **kwargs)
        return time.perf_counter() - started

    return asyncio.run_coroutine_threadsafe(call(), runner._loop).result()


def quartiles(values: list[float]) -> str:
    return (f"median {statistics.median(values) * 1000:.2f} ms, "
            f"lower quartile {statistics.quantiles(values, n=4)[0] * 1000:.2f} ms")


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

    with TimedServer(latency_s=args.median, latency_sigma=0.6, seed=7) as server:
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

        # Overhead per fresh row: each call's time in the plugin minus its time on the wire; each paired with a
        # bare litellm call of the same request, in turn first and second.
        overheads, wholes, litellm_costs = [], [], []
        for i in range(args.solo):
            row = Row.model_validate({**rows[i % len(rows)].model_dump(), "row_id": f"solo{i}", "question": f"solo {i}?"})
            for turn in (0, 1) if i % 2 == 0 else (1, 0):
                if turn == 0:
                    tick = time.perf_counter()
                    answer = system.answer(row, papers[row.paper_id])
                    wall_row = time.perf_counter() - tick
                    overheads.append(wall_row - answer.meta["latency_s"])
                    wholes.append(wall_row - server.delays[-1])
                    body = server.requests[-1]
                else:
                    if i == 0:  # the first pair's bare call needs the plugin's request to copy
                        continue
                    litellm_costs.append(bare_call(runner, body, server.url, f"bare {i}?") - server.delays[-1])
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
    print(f"  reference, a bare litellm.acompletion of the same request ({len(litellm_costs)}, same server and loop, "
          f"interleaved): litellm's own cost per call (its time minus the server's) {quartiles(litellm_costs)}")
    ours = [statistics.median(wholes) - statistics.median(litellm_costs),
            statistics.quantiles(wholes, n=4)[0] - statistics.quantiles(litellm_costs, n=4)[0]]
    print(f"  whole path per fresh row minus the server's time: {quartiles(wholes)}; "
          f"less litellm's: median {ours[0] * 1000:.2f} ms, lower quartile {ours[1] * 1000:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
