"""A litellm model as a caller (systems and judges) and as a system under test.

``ModelCaller`` is what every model use shares: the runner's slots and pacing, the on-disk cache with
cross-process claims, retries and the repair turn, the provider's structured-output mode.
``ModelSystem`` answers rows with it: once, pipelined, stored as they arrive. What a row's call asks
is its family's task (``families/citation/model_system``, ``families/rubric/task``).
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Generic, Optional, TypeVar

from ..answers import Answer
from ..dataset import FamilyRow
from ..llm_params import (
    LOCAL_CONTEXT_TOKENS,
    is_local,
    is_loopback_url,
    is_secret_name,
    known_secrets,
    parse_model_params,  # noqa: F401  (re-exported)
)
from .cache import AnswerCache, cache_key
from .contract import json_schema, parse_reply
from .engine import (
    CALL_SECRETS,
    REPAIR_TURN,
    CallResult,
    EmptyResponse,
    ModelRunner,
    ProviderError,
    hand_over,
    with_retries,
)
from .prompts import Prompt

if TYPE_CHECKING:  # pragma: no cover
    from types import ModuleType

    from ..papers import Paper

CHARS_PER_TOKEN = 4  # a conservative estimate for English text
DEFAULT_CONTEXT_TOKENS = 128_000
# A local server's window is small and its tokenizer unknown: count text denser, and keep room for
# the output, the prompt around the paper and a repair turn (the bad reply echoed, the schema).
LOCAL_CHARS_PER_TOKEN = 3
LOCAL_OUTPUT_TOKENS = 768
# A cited answer's length when nothing caps it (a model's without max_tokens, bm25's, the user's system's), for
# cost estimates before a run (budget.plan_calls).
UNCAPPED_ANSWER_TOKENS = 500
# Where a call goes, not what it asks: left out of the answer's cache key.
ENDPOINT_PARAMS = frozenset({"api_base", "base_url"})
# Parameters that steer the plugin, never sent to the provider.
PLUGIN_PARAMS = ("max_input_tokens", "structured_output", "profile", "concurrency", "timeout")
# How often a process waiting for another one's answer to the same key looks for it.
CLAIM_POLL_S = 0.1
CLAIM_POLL_MAX_S = 1.0
_HELD_ELSEWHERE = object()
Accept = Optional[Callable[[dict[str, Any]], bool]]  # another process holds the key's claim: wait for its answer


@dataclass(frozen=True)
class ModelSpec:
    """A litellm model string and the parameters to call it with."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def provider(self) -> str:
        """Calls to one provider (or one local server) share the concurrency slots."""
        if self.params.get("api_base"):
            return str(self.params["api_base"])
        return self.name.split("/", 1)[0] if "/" in self.name else "openai"

    @property
    def call_params(self) -> dict[str, Any]:
        return {k: v for k, v in self.params.items() if k not in PLUGIN_PARAMS}

    @functools.cached_property  # read for every row's key: the secret-name check runs once per model
    def cache_params(self) -> dict[str, Any]:
        """The call's parameters that name its answer in the cache: not where it was asked nor with which key (a
        moved server or a rotated key pays for nothing again; docs/models.md: the key is the model's)."""
        return {k: v for k, v in self.call_params.items() if k not in ENDPOINT_PARAMS and not is_secret_name(k)}

    @functools.cached_property
    def local(self) -> bool:
        """The local-server profile (docs/models.md): an ``api_base`` on this machine, or ``profile=local``
        (read once: every call asks, and parsing the address costs more than the rest of the check)."""
        return is_local(self.params)


class ModelCaller:
    """What a system and a judge share: a model, the runner, the cache, and calls in flight by key.

    A call for a key runs once per process (``_pending``) and once across processes sharing the
    cache folder (a claim on the key: a second run waits for the first one's answer).
    """

    refresh = False  # a system's --researchqa-refresh: its own cached answers are not reused
    # What progress lines count this caller's results as ("answer", "verdict"; "": not counted).
    activity_kind: str = ""

    def __init__(self, spec: ModelSpec, runner: ModelRunner, cache: AnswerCache, *,
                 timeout_s: float = 120.0, retries: int = 3) -> None:
        self.spec = spec
        self.name = spec.name
        self.runner = runner
        self.cache = cache
        self.timeout_s = timeout_s
        self.retries = retries
        self._pending: dict[str, Future[Any]] = {}
        self._lock = threading.Lock()
        self.secrets = tuple(known_secrets({spec.name: spec.params}))
        self._ready = False

    def ready(self) -> None:
        """What a call needs before it goes on the event loop, done here on the caller's thread: litellm
        imported (a multi-second import on the loop would stall every call in flight and bunch paced starts
        behind it), the router built and the context window known. Once per caller (every call's start asks);
        a caller that is built and never calls (a controller's call estimate) imports nothing."""
        if self._ready:
            return
        _import_litellm()
        try:
            _ = self.router
        except Exception:  # noqa: BLE001 -- a router litellm refuses (no provider): each call raises it, as its row's
            pass  # error, as a single endpoint's calls do (here it would end the whole run as an internal error)
        _ = self.context_tokens
        self._ready = True

    def output_capped(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` with the local profile's output cap where they set none (docs/models.md): a small model on
        a local server that never stops would otherwise write until the server's window is full, minutes a
        call. Every call of a system or a judge goes through here."""
        if self.spec.local and "max_tokens" not in params:
            params["max_tokens"] = LOCAL_OUTPUT_TOKENS
        return params

    @functools.cached_property
    def router(self) -> Any:
        """litellm's Router over several endpoints of one model (None for one endpoint)."""
        return _router(self.spec)

    @functools.cached_property
    def context_tokens(self) -> int:
        """The context window: ``max_input_tokens``, else what a local server reports (asked once, off the
        event loop), else litellm's figure for the model."""
        given = self.spec.params.get("max_input_tokens")
        if isinstance(given, int) and given > 0:
            return given
        if self.spec.local and self.spec.params.get("api_base"):
            from ..llm_params import endpoints
            from .server_info import reported_context_tokens

            # Several servers of one model: the first one's window stands for all.
            first = (endpoints(self.spec.params) or [self.spec.params])[0]
            reported = reported_context_tokens(str(first.get("api_base")), self.spec.name, first.get("api_key"))
            return reported or LOCAL_CONTEXT_TOKENS
        return _context_window(self.spec.name)

    def _in_flight(self, key: str, job: Callable[[], Awaitable[Any]], accept: Accept = None) -> Future[Any]:
        """The call already running for ``key``, or a new one (callers hold ``_lock``)."""
        future = self._pending.get(key)
        if future is None:
            future = self._start(key, job, accept)
            self._pending[key] = future
        return future

    def _start(self, key: str, job: Callable[[], Awaitable[Any]], accept: Accept = None) -> Future[Any]:
        """Run ``job()`` for ``key`` once across the processes that share the cache (``accept``: the
        caller's check of a cached entry, anything else is a miss)."""
        self.ready()
        future = self.runner.run(lambda: self._once_across_processes(key, job, accept))
        if self.activity_kind:
            self.runner.activity.watch(self.activity_kind, key, future)
        return future

    def _found(self, key: str) -> None:
        """A result of this caller's read from the cache, without a call (counted for progress lines)."""
        if self.activity_kind:
            self.runner.activity.finished(self.activity_kind, key, "cached")

    async def _once_across_processes(self, key: str, job: Callable[[], Awaitable[Any]], accept: Accept = None) -> Any:
        """Claim ``key`` and call, inside one of the provider's slots; while another process holds the
        claim, wait outside the slots and reuse the answer it stores.

        The claim (a lock on one byte of the folder's claims file) is taken only once a slot is ours, so
        claims held are bounded by the slots, never by the rows queued behind them: a key queued here is
        free for another run with a slot to ask it."""
        CALL_SECRETS.set(self.secrets)  # this task's own context: its errors never carry a key
        waited = False
        give_up = time.monotonic() + self.timeout_s * (self.retries + 2) + 60
        poll = CLAIM_POLL_S
        while True:
            claimed = functools.partial(self._claimed, key, job, waited, accept)
            found = await self.runner.bounded(self.spec.provider, claimed)
            if found is not _HELD_ELSEWHERE:
                return found
            waited = True
            await asyncio.sleep(poll)
            poll = min(poll * 1.5, CLAIM_POLL_MAX_S)  # hundreds of waiting keys cost next to nothing
            shared = self.cache.get(key, accept)
            if shared is not None:
                return {**shared, "from_cache": True}
            if time.monotonic() > give_up:  # the other process is stuck, not gone: ask ourselves
                return await self.runner.bounded(self.spec.provider, job)

    async def _claimed(self, key: str, job: Callable[[], Awaitable[Any]], waited: bool, accept: Accept) -> Any:
        """In a slot: the cached answer, or ``job()`` under this process's claim on ``key``."""
        claim = self.cache.claim(key)
        if claim is None:
            return _HELD_ELSEWHERE
        try:
            if waited or not self.refresh:
                shared = self.cache.get(key, accept)
                if shared is not None:
                    return {**shared, "from_cache": True}
            return await job()
        finally:
            claim.release()

    async def _ask(
        self, messages: list[dict[str, Any]], params: dict[str, Any], *, validate: Callable[[CallResult], Any],
        schema: Optional[dict[str, Any]], describe: str, submitted: Optional[float] = None,
        priced: bool = True, retry_timeouts: bool = True,
    ) -> tuple[CallResult, Any]:
        """Pace, call, validate; repair a malformed reply once, retry transport faults (engine.with_retries)."""
        queued: list[float] = []

        async def attempt() -> CallResult:
            await self.runner.pace(self.spec.provider, priced=not self.spec.local)
            if submitted is not None and not queued:
                queued.append(time.perf_counter() - submitted)
            return await self.runner.send(_acompletion(self.spec.name, messages, self.timeout_s, params,
                                                       priced=priced, router=self.router))

        result, parsed = await with_retries(attempt, retries=self.retries, validate=validate, describe=describe,
                                            schema=schema, retry_timeouts=retry_timeouts)
        result.extra["queue_s"] = queued[0] if queued else None
        return result, parsed


RowT = TypeVar("RowT", bound=FamilyRow)


class ModelSystem(ModelCaller, Generic[RowT]):
    """A litellm model as a system under test (duck-types :class:`~pytest_researchqa.systems.System`).

    Each row's answer is asked once, ahead of its test when the run pipelines, stored on disk as it
    arrives and never paid for twice. A family's task says what is asked (``prompt``, ``key`` and
    ``render``; docs/extending.md); this class says when, how often, and how the reply is read.
    """

    activity_kind = "answer"

    def __init__(self, spec: ModelSpec, runner: ModelRunner, cache: AnswerCache, *, refresh: bool = False,
                 timeout_s: float = 120.0, retries: int = 3) -> None:
        super().__init__(spec, runner, cache, timeout_s=timeout_s, retries=retries)
        self.refresh = refresh
        self._priced = not spec.local  # a local server has no price: do not ask litellm for one

    # -- what the family's task defines ------------------------------------------------
    # Set by the subclass: the task's prompt file (its hash enters every key and entry).
    prompt: Prompt
    # The reply follows the citation contract (JSON: answer, citations, refused), asked in the provider's
    # structured-output mode and repaired once when malformed; False: plain text (the baseline mode).
    cites: bool = True

    @classmethod
    def for_run(cls, spec: ModelSpec, runner: ModelRunner, cache: AnswerCache, settings: Any, *,
                timeout_s: float) -> "ModelSystem[RowT]":
        """The system as a run builds it (a family's ``model_system`` may name the class): the run's refresh,
        per-call deadline and retries. A subclass whose ``__init__`` takes more overrides this."""
        return cls(spec, runner, cache, refresh=settings.refresh, timeout_s=timeout_s, retries=settings.retries)

    def key(self, row: RowT, paper: "Optional[Paper]") -> str:
        """The cache key of a row's answer: everything that changes what the model is asked."""
        raise NotImplementedError(f"{type(self).__name__} must define key(row, paper): the cache key of a row's "
                                  "answer (llm.cache.cache_key of everything that changes what the model is asked)")

    def render(self, row: RowT, paper: "Optional[Paper]") -> tuple[str, dict[str, Any]]:
        """The prompt a row's call sends, and the task's facts recorded with its answer (e.g. the context the
        model saw: ``{"context": "full"}``)."""
        raise NotImplementedError(f"{type(self).__name__} must define render(row, paper): the prompt a row's call "
                                  "sends, and a dict of what to record with its answer")

    def prompt_chars(self, row: RowT, paper: "Optional[Paper]") -> int:
        """The characters of the prompt a row's call sends (for the estimate before a run)."""
        return len(self.render(row, paper)[0])

    async def _call(self, row: RowT, paper: "Optional[Paper]", key: str,
                    submitted: Optional[float] = None) -> dict[str, Any]:
        """Ask the model for one row (pacing, retries, one repair of a malformed reply), store the entry under
        ``key`` the moment it arrives (a killed run keeps it) and return it. The waiting test gets the entry just
        before it is written (``engine.hand_over``); the key's claim is held until it is."""
        prompt, task = self.render(row, paper)
        kwargs = self.output_capped(dict(self.spec.call_params))
        if self.cites and "response_format" not in kwargs:
            kwargs.update(_structured_output(self.spec))

        def validate(result: CallResult) -> Any:
            self._priced_by(result)
            return parse_reply(result.content) if self.cites else (result.content or "")

        result, parsed = await self._ask([{"role": "user", "content": prompt}], kwargs, validate=validate,
                                         describe=self.name, schema=json_schema() if self.cites else None,
                                         submitted=submitted, priced=self._priced)
        entry = self._entry(row.row_id, row.question, result, baseline=not self.cites, **task)
        if self.cites:
            entry.update(answer=parsed.answer, citations=parsed.citations, refused=parsed.refused)
        else:
            entry.update(answer=parsed, citations=[], refused=None)
        hand_over(entry)  # the test has its answer while the entry is written (still under the key's claim)
        self.cache.put(key, entry)
        return entry

    # -- keys and scheduling ---------------------------------------------------------
    def repeat_key(self, row: RowT, paper: "Optional[Paper]", repeat: int = 0) -> str:
        """The cache key of a row's answer number ``repeat`` (--researchqa-repeats): the first is the
        key of a run without repeats, so its cached answers stay valid."""
        key = self.key(row, paper)
        return key if repeat == 0 else cache_key(answer=key, repeat=repeat)

    def prefetch(self, row: RowT, paper: "Optional[Paper]", repeat: int = 0) -> bool:
        """Start this row's call now (unless answered already); the test will wait for it. True when the answer is
        to come (a call in flight), False when it is on disk."""
        key = self.repeat_key(row, paper, repeat)
        with self._lock:
            if key in self._pending:
                return True
            if not self.refresh and self.cache.get(key) is not None:
                self._found(key)
                return False
            submitted = time.perf_counter()  # queue time (slots, pacing, another run's call) counts from here
            self._in_flight(key, lambda: self._call(row, paper, key, submitted))
            return True

    def when_answered(self, row: RowT, paper: "Optional[Paper]", callback: Callable[[Answer], None],
                      repeat: int = 0) -> None:
        """Call ``callback(answer)`` as soon as this row's prefetched answer arrives (used to chain judges)."""
        key = self.repeat_key(row, paper, repeat)
        with self._lock:
            future = self._pending.get(key)
        if future is None:
            # Answered already (on disk): its judges can start now, as they would for a fresh answer.
            entry = None if self.refresh else self.cache.get(key)
            if entry is not None:
                callback(self._to_answer(entry, cached=True))
            return

        def done(finished: Future[Any]) -> None:
            if finished.cancelled() or finished.exception() is not None:
                return
            callback(self._to_answer(finished.result()))

        future.add_done_callback(done)

    def answer(self, row: RowT, paper: "Optional[Paper]", repeat: int = 0) -> Answer:
        key = self.repeat_key(row, paper, repeat)
        with self._lock:
            future = self._pending.pop(key, None)
        if future is None:
            entry = None if self.refresh else self.cache.get(key)
            if entry is not None:
                self._found(key)
                return self._to_answer(entry, cached=True)
            submitted = time.perf_counter()
            future = self._start(key, lambda: self._call(row, paper, key, submitted))
        return self._to_answer(future.result())

    def planned_call(self, row: RowT, paper: "Optional[Paper]", repeat: int = 0) -> Optional[tuple[int, int]]:
        """The prompt and output tokens this row's call would take (estimated from characters and the
        output cap); None when its answer is on disk already."""
        if not self.refresh and self.cache.get(self.repeat_key(row, paper, repeat)) is not None:
            return None
        uncapped = LOCAL_OUTPUT_TOKENS if self.spec.local else UNCAPPED_ANSWER_TOKENS
        output = self.spec.params.get("max_tokens") or uncapped
        return self.prompt_chars(row, paper) // CHARS_PER_TOKEN + 1, int(output)

    def cached_answer(self, row: RowT, paper: "Optional[Paper]", repeat: int = 0) -> Optional[Answer]:
        """This row's answer as the cache holds it (None: it has none, or this run refreshes answers)."""
        entry = None if self.refresh else self.cache.get(self.repeat_key(row, paper, repeat))
        return None if entry is None else self._to_answer(entry, cached=True)

    def _to_answer(self, entry: dict[str, Any], cached: bool = False) -> Answer:
        """``cached``: answered without a call of this run (from the cache, or another run's call)."""
        meta = {k: entry.get(k) for k in ("latency_s", "queue_s", "cost_usd", "prompt_tokens", "completion_tokens",
                                          "context", "prompt_sha", "attempts")}
        meta["cached"] = cached or bool(entry.get("from_cache"))
        if meta["cached"]:
            meta["queue_s"] = None  # the wait was another run's
        return Answer(
            text=entry.get("answer") or "",
            citations=list(entry.get("citations") or []),
            refused=entry.get("refused"),
            cites=not entry.get("baseline", False),
            meta=meta,
        )

    def _entry(self, row_id: str, question: str, result: CallResult, **task: Any) -> dict[str, Any]:
        """What the cache keeps of a row's call besides the reply: the row, the model, the prompt's hash,
        the family's ``task`` facts (e.g. the context the model saw) and the call's usage."""
        prompt = getattr(self, "prompt", None)  # a subclass that set none: recorded as unknown, the answer kept
        return {"row_id": row_id, "question": question, "model": self.spec.name,
                "prompt_sha": prompt.sha if prompt is not None else None,
                **task, "latency_s": result.latency_s, "queue_s": result.extra.get("queue_s"),
                "prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
                "cost_usd": result.cost_usd, "attempts": result.attempts, "repaired": result.repaired}

    def _priced_by(self, result: CallResult) -> None:
        if result.cost_usd is None:
            self._priced = False  # litellm has no price for this model: stop asking


def __getattr__(name: str) -> Any:
    """``LlmSystem`` (the citation family's model system) moved to its family, kept here for one release."""
    if name == "LlmSystem":
        from ..moved_names import moved_name

        return moved_name(__name__, "pytest_researchqa.families.citation.model_system", name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _import_litellm() -> "ModuleType":
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


def _structured_output(
    spec: ModelSpec, schema: Optional[dict[str, Any]] = None, name: str = "cited_answer"
) -> dict[str, Any]:
    """The provider's structured-output mode for a reply schema (the citation contract's by default).

    ``structured_output``: ``auto`` (JSON-schema mode where litellm knows the
    model supports it, else none: the reply is parsed robustly), ``json_schema``,
    ``json_object`` (``{"type": "json_object", "schema": ...}``, as llama.cpp
    servers take it; the local-server profile's default) or ``off``.
    """
    choice = spec.params.get("structured_output") or ("json_object" if spec.local else "auto")
    schema = schema if schema is not None else json_schema()
    if choice == "json_object":
        return {"response_format": {"type": "json_object", "schema": schema}}
    if choice == "json_schema" or (choice == "auto" and _supports_schema(_import_litellm(), spec.name)):
        return {"response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}}
    return {}


def _supports_schema(litellm: "ModuleType", model: str) -> bool:
    try:
        return bool(litellm.supports_response_schema(model=model))
    except Exception:  # noqa: BLE001
        return False


def _router(spec: ModelSpec) -> Any:
    """litellm's Router over a model's endpoints (None for a model with one): each endpoint holds the
    model's per-endpoint slots, a failing endpoint is cooled down and the call goes to another."""
    from ..llm_params import endpoints

    found = endpoints(spec.params)
    if not found:
        return None
    litellm = _import_litellm()
    slots = spec.params.get("concurrency")
    per_endpoint = slots if isinstance(slots, int) and not isinstance(slots, bool) and slots > 0 else None
    deployments = []
    for endpoint in found:
        params: dict[str, Any] = {"model": spec.name, **endpoint}
        if spec.params.get("custom_llm_provider"):  # the provider the name does not say, for every endpoint
            params["custom_llm_provider"] = spec.params["custom_llm_provider"]
        if "api_key" not in params and is_loopback_url(params.get("api_base")):
            params["api_key"] = "local"  # a server on this machine gets no provider key from the environment
        if per_endpoint:
            params["max_parallel_requests"] = per_endpoint
        deployments.append({"model_name": spec.name, "litellm_params": params})
    return litellm.Router(model_list=deployments, num_retries=len(deployments), retry_after=0, allowed_fails=0,
                          cooldown_time=60, routing_strategy="least-busy")


async def _acompletion(model: str, messages: list[Any], timeout_s: float, kwargs: dict[str, Any], priced: bool = True,
                       router: Any = None) -> CallResult:
    """One request, under a wall-clock deadline; with the repair turn of the call in progress, if any."""
    litellm = _import_litellm()
    if router is not None:  # the endpoints (bases and keys) are the router's
        kwargs = {k: v for k, v in kwargs.items() if k not in ("api_base", "api_key")}
    elif "api_key" not in kwargs and is_loopback_url(kwargs.get("api_base")):
        # A server on this machine needs no key: never send it the provider key from the environment.
        kwargs = {**kwargs, "api_key": "local"}
    repair = REPAIR_TURN.get()
    if repair is not None:
        messages = [*messages, *repair.messages]
        if repair.max_tokens:
            kwargs = {**kwargs, "max_tokens": max(repair.max_tokens, kwargs.get("max_tokens") or 0)}
    started = time.perf_counter()  # the request is sent now: slots and pacing are behind it
    # A wall-clock deadline: litellm's own timeout is per socket read, and a server that trickles
    # its reply a byte at a time never trips it.
    call = (router.acompletion(model=model, messages=messages, timeout=timeout_s, **kwargs) if router is not None
            else litellm.acompletion(model=model, messages=messages, timeout=timeout_s, num_retries=0, **kwargs))
    response = await _within(call, timeout_s, inline=router is None)
    latency = time.perf_counter() - started
    choices = getattr(response, "choices", None) or []
    usage = getattr(response, "usage", None)
    if not choices:  # billed all the same when it reports its usage
        raise EmptyResponse("the response had no choices", billed=usage is not None,
                            cost_usd=_price_of_reply(litellm, response) if priced and usage is not None else None)
    return CallResult(
        content=choices[0].message.content,
        latency_s=latency,
        prompt_tokens=getattr(usage, "prompt_tokens", None),
        completion_tokens=getattr(usage, "completion_tokens", None),
        cost_usd=_price_of_reply(litellm, response) if priced else None,
        finish_reason=getattr(choices[0], "finish_reason", None),
        max_tokens=kwargs.get("max_tokens"),
    )


async def _within(call: Awaitable[Any], timeout_s: float, inline: bool = True) -> Any:
    """``await call`` under a deadline (``TimeoutError`` past it); ``inline``: in the awaiting task itself, where
    Python has ``asyncio.timeout`` (3.11).

    ``asyncio.wait_for`` runs the call as a task of its own, and the caller resumes one turn of the loop after it
    ends: behind the logging litellm queues on the loop as it returns each reply (its success handler, about as
    long as the rest of our work on a fresh row), which the test waiting for the answer then waited for too. In
    the same task the answer is handed over first, and litellm's logging runs after it. Not for a Router's call:
    its least-busy routing keeps its count of each endpoint's requests in flight in those same handlers, and with
    the next call let out of our slots before they ran, a server of one slot got two requests at once
    (tests/test_llm.py, one model on two servers)."""
    timeout = getattr(asyncio, "timeout", None)
    if timeout is None or not inline:  # Python 3.10, or a Router's call
        return await asyncio.wait_for(call, timeout_s)
    async with timeout(timeout_s):
        return await call


def _price_of_reply(litellm: Any, response: Any) -> Optional[float]:
    """The reply's price, None when litellm has none (unknown, never $0).

    litellm prices every reply as it builds it and keeps the figure in ``response._hidden_params
    ["response_cost"]`` (its documented place for cost tracking; None when the model has no price):
    asking ``completion_cost`` again repeated the whole price look-up, about a third of litellm's own
    work per call for a model outside its price table. A reply without that field is priced anew.
    """
    hidden = getattr(response, "_hidden_params", None)
    if isinstance(hidden, dict) and "response_cost" in hidden:
        cost = hidden["response_cost"]
        return None if cost is None else float(cost)
    try:
        return float(litellm.completion_cost(completion_response=response))
    except Exception:  # noqa: BLE001 -- litellm raises when it has no price for the model
        return None


__all__ = ["ModelCaller", "ModelSpec", "ModelSystem", "ProviderError", "parse_model_params"]
