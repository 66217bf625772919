"""How often the matcher accepts genuine quotes and rejects fabricated ones, on real PDFs.

Quotes are generated (seeded) from the papers in ../shared/papers the way
models produce them: genuine windows with copy noise, windows across page
breaks, elided quotes, and fabrications (changed number, inserted negation,
changed word, two passages spliced, shuffled words). Each kind is scored by
this project's matcher and, for comparison, by the matching procedure the
seed paper describes in prose (normalize, then a full / 80-character-prefix /
whitespace-stripped substring test), written here from that description.

    python benchmarks/matcher_accuracy.py [--per-paper 60]
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from quotes import FABRICATIONS, as_a_model_quotes_it, elided, fabricated, noisy, window  # noqa: E402
from test_matcher import _page_crossing_quote  # noqa: E402

from pytest_researchqa.matcher import match_citation  # noqa: E402
from pytest_researchqa.papers import read_paper  # noqa: E402

_FOLD = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'", "\u2013": "-", "\u2014": "-"})


def _described_normalize(text: str) -> str:
    text = unicodedata.normalize("NFKD", text.lower()).translate(_FOLD)
    return " ".join(text.split())


def described_seed_matcher(quote: str, paper_text: str) -> bool:
    """The seed's matcher as its paper describes it (not its code)."""
    paper = _described_normalize(paper_text)
    quote = _described_normalize(quote).strip("\"'.,;:()[] ")
    if quote in paper or quote[:80] in paper:
        return True
    squeeze = lambda t: re.sub(r"\s+", "", re.sub(r"-\s+", "", t))  # noqa: E731
    return squeeze(quote) in squeeze(paper)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-paper", type=int, default=60)
    args = parser.parse_args()
    folder = ROOT.parent / "shared" / "papers"
    if not folder.is_dir():
        print(f"{folder} is not available; nothing to measure")
        return 0
    papers = [read_paper(p, p.stem) for p in sorted(folder.glob("*.pdf"))]
    rng = random.Random(2026)
    kinds: dict[str, list[tuple[str, object]]] = {}
    for paper in papers:
        for _ in range(args.per_paper):
            kinds.setdefault("genuine, copy noise", []).append(
                (noisy(as_a_model_quotes_it(window(paper.text, rng)), rng, 2), paper))
        for _ in range(max(1, args.per_paper // 10)):
            crossing = _page_crossing_quote(paper, rng)
            if crossing:
                kinds.setdefault("genuine, across a page break", []).append((crossing, paper))
            quote = elided(paper.text, rng)
            if quote:
                kinds.setdefault("genuine, with an elision", []).append((quote, paper))
        for kind in FABRICATIONS:
            for _ in range(args.per_paper // 2):
                quote = fabricated(paper.text, rng, kind)
                if quote:
                    kinds.setdefault(f"fabricated, {kind}", []).append((quote, paper))
    print(f"{'kind':34} {'n':>5} {'accepted: ours':>15} {'described seed':>15}")
    for kind, cases in kinds.items():
        ours = sum(match_citation(q, p).grounded for q, p in cases) / len(cases)
        seed = sum(described_seed_matcher(q, p.text) for q, p in cases) / len(cases)
        print(f"{kind:34} {len(cases):5d} {ours:15.1%} {seed:15.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
