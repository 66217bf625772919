"""What a local OpenAI-compatible server says about itself: its context window.

Asked once per model when its caller is built (off the event loop), with a short
timeout, never following a redirect. Servers report it in different places:

* llama.cpp's ``llama-server``: ``GET /props`` → ``default_generation_settings.n_ctx``
  (the window each request gets);
* vLLM: ``GET /v1/models`` → the model's ``max_model_len``;
* llama.cpp's ``/v1/models`` also carries ``meta.n_ctx_train`` (what the model was
  trained with, an upper bound: used only when nothing else is reported).

llama-cpp-python's server, Ollama's ``/v1`` and LM Studio report none: then the
caller assumes the local profile's default (``max_input_tokens`` overrides it).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any, Optional

PROBE_TIMEOUT_S = 3.0


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the key is for this server only


def _get_json(url: str, api_key: Optional[str]) -> Any:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=PROBE_TIMEOUT_S) as response:
            return json.loads(response.read(1_000_000))
    except (OSError, ValueError, urllib.error.HTTPError):
        return None


def _positive_int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def context_from_props(props: Any) -> Optional[int]:
    """``n_ctx`` from a llama.cpp ``/props`` document."""
    if not isinstance(props, dict):
        return None
    settings = props.get("default_generation_settings")
    found = _positive_int(settings.get("n_ctx")) if isinstance(settings, dict) else None
    return found or _positive_int(props.get("n_ctx"))


def context_from_models(models: Any, alias: str) -> tuple[Optional[int], Optional[int]]:
    """(serving window, training window) of ``alias`` (or the only model) in a ``/v1/models`` list."""
    entries = models.get("data") if isinstance(models, dict) else None
    if not isinstance(entries, list):
        return None, None
    entries = [e for e in entries if isinstance(e, dict)]
    chosen = [e for e in entries if e.get("id") == alias] or (entries if len(entries) == 1 else [])
    if not chosen:
        return None, None
    entry = chosen[0]
    meta = entry.get("meta") if isinstance(entry.get("meta"), dict) else {}
    return _positive_int(entry.get("max_model_len")), _positive_int(meta.get("n_ctx_train"))


def reported_context_tokens(api_base: str, model: str, api_key: Optional[str] = None) -> Optional[int]:
    """The context window the server at ``api_base`` reports for ``model`` (``openai/<alias>``), or None."""
    base = api_base.rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    found = context_from_props(_get_json(f"{root}/props", api_key))
    if found:
        return found
    serving, trained = context_from_models(_get_json(f"{base}/models", api_key), model.split("/", 1)[-1])
    return serving or trained
