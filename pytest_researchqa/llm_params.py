"""Parsing ``--researchqa-model-param`` (light: runs at start-up when models are named)."""

from __future__ import annotations

import json
import re
from typing import Any


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
