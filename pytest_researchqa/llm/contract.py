"""The citation contract: the structured reply a model must give, and robust parsing of it."""

from __future__ import annotations

import json
import re
from typing import Optional

from pydantic import BaseModel, Field, ValidationError


class CitedAnswer(BaseModel):
    """What the model must return under the citation contract."""

    answer: str
    citations: list[str] = Field(default_factory=list)
    refused: bool = False


class MalformedReply(ValueError):
    """The model's reply is not a CitedAnswer (retried; an error if it never parses)."""


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


def json_schema() -> dict:
    return CitedAnswer.model_json_schema()


def _without_placeholders(reply: CitedAnswer) -> CitedAnswer:
    """A template copied back (``"answer": "..."``) is no answer: malformed, so it is repaired, never graded.
    Placeholder citations (``"..."``) are dropped: they could never be evidence."""
    from ..answers import placeholder_reason

    reason = placeholder_reason(reply.answer)
    if reason is not None and not (reply.refused and not reply.answer.strip()):
        raise MalformedReply(f"field answer: {reason}")
    citations = [c for c in reply.citations if placeholder_reason(c) is None]
    return reply if citations == reply.citations else reply.model_copy(update={"citations": citations})


def parse_reply(text: Optional[str]) -> CitedAnswer:
    """Parse a reply, tolerating code fences and prose around one JSON object."""
    if not text or not text.strip():
        raise MalformedReply("the model returned an empty reply")
    body = _FENCE.sub("", text.strip())
    start, end = body.find("{"), body.rfind("}")
    if start < 0:
        raise MalformedReply(f"no JSON object in the reply; reply began: {text.strip()[:120]!r}")
    candidates = [body] if start == 0 else []
    if start < end:
        candidates.append(body[start : end + 1])
    last_error = "an unterminated JSON object"
    for candidate in candidates:
        try:
            data = json.loads(candidate, strict=False)  # raw newlines inside strings are common
        except json.JSONDecodeError as error:
            last_error = f"not valid JSON ({error.msg} at character {error.pos})"
            continue
        try:
            reply = CitedAnswer.model_validate(data)
        except ValidationError as error:
            first = error.errors()[0]
            last_error = f"field {'.'.join(map(str, first['loc'])) or '(reply)'}: {first['msg']}"
            continue
        return _without_placeholders(reply)
    raise MalformedReply(f"{last_error}; reply began: {text.strip()[:120]!r}")
