"""Money spent on model calls, and the one rule for a price nobody knows: it stays unknown.

A call litellm has no price for costs ``None``, not 0, and any total it enters is ``None`` too, shown
as "—", never "$0" (a local server, an unlisted model). Every total of the plugin is added up here.
"""

from __future__ import annotations

from typing import Iterable, Optional


def add_cost(total: Optional[float], cost: Optional[float]) -> Optional[float]:
    """``total + cost``, unknown when either is."""
    return None if total is None or cost is None else total + cost


def total_cost(costs: Iterable[Optional[float]]) -> Optional[float]:
    """The sum of some calls' costs; unknown when any is, or when there are none."""
    found = list(costs)
    if not found or None in found:
        return None
    return sum(c for c in found if c is not None)


def spend_text(cost: Optional[float]) -> str:
    return "—" if cost is None else f"${cost:.4f}"
