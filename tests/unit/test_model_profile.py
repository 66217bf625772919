"""The local-server profile's rules and what servers report about themselves (pure functions)."""

from __future__ import annotations

import pytest

from pytest_researchqa.llm.server_info import context_from_models, context_from_props
from pytest_researchqa.llm_params import (
    LOCAL_TIMEOUT_S,
    Secret,
    call_limits,
    is_local,
    is_loopback_url,
    parse_model_params,
)


@pytest.mark.parametrize(("url", "loopback"), [
    ("http://127.0.0.1:8000/v1", True), ("http://127.8.9.10/v1", True), ("http://localhost:11434/v1", True),
    ("http://[::1]:8080/v1", True), ("http://LOCALHOST/v1", True), ("http://api.localhost/v1", True),
    ("http://192.168.1.20:8000/v1", False), ("https://api.openai.com/v1", False), ("http://0.0.0.0:8000", True),
    ("not a url", False), ("http://[::1/v1", False),
])
def test_only_addresses_on_this_machine_are_loopback(url, loopback):
    assert is_loopback_url(url) is loopback


def test_the_profile_follows_the_api_base_unless_named():
    assert is_local({"api_base": "http://127.0.0.1:8000/v1"})
    assert not is_local({"api_base": "http://127.0.0.1:8000/v1", "profile": "remote"}), "an SSH tunnel to a provider"
    assert is_local({"api_base": "http://10.0.0.5:8000/v1", "profile": "local"}), "a server on the LAN"
    assert not is_local({}) and not is_local({"api_base": "https://api.openai.com/v1"})


def test_a_local_server_gets_one_slot_and_a_long_deadline_unless_the_user_chose():
    local = {"api_base": "http://127.0.0.1:8000/v1"}
    assert call_limits(local, concurrency=5, timeout_s=120.0) == (1, LOCAL_TIMEOUT_S)
    assert call_limits(local, concurrency=5, timeout_s=120.0,
                       given=frozenset({"researchqa_concurrency", "researchqa_timeout"})) == (5, 120.0)
    assert call_limits({**local, "concurrency": 2, "timeout": 300}, concurrency=5, timeout_s=120.0) == (2, 300.0)
    assert call_limits({"api_base": "https://api.openai.com/v1"}, concurrency=5, timeout_s=120.0) == (5, 120.0)
    assert call_limits({**local, "concurrency": 0, "timeout": "soon"}, concurrency=5, timeout_s=120.0) == \
        (1, LOCAL_TIMEOUT_S), "nonsense values fall back to the profile"


def test_an_unknown_profile_is_a_clear_error():
    with pytest.raises(ValueError, match="profile must be one of local, remote"):
        parse_model_params(["openai/q:profile=fast"], ["openai/q"])


def test_credentials_given_as_model_params_show_redacted_but_work_as_strings():
    params = parse_model_params(["openai/q:api_key=sk-abcdef0123456789", "openai/q:max_tokens=256"], ["openai/q"])
    key = params["openai/q"]["api_key"]
    assert isinstance(key, Secret) and key == "sk-abcdef0123456789" and f"Bearer {key}" == "Bearer sk-abcdef0123456789"
    assert "sk-abcdef" not in repr(params) and "<redacted>" in repr(params)
    assert params["openai/q"]["max_tokens"] == 256


def test_servers_report_their_window_in_their_own_places():
    assert context_from_props({"default_generation_settings": {"n_ctx": 8192}, "total_slots": 4}) == 8192
    assert context_from_props({"n_ctx": 2048}) == 2048
    assert context_from_props({"default_generation_settings": {"n_ctx": "big"}}) is None
    assert context_from_props(["not", "a", "dict"]) is None
    vllm = {"data": [{"id": "qwen", "max_model_len": 32768}, {"id": "other", "max_model_len": 4096}]}
    assert context_from_models(vllm, "qwen") == (32768, None)
    assert context_from_models(vllm, "unknown") == (None, None), "several models and none named: no guess"
    llama = {"data": [{"id": "model.gguf", "meta": {"n_ctx_train": 131072}}]}
    assert context_from_models(llama, "smollm2") == (None, 131072), "the only model served is the one asked for"
    assert context_from_models({"data": "x"}, "q") == (None, None)
