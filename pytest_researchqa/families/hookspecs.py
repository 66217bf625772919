"""Moved to :mod:`pytest_researchqa.hookspecs`: adding the family hook at pytest's start-up no longer
loads the families' declarations. Kept for one release (``moved_names``)."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    from ..moved_names import moved_name

    return moved_name(__name__, "pytest_researchqa.hookspecs", name)
