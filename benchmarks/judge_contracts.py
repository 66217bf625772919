"""How often a real (small) judge model's verdicts are malformed, per judge kind, before and after repair.

Judges the bundled samples through the plugin's own judges (schema, grammar-constrained
JSON mode on a local server, one repair turn) against a running OpenAI-compatible server,
and prints per kind: verdicts asked, malformed at first reply (repaired), malformed after the
repair (judge errors), and the share of judge errors. Start a server first (docs/models.md):

    python -m llama_cpp.server --model SmolLM2-135M-Instruct.Q4_1.gguf --model_alias smollm2 \\
           --host 127.0.0.1 --port 8765 --n_ctx 4096 &
    python benchmarks/judge_contracts.py --api-base http://127.0.0.1:8765/v1 [--rows 6]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from pytest_researchqa.bundled import bundled_path  # noqa: E402
from pytest_researchqa.families.citation.answers import Answer  # noqa: E402
from pytest_researchqa.families.registry import make_judge  # noqa: E402
from pytest_researchqa.families.rubric.judges import answer_with_references  # noqa: E402
from pytest_researchqa.families.rubric.oracle import rubric_oracle  # noqa: E402
from pytest_researchqa.families.rubric.rows import load_queries  # noqa: E402
from pytest_researchqa.llm.cache import AnswerCache  # noqa: E402
from pytest_researchqa.llm.engine import ModelRunner, ProviderError  # noqa: E402
from pytest_researchqa.llm.system import ModelSpec  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api-base", required=True)
    parser.add_argument("--model", default="openai/smollm2")
    parser.add_argument("--rows", type=int, default=6, help="rubric sample rows to judge (each twice)")
    parser.add_argument("--kinds", default="coverage,pairwise,rubric")
    args = parser.parse_args()
    spec = ModelSpec(args.model, {"api_base": args.api_base, "max_tokens": 768})
    runner = ModelRunner(1)
    rows = load_queries(bundled_path("datasets", "rubric-sample", "rubric-sample.yaml")).rows[: args.rows]
    tallies: dict[str, list[int]] = {}
    with tempfile.TemporaryDirectory() as folder:
        cache = AnswerCache(Path(folder))
        for kind in args.kinds.split(","):
            judge = make_judge(kind, spec, runner, cache, timeout_s=600, retries=1)
            asked = repaired = failed = 0
            started = time.monotonic()
            for row in rows:
                full = rubric_oracle(row)
                half = Answer(text=full.text[: len(full.text) // 2], citations=full.citations[:1])
                if kind == "pairwise":
                    subjects = [(row.query, answer_with_references(full), answer_with_references(half))]
                elif kind == "coverage":
                    subjects = [judge.subject(row, full), judge.subject(row, half)]
                else:  # the citation family's anchored 1-5 rubric, on the research query as its question
                    subjects = [(_as_question(row), full), (_as_question(row), half)]
                for subject in subjects:
                    asked += 1
                    try:
                        entry = judge.submit(*subject).result()
                        repaired += bool(entry.get("repaired"))
                    except ProviderError as error:
                        failed += 1
                        print(f"  {kind} {row.row_id}: {str(error)[:160]}", file=sys.stderr)
            tallies[kind] = [asked, repaired, failed]
            print(f"{kind:9} asked {asked:3}  repaired {repaired:3}  malformed after repair {failed:3} "
                  f"({100 * failed / asked:.0f}%)  {time.monotonic() - started:.0f} s", flush=True)
    runner.close()
    asked = sum(t[0] for t in tallies.values())
    failed = sum(t[2] for t in tallies.values())
    print(f"all      asked {asked:3}  malformed after repair {failed} ({100 * failed / max(asked, 1):.1f}%)")
    return 0


def _as_question(row):
    """A research row dressed as a citation row for the anchored rubric judge (what it reads of a row)."""
    from types import SimpleNamespace

    metadata = SimpleNamespace(false_premise=None, required_sections=[], reasoning_chain=None)
    expected = " ".join(item.text for item in row.rubric)
    return SimpleNamespace(row_id=row.row_id, question=row.query, expected_answer=expected, judge_rubric=None,
                           question_type="comprehension", metadata=metadata)


if __name__ == "__main__":
    sys.exit(main())
