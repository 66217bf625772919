"""Full-scale deterministic grading: 6,211 rows over 494 papers, ~3 citations a row.

Builds a synthetic run shaped like the published benchmark (its question-type
mix, papers of realistic length with page breaks, noisy genuine quotes and
fabrications from tests/quotes.py) and grades it on one core the way the
plugin does: prepare each paper once, match every citation, match citations
to expected sections. Prints wall time, microseconds per citation and peak
memory, against the targets of issue 3.

    python benchmarks/grading_speed.py [--rows 6211] [--papers 494] [--seed 1]
"""

from __future__ import annotations

import argparse
import itertools
import random
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from quotes import FABRICATIONS, as_a_model_quotes_it, fabricated, noisy, window  # noqa: E402

from pytest_researchqa.families.citation.answers import Answer  # noqa: E402
from pytest_researchqa.families.citation.matcher import MatchIndex  # noqa: E402
from pytest_researchqa.families.citation.metrics import citation_accuracy, match_citations, section_report  # noqa: E402
from pytest_researchqa.families.citation.rows import Row  # noqa: E402

MIX = {"lookup": 1999, "comprehension": 1999, "multi_hop": 992, "adversarial": 1221}
FUNCTION_WORDS = "the of and to in a is that for on with as was by were this are be from at an which".split()


def vocabulary(rng: random.Random, size: int = 8000) -> tuple[list[str], list[float]]:
    """Function words plus pseudo-words, with Zipfian weights like running English text."""
    syllables = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"] + ["tion", "ment", "ing", "al", "ic"]
    words = list(FUNCTION_WORDS)
    while len(words) < size:
        words.append("".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))))
    return words, list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(words))))


def synthetic_paper(rng: random.Random, words_and_weights) -> tuple[str, list[int]]:
    """Pseudo-English of realistic length (lognormal around 45k characters) with page furniture."""
    vocabulary_words, cumulative = words_and_weights
    target = int(rng.lognormvariate(10.7, 0.35))
    text, starts = [], []
    length, page = 0, 1
    while length < target:
        lines = [f"Journal of Synthetic Results {2020 + page % 5}"]
        for _ in range(48):
            words = rng.choices(vocabulary_words, cum_weights=cumulative, k=rng.randint(9, 14))
            if rng.random() < 0.2:
                words.insert(rng.randrange(len(words)), f"{rng.randint(1, 999)}.{rng.randint(0, 99)}")
            lines.append(" ".join(words))
        lines.append(str(page))
        body = "\n".join(lines) + "\n"
        starts.append(length)
        text.append(body)
        length += len(body)
        page += 1
    return "".join(text), starts


def build_run(rows: int, papers: int, seed: int):
    rng = random.Random(seed)
    words_and_weights = vocabulary(rng)
    corpus = [synthetic_paper(rng, words_and_weights) for _ in range(papers)]
    kinds = [k for k, n in MIX.items() for _ in range(round(n * rows / 6211))][:rows]
    rng.shuffle(kinds)
    run = []
    for number, kind in enumerate(kinds):
        paper = number * papers // rows  # rows of one paper together, as a run reads them
        text = corpus[paper][0]
        sections = 1 if kind in ("lookup", "comprehension") else (rng.choice([2, 3]) if kind == "multi_hop" else rng.choice([0, 1]))
        references = [
            {"section_label": f"S{s}", "alternatives": [as_a_model_quotes_it(window(text, rng, 30, 60)) for _ in range(2)]}
            for s in range(sections)
        ]
        if kind == "multi_hop" and sections < 2:
            references.append(dict(references[0], section_label="S9"))
        row = Row(row_id=str(number), paper_id=str(paper), question_type=kind, question="q?",
                  expected_references=references)
        citations = []
        for _ in range(3):
            roll = rng.random()
            if roll < 0.45 and references:
                citations.append(noisy(rng.choice(rng.choice(references)["alternatives"]), rng, 1))
            elif roll < 0.8:
                citations.append(noisy(as_a_model_quotes_it(window(text, rng)), rng, 2))
            else:
                citations.append(fabricated(text, rng, rng.choice(FABRICATIONS)) or "An invented sentence of some length.")
        run.append((row, Answer("answer", citations)))
    return corpus, run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=6211)
    parser.add_argument("--papers", type=int, default=494)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    built = time.perf_counter()
    corpus, run = build_run(args.rows, args.papers, args.seed)
    print(f"built {len(run)} rows over {len(corpus)} papers "
          f"(mean paper {statistics.fmean(len(t) for t, _ in corpus) / 1000:.1f}k chars, "
          f"{sum(len(a.citations) for _, a in run)} citations) in {time.perf_counter() - built:.1f} s")

    started = time.perf_counter()
    indexes = [MatchIndex(text, starts) for text, starts in corpus]
    prepared = time.perf_counter()
    per_citation: list[float] = []
    grounded = total = 0
    for row, answer in run:
        index = indexes[int(row.paper_id)]
        for citation in answer.citations:
            tick = time.perf_counter_ns()
            found = index.match(citation)
            per_citation.append((time.perf_counter_ns() - tick) / 1000)
            grounded += found.grounded
            total += 1
        citation_accuracy(match_citations(answer, index))
        section_report(answer.citations, row, index)
    finished = time.perf_counter()

    per_citation.sort()
    median = statistics.median(per_citation)
    p95 = per_citation[int(0.95 * len(per_citation))]
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    grading = finished - prepared
    print(f"papers prepared (normalized, furniture masked): {prepared - started:.2f} s")
    print(f"grading {len(run)} rows (citations + sections):   {grading:.2f} s   target <= 2 s "
          f"{'MET' if grading <= 2 else 'MISSED'}")
    print(f"whole run, preparation included:               {finished - started:.2f} s")
    print(f"per citation: median {median:.1f} us (target <= 20 {'MET' if median <= 20 else 'MISSED'}), "
          f"p95 {p95:.1f} us; grounded {grounded}/{total}")
    print(f"peak RSS {peak_mb:.0f} MB (target <= 500 {'MET' if peak_mb <= 500 else 'MISSED'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
