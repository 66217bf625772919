"""Shared test helpers: paths to the bundled sample and the optional ../shared data."""

from __future__ import annotations

from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
SAMPLE = PROJECT / "datasets" / "sample"
SHARED = PROJECT.parent / "shared"

needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared is not beside this checkout")


def leaderboard_table(result) -> dict[str, dict[str, str]]:
    """The leaderboard's first table from a pytester result: system -> {column: cell}."""
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "researchqa leaderboard" in line)
    headers = [c.strip() for c in lines[start + 1].strip("|").split("|")]
    table = {}
    for line in lines[start + 3 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        table[cells[0]] = dict(zip(headers, cells))
    return table


def shared_path(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is not available")
    return path
