"""Pipelined model calls: every row's call in flight at once, bounded per provider.

Calls run on one background event loop. Each provider gets a semaphore of
``concurrency`` slots and, optionally, a rows-per-minute pacing; a test
thread waits only for its own row's future, so a slow row delays nobody.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Optional

# Status codes worth retrying: timeouts, conflicts, rate limits, server errors.
TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})


class ProviderError(Exception):
    """A call that failed for good: the row errors with this message."""


@dataclass
class CallResult:
    """A successful model call."""

    content: Optional[str]
    latency_s: float
    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None
    cost_usd: Optional[float] = None
    attempts: int = 1
    extra: dict = field(default_factory=dict)


def is_transient(error: BaseException) -> bool:
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        return status in TRANSIENT_STATUS
    name = type(error).__name__
    return name in {"Timeout", "APIConnectionError", "APITimeoutError", "ServiceUnavailableError",
                    "InternalServerError", "RateLimitError", "TimeoutError"} or isinstance(error, asyncio.TimeoutError)


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


class ModelRunner:
    def __init__(self, concurrency: int = 5, rows_per_minute: Optional[int] = None) -> None:
        self.concurrency = concurrency
        self.rows_per_minute = rows_per_minute
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="researchqa-models", daemon=True)
        self._thread.start()
        self._slots: dict[str, asyncio.Semaphore] = {}
        self._pacers: dict[str, _Pacer] = {}

    def submit(self, provider: str, job: Callable[[], Awaitable[Any]]) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(self._bounded(provider, job), self._loop)

    async def _bounded(self, provider: str, job: Callable[[], Awaitable[Any]]) -> Any:
        slots = self._slots.setdefault(provider, asyncio.Semaphore(self.concurrency))
        async with slots:
            return await job()

    async def pace(self, provider: str) -> None:
        """Wait for this provider's next start slot; call right before each request is sent."""
        if self.rows_per_minute:
            if provider not in self._pacers:
                self._pacers[provider] = _Pacer(self.rows_per_minute)
            await self._pacers[provider].wait()

    def close(self) -> None:
        """Cancel calls nobody will wait for (after -x, or rows that errored), then stop."""
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


async def with_retries(
    attempt_call: Callable[[], Awaitable[CallResult]],
    *,
    retries: int,
    validate: Callable[[CallResult], Any],
    backoff_s: float = 0.5,
    describe: str = "model",
) -> tuple[CallResult, Any]:
    """Call, validate, and retry transient failures and malformed replies with backoff."""
    from .contract import MalformedReply

    failures: list[str] = []
    last_error: Optional[BaseException] = None
    for attempt in range(retries + 1):
        try:
            result = await attempt_call()
            result.attempts = attempt + 1
            return result, validate(result)
        except MalformedReply as error:
            failures.append(f"malformed reply: {error}")
            last_error = None
        except Exception as error:  # noqa: BLE001 -- provider SDKs raise many types
            if not is_transient(error):
                raise ProviderError(f"{describe}: {_short(error)}") from None
            failures.append(_short(error))
            last_error = error
        if attempt < retries:
            delay = backoff_s * (2**attempt) * (0.5 + random.random())
            wait = retry_after_s(last_error)
            await asyncio.sleep(max(delay, min(wait, MAX_RETRY_AFTER_S)) if wait is not None else delay)
    raise ProviderError(f"{describe}: failed after {retries + 1} attempts; last: {failures[-1]}")


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


def _short(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:300]}"
