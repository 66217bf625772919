"""Parsing ``--researchqa-model-param`` (light: runs at start-up when models are named)."""

from __future__ import annotations

import json
import re
from typing import Any, Optional


def parse_model_params(entries: list[str], models: list[str]) -> dict[str, dict]:
    """``NAME:key=value`` entries into {model: {key: value}} for the models of this run.

    Values parse as JSON when they can (``temperature=0``, ``response_format={...}``).
    """
    params: dict[str, dict] = {model: {} for model in models}
    for entry in entries:
        # The value may hold ':' and '=' (URLs), the model name ':' (ollama/llama3:8b).
        head, equals, raw = entry.partition("=")
        name, colon, key = head.rpartition(":")
        if not colon or not equals or not name or not key.strip():
            raise ValueError(f"{entry!r}: expected MODEL:KEY=VALUE, e.g. openai/local:api_base=http://127.0.0.1:8000/v1")
        if name not in params:
            continue  # an ini file may configure models this run does not name
        try:
            value: Any = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        key = key.strip()
        if key == "profile" and value not in PROFILES:
            raise ValueError(f"{entry!r}: profile must be one of {', '.join(PROFILES)}")
        if _SECRET_NAME.search(key) and isinstance(value, str):
            value = Secret(value)
        params[name][key] = value
    return params


class Secret(str):
    """A credential: the string itself wherever it is used, ``'<redacted>'`` wherever it is shown.

    Tracebacks with locals (``--full-trace -l``, ``--showlocals``), dataclass and dict reprs all
    go through ``repr``, so a key given as a model parameter never appears in them.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "'<redacted>'"


# ------------------------------------------------------------------ the local-server profile

PROFILES = ("local", "remote")
# A local server answers one request at a time and slowly: defaults for it (docs/models.md).
LOCAL_CONCURRENCY = 1
LOCAL_TIMEOUT_S = 900.0
# The context window assumed for a local server that does not report its own (llama-cpp-python's
# server does not; llama.cpp's llama-server and vLLM do).
LOCAL_CONTEXT_TOKENS = 4096
_LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")


def is_loopback_url(url: object) -> bool:
    """Whether a URL points at this machine (127.0.0.0/8, ::1, localhost)."""
    import ipaddress
    from urllib.parse import urlsplit

    try:
        host = urlsplit(str(url)).hostname or ""
    except ValueError:
        return False
    if host.lower() in _LOOPBACK_NAMES or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_local(params: dict[str, Any]) -> bool:
    """The local-server profile: ``profile=local``, or an ``api_base`` on this machine (unless ``profile=remote``)."""
    profile = params.get("profile")
    if profile in PROFILES:
        return profile == "local"
    return is_loopback_url(params["api_base"]) if params.get("api_base") else False


def call_limits(params: dict[str, Any], *, concurrency: int, timeout_s: float, given: frozenset[str] = frozenset()
                ) -> tuple[int, float]:
    """A model's calls in flight and per-call deadline: its own ``concurrency``/``timeout`` params, else the
    run's options when given, else the profile's defaults (a local server: one at a time, a long deadline)."""
    local = is_local(params)
    slots = params.get("concurrency")
    if not isinstance(slots, int) or isinstance(slots, bool) or slots < 1:
        slots = LOCAL_CONCURRENCY if local and "researchqa_concurrency" not in given else concurrency
    deadline = params.get("timeout")
    if not isinstance(deadline, (int, float)) or isinstance(deadline, bool) or deadline <= 0:
        deadline = LOCAL_TIMEOUT_S if local and "researchqa_timeout" not in given else timeout_s
    return slots, float(deadline)


_FAMILY_PATTERNS = (
    ("openai", r"(^|/)(gpt|o[134]|chatgpt|text-davinci|openai)"),
    ("anthropic", r"(^|/)(claude|anthropic)"),
    ("google", r"(^|/)(gemini|gemma|vertex|palm)"),
    ("meta", r"(^|/)(llama|meta-llama)"),
    ("mistral", r"(^|/)(mistral|mixtral|codestral|magistral)"),
    ("deepseek", r"(^|/)deepseek"),
    ("qwen", r"(^|/)qwen"),
    ("xai", r"(^|/)grok"),
    ("zhipu", r"(^|/)(glm|zai)"),
)


def model_family(model: str) -> str:
    """The model family of a litellm model string (its provider prefix when unknown)."""
    lowered = model.lower()
    # The model's own name decides ("openai/gemini-x" served by a proxy is Gemini); the
    # provider prefix only when the name says nothing.
    for text in (lowered.rsplit("/", 1)[-1], lowered):
        for family, pattern in _FAMILY_PATTERNS:
            if re.search(pattern, text):
                return family
    return lowered.split("/", 1)[0] if "/" in lowered else lowered


_SECRET_NAME = re.compile(r"(api[_-]?key|token|secret|password|authorization|credential)", re.IGNORECASE)
_SECRET_ENV = re.compile(r"(API_KEY|_TOKEN|_SECRET|_PASSWORD|ACCESS_KEY)$")


def known_secrets(model_params: dict[str, dict[str, object]], environ: Optional[dict[str, str]] = None) -> list[str]:
    """Values that must never appear in anything the plugin writes: credentials given as model
    parameters, and provider keys in the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...)."""
    import os

    environ = dict(os.environ) if environ is None else environ
    found = {str(v) for params in model_params.values() for k, v in params.items() if _SECRET_NAME.search(k)}
    found |= {v for k, v in environ.items() if _SECRET_ENV.search(k)}
    return [Secret(s) for s in sorted((s for s in found if len(s) >= 8), key=len, reverse=True)]


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with every known secret replaced (also when a provider echoes one back in an error)."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, "<redacted>")
    return text
