"""What a system under test returns, in every family: answer text, quoted citations, whether it declined.

Also what reads an answer the same way for every family: a refusal in its text, template filler
instead of content, and the shapes a user's own system may return (:func:`coerce_answer`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

# Phrases that mark an answer as declining the question's premise.
REFUSAL = re.compile(
    r"\b(?:false premise|(?:does|do|did) not (?:address|report|mention|discuss|include|contain|state|say|cover)|"
    r"(?:doesn't|don't|didn't) (?:address|report|mention|discuss|include|contain|state|say|cover)|"
    r"not (?:addressed|reported|mentioned|discussed|stated|covered|specified) in the (?:paper|study|article)|"
    r"(?:cannot|can't|could not|couldn't|unable to) (?:be )?(?:answer(?:ed)?|determined?|tell|say|said|know|known)\b|"
    r"no (?:information|evidence) (?:about|on|in the paper)|insufficient (?:information|evidence|data)|"
    r"(?:says?|said) nothing|(?:outside|beyond) (?:the|its|their|this|the study's|the paper's) (?:scope|period|remit)|"
    r"(?:isn't|is not|wasn't|was not) something|the paper (?:never|does not))",
    re.IGNORECASE,
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


# Template filler a model copies instead of answering: "...", "<answer>", "[quote]", "TODO", "N/A"-free.
_PLACEHOLDER = re.compile(
    r"^\W*(?:|\.\.\.|…|<[^<>]{0,40}>|\[[^\[\]]{0,40}\]|\{[^{}]{0,40}\}|todo|tbd|placeholder|"
    r"(?:your |the )?(?:answer|question|quote|quotation|citation|exact quote|text)(?: here)?)\W*$",
    re.IGNORECASE,
)


def placeholder_reason(text: Optional[str], prompt: str = "") -> Optional[str]:
    """Why ``text`` is template filler rather than content (None when it is content).

    Empty text, an ellipsis, a bracketed slot (``<answer>``, ``[quote]``), a slot's name, or a
    string the prompt itself contains (the model copied its instructions back) is no answer,
    question or passage.
    """
    flat = " ".join((text or "").split())
    if not flat:
        return "it is empty"
    if _PLACEHOLDER.match(flat):
        return f"{flat[:40]!r} is template filler, not content"
    if prompt and len(flat) >= 12 and flat in " ".join(prompt.split()):
        return f"{flat[:40]!r} is copied from the prompt"
    return None


def looks_like_refusal(text: str) -> bool:
    return bool(REFUSAL.search(text or ""))


# A lone UTF-16 surrogate: a Python str can hold one (text decoded with ``surrogateescape``, half an emoji
# cut from a byte slice), but it is no Unicode text and no file, report or xdist message can carry it.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def coerce_answer(value: Any, where: str) -> Answer:
    """Accept what user systems naturally return: an Answer, a dict, or text (valid Unicode: a lone surrogate
    is an error of the system's, said as such, as a model's reply with one is)."""
    answer = _coerced(value, where)
    for name, text in (("answer", answer.text), *((f"citation {n + 1}", c) for n, c in enumerate(answer.citations))):
        found = _LONE_SURROGATE.search(text)
        if found is not None:
            raise ValueError(f"{where}: its {name} is not valid Unicode: a lone surrogate "
                             f"\\u{ord(found.group()):04x} at character {found.start()} (decode its bytes with "
                             "errors='replace')")
    return answer


def _coerced(value: Any, where: str) -> Answer:
    if isinstance(value, Answer):
        # Checked as a dict's fields are: one quote given as citations="..." was read as a citation per character.
        if not isinstance(value.text, str):
            raise TypeError(f"{where} returned an Answer whose text is {type(value.text).__name__}, not a string")
        if isinstance(value.citations, str):
            raise TypeError(f"{where} returned an Answer whose citations are one string, not a list of strings "
                            "(Answer(citations=[quote]) for a single quote)")
        if not isinstance(value.citations, (list, tuple)) or not all(isinstance(c, str) for c in value.citations):
            raise TypeError(f"{where} returned an Answer whose citations are not a list of strings")
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
        if isinstance(citations, str):
            raise TypeError(f"{where} returned 'citations' as one string, not a list of strings ([quote] for one)")
        if not isinstance(citations, list) or not all(isinstance(c, str) for c in citations):
            raise TypeError(f"{where} returned 'citations' that is not a list of strings")
        refused = value.get("refused")
        return Answer(text=text, citations=list(citations), refused=refused if isinstance(refused, bool) else None)
    if type(value).__qualname__ == Answer.__qualname__ and type(value).__module__ == Answer.__module__:
        raise TypeError(
            f"{where} returned an Answer of an earlier import of {Answer.__module__}, which is no longer loaded "
            "(an in-process pytester run drops the modules it loaded): import Answer inside the system, or use "
            "pytester.runpytest_subprocess")
    raise TypeError(
        f"{where} returned {type(value).__name__}; return an Answer, a dict with 'answer' and 'citations', or a string"
    )


def __getattr__(name: str) -> Any:
    """This module once forwarded every name of the citation family's answers (a path kept for one
    release): the false-premise reading is read from there, with a warning."""
    from .moved_names import moved_name

    return moved_name(__name__, "pytest_researchqa.families.citation.answers", name)
