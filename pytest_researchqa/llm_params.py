"""Parsing ``--researchqa-model-param`` (light: runs at start-up when models are named)."""

from __future__ import annotations

import json
import re
from typing import Any, Optional


def parse_model_params(entries: list[str], models: list[str]) -> dict[str, dict[str, Any]]:
    """``NAME:key=value`` entries into {model: {key: value}} for the models of this run.

    Values parse as JSON when they can (``temperature=0``, ``response_format={...}``).
    """
    params: dict[str, dict[str, Any]] = {model: {} for model in models}
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
        params[name][key] = protect(key, value)
    for name, given in params.items():
        try:
            endpoints(given)
        except ValueError as error:
            raise ValueError(f"{name}: {error}") from None
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
    """Whether a URL points at this machine: 127.0.0.0/8, ::1, localhost, the unspecified addresses
    0.0.0.0 and ::, IPv4-mapped IPv6 spellings of those ([::ffff:127.0.0.1]) and integer spellings."""
    import ipaddress
    from urllib.parse import urlsplit

    try:
        host = urlsplit(str(url)).hostname or ""
    except ValueError:
        return False
    if host.lower() in _LOOPBACK_NAMES or host.lower().endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(int(host) if host.isdigit() else host)  # 2130706433 is 127.0.0.1
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # [::ffff:127.0.0.1]
    # 0.0.0.0 and [::] as a destination reach this machine too.
    return address.is_loopback or address.is_unspecified


def is_local(params: dict[str, Any]) -> bool:
    """The local-server profile: ``profile=local``, or an ``api_base`` on this machine (unless ``profile=remote``);
    with several endpoints, all of them on this machine."""
    profile = params.get("profile")
    if profile in PROFILES:
        return bool(profile == "local")
    bases = params.get("api_base")
    if isinstance(bases, list):
        return bool(bases) and all(is_loopback_url(base) for base in bases)
    return is_loopback_url(bases) if bases else False


def local_models(model_params: dict[str, Any]) -> frozenset[str]:
    """The models of ``{model: params}`` served on this machine (``is_local``)."""
    return frozenset(name for name, params in model_params.items() if isinstance(params, dict) and is_local(params))


def endpoints(params: dict[str, Any]) -> list[dict[str, Any]]:
    """The endpoints of a model served several times over: ``api_base`` and/or ``api_key`` given as lists
    (several servers, several keys; a single value is shared by all). Empty for a model with one endpoint."""
    bases, keys = params.get("api_base"), params.get("api_key")
    if not isinstance(bases, list) and not isinstance(keys, list):
        return []
    for name, value in (("api_base", bases), ("api_key", keys)):
        if isinstance(value, list) and not value:
            raise ValueError(f"{name}: an empty list: give one value, or one per endpoint")
    count = max(len(v) for v in (bases, keys) if isinstance(v, list))
    for name, value in (("api_base", bases), ("api_key", keys)):
        if isinstance(value, list) and len(value) != count:
            raise ValueError(f"{name}: {len(value)} value(s) for {count} endpoint(s): give one, or one per endpoint")
        if isinstance(value, list) and not all(isinstance(v, str) and v for v in value):
            raise ValueError(f"{name}: every endpoint's value is a non-empty string")
    found = []
    for n in range(count):
        endpoint: dict[str, Any] = {}
        for name, value in (("api_base", bases), ("api_key", keys)):
            chosen = value[n] if isinstance(value, list) else value
            if chosen:
                endpoint[name] = protect(name, chosen)
        found.append(endpoint)
    return found


def call_limits(params: dict[str, Any], *, concurrency: int, timeout_s: float, given: frozenset[str] = frozenset()
                ) -> tuple[int, float]:
    """A model's calls in flight and per-call deadline: its own ``concurrency``/``timeout`` params, else the
    run's options when given, else the profile's defaults (a local server: one at a time, a long deadline)."""
    local = is_local(params)
    slots = params.get("concurrency")
    if not isinstance(slots, int) or isinstance(slots, bool) or slots < 1:
        slots = LOCAL_CONCURRENCY if local and "researchqa_concurrency" not in given else concurrency
        slots *= max(len(endpoints(params)), 1)  # each endpoint has slots of its own
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


def model_family(model: str, *, local: bool = False) -> Optional[str]:
    """The model family of a litellm model string (its provider prefix when the name says nothing); None
    (unknown) for a model served on this machine (``local``: ``is_local`` of its params) whose served name
    says nothing: ``openai/<alias>`` on a local server is whatever model the server loaded, not OpenAI's."""
    lowered = model.lower()
    # The model's own name decides ("openai/gemini-x" served by a proxy is Gemini); the
    # provider prefix only when the name says nothing.
    for family, pattern in _FAMILY_PATTERNS:
        if re.search(pattern, lowered.rsplit("/", 1)[-1]):
            return family
    if local:
        return None
    for family, pattern in _FAMILY_PATTERNS:
        if re.search(pattern, lowered):
            return family
    return lowered.split("/", 1)[0] if "/" in lowered else lowered


def same_family(first: Optional[str], second: Optional[str]) -> bool:
    """Two families known to be the same (an unknown family is never the same as another)."""
    return first is not None and first == second


# A parameter (or header, at any depth) whose name says it holds a credential: api_key, x-api-key,
# aws_access_key_id, aws_secret_access_key, vertex_credentials, Authorization, access_token,
# password, cookie... As whole words of the name, so max_tokens and top_k are not.
_SECRET_NAME = re.compile(r"(^|[^a-z])(api[_-]?key|key|token|secret|password|passwd|authorization|credentials?|"
                          r"cookie|bearer)([^a-z]|$)", re.IGNORECASE)
_SECRET_ENV = re.compile(r"(API_KEY|_TOKEN|_SECRET|_PASSWORD|ACCESS_KEY|ACCESS_KEY_ID|_CREDENTIALS)$")


def is_secret_name(name: object) -> bool:
    return _SECRET_NAME.search(str(name)) is not None


def protect(name: object, value: Any) -> Any:
    """A parameter's value with every credential in it a :class:`Secret`: the value of a secret-named
    key at any depth (headers, credential objects), and the password of a URL (``user:password@``)."""
    if isinstance(value, dict):
        return {k: protect(k, v) if not is_secret_name(name) else protect(name, v) for k, v in value.items()}
    if isinstance(value, list):
        return [protect(name, v) for v in value]
    if isinstance(value, str) and (is_secret_name(name) or _url_password(value)):
        return Secret(value)
    return value


def _url_password(text: str) -> Optional[str]:
    if "@" not in text or "://" not in text:
        return None
    from urllib.parse import urlsplit

    try:
        return urlsplit(text).password or urlsplit(text).username
    except ValueError:
        return None


def _secret_strings(name: object, value: Any) -> set[str]:
    if isinstance(value, dict):
        return {s for k, v in value.items() for s in _secret_strings(name if is_secret_name(name) else k, v)}
    if isinstance(value, list):
        return {s for v in value for s in _secret_strings(name, v)}
    if isinstance(value, str):
        if is_secret_name(name):
            found = {value}
            if value.lower().startswith(("bearer ", "basic ", "token ")):
                found.add(value.split(" ", 1)[1])  # the credential alone, as a provider may echo it
            return found
        password = _url_password(value)
        return {password} if password else set()
    return set()


def redact_value(name: object, value: Any) -> Any:
    """What a manifest may show of a parameter: credentials replaced at any depth, a URL's user info too."""
    if isinstance(value, dict):
        return {k: redact_value(name if is_secret_name(name) else k, v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(name, v) for v in value]
    if is_secret_name(name) and value is not None and not isinstance(value, (bool, int, float)):
        return "<redacted>"
    if isinstance(value, str) and _url_password(value):
        scheme, _, rest = value.partition("://")
        return f"{scheme}://<redacted>@{rest.rsplit('@', 1)[1]}"
    return value


def known_secrets(model_params: dict[str, dict[str, object]], environ: Optional[dict[str, str]] = None) -> list[str]:
    """Values that must never appear in anything the plugin writes: credentials given as model
    parameters (at any depth: headers, credential objects, a URL's password), and provider keys in
    the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY, AWS_SECRET_ACCESS_KEY, ...)."""
    import os

    environ = dict(os.environ) if environ is None else environ
    found = {s for params in model_params.values() for k, v in params.items() for s in _secret_strings(k, v)}
    found |= {v for k, v in environ.items() if _SECRET_ENV.search(k)}
    return [Secret(s) for s in sorted((str(s) for s in found if len(s) >= 8), key=len, reverse=True)]


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with every known secret replaced (also when a provider echoes one back in an error)."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, "<redacted>")
    return text
