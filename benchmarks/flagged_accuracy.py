"""How well a reader of answers to false-premise questions agrees with people: premise_flagged measured.

Reads the hand-labelled answers of datasets/premise/flagged-labels.jsonl (its README says how they
were labelled) and asks a reader, for each, whether the answer refuses or corrects the question's
false premise: by default the plugin's own heuristic (premise_flagged's reading of the text), with
--judge the premise judge of --researchqa-flagged-judge (judges/premise.md) on that model. Prints,
per split (development, held out, all), the accuracy and the confusion counts (rows: the people;
columns: the reader); a judge's errors (no verdict after its retries) count as wrong and are listed.

    python benchmarks/flagged_accuracy.py                        # the heuristic
    python benchmarks/flagged_accuracy.py --show-misses          # ... and every answer it misreads
    python benchmarks/flagged_accuracy.py --judge openai/smollm2 \\
        --model-param openai/smollm2:api_base=http://127.0.0.1:8080/v1   # a model, through the plugin's judge

Verdicts are cached (--cache-dir, default the plugin's cache folder), so a second run of the same
judge costs nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Callable, Optional

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from pytest_researchqa.families.citation import metrics  # noqa: E402
from pytest_researchqa.families.citation.answers import Answer  # noqa: E402
from pytest_researchqa.families.citation.rows import Row  # noqa: E402

LABELS = Path(__file__).resolve().parent.parent / "datasets" / "premise" / "flagged-labels.jsonl"
SPLITS = ("development", "held-out")


def load_labels(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def as_row(label: dict) -> Row:
    """The label as the false-premise row premise_flagged grades."""
    return Row(row_id=label["id"], paper_id="p", question_type="adversarial", question=label["question"],
               expected_references=[], expected_refusal=True, metadata={"false_premise": label["false_premise"]})


def heuristic(label: dict) -> Optional[bool]:
    return metrics.premise_flagged(as_row(label), Answer(label["answer"], [])) == 1.0


def tally(labels: list[dict], verdicts: dict[str, Optional[bool]]) -> dict:
    """Accuracy and confusion counts of one set of labels (a verdict of None is an error: wrong)."""
    counts = {"flagged_as_flagged": 0, "flagged_as_not": 0, "not_as_flagged": 0, "not_as_not": 0, "errors": 0}
    for label in labels:
        said = verdicts[label["id"]]
        human = label["human"] == "flagged"
        if said is None:
            counts["errors"] += 1
            continue
        counts[("flagged" if human else "not") + ("_as_flagged" if said else "_as_not")] += 1
    right = counts["flagged_as_flagged"] + counts["not_as_not"]
    return {"answers": len(labels), "accuracy": right / len(labels) if labels else None, **counts}


def measure(labels: list[dict], reader: Callable[[dict], Optional[bool]]) -> tuple[dict[str, dict], dict]:
    verdicts = {label["id"]: reader(label) for label in labels}
    by_split = {split: tally([x for x in labels if x.get("split") == split], verdicts) for split in SPLITS}
    by_split["all"] = tally(labels, verdicts)
    return by_split, verdicts


def model_reader(args: argparse.Namespace) -> tuple[Callable[[dict], Optional[bool]], dict[str, str]]:
    """The plugin's premise judge on ``args.judge``: a verdict per label (None when it errs), and its reasons."""
    from pytest_researchqa.families.registry import make_judge
    from pytest_researchqa.llm.cache import AnswerCache
    from pytest_researchqa.llm.engine import ModelRunner, ProviderError
    from pytest_researchqa.llm.system import ModelSpec
    from pytest_researchqa.llm_params import call_limits, parse_model_params
    from pytest_researchqa.papers import default_cache_dir

    params = parse_model_params(args.model_param or [], [args.judge])[args.judge]
    spec = ModelSpec(args.judge, params)
    given = frozenset(name for name, value in (("researchqa_concurrency", args.concurrency),
                                               ("researchqa_timeout", args.timeout)) if value is not None)
    slots, timeout_s = call_limits(params, concurrency=args.concurrency or 5, timeout_s=args.timeout or 120.0,
                                   given=given)  # a local server's profile: one call at a time, unless told
    runner = ModelRunner(slots)
    args.runner = runner
    judge = make_judge("premise", spec, runner, AnswerCache(args.cache_dir or default_cache_dir()),
                       timeout_s=timeout_s, retries=args.retries)
    reasons: dict[str, str] = {}
    futures = {}

    def read(label: dict) -> Optional[bool]:
        if not futures:  # every call in flight at once, bounded by the runner's slots
            for each in args.labels_list:
                futures[each["id"]] = judge.submit(*judge.subject(as_row(each), Answer(each["answer"], [])))
        try:
            scores = futures[label["id"]].result()["scores"]
        except ProviderError as error:
            reasons[label["id"]] = f"error: {error}"
            return None
        reasons[label["id"]] = scores.get("reason", "")
        return bool(scores["flagged"])

    return read, reasons


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=Path, default=LABELS, help="the labelled answers (JSONL)")
    parser.add_argument("--judge", help="a litellm model as the reader (default: the heuristic)")
    parser.add_argument("--model-param", action="append", help="MODEL:KEY=VALUE, as --researchqa-model-param")
    parser.add_argument("--cache-dir", type=Path, help="the verdict cache (default: the plugin's)")
    parser.add_argument("--concurrency", type=int, help="calls in flight (default 5; 1 for a local server)")
    parser.add_argument("--timeout", type=float, help="seconds per call (default 120; 900 for a local server)")
    parser.add_argument("--retries", type=int, default=3)
    parser.add_argument("--show-misses", action="store_true", help="print every answer the reader misreads")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    args.labels_list = load_labels(args.labels)
    reasons: dict[str, str] = {}
    args.runner = None
    if args.judge:
        reader, reasons = model_reader(args)
    else:
        reader = heuristic
    try:
        figures, verdicts = measure(args.labels_list, reader)
    finally:
        if args.runner is not None:
            args.runner.close()
    name = args.judge or "heuristic"
    if args.json:
        print(json.dumps({"reader": name, "splits": figures}, indent=2))
    else:
        print(f"reader: {name}")
        print("| set | answers | accuracy | flagged as flagged | flagged as not | not as flagged | not as not | errors |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for split, f in figures.items():
            accuracy = "—" if f["accuracy"] is None else f"{100 * f['accuracy']:.1f}%"
            print(f"| {split} | {f['answers']} | {accuracy} | {f['flagged_as_flagged']} | {f['flagged_as_not']} | "
                  f"{f['not_as_flagged']} | {f['not_as_not']} | {f['errors']} |")
    if args.show_misses:
        for label in args.labels_list:
            said = verdicts[label["id"]]
            if said is None or said != (label["human"] == "flagged"):
                why = f"  [{reasons[label['id']]}]" if label["id"] in reasons else ""
                print(f"{label['id']} ({label['human']}, {label['kind']}): {label['answer']}{why}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
