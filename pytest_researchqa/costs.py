"""Money spent on model calls, and the one rule for a price nobody knows: it stays unknown.

A call litellm has no price for costs ``None``, not 0, and any total it enters is ``None`` too, shown
as "—", never "$0" (a local server, an unlisted model). Every total of the plugin is added up with these
(what the rows of a run cost: ``records.answers_cost`` and ``records.verdicts_cost``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, NamedTuple, Optional


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
    if cost is None:
        return "—"
    if 0 < abs(cost) < 0.0001:  # a tiny budget or a cheap call: $0.0000 would read as free
        return f"${cost:.8f}".rstrip("0")
    return f"${cost:.4f}"


# The start of the error of a row that --researchqa-max-cost kept from running.
BUDGET_STOP = "not run: the run's budget"
# The end of a gate's partial reason when the budget cut the run short (no --researchqa-allow-partial excuses it).
BUDGET_SPENT = "because the run's budget (--researchqa-max-cost) was spent"


class Spend(NamedTuple):
    """What some calls cost: the sum of the known prices, how many calls had none, and how many were cut off on
    the wire when the run stopped (the provider may bill them: the sum is then a floor)."""

    usd: float = 0.0
    unpriced_calls: int = 0
    cut_off_calls: int = 0

    def plus(self, other: "Spend") -> "Spend":
        return Spend(self.usd + other.usd, self.unpriced_calls + other.unpriced_calls,
                     self.cut_off_calls + other.cut_off_calls)

    @property
    def known_usd(self) -> Optional[float]:
        """The total, unknown once any call's price is."""
        return None if self.unpriced_calls else self.usd

    def text(self) -> str:
        """As the progress line says it: "—" when no call had a price, the priced calls' sum and how many had
        none when some did (a local model beside a priced judge: what the budget counts), a floor when calls
        were cut off."""
        if self.unpriced_calls:
            if not self.usd:
                return spend_text(None)
            return f"{spend_text(self.usd)} + {self.unpriced_calls} call{'' if self.unpriced_calls == 1 else 's'} " \
                   "without a price"
        if not self.cut_off_calls:
            return spend_text(self.usd)
        calls = f"{self.cut_off_calls} call{'' if self.cut_off_calls == 1 else 's'}"
        return f"at least {spend_text(self.usd)} ({calls} cut off on the wire, which the provider may bill)"


class SpendLedger:
    """What every process of one run has spent: each xdist worker keeps its own total in a file of a folder its
    controller made, and reads the others' before a call (one ``--researchqa-max-cost``), as the controller
    does for its progress lines. A fixed share of the budget per worker would strand money: xdist hands each
    paper's rows to one worker, so one worker can have every row of a slice (tester45)."""

    def __init__(self, folder: Path, name: str = "") -> None:
        self._mine = folder / name if name else None
        self._folder = folder

    def record(self, spend: Spend) -> None:
        """This process's total so far (replaced whole: a reader never sees half a number). A write that fails (a
        full disk) leaves the others a lower figure for this process; its own calls still count its own spend."""
        if self._mine is None:
            return
        partial = self._mine.with_name(f".{self._mine.name}.partial")
        try:
            partial.write_text(" ".join(map(repr, spend)))
            os.replace(partial, self._mine)
        except OSError:
            pass

    def total(self, mine: float) -> float:
        """What the run has spent: ``mine``, this process's, and every other process's last total."""
        return mine + self.others().usd

    def others(self) -> Spend:
        """Every other process's last totals (a file that cannot be read counts nothing)."""
        spent = Spend()
        try:
            entries = list(os.scandir(self._folder))
        except OSError:
            return spent
        for entry in entries:
            if not entry.name.startswith(".") and (self._mine is None or entry.name != self._mine.name):
                try:
                    usd, *counts = Path(entry.path).read_text().split()
                    spent = spent.plus(Spend(float(usd), *map(int, counts[:2])))
                except (OSError, ValueError):
                    continue
        return spent


def no_provider_said(model: str) -> str:
    """What a plan says of a model :func:`provider_unknown` finds (a misspelt name, not a free model)."""
    return (f"litellm cannot tell which provider serves {model!r}: every call would fail; name it PROVIDER/MODEL, "
            "e.g. openai/gpt-4o")


def provider_unknown(model: str, params: Optional[dict[str, Any]] = None) -> bool:
    """Whether litellm cannot tell which provider serves ``model`` (``gpt4o``) from its name and the call's
    ``custom_llm_provider`` and ``api_base``: every call would fail with its 'LLM Provider NOT provided'."""
    given = params or {}
    base = given.get("api_base")
    try:
        import litellm

        litellm.suppress_debug_info = True  # its provider list is printed otherwise
        litellm.get_llm_provider(model=model, custom_llm_provider=given.get("custom_llm_provider"),
                                 api_base=base[0] if isinstance(base, list) and base else base)  # several: the first
    except Exception:  # noqa: BLE001 -- litellm's BadRequestError, or anything else it raises for the name
        return True
    return False


def price_of(model: str, prompt_tokens: int, completion_tokens: int) -> Optional[float]:
    """What litellm's price table says such a call costs; None when it has no price for the model."""
    try:
        import litellm

        litellm.suppress_debug_info = True  # its provider list is printed for a name it cannot place
        prompt_cost, completion_cost = litellm.cost_per_token(model=model, prompt_tokens=prompt_tokens,
                                                              completion_tokens=completion_tokens)
    except Exception:  # noqa: BLE001 -- litellm raises for any model it cannot price
        return None
    return float(prompt_cost) + float(completion_cost)
