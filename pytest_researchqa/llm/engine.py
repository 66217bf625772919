"""Pipelined model calls: every row's call in flight at once, bounded per provider.

Calls run on one background event loop. Each provider gets a semaphore of
``concurrency`` slots and, optionally, a rows-per-minute pacing; a test
thread waits only for its own row's future, so a slow row delays nobody.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import json
import os
import random
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Coroutine, Optional

if TYPE_CHECKING:  # pragma: no cover
    from ..costs import Spend, SpendLedger

# Status codes worth retrying: timeouts, conflicts, rate limits, server errors.
TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})


class ProviderError(Exception):
    """A call that failed for good: the row errors with this message."""

    calls = 1  # requests sent before it failed (with_retries sets it), for exact call accounting
    stopped = False  # refused, unsent, because the run is stopping (RunStopping): not the call's failure


def _failed(message: str, calls: int) -> ProviderError:
    error = ProviderError(_redacted(message))
    error.calls = calls
    return error


class CallNotStarted(Exception):
    """A call refused before it was sent: nothing billed, never retried."""


class BudgetReached(CallNotStarted):
    """The run's --researchqa-max-cost is spent: no new call starts."""


class RunStopping(CallNotStarted):
    """The run is stopping (Ctrl-C, -x): no new call starts, though answers still arriving would ask for
    verdicts (a paid call nobody will read)."""


@dataclass
class CallResult:
    """A successful model call."""

    content: Optional[str]
    latency_s: float
    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None
    cost_usd: Optional[float] = None
    attempts: int = 1
    finish_reason: Optional[str] = None  # "length": cut off at the output-token limit
    max_tokens: Optional[int] = None  # the output limit the request carried
    repaired: bool = False  # answered by the repair follow-up
    extra: dict[str, Any] = field(default_factory=dict)


class EmptyResponse(Exception):
    """A response with no choices: a transport fault (retried as it was), not a reply to repair. One that
    reports its usage was billed all the same (``billed``, at ``cost_usd``: None when the price is unknown)."""

    def __init__(self, message: str, *, billed: bool = False, cost_usd: Optional[float] = None) -> None:
        super().__init__(message)
        self.billed = billed
        self.cost_usd = cost_usd


@dataclass(frozen=True)
class RepairTurn:
    """What a repair call adds to the conversation: the model's bad reply as the assistant turn, the
    user turn that says what was wrong, and (after a cut-off) a larger output limit."""

    messages: tuple[dict[str, Any], ...]
    max_tokens: Optional[int] = None


# The repair turn of the call being made. Systems and judges each build their own call closure; the
# repair rides along the shared call path (with_retries sets it, _acompletion reads it), so every
# caller repairs the same way without passing it through.
REPAIR_TURN: contextvars.ContextVar[Optional[RepairTurn]] = contextvars.ContextVar("researchqa_repair_turn",
                                                                                 default=None)
# The credentials of the model being called (its api_key, the provider keys in the environment): a
# provider may echo one back in an error, and a ProviderError's text ends up in reports and in the
# locals of tracebacks. Set by the caller around each call (ModelCaller), read where errors are worded.
CALL_SECRETS: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("researchqa_call_secrets",
                                                                             default=())
# Hands the result of the job in progress (ModelRunner.run) to whoever waits for it, before the job's own last
# steps: a system's call hands its answer to the test, then writes it to the cache (see hand_over).
_HAND_OVER: contextvars.ContextVar[Optional[Callable[[Any], None]]] = contextvars.ContextVar("researchqa_hand_over",
                                                                                          default=None)
# The reply as the model wrote it is echoed back at most this long (a cut-off reply can be long).
ECHO_CHARS = 2000
# A cut-off reply's repair asks for twice the output limit, and at least this many tokens.
REPAIR_MIN_TOKENS = 1024


# A provider's SDK that finds no key says so before sending anything, and litellm words it as a server error
# (500): retrying it only waits (a tester's run without OPENAI_API_KEY retried 4 times every row).
_NO_CREDENTIALS = ("missing credentials", "api_key client option must be set", "no api key provided")


def is_transient(error: BaseException) -> bool:
    if any(words in str(error).lower() for words in _NO_CREDENTIALS):
        return False
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        return status in TRANSIENT_STATUS
    name = type(error).__name__
    return name in {"Timeout", "APIConnectionError", "APITimeoutError", "ServiceUnavailableError",
                    "InternalServerError", "RateLimitError", "TimeoutError"} or isinstance(error, asyncio.TimeoutError)


def is_timeout(error: BaseException) -> bool:
    return isinstance(error, (asyncio.TimeoutError, TimeoutError)) or type(error).__name__ in {"Timeout",
                                                                                                "APITimeoutError"}


class _Pacer:
    """At most ``per_minute`` starts per minute: each start at least 1/rate after the previous one.

    Waiters queue on a lock and measure from the previous *actual* start, so a
    stalled event loop can delay starts but never bunch them together.
    """

    def __init__(self, per_minute: int) -> None:
        self.interval = 60.0 / per_minute
        self.last_start = float("-inf")
        self.lock = asyncio.Lock()

    async def wait(self) -> None:
        async with self.lock:
            delay = self.last_start + self.interval - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            self.last_start = time.monotonic()


class Activity:
    """What a run's model callers have done so far, for progress lines: per kind of result ("answer", "verdict"),
    the keys asked for, and of them those done (from the cache, by a call, or failed); and the requests on the
    wire now. Keys are counted once however often they are asked for; safe from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._asked: dict[str, set[str]] = {}
        self._done: dict[str, dict[str, str]] = {}  # kind -> key -> "cached" | "called" | "failed"
        self.sending = 0

    def asked(self, kind: str, key: str) -> None:
        with self._lock:
            self._asked.setdefault(kind, set()).add(key)

    def finished(self, kind: str, key: str, how: str) -> None:
        """``how``: "cached" (on disk, or another run's call), "called" or "failed"."""
        with self._lock:
            self._asked.setdefault(kind, set()).add(key)
            self._done.setdefault(kind, {}).setdefault(key, how)

    def watch(self, kind: str, key: str, future: "concurrent.futures.Future[Any]") -> None:
        """Count ``future``'s result for ``key`` when it arrives (a dict with ``from_cache`` when another
        process answered it)."""
        self.asked(kind, key)

        def done(finished: "concurrent.futures.Future[Any]") -> None:
            if finished.cancelled():
                return  # never answered (a Ctrl-C cancelled it): asked, not a failure
            error = finished.exception()
            if isinstance(error, (concurrent.futures.CancelledError, asyncio.CancelledError)) or (
                    isinstance(error, ProviderError) and error.stopped):
                return  # the call inside it was cancelled, or not sent as the run stopped: the same
            if error is not None:
                self.finished(kind, key, "failed")
                return
            result = finished.result()
            cached = isinstance(result, dict) and bool(result.get("from_cache"))
            self.finished(kind, key, "cached" if cached else "called")

        future.add_done_callback(done)

    def counts(self, kind: str) -> tuple[int, int, int, int]:
        """(asked, done, from the cache, failed) for one kind."""
        with self._lock:
            done = self._done.get(kind, {})
            return (len(self._asked.get(kind, ())), len(done), sum(h == "cached" for h in done.values()),
                    sum(h == "failed" for h in done.values()))

    async def send(self, call: Awaitable[Any]) -> Any:
        """Await one request, counted as on the wire while it is."""
        with self._lock:
            self.sending += 1
        try:
            return await call
        finally:
            with self._lock:
                self.sending -= 1


MODEL_THREAD = "researchqa-models"


# CPython 3.11 keeps one counter per interpreter while it turns a parse tree into Python objects: two
# threads parsing at once (pytest rewriting a module it imports, or rendering a traceback, on the test
# thread; litellm formatting a failed call's traceback, whose carets Python 3.11 finds by parsing the line,
# on the model thread) end in "SystemError: AST constructor recursion depth mismatch", an INTERNALERROR that lost
# the run (a tester's finding). From the first model runner on, ``ast.parse`` runs one call at a time (a
# lock around one C call: nothing else waits on it).
_ONE_PARSE = threading.RLock()


def _parse_one_at_a_time() -> None:
    import ast

    parse = ast.parse
    if getattr(parse, "one_at_a_time", False):
        return

    @functools.wraps(parse)
    def parse_alone(*args: Any, **kwargs: Any) -> Any:
        with _ONE_PARSE:
            return parse(*args, **kwargs)

    parse_alone.one_at_a_time = True  # type: ignore[attr-defined]
    ast.parse = parse_alone


class ModelRunner:
    def __init__(self, concurrency: int = 5, rows_per_minute: Optional[int] = None) -> None:
        self.concurrency = concurrency
        self.rows_per_minute = rows_per_minute
        self._loop = asyncio.new_event_loop()
        _parse_one_at_a_time()
        self._thread = threading.Thread(target=self._loop.run_forever, name=MODEL_THREAD, daemon=True)
        self._thread.start()
        self._slots: dict[str, asyncio.Semaphore] = {}
        self._limits: dict[str, int] = {}
        self._pacers: dict[str, _Pacer] = {}
        self.budget_usd: Optional[float] = None  # --researchqa-max-cost
        self.spent_usd = 0.0  # by this process
        self.unpriced_calls = 0  # calls of this process with no known price (a local server, an unlisted model)
        self.cut_off_calls = 0  # requests on the wire when the run stopped: the provider may bill them
        self.ledger: Optional["SpendLedger"] = None  # the run's spending over its xdist workers
        self._recorded_at = 0.0  # when this process last wrote its spend to the ledger
        self.activity = Activity()  # answers and verdicts asked and done, requests on the wire: for progress
        self.stopping = False  # Ctrl-C or -x: calls not yet sent are not sent (stop_new_calls)

    async def send(self, call: Awaitable["CallResult"]) -> "CallResult":
        """One request to a provider: counted on the wire while it is, its known price charged to the budget (a
        reply with no choices that reports its usage too: it was billed)."""
        try:
            result = await self.activity.send(call)
        except EmptyResponse as empty:
            if empty.billed:
                self._charge(empty.cost_usd)
            raise
        return self.charge(result)

    def charge(self, result: "CallResult") -> "CallResult":
        """Count a finished call's known price against the budget (a call without one, as such)."""
        self._charge(result.cost_usd)
        return result

    def _charge(self, cost_usd: Optional[float]) -> None:
        if cost_usd is None:
            self.unpriced_calls += 1
        else:
            self.spent_usd += cost_usd
        self._record()

    def _record(self, *, final: bool = False) -> None:
        """Write this process's spend for the run's other processes: at every call when a budget reads it
        before each call; else (only the controller's progress lines read it) at most once a second, and
        once more as the runner closes."""
        if self.ledger is None:
            return
        now = time.monotonic()
        if final or self.budget_usd is not None or now - self._recorded_at >= 1.0:
            self._recorded_at = now
            self.ledger.record(self.spend())

    def spend(self) -> "Spend":
        """What this process's calls have cost so far."""
        from ..costs import Spend

        return Spend(self.spent_usd, self.unpriced_calls, self.cut_off_calls)

    def limit(self, provider: str, concurrency: int) -> None:
        """Calls in flight to one provider or server, when it differs from the run's default (a local
        server that answers one request at a time). Set before its first call; the lowest limit wins."""
        self._limits[provider] = min(concurrency, self._limits.get(provider, concurrency))

    def slots(self, provider: str) -> int:
        return self._limits.get(provider, self.concurrency)

    def submit(self, provider: str, job: Callable[[], Awaitable[Any]]) -> concurrent.futures.Future[Any]:
        return self.run(lambda: self.bounded(provider, job))

    def run(self, job: Callable[[], Coroutine[Any, Any, Any]]) -> concurrent.futures.Future[Any]:
        """Run a coroutine on the runner's loop, outside any provider's slots.

        Its result is handed to the returned future by the coroutine itself, the moment it has one: a task's
        own completion callback would run only after everything the loop had queued before it, and litellm
        queues its logging of each reply there as it returns it. A test waiting for its row's answer waited
        for that logging too (about 3 ms a fresh row on a busy machine, benchmarks/model_pipeline.py)."""
        delivered: concurrent.futures.Future[Any] = concurrent.futures.Future()

        async def deliver() -> None:
            _HAND_OVER.set(functools.partial(_settle, delivered))  # this task's own context
            try:
                result = await job()
            except asyncio.CancelledError:  # the runner closing: nobody waits any more
                delivered.cancel()
                raise
            except BaseException as error:  # noqa: BLE001 -- handed over as it is, like any failure
                _settle(delivered, error=error)
                if not isinstance(error, Exception):
                    raise
            else:
                _settle(delivered, result)

        task = asyncio.run_coroutine_threadsafe(deliver(), self._loop)
        # A waiter that cancels stops the coroutine (and the reference keeps its task alive while it is awaited).
        delivered.add_done_callback(lambda done: task.cancel() if done.cancelled() else None)
        return delivered

    async def bounded(self, provider: str, job: Callable[[], Awaitable[Any]]) -> Any:
        """``job()`` holding one of ``provider``'s slots."""
        slots = self._slots.setdefault(provider, asyncio.Semaphore(self.slots(provider)))
        async with slots:
            return await job()

    async def pace(self, provider: str, priced: bool = True) -> None:
        """Wait for this provider's next start slot; call right before each request is sent.
        A run that is stopping stops every request from here on, a spent budget every priced one (a local server's
        calls cost nothing the budget counts: its verdicts on answers already paid for still come); calls already
        sent finish."""
        if self.stopping:
            raise RunStopping("the run is stopping: no new call starts")
        if priced and self.budget_usd is not None and (
                self.ledger.total(self.spent_usd) if self.ledger is not None else self.spent_usd) >= self.budget_usd:
            from ..costs import BUDGET_STOP, spend_text

            raise BudgetReached(f"{BUDGET_STOP} ({spend_text(self.budget_usd)}) was spent before this call")
        if self.rows_per_minute:
            if provider not in self._pacers:
                self._pacers[provider] = _Pacer(self.rows_per_minute)
            await self._pacers[provider].wait()

    def stop_new_calls(self) -> None:
        """From now on no request is sent (those on the wire finish): the run is stopping."""
        self.stopping = True

    def close(self) -> None:
        """Cancel calls nobody will wait for (after -x, or rows that errored), then stop. Requests on the wire are
        counted as cut off: the provider may have done (and billed) their work."""
        self.cut_off_calls += self.activity.sending
        self._record(final=True)
        if self._loop.is_running():

            async def drain() -> None:
                pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
                for task in pending:
                    task.cancel()
                await asyncio.gather(*pending, return_exceptions=True)

            try:
                asyncio.run_coroutine_threadsafe(drain(), self._loop).result(timeout=5)
            except Exception:  # noqa: BLE001 -- shutting down regardless
                pass
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)


def hand_over(result: Any) -> None:
    """Give the waiter of the job in progress on the runner's loop its result now, before the job ends (its own
    return value is then not handed over again). A system's call hands over its answer before writing it to the
    cache: the write (a file made and renamed, 0.1-0.3 ms on a slow disk) then runs while the test thread wakes,
    instead of before. The job still holds its claim on the key until the entry is written, so a call for the same
    key, from this process or another, waits for the entry rather than asking again. Outside a job: nothing.

    Then this thread gives up the processor once (``sched_yield``, which also lets go of the GIL): the woken test
    thread needs the GIL, and the model thread, busy with the write and litellm's logging of the reply, kept it
    until the interpreter's switch interval forced a switch (up to 5 ms); the test's thread is the one a run
    waits for."""
    settle = _HAND_OVER.get()
    if settle is not None:
        settle(result)
        _yield_processor()


# os.sched_yield releases the GIL while it yields; where there is none (Windows), nothing.
_yield_processor: Callable[[], None] = getattr(os, "sched_yield", lambda: None)


def _settle(future: "concurrent.futures.Future[Any]", result: Any = None,
            error: Optional[BaseException] = None) -> None:
    """Hand a result (or failure) to ``future`` unless it was cancelled meanwhile."""
    try:
        if error is None:
            future.set_result(result)
        else:
            future.set_exception(error)
    except concurrent.futures.InvalidStateError:  # cancelled by its waiter
        pass


async def with_retries(
    attempt_call: Callable[[], Awaitable[CallResult]],
    *,
    retries: int,
    validate: Callable[[CallResult], Any],
    backoff_s: float = 0.5,
    describe: str = "model",
    schema: Optional[dict[str, Any]] = None,
    retry_timeouts: bool = True,
) -> tuple[CallResult, Any]:
    """Call and validate: repair a malformed reply once, retry only transport faults as they were.

    Transient faults (timeouts, rate limits, 5xx, connection errors, empty responses) are
    retried identically with backoff, up to ``retries`` times. A reply that does not validate is
    not asked for again identically (at temperature 0 it would fail identically): one repair call
    follows, with the bad reply as the assistant turn and a user turn giving the parse error and
    ``schema`` (and, when it was cut off at the output limit, a larger limit). If that also fails,
    :class:`ProviderError` with the error and the reply's first characters. ``retries=0`` repairs
    nothing either. ``retry_timeouts=False``: a call past its deadline fails at once (a local server that
    cannot cancel a request is still busy with it: a retry would only queue behind it).
    """
    from .contract import MalformedReply

    failures: list[str] = []
    transport_attempts = 0
    calls = 0
    repair: Optional[RepairTurn] = None
    while True:
        token = REPAIR_TURN.set(repair)
        result = CallResult(content=None, latency_s=0.0)
        try:
            calls += 1
            result = await attempt_call()
            result.attempts = calls
            result.repaired = repair is not None
            return result, validate(result)
        except MalformedReply as error:
            if repair is not None or retries == 0:
                message = _malformed_message(error, result, repaired=repair is not None)
                raise _failed(f"{describe}: {message}", calls) from None
            repair = repair_turn(result, error, schema)
            continue
        except Exception as error:  # noqa: BLE001 -- provider SDKs raise many types
            if not (is_transient(error) or isinstance(error, EmptyResponse)):
                sent = calls - 1 if isinstance(error, CallNotStarted) else calls  # a refused call sends nothing
                failed = _failed(f"{describe}: {_short(error)}", sent)
                failed.stopped = isinstance(error, RunStopping)  # the run's, not the call's: no failure to count
                raise failed from None
            if not retry_timeouts and is_timeout(error):
                raise _failed(f"{describe}: timed out ({_short(error)}); not retried: the server may still be "
                              "working on the abandoned request", calls) from None
            failures.append(_short(error))
            last_error: Optional[BaseException] = error
        finally:
            REPAIR_TURN.reset(token)
        if transport_attempts >= retries:
            raise _failed(f"{describe}: failed after {calls} attempts; last: {failures[-1]}", calls)
        delay = backoff_s * (2**transport_attempts) * (0.5 + random.random())
        transport_attempts += 1
        wait = retry_after_s(last_error)
        await asyncio.sleep(max(delay, min(wait, MAX_RETRY_AFTER_S)) if wait is not None else delay)


def repair_turn(result: CallResult, error: BaseException, schema: Optional[dict[str, Any]]) -> RepairTurn:
    """The follow-up that asks the model to fix its own reply (never the identical request again)."""
    reply = result.content or ""
    cut_off = result.finish_reason == "length"
    problem = (f"Your reply was cut off at the output limit before it was complete ({_why(error)})."
               if cut_off else f"Your reply could not be used: {_why(error)}.")
    ask = "Reply again with only one complete JSON object, nothing before or after it"
    if schema == {}:  # an empty schema: the reply is plain text (the rubric seed's released prompts)
        ask = "Reply again in exactly the format the first message asks for, nothing before or after it."
    elif schema:
        ask += f", following this JSON schema:\n{json.dumps(schema, separators=(',', ':'))}"
    else:
        ask += ", in the format the first message asks for."
    if cut_off:
        ask += "\nKeep it short: quote only the passages you need."
    echoed = reply if len(reply) <= ECHO_CHARS else reply[:ECHO_CHARS] + " [...]"
    messages = ({"role": "assistant", "content": echoed or "(empty reply)"},
                {"role": "user", "content": f"{problem}\n{ask}"})
    max_tokens = None
    if cut_off:
        used = result.max_tokens or result.completion_tokens or 0
        max_tokens = max(2 * used, REPAIR_MIN_TOKENS)
    return RepairTurn(messages, max_tokens)


def _why(error: BaseException) -> str:
    """The parse error without the reply's excerpt (the model sees its whole reply above)."""
    return str(error).split("; it began:")[0].rstrip(".")


def _malformed_message(error: BaseException, result: CallResult, *, repaired: bool) -> str:
    how = "after one repair follow-up" if repaired else "(no repair: retries are 0)"
    cut = ", cut off at the output limit" if result.finish_reason == "length" else ""
    begins = " ".join((result.content or "").split())[:160]
    return f"malformed reply {how}{cut}: {_why(error)}; the reply began: {begins!r}"


# A provider's Retry-After is honoured up to this long per wait (the call's own deadline still holds).
MAX_RETRY_AFTER_S = 60.0


def retry_after_s(error: Optional[BaseException]) -> Optional[float]:
    """Seconds a rate-limited or unavailable provider asked us to wait (Retry-After: seconds or an HTTP date)."""
    if error is None:
        return None
    # litellm keeps the provider's headers on the exception; its .response is one it built itself.
    value = None
    for headers in (getattr(error, "litellm_response_headers", None),
                    getattr(getattr(error, "response", None), "headers", None), getattr(error, "headers", None)):
        if headers:
            value = headers.get("retry-after") or headers.get("Retry-After")
            if value:
                break
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    import datetime

    return max(0.0, (when - datetime.datetime.now(datetime.timezone.utc)).total_seconds())


def _redacted(text: str) -> str:
    from ..llm_params import redact

    return redact(text, list(CALL_SECRETS.get()))


def _short(error: BaseException) -> str:
    text = " ".join(str(error).split())
    if not text and is_timeout(error):  # asyncio's own deadline says nothing of itself
        text = "no reply before the call's deadline (--researchqa-timeout)"
    return f"{type(error).__name__}: {text[:300]}"
