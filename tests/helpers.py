"""Shared test helpers: paths to the bundled sample and the optional ../shared data."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_researchqa.families.citation import CITATION

METRIC_LABELS = frozenset(m.label for m in CITATION.metrics)

PROJECT = Path(__file__).resolve().parent.parent
SAMPLE = PROJECT / "datasets" / "sample"
SHARED = PROJECT.parent / "shared"

needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared is not beside this checkout")


def leaderboard_table(result, intervals: bool = False) -> dict[str, dict[str, str]]:
    """The leaderboard's first table from a pytester result: system -> {column: cell}.

    Metric cells are means only ("0.812"), unless ``intervals``: then as printed ("0.812 ±0.031").
    """
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "researchqa leaderboard" in line)
    headers = [c.strip() for c in lines[start + 1].strip("|").split("|")]
    table = {}
    for line in lines[start + 3 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        row = dict(zip(headers, cells))
        if not intervals:
            row = {h: c.split(" ±")[0].split(" [")[0] if h in METRIC_LABELS else c for h, c in row.items()}
        table[cells[0]] = row
    return table


def shared_path(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is not available")
    return path
