"""Systems under test: built-in baselines and the user's own function.

A system receives the row's question and its paper and returns an
:class:`~pytest_researchqa.answers.Answer`. Specs name them on the command
line: ``oracle``, ``bm25``, or ``package.module:function`` for your own.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
from dataclasses import dataclass
from typing import Any, Callable

from ..answers import Answer, coerce_answer

BUILTIN_SYSTEMS = ("oracle", "bm25")


class SystemSpecError(ValueError):
    """A --researchqa-system value that cannot be turned into a system."""


@dataclass
class System:
    """A named callable ``(row, paper) -> Answer`` (sync or async)."""

    name: str
    call: Callable[..., Any]

    def answer(self, row, paper) -> Answer:
        result = self.call(row, paper)
        if inspect.isawaitable(result):
            result = _run_coroutine(result)
        return coerce_answer(result, f"system {self.name!r}")


def _run_coroutine(awaitable) -> Any:
    async def wait():
        return await awaitable

    return asyncio.run(wait())


def load_system(spec: str) -> System:
    """Build the system a spec names; raise :class:`SystemSpecError` when it can't."""
    if spec == "oracle":
        from .oracle import oracle_answer

        return System("oracle", oracle_answer)
    if spec == "bm25":
        from .bm25 import Bm25System

        return System("bm25", Bm25System())
    if ":" not in spec:
        raise SystemSpecError(
            f"unknown system {spec!r}: use one of {', '.join(BUILTIN_SYSTEMS)} or package.module:function"
        )
    module_name, _, attribute = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise SystemSpecError(f"system {spec!r}: cannot import {module_name!r}: {error}") from None
    function = module
    for part in attribute.split("."):
        function = getattr(function, part, None)
        if function is None:
            raise SystemSpecError(f"system {spec!r}: {module_name!r} has no attribute {attribute!r}")
    if not callable(function):
        raise SystemSpecError(f"system {spec!r}: {attribute!r} is not callable")
    return System(spec, _user_adapter(function))


def _user_adapter(function: Callable[..., Any]) -> Callable[..., Any]:
    """Call a user function as ``f(question, paper)``, adding ``row=`` if it takes it."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        parameters = {}
    wants_row = "row" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())

    def call(row, paper):
        if wants_row:
            return function(row.question, paper, row=row)
        return function(row.question, paper)

    return call
