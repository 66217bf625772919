"""Whether an answer declines or corrects a question's false premise (the citation family's adversarial rows).

What any system returns, :class:`~pytest_researchqa.answers.Answer`, is shared by every family and lives in
:mod:`pytest_researchqa.answers`; its names are offered here too, as before.
"""

from __future__ import annotations

import re
from typing import Optional

from ...answers import REFUSAL, Answer, coerce_answer, looks_like_refusal, placeholder_reason

__all__ = ["Answer", "coerce_answer", "flags_false_premise", "looks_like_refusal", "placeholder_reason"]

# Verbs of what a study did: negated, they correct a premise about the study ("did not measure humidity").
_CONDUCT = (r"(?:use[ds]?|includ(?:e|es|ed)|measur(?:e|es|ed)|report(?:s|ed)?|stud(?:y|ies|ied)|test(?:s|ed)?|"
            r"collect(?:s|ed)?|have|had|examin(?:e|es|ed)|analy[sz](?:e|es|ed)|assess(?:es|ed)?|compar(?:e|es|ed)|"
            r"run|ran|employ(?:s|ed)?|involv(?:e|es|ed)|evaluat(?:e|es|ed)|exist(?:s|ed)?|conduct(?:s|ed)?|"
            r"look(?:s|ed)? at|follow(?:s|ed)?|recruit(?:s|ed)?|enrol(?:s|led)?|cover(?:s|ed)?|consider(?:s|ed)?)")
# Phrases that correct a premise without declining to answer ("There was no placebo arm;
# it was single-arm"). Each names the correction itself, so a confident answer that merely
# contains "not" does not read as one.
_CORRECTION = re.compile(
    r"\b(?:premise|the question (?:assumes|suggests|implies|presupposes)|contrary to (?:the question|what)|"
    r"there (?:is|was|were|are) no\b|(?:did not|does not|do not|didn't|doesn't|don't|never) " + _CONDUCT + r"\b|"
    r"(?:was|were|is|are|isn't|wasn't|weren't|aren't) not (?:measured|studied|reported|collected|examined|tested|"
    r"included|analy[sz]ed|assessed|available|part of|used|considered|recorded|evaluated)\b|"
    r"(?:isn't|wasn't|weren't|aren't) (?:measured|studied|reported|collected|examined|tested|included|analy[sz]ed|"
    r"assessed|available|part of|used|considered|recorded|evaluated)\b|no such\b|"
    r"neither\b.{0,80}\bnor\b|not (?:one|two|three|four|five|six|seven|eight|nine|ten|\d+)\b.{0,40}\bbut\b|"
    r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|\d+)\b[^.;]{0,60}, not\b(?! because\b)|"
    r"(?:cannot|can't|could not|couldn't|unable to) find|no mention|not applicable|"
    # what the study did not do, said with "no": "reports no such result", "conducted no interviews"
    r"(?:reports|reported|includes|included|contains|contained|mentions|describes|described|presents|gives|gave|"
    r"provides|uses|used|analy[sz]es|analy[sz]ed|conducted|ran|evaluated|tested|studied|measured|collected|"
    r"recruited|enrolled) no\b|"
    # "has no" only of the paper or study: "the paper has no humidity data", never "the condition had no effect"
    r"(?:paper|study|article|trial|analysis|authors|benchmark|dataset|design|survey|experiments?|they|we)\b"
    r"[^.;:,]{0,30}?\b(?:has|had|have) no\b|"
    r"(?:is|was) (?:incorrect|wrong|mistaken|false|unfounded)\b|(?:the )?(?:other|wrong) way (?:a)?round|"
    r"^(?:no|nothing|unknown)\b|"
    # a bare "They did not." opening the answer: the question's own claim denied
    r"^(?:they|it|he|she|this|that|the authors) (?:did not|didn't|does not|doesn't|was not|wasn't|were not|"
    r"weren't|is not|isn't|are not|aren't)\s*(?:[.;:,!]|$))",
    re.IGNORECASE | re.DOTALL,
)
# Contrasts that correct only when they are about what the question asks ("Copilot, not
# ChatGPT"; "not a placebo quiz but a review session"); about anything else they are ordinary
# prose ("accurate, not fast"). "Not because X but because Y" explains the premise: never a contrast.
_CONTRAST = re.compile(
    r"(?:, not (?!because\b)(?:a |an |the )?\w|\bnot (?!because\b)(?:a|an|the)\b[^.;]{0,60}\bbut\b|"
    r"\brather than\b|\binstead of\b|\bnever\b)",
    re.IGNORECASE)
# A correction announced at the answer's opening ("Actually, GPT-4 came out ahead"; "It fell, in fact").
_OPENING = re.compile(r"^(?:actually|in fact|on the contrary)\b|,\s*in fact\b", re.IGNORECASE)
# Words that restrict the study's scope ("English papers only", "a single 7B generator", "single-arm",
# "observational throughout"): a correction when they are about the premise. "Only 11.7%", "only
# slightly" are amounts; "the strongest single predictor" restricts nothing.
_SCOPE = re.compile(
    r"\b(?:solely|exclusively|throughout|a single|single-(?=\w))\b|\b(?:only|limited to)\b"
    r"(?!\s+(?:\d|a few\b|a little\b|a small\b|few\b|some\b|slightly\b|marginally\b|modestly\b|partly\b|"
    r"partially\b|about\b|around\b|roughly\b))",
    re.IGNORECASE)
# A negated verb ("did not outperform", "crime did not rise"): a correction when the question asks
# about that very verb as a fact (a wh-question: "Why did crime rise ...?").
_NEGATED_VERB = re.compile(
    r"\b(?:did not|didn't|does not|doesn't|do not|don't|never|has not|hasn't|have not|haven't|had not|hadn't)"
    r"\s+(?:\w+ly\s+)?(\w+)", re.IGNORECASE)
_YES_NO = re.compile(r"^\W*(?:did|does|do|was|were|is|are|has|have|had|can|could|will|would|should)\b",
                     re.IGNORECASE)
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

def flags_false_premise(answer: "Answer", premise: str = "", question: str = "") -> bool:
    """Did the answer refuse, or correct the premise?

    The system's own ``refused=True`` is trusted; otherwise (and when it says False: a
    refutation is not a refusal) the text is read, clause by clause. ``premise`` is what the
    question takes for granted (the row's question and its stated false premise); ``question``
    the question alone, when known. A refusal or correction counts when it opens the answer, or
    when it is about the premise (it shares a content word with it). A cue inside a hedge
    ("..., though the paper does not report the variance") counts only when it is about the
    premise and what comes before the hedge does not already speak of the premise's object as
    real ("Dropout in the placebo arm was 11.7%, though the paper does not report reasons for
    dropout" accepts a placebo arm). A contrast ("Copilot, not ChatGPT", "rather than") counts
    when it opens the answer and what it sets against is the premise's; a scope word ("English
    papers only", "a single generator") when it is about the premise; a negated verb when the
    question asks why or how that verb happened ("Crime did not rise"). "Not because X but
    because Y" explains the premise and never counts. docs/metrics.md gives the measured accuracy.
    """
    if answer.refused is True:
        return True
    topic = _content_words(premise)
    focus = _content_words(question or premise)
    asked_verbs = _content_words(question) if question and not _YES_NO.match(question) else set()
    clauses = [c for c in _SENTENCE.split((answer.text or "").strip()) if c]
    for position, clause in enumerate(clauses):
        if position == 0 and _OPENING.search(clause):
            return True
        for cue in (REFUSAL, _CORRECTION):
            for found in cue.finditer(clause):
                if _counts(clause, found.start(), position, topic, focus):
                    return True
        for found in _SCOPE.finditer(clause):
            if _counts(clause, found.start(), position, topic, focus, needs_topic=True):
                return True
        for found in _NEGATED_VERB.finditer(clause):
            if found.group(1)[:5].lower() in asked_verbs and _counts(clause, found.start(), 1, topic, focus):
                return True
        for contrast in _CONTRAST.finditer(clause if position == 0 else ""):
            if _content_words(clause[contrast.start():]) & topic:  # what it sets against: "not ChatGPT"
                return True
    return False


def _counts(clause: str, start: int, position: int, topic: set[str], focus: set[str], *,
            needs_topic: bool = False) -> bool:
    """Whether a cue found at ``start`` of a clause flags the premise (see flags_false_premise).
    ``focus``: the question's words; a hedge after a clause that uses them answers the question."""
    hedge = _last_hedge_before(clause, start)
    if hedge is None:
        return (position == 0 and not needs_topic) or bool(_content_words(clause) & topic)
    # Inside a hedge: about the premise, after nothing that already takes the premise's object as real.
    return bool(_content_words(clause[hedge:]) & topic) and not (_content_words(clause[:hedge]) & focus)


def _last_hedge_before(sentence: str, end: int) -> Optional[int]:
    starts = [m.start() for m in _HEDGE.finditer(sentence, 0, end)]
    return starts[-1] if starts else None


def _content_words(text: str) -> set[str]:
    """Content words, cut to five letters so "analysed" meets "analyzed" and "conversation"."""
    return {w[:5] for w in _WORD.findall(text.lower()) if w not in _GENERIC}
