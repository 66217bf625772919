"""Shared test helpers: paths to the bundled sample and the optional ../shared data."""

from __future__ import annotations

from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
SAMPLE = PROJECT / "datasets" / "sample"
SHARED = PROJECT.parent / "shared"

needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared is not beside this checkout")


def shared_path(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is not available")
    return path
