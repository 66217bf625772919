"""What a system under test returns: answer text plus quoted citations."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

# Phrases that mark an answer as declining the question's premise.
_REFUSAL = re.compile(
    r"\b(?:false premise|does not (?:address|report|mention|discuss|include|contain|state)|"
    r"doesn't (?:address|report|mention|discuss)|not (?:addressed|reported|mentioned|discussed) in the paper|"
    r"cannot (?:be )?answer(?:ed)?|no (?:information|evidence) (?:about|on|in the paper)|"
    r"the paper (?:never|does not))",
    re.IGNORECASE,
)
# Phrases that correct a premise without declining to answer ("There was no placebo arm;
# it was single-arm"). Each names the correction itself, so a confident answer that merely
# contains "not" does not read as one.
_CORRECTION = re.compile(
    r"\b(?:premise|the question (?:assumes|suggests|implies|presupposes)|contrary to (?:the question|what)|"
    r"there (?:is|was|were|are) no\b|(?:did|does|do) not (?:use|include|measure|report|study|test|collect|have|"
    r"examine|analy[sz]e|assess|compare|run|employ|involve)\b|"
    r"(?:was|were|is|are) not (?:measured|studied|reported|collected|examined|tested|included|analy[sz]ed|"
    r"assessed|available|part of|used|considered|recorded)\b|no such\b|"
    r"neither\b.{0,80}\bnor\b|not (?:one|two|three|four|five|six|seven|eight|nine|ten|\d+)\b.{0,40}\bbut\b|"
    r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|\d+)\b[^.;]{0,60}, not\b|"
    r"(?:isn't|wasn't|weren't|aren't|didn't|doesn't) (?:report|measure|include|use|study|address|mention))",
    re.IGNORECASE | re.DOTALL,
)


@dataclass
class Answer:
    """A system's answer to one row.

    ``refused`` is the system's own statement when it has one; otherwise it is
    read from the text (see :func:`looks_like_refusal`). ``cites`` is False for
    answers given without a citation contract (baseline mode): their citation
    metrics are "—", not zero. ``meta`` carries what the system measured
    (latency, tokens, cost, cache hit).
    """

    text: str
    citations: list[str] = field(default_factory=list)
    refused: Optional[bool] = None
    cites: bool = True
    meta: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def is_refusal(self) -> bool:
        return self.refused if self.refused is not None else looks_like_refusal(self.text)


def looks_like_refusal(text: str) -> bool:
    return bool(_REFUSAL.search(text or ""))


def flags_false_premise(answer: "Answer") -> bool:
    """Did the answer refuse, or correct the premise? The system's own ``refused=True`` is
    trusted; otherwise (and when it says False: a refutation is not a refusal) the text is read."""
    if answer.refused is True:
        return True
    text = answer.text or ""
    return bool(_REFUSAL.search(text) or _CORRECTION.search(text))


def coerce_answer(value: Any, where: str) -> Answer:
    """Accept what user systems naturally return: an Answer, a dict, or text."""
    if isinstance(value, Answer):
        return value
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return Answer(text=str(value))  # "412" or 412: a model may give a number as the whole answer
    if isinstance(value, dict):
        text = value.get("answer", value.get("text"))
        if isinstance(text, (int, float)) and not isinstance(text, bool):
            text = str(text)
        citations = value.get("citations", [])
        if not isinstance(text, str):
            raise TypeError(f"{where} returned a dict without an 'answer' (or 'text') string")
        if not isinstance(citations, list) or not all(isinstance(c, str) for c in citations):
            raise TypeError(f"{where} returned 'citations' that is not a list of strings")
        refused = value.get("refused")
        return Answer(text=text, citations=list(citations), refused=refused if isinstance(refused, bool) else None)
    raise TypeError(
        f"{where} returned {type(value).__name__}; return an Answer, a dict with 'answer' and 'citations', or a string"
    )
