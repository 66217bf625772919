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
    r"(?:isn't|wasn't|weren't|aren't|didn't|doesn't) (?:report|measure|include|use|study|address|mention)|"
    r"(?:cannot|can't|could not|couldn't|unable to) find|no mention|not applicable|"
    r"(?:reports|includes|contains|mentions|describes|presents|has|had|uses|used|analy[sz]es|analy[sz]ed) no\b|"
    r"(?:is|was) (?:incorrect|wrong|mistaken|false|unfounded)\b|^no\b)",
    re.IGNORECASE | re.DOTALL,
)
# Contrasts that correct only when they are about what the question asks ("Copilot, not
# ChatGPT"); about anything else they are ordinary prose ("accurate, not fast").
_CONTRAST = re.compile(r"(?:, not (?:a |an |the )?\w|\brather than\b|\binstead of\b|\bnever\b)", re.IGNORECASE)
# A cue after one of these is a hedge inside a confident answer ("87%, though the paper does
# not report the variance") unless it is about what the question asks.
_HEDGE = re.compile(r"\b(?:though|although|while|whereas|but|however|except)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?;:])\s+")
_WORD = re.compile(r"[a-z0-9][a-z0-9-]{3,}")
# Words every question and answer about a paper shares: they tie nothing to the premise.
_GENERIC = frozenset(
    "paper study studies authors author report reports reported what which when where their there this that these "
    "those with from were have does into used using about results data work section they them than also only "
    "much many some more most such other each both".split())


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
    return bool(_REFUSAL.search(text or ""))


def flags_false_premise(answer: "Answer", premise: str = "") -> bool:
    """Did the answer refuse, or correct the premise?

    The system's own ``refused=True`` is trusted; otherwise (and when it says False: a
    refutation is not a refusal) the text is read, sentence by sentence. ``premise`` is what
    the question takes for granted (the row's question and its stated false premise). A
    refusal or correction counts when it opens the answer, or when it is about the premise
    (it shares a content word with it); a contrast ("Copilot, not ChatGPT", "rather than")
    counts when it opens the answer and what it sets against is the premise's; a cue inside
    a hedge ("..., though the paper does not report the variance") counts only when it is
    about the premise.
    """
    if answer.refused is True:
        return True
    topic = _content_words(premise)
    for position, sentence in enumerate(s for s in _SENTENCE.split((answer.text or "").strip()) if s):
        for cue in (_REFUSAL, _CORRECTION):
            for found in cue.finditer(sentence):
                hedge = _last_hedge_before(sentence, found.start())
                clause = sentence[hedge:] if hedge is not None else sentence
                if (position == 0 and hedge is None) or _content_words(clause) & topic:
                    return True
        for contrast in _CONTRAST.finditer(sentence if position == 0 else ""):
            if _content_words(sentence[contrast.start():]) & topic:  # what it sets against: "not ChatGPT"
                return True
    return False


def _last_hedge_before(sentence: str, end: int) -> Optional[int]:
    starts = [m.start() for m in _HEDGE.finditer(sentence, 0, end)]
    return starts[-1] if starts else None


def _content_words(text: str) -> set[str]:
    """Content words, cut to five letters so "analysed" meets "analyzed" and "conversation"."""
    return {w[:5] for w in _WORD.findall(text.lower()) if w not in _GENERIC}


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
