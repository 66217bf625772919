"""The citation contract: the structured reply a model must give, and robust parsing of it."""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Optional

from pydantic import BaseModel, Field, ValidationError

# Imported here, not in the function: an import inside a function asks the module for ``__path__`` at every call,
# and ``answers``' module ``__getattr__`` (its moved names) makes that cost more than the check itself.
from ..answers import placeholder_reason


class CitedAnswer(BaseModel):
    """What the model must return under the citation contract."""

    answer: str
    citations: list[str] = Field(default_factory=list)
    refused: bool = False


class MalformedReply(ValueError):
    """The model's reply is not a CitedAnswer (retried; an error if it never parses)."""


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


def json_schema() -> dict[str, Any]:
    return schema_of(CitedAnswer)


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema, a fresh copy each time: pydantic builds it anew at every call (several
    milliseconds), and every model call sends one."""
    schema: dict[str, Any] = json.loads(_schema_text(model))
    return schema


@functools.lru_cache(maxsize=None)
def _schema_text(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema())


def _without_placeholders(reply: CitedAnswer) -> CitedAnswer:
    """A template copied back (``"answer": "..."``) is no answer: malformed, so it is repaired, never graded.
    Placeholder citations (``"..."``) are dropped: they could never be evidence."""
    reason = placeholder_reason(reply.answer)
    if reason is not None and not (reply.refused and not reply.answer.strip()):
        raise MalformedReply(f"field answer: {reason}")
    citations = [c for c in reply.citations if placeholder_reason(c) is None]
    return reply if citations == reply.citations else reply.model_copy(update={"citations": citations})


def json_object(text: Optional[str], what: str = "reply") -> dict[str, Any]:
    """The one JSON object in a model's reply, tolerating code fences and prose around it: the one lenient
    JSON reader of every model reply (answers, verdicts, generated rows). Its errors end with
    ``; it began: '...'`` so callers can quote or cut the reply."""
    if not text or not text.strip():
        raise MalformedReply(f"the model returned an empty {what}")
    began = f"it began: {text.strip()[:120]!r}"
    body = text.strip()
    if "```" in body:  # the pattern's search costs more than the rest of the parse; most replies have no fence
        body = _FENCE.sub("", body)
    start, end = body.find("{"), body.rfind("}")
    if start < 0:
        raise MalformedReply(f"no JSON object in the {what}; {began}")
    try:
        # raw newlines inside strings are common; an object cut off at the end is read to the end
        data = json.loads(body[start : end + 1] if end > start else body[start:], strict=False)
    except json.JSONDecodeError as error:
        raise MalformedReply(f"not valid JSON ({error.msg} at character {error.pos}); {began}") from None
    except RecursionError:
        raise MalformedReply(f"the {what} is nested too deeply") from None
    if not isinstance(data, dict):
        raise MalformedReply(f"the {what} is a JSON {type(data).__name__}, not an object; {began}")
    return data


def validation_problem(error: ValidationError) -> str:
    """``field a.b: message`` for the first problem pydantic found."""
    first = error.errors()[0]
    return f"field {'.'.join(map(str, first['loc'])) or '(item)'}: {first['msg']}"


def parse_reply(text: Optional[str]) -> CitedAnswer:
    """Parse a reply, tolerating code fences and prose around one JSON object."""
    data = json_object(text)
    try:
        reply = CitedAnswer.model_validate(data)
    except ValidationError as error:
        raise MalformedReply(f"{validation_problem(error)}; it began: {str(text).strip()[:120]!r}") from None
    return _without_placeholders(reply)
