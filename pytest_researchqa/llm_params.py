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
        params[name][key.strip()] = value
    return params


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
    return sorted((s for s in found if len(s) >= 8), key=len, reverse=True)


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with every known secret replaced (also when a provider echoes one back in an error)."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, "<redacted>")
    return text
