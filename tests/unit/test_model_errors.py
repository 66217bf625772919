"""How a failed model call is classed (retried or not) and worded: plain functions, no server."""

from __future__ import annotations

import asyncio

import pytest

from pytest_researchqa.llm.engine import CallResult, ProviderError, is_transient, with_retries


class InternalServerError(Exception):
    """The shape litellm gives a missing key: a 500 raised before anything is sent."""

    status_code = 500


def test_a_missing_provider_key_is_not_retried_though_litellm_words_it_as_a_server_error():
    missing = InternalServerError("litellm.InternalServerError: OpenAIException - Missing credentials. Please pass "
                                  "an `api_key`, or set the `OPENAI_API_KEY` environment variable.")
    assert not is_transient(missing)
    assert is_transient(InternalServerError("upstream overloaded")), "a real 500 still is"
    calls = []

    async def attempt() -> CallResult:
        calls.append(1)
        raise missing

    with pytest.raises(ProviderError, match="Missing credentials"):
        asyncio.run(with_retries(attempt, retries=3, validate=lambda r: r, backoff_s=0))
    assert len(calls) == 1


def test_a_call_past_its_deadline_says_so_where_the_timeout_itself_says_nothing():
    async def attempt() -> CallResult:
        raise TimeoutError()

    with pytest.raises(ProviderError) as raised:
        asyncio.run(with_retries(attempt, retries=1, validate=lambda r: r, backoff_s=0, describe="openai/slow"))
    assert str(raised.value).endswith("failed after 2 attempts; last: TimeoutError: no reply before the call's "
                                      "deadline (--researchqa-timeout)"), str(raised.value)
