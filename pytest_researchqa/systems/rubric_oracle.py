"""Moved to :mod:`pytest_researchqa.families.rubric.oracle`; this path is kept for one release."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    from ..moved_names import moved_name

    return moved_name(__name__, "pytest_researchqa.families.rubric.oracle", name)
