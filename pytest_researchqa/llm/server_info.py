"""What a local OpenAI-compatible server says about itself: its context window.

Asked once per model when its caller is built (off the event loop), within one short
deadline for the whole probe (a server that drips its reply cannot hang the run), never
following a redirect. Servers report it in different places:

* llama.cpp's ``llama-server``: ``GET /props`` → ``default_generation_settings.n_ctx``
  (the window each request gets);
* vLLM: ``GET /v1/models`` → the model's ``max_model_len``;
* llama.cpp's ``/v1/models`` also carries ``meta.n_ctx_train`` (what the model was
  trained with, an upper bound: used only when nothing else is reported).

llama-cpp-python's server, Ollama's ``/v1`` and LM Studio report none: then the
caller assumes the local profile's default (``max_input_tokens`` overrides it).
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
import urllib.parse
from typing import Any, Optional

PROBE_TIMEOUT_S = 3.0  # each connect and read
PROBE_DEADLINE_S = 5.0  # the whole probe: a server that drips its reply a byte at a time is cut off here


def _get_json(url: str, api_key: Optional[str], seconds: float) -> Any:
    """The JSON document at ``url``, or None: not 200 (a redirect is not followed: the key is for this
    server only), not JSON, or not all there within ``seconds``."""
    if seconds <= 0:
        return None
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    try:
        connection = kind(parts.hostname, parts.port, timeout=min(PROBE_TIMEOUT_S, seconds))
    except (OSError, ValueError, http.client.HTTPException):
        return None
    # Per-read timeouts never end a drip (headers included): at the deadline the socket is shut,
    # which ends whichever read is waiting.
    cut = threading.Timer(seconds, _shut, (connection,))
    cut.daemon = True
    cut.start()
    headers = {"Accept": "application/json", **({"Authorization": f"Bearer {api_key}"} if api_key else {})}
    try:
        connection.request("GET", (parts.path or "/") + (f"?{parts.query}" if parts.query else ""), headers=headers)
        response = connection.getresponse()
        if response.status != 200:
            return None
        return json.loads(response.read(1_000_000))
    except (OSError, ValueError, http.client.HTTPException):
        return None
    finally:
        cut.cancel()
        connection.close()


def _shut(connection: http.client.HTTPConnection) -> None:
    sock = connection.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


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


def reported_context_tokens(api_base: str, model: str, api_key: Optional[str] = None,
                            deadline_s: float = PROBE_DEADLINE_S) -> Optional[int]:
    """The context window the server at ``api_base`` reports for ``model`` (``openai/<alias>``), or None;
    both questions together take at most ``deadline_s``."""
    deadline = time.monotonic() + deadline_s
    base = api_base.rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    found = context_from_props(_get_json(f"{root}/props", api_key, deadline - time.monotonic()))
    if found:
        return found
    serving, trained = context_from_models(_get_json(f"{base}/models", api_key, deadline - time.monotonic()),
                                           model.split("/", 1)[-1])
    return serving or trained
