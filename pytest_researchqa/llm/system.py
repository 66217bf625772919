"""A litellm model as the system under test, under the citation contract (or baseline mode).

For each row the system decides what the model sees (the whole paper when it
fits the context window, else the best BM25 passages; the choice is recorded),
asks for a structured cited answer, retries what is worth retrying, stores the
answer on disk as it arrives, and never pays twice for the same answer.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from dataclasses import dataclass, field
from typing import Optional

from ..answers import Answer
from ..llm_params import parse_model_params  # noqa: F401  (re-exported)
from .cache import AnswerCache, cache_key
from .contract import json_schema, parse_reply
from .engine import CallResult, ModelRunner, ProviderError, with_retries
from .prompts import load_prompt

CHARS_PER_TOKEN = 4  # a conservative estimate for English text
PROMPT_RESERVE_TOKENS = 2000
DEFAULT_CONTEXT_TOKENS = 128_000
# Parameters that steer the plugin, never sent to the provider.
PLUGIN_PARAMS = ("max_input_tokens", "structured_output")


@dataclass(frozen=True)
class ModelSpec:
    """A litellm model string and the parameters to call it with."""

    name: str
    params: dict = field(default_factory=dict)

    @property
    def provider(self) -> str:
        """Calls to one provider (or one local server) share the concurrency slots."""
        if self.params.get("api_base"):
            return str(self.params["api_base"])
        return self.name.split("/", 1)[0] if "/" in self.name else "openai"

    @property
    def call_params(self) -> dict:
        return {k: v for k, v in self.params.items() if k not in PLUGIN_PARAMS}


class ModelCaller:
    """What a system and a judge share: a model, the runner, the cache, and calls in flight by key."""

    def __init__(self, spec: ModelSpec, runner: ModelRunner, cache: AnswerCache, *,
                 timeout_s: float = 120.0, retries: int = 3) -> None:
        self.spec = spec
        self.name = spec.name
        self.runner = runner
        self.cache = cache
        self.timeout_s = timeout_s
        self.retries = retries
        self._pending: dict[str, concurrent.futures.Future] = {}
        self._lock = threading.Lock()
        # Import here, on the caller's thread: a multi-second import on the event loop
        # would stall every call in flight (and bunch paced starts behind it).
        _import_litellm()

    def _in_flight(self, key: str, job) -> concurrent.futures.Future:
        """The call already running for ``key``, or a new one (callers hold ``_lock``)."""
        future = self._pending.get(key)
        if future is None:
            future = self.runner.submit(self.spec.provider, job)
            self._pending[key] = future
        return future


class LlmSystem(ModelCaller):
    """Duck-types :class:`~pytest_researchqa.systems.System`: ``name`` and ``answer(row, paper)``."""

    def __init__(
        self,
        spec: ModelSpec,
        runner: ModelRunner,
        cache: AnswerCache,
        *,
        baseline: bool = False,
        refresh: bool = False,
        timeout_s: float = 120.0,
        retries: int = 3,
    ) -> None:
        super().__init__(spec, runner, cache, timeout_s=timeout_s, retries=retries)
        self.baseline = baseline
        self.refresh = refresh
        self.prompt = load_prompt("baseline" if baseline else "cited_answer")
        self._priced = True

    # -- keys and scheduling ---------------------------------------------------------
    def key(self, row, paper) -> str:
        return cache_key(
            model=self.spec.name,
            params=self.spec.call_params,
            prompt=self.prompt.sha,
            mode="baseline" if self.baseline else "cited",
            question=row.question,
            row=row.row_id,
            paper=paper.content_hash or paper.paper_id,
        )

    def prefetch(self, row, paper) -> None:
        """Start this row's call now (unless answered already); the test will wait for it."""
        key = self.key(row, paper)
        with self._lock:
            if key in self._pending or (not self.refresh and self.cache.get(key) is not None):
                return
            self._in_flight(key, lambda: self._call(row, paper, key))

    def when_answered(self, row, paper, callback) -> None:
        """Call ``callback(answer)`` as soon as this row's prefetched answer arrives (used to chain judges)."""
        with self._lock:
            future = self._pending.get(self.key(row, paper))
        if future is None:
            return

        def done(finished: concurrent.futures.Future) -> None:
            if finished.cancelled() or finished.exception() is not None:
                return
            callback(self._to_answer(finished.result(), cached=False))

        future.add_done_callback(done)

    def answer(self, row, paper) -> Answer:
        key = self.key(row, paper)
        with self._lock:
            future = self._pending.pop(key, None)
        if future is None:
            entry = None if self.refresh else self.cache.get(key)
            if entry is not None:
                return self._to_answer(entry, cached=True)
            future = self.runner.submit(self.spec.provider, lambda: self._call(row, paper, key))
        return self._to_answer(future.result(), cached=False)

    # -- the call ------------------------------------------------------------------------
    def _context(self, row, paper) -> tuple[str, str]:
        limit = self.spec.params.get("max_input_tokens") or _context_window(self.spec.name)
        budget_chars = max(0, (limit - PROMPT_RESERVE_TOKENS) * CHARS_PER_TOKEN)
        if len(paper.text) <= budget_chars:
            return paper.text, "full"
        from ..systems.bm25 import Bm25System

        ranked = Bm25System().ranked_passages(row, paper)
        chosen, used = [], 0
        for passage in ranked:
            if used + len(passage) > budget_chars:
                break
            chosen.append(passage)
            used += len(passage) + 8
        return "\n\n[...]\n\n".join(chosen), "bm25"

    async def _call(self, row, paper, key: str) -> dict:
        context, mode = self._context(row, paper)
        prompt = self.prompt.render(paper=context, question=row.question, source=paper.paper_id)
        messages = [{"role": "user", "content": prompt}]
        kwargs = dict(self.spec.call_params)
        if not self.baseline and "response_format" not in kwargs:
            kwargs.update(_structured_output(self.spec))

        async def attempt() -> CallResult:
            await self.runner.pace(self.spec.provider)
            result = await _acompletion(self.spec.name, messages, self.timeout_s, kwargs, priced=self._priced)
            if result.cost_usd is None:
                self._priced = False  # litellm has no price for this model: stop asking
            return result

        validate = ((lambda result: result.content or "") if self.baseline
                    else (lambda result: parse_reply(result.content)))
        result, parsed = await with_retries(attempt, retries=self.retries, validate=validate, describe=self.name)
        entry = {
            "row_id": row.row_id,
            "question": row.question,
            "model": self.spec.name,
            "prompt_sha": self.prompt.sha,
            "baseline": self.baseline,
            "context": mode,
            "latency_s": result.latency_s,
            "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens,
            "cost_usd": result.cost_usd,
            "attempts": result.attempts,
        }
        if self.baseline:
            entry.update(answer=parsed, citations=[], refused=None)
        else:
            entry.update(answer=parsed.answer, citations=parsed.citations, refused=parsed.refused)
        self.cache.put(key, entry)  # on disk the moment it arrives: a killed run keeps it
        return entry

    def _to_answer(self, entry: dict, cached: bool) -> Answer:
        meta = {k: entry.get(k) for k in ("latency_s", "cost_usd", "prompt_tokens", "completion_tokens",
                                          "context", "prompt_sha", "attempts")}
        meta["cached"] = cached
        return Answer(
            text=entry.get("answer") or "",
            citations=list(entry.get("citations") or []),
            refused=entry.get("refused"),
            cites=not entry.get("baseline", False),
            meta=meta,
        )


def _import_litellm():
    import os

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch prices from the network
    import litellm

    litellm.suppress_debug_info = True
    litellm.drop_params = True  # a provider that lacks an option ignores it instead of failing
    return litellm


def _context_window(model: str) -> int:
    litellm = _import_litellm()
    try:
        return int(litellm.get_model_info(model).get("max_input_tokens") or DEFAULT_CONTEXT_TOKENS)
    except Exception:  # noqa: BLE001 -- unknown models (local aliases) have no entry
        return DEFAULT_CONTEXT_TOKENS


def _structured_output(spec: ModelSpec, schema: Optional[dict] = None, name: str = "cited_answer") -> dict:
    """The provider's structured-output mode for a reply schema (the citation contract's by default).

    ``structured_output``: ``auto`` (JSON-schema mode where litellm knows the
    model supports it, else none: the reply is parsed robustly), ``json_schema``,
    ``json_object`` (``{"type": "json_object", "schema": ...}``, as llama.cpp
    servers take it) or ``off``.
    """
    choice = spec.params.get("structured_output", "auto")
    schema = schema if schema is not None else json_schema()
    if choice == "json_object":
        return {"response_format": {"type": "json_object", "schema": schema}}
    if choice == "json_schema" or (choice == "auto" and _supports_schema(_import_litellm(), spec.name)):
        return {"response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}}
    return {}


def _supports_schema(litellm, model: str) -> bool:
    try:
        return bool(litellm.supports_response_schema(model=model))
    except Exception:  # noqa: BLE001
        return False


async def _acompletion(model: str, messages: list, timeout_s: float, kwargs: dict, priced: bool = True) -> CallResult:
    import time

    litellm = _import_litellm()
    started = time.perf_counter()
    # A wall-clock deadline: litellm's own timeout is per socket read, and a server that trickles
    # its reply a byte at a time never trips it.
    response = await asyncio.wait_for(
        litellm.acompletion(model=model, messages=messages, timeout=timeout_s, num_retries=0, **kwargs), timeout_s)
    latency = time.perf_counter() - started
    choices = getattr(response, "choices", None) or []
    content = choices[0].message.content if choices else None
    usage = getattr(response, "usage", None)
    cost: Optional[float] = None  # no known price: unknown, never $0
    if priced:
        try:
            cost = float(litellm.completion_cost(completion_response=response))
        except Exception:  # noqa: BLE001 -- litellm raises when it has no price for the model
            cost = None
    if not choices:
        from .contract import MalformedReply

        raise MalformedReply("the response had no choices")
    return CallResult(
        content=content,
        latency_s=latency,
        prompt_tokens=getattr(usage, "prompt_tokens", None),
        completion_tokens=getattr(usage, "completion_tokens", None),
        cost_usd=cost,
    )


__all__ = ["LlmSystem", "ModelSpec", "ProviderError", "parse_model_params"]
