"""The answer cache's own cost per fresh key, as a model row pays it: claim, look (a miss), store, release.

    python benchmarks/answer_cache.py [--keys 400] [--folder DIR]

Prints the median and lower quartile per key of the claim with its look-up and release, of the store
(the entry's atomic write), and of the whole. The folder decides the disk (default: a temporary folder).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pytest_researchqa.llm.cache import AnswerCache, cache_key

# An answer entry of the usual size (about 1 KB of JSON).
ENTRY = {"row_id": "r1", "question": "q" * 80, "model": "openai/good", "prompt_sha": "ab" * 8, "context": "full",
         "latency_s": 0.4, "queue_s": 0.0, "prompt_tokens": 12000, "completion_tokens": 120, "cost_usd": None,
         "attempts": 1, "repaired": False, "answer": "a" * 300, "citations": ["c" * 120] * 3, "refused": False}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=400)
    parser.add_argument("--folder", type=Path, help="where the cache folder is made (default: a temporary folder)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(dir=args.folder))
    cache = AnswerCache(root)
    claiming, storing, whole = [], [], []
    for i in range(args.keys):
        key = cache_key(benchmark=str(root), row=i)
        start = time.perf_counter()
        claim = cache.claim(key)
        assert claim is not None and cache.get(key) is None
        stored = time.perf_counter()
        cache.put(key, ENTRY)
        released = time.perf_counter()
        claim.release()
        end = time.perf_counter()
        claiming.append((stored - start) + (end - released))
        storing.append(released - stored)
        whole.append(end - start)

    def figures(values: list[float]) -> str:
        return (f"median {statistics.median(values) * 1000:.3f} ms, "
                f"lower quartile {statistics.quantiles(values, n=4)[0] * 1000:.3f} ms")

    print(f"answer cache, {args.keys} fresh keys in {root}")
    print(f"  claim, look-up and release: {figures(claiming)}")
    print(f"  store (atomic write):       {figures(storing)}")
    print(f"  whole per key:              {figures(whole)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
