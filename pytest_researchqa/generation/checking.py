"""Generated questions into rows whose every expected passage is verbatim in the paper.

Pure: no model calls, no files. The pipeline feeds it a parsed reply and the
paper's match index; it says which passages need repair (with the matcher's
diagnosis), takes the repaired passages back, and keeps a row only when every
section it requires still has a verbatim passage. Every passage ends
``verbatim``, ``repaired`` or ``dropped`` (with the reason), so the report
accounts for all of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

from ..answers import placeholder_reason
from ..families.citation import QUESTION_TYPES
from ..families.citation.matcher import PARAPHRASE, VERBATIM, VERBATIM_ELIDED, CitationMatch, MatchIndex
from ..families.citation.matcher.textkey import text_key
from ..families.citation.rows import reasoning_text
from .reply import AdversarialItem, ComprehensionItem, EvidenceBlock, LookupItem, MultiHopItem, ParsedGeneration

# A slot of a template left unfilled inside a question, answer or false premise ("How does [X] affect [Y]?",
# "<answer>", "{method}", "You are a [AI model]"): one capital letter, lower-case words, or two to four words of
# letters alone in any case, in brackets. A single token ("[CLS]", "[NaCl]") or anything with a digit or other
# punctuation ("[12]", "[Smith et al., 2020]") is not.
_SLOT_WORDS = r"[a-z][a-z_ ]{1,23}|[A-Za-z]{1,15}(?:[ _][A-Za-z]{1,15}){1,3}"
TEMPLATE_SLOT = re.compile(rf"\[(?:[A-Z]|{_SLOT_WORDS})\]|<(?:{_SLOT_WORDS})>|\{{[a-z][a-z_]{{1,23}}\}}")
DEFAULT_COUNTS = {"lookup": 4, "comprehension": 4, "multi_hop": 2, "adversarial": 2}
# An expected passage must be plain verbatim text (elisions allowed): a quote with the
# model's own comment appended is grounded for an answer, but is no passage to expect.
ACCEPTED_VERDICTS = frozenset({VERBATIM, VERBATIM_ELIDED})

VERBATIM_STATUS, REPAIRED, DROPPED, PENDING = "verbatim", "repaired", "dropped", "pending"


def is_expected_passage(match: CitationMatch) -> bool:
    return match.grounded and match.verdict in ACCEPTED_VERDICTS


@dataclass
class Passage:
    original: str
    text: str
    status: str = PENDING
    first_verdict: str = ""
    reason: str = ""
    match: Optional[CitationMatch] = field(default=None, repr=False)


@dataclass
class Section:
    label: str
    passages: list[Passage]

    @property
    def kept(self) -> list[Passage]:
        return [p for p in self.passages if p.status in (VERBATIM_STATUS, REPAIRED)]


@dataclass
class Candidate:
    """One generated question on its way to becoming a row."""

    row_id: str
    question_type: str
    question: str
    expected_answer: str
    sections: list[Section]
    # Adversarial rows are graded by refusal: their refuting passages are welcome but not required.
    evidence_required: bool = True
    judge_rubric: Optional[str] = None
    metadata: dict[str, Any] = field(default_factory=dict)
    dropped: Optional[str] = None
    placeholder: Optional[str] = None  # why the question or answer is template filler, not content

    @property
    def passages(self) -> list[tuple[Section, Passage]]:
        return [(section, passage) for section in self.sections for passage in section.passages]


@dataclass
class PaperResult:
    """A paper's rows (plain data in the row schema) and its report entry."""

    rows: list[dict[str, Any]]
    report: dict[str, Any]


# --------------------------------------------------------------------------- candidates


def candidates_from(parsed: ParsedGeneration, paper_id: str, counts: dict[str, int], template: str = "",
                    numbered_after: Optional[dict[str, int]] = None) -> tuple[list[Candidate], dict[str, Any]]:
    """The requested number of questions of each type, and notes on what the reply lacked or broke.

    ``numbered_after``: the questions of each type an earlier call for the same paper was asked for (its
    rows are numbered from 1, this call's after them).

    A question, expected answer or passage that is template filler (empty, ``...``, ``<question>``) or
    text copied from the prompt's instructions (``template``) is rejected with that reason."""
    notes: dict[str, list[str]] = {"shortfalls": [], "malformed": []}
    if parsed.domain_problem:
        notes["malformed"].append(parsed.domain_problem)
    found: dict[str, list[Candidate]] = {kind: [] for kind in QUESTION_TYPES}
    for number, (chunk, problems) in enumerate(parsed.chunks, start=1):
        notes["malformed"].extend(f"chunk {number}: {problem}" for problem in problems)
        base = {"section": chunk.section, "page_hint": chunk.page_hint,
                "chunk_description": chunk.chunk_description, "source_text": chunk.source_text}
        if chunk.lookup is not None:
            found["lookup"].append(_candidate("lookup", chunk.lookup, dict(base), template))
        if chunk.comprehension is not None:
            found["comprehension"].append(_candidate("comprehension", chunk.comprehension, dict(base), template))
    others: tuple[tuple[str, list[Any]], ...] = (("multi_hop", parsed.multi_hop), ("adversarial", parsed.adversarial))
    for kind, items in others:
        for number, item in enumerate(items, start=1):
            if isinstance(item, str):
                notes["malformed"].append(f"{kind.replace('_', '-')} question {number}: {item}")
            else:
                found[kind].append(_candidate(kind, item, {}, template))
    for kind in QUESTION_TYPES:  # a placeholder must not take the place of a usable question
        rejected = [c for c in found[kind] if c.placeholder]
        notes["malformed"].extend(f"{kind} question {c.question[:40]!r}: {c.placeholder}" for c in rejected)
        found[kind] = [c for c in found[kind] if not c.placeholder]
    chosen: list[Candidate] = []
    for kind in QUESTION_TYPES:
        wanted = counts.get(kind, 0)
        if len(found[kind]) < wanted:
            notes["shortfalls"].append(f"asked for {wanted} {kind} questions, the reply had {len(found[kind])} usable")
        for number, candidate in enumerate(found[kind][:wanted], start=1 + (numbered_after or {}).get(kind, 0)):
            candidate.row_id = f"{paper_id}-{kind}-{number}"
            chosen.append(candidate)
    return chosen, notes


def _candidate(kind: str, item: LookupItem, metadata: dict[str, Any], template: str = "") -> Candidate:
    sections = [_section(block, template) for block in item.expected_references]
    candidate = Candidate("", kind, item.question.strip(), item.expected_answer.strip(), sections,
                          evidence_required=kind != "adversarial", metadata=metadata)
    for name, text in (("question", item.question), ("expected answer", item.expected_answer)):
        # An expected answer may be left out (the passages are what is graded); filler in its place may not.
        reason = placeholder_reason(text, template) if text.strip() or name == "question" else None
        slot = TEMPLATE_SLOT.search(text)
        if reason is None and slot is not None:
            reason = f"{slot.group()!r} is a template slot, not content"
        if reason is not None and not candidate.placeholder:
            candidate.placeholder = f"the {name} is no content: {reason}"
    if isinstance(item, ComprehensionItem):
        candidate.judge_rubric = (item.judge_rubric or "").strip() or None
    if isinstance(item, MultiHopItem):
        candidate.metadata["reasoning_chain"] = reasoning_text(item.reasoning_chain)
        labels = {_label_key(s.label) for s in sections}
        missing = [name for name in item.required_sections if _label_key(name) not in labels]
        # Labels worded differently ("Results" listed, "Results (Table 2)" given) are no loss as long as
        # there are as many evidence blocks as required sections: the blocks are what is graded.
        if missing and len(sections) < len(item.required_sections):
            candidate.dropped = (f"required section(s) {', '.join(map(repr, missing))} have no evidence block")
        elif len(labels) < 2:
            candidate.dropped = "a multi-hop question needs evidence from two distinct sections"
    if isinstance(item, AdversarialItem):
        candidate.metadata["false_premise"] = item.false_premise
        problem = premise_problem(item.false_premise, item.question, template)
        if problem is not None:
            candidate.dropped = problem
    if kind in ("lookup", "comprehension") and not sections:
        candidate.dropped = "the model gave no evidence for it"
    return candidate


# A stated false premise shorter than this is a name or a fragment, not a statement of what is false.
PREMISE_MIN_WORDS = 4
# A statement does not end on a word that needs more after it ("The authors used a larger", "because of").
_DANGLING_END = re.compile(r"\b(?:a|an|the|and|or|but|of|to|in|on|at|by|for|with|from|that|which|because|than|as)"
                           r"\W*$|[,;:(\-–—]\s*$|(?:\.\.\.|…)\s*$", re.IGNORECASE)
_QUESTION_OPENING = re.compile(r"^(?:why|what|how|when|where|which|who|whom|whose|is|are|was|were|do|does|did|can|"
                               r"could|should|would|will|has|have|had)\b", re.IGNORECASE)


def premise_problem(premise: Optional[str], question: str = "", template: str = "") -> Optional[str]:
    """Why a false-premise question's stated premise is no statement of what is false (None: it is one).

    Empty, template filler or a template slot ("a [AI model]"), a question (it ends in "?", opens like one and
    has no full stop, or repeats the question), fewer than ``PREMISE_MIN_WORDS`` words, or cut off (ending on
    "...", a comma, "the", "because")."""
    flat = " ".join((premise or "").split())
    if not flat:
        return "an adversarial question needs its false premise stated"
    filler = placeholder_reason(flat, template)
    slot = TEMPLATE_SLOT.search(flat)
    if filler is None and slot is not None:
        filler = f"{slot.group()!r} is a template slot, not content"
    if filler is not None:
        return f"the false premise is no content: {filler}"
    if flat.endswith("?") or (_QUESTION_OPENING.match(flat) and "." not in flat) or (
            question and text_key(flat) == text_key(question)):
        return f"the false premise {flat[:60]!r} is a question, not a statement of what is false"
    words = len(re.findall(r"\w+", flat))
    if words < PREMISE_MIN_WORDS:
        return (f"the false premise {flat[:60]!r} is a fragment ({words} word(s)), not a statement of what is "
                "false")
    if _DANGLING_END.search(flat):
        return f"the false premise {flat[-60:]!r} is cut off, not a whole statement of what is false"
    return None


def drop_repeated_questions(candidates: list[Candidate]) -> None:
    """The same question (case, whitespace and punctuation aside) asked twice of one paper, in one question
    type or across types, is one question: the first is kept, the others are dropped naming it."""
    first: dict[str, Candidate] = {}
    for candidate in candidates:
        if candidate.dropped or candidate.placeholder:
            continue
        key = text_key(candidate.question)  # case, whitespace and punctuation aside, as the matcher compares
        if not key:
            continue
        if key in first:
            kept = first[key]
            candidate.dropped = (f"the same question as {kept.row_id} ({kept.question_type}): "
                                 f"{kept.question[:60]!r}")
        else:
            first[key] = candidate


def _section(block: EvidenceBlock, template: str = "") -> Section:
    passages = [Passage(text.strip(), text.strip()) for text in block.alternatives if text.strip()]
    for passage in passages:
        reason = placeholder_reason(passage.text, template)
        if reason is not None:
            passage.status, passage.reason = DROPPED, f"no passage: {reason}"
    return Section(block.section_label.strip(), passages)


def _label_key(label: str) -> str:
    return " ".join(label.lower().split())


# --------------------------------------------------------------------------- checking


def check_passages(candidates: list[Candidate], index: MatchIndex) -> None:
    """Mark each passage verbatim, or pending repair with the matcher's verdict kept for the diagnosis."""
    for candidate in candidates:
        if candidate.dropped:
            continue
        for _, passage in candidate.passages:
            if passage.status != PENDING:
                continue
            match = index.match(passage.text)
            passage.match = match
            passage.first_verdict = match.verdict
            if is_expected_passage(match):
                passage.status = VERBATIM_STATUS


def repair_requests(candidates: list[Candidate]) -> list[dict[str, Any]]:
    """One item per passage that is not verbatim: what the model wrote and where it went wrong."""
    items = []
    for candidate in candidates:
        if candidate.dropped:
            continue
        for position, (section, passage) in enumerate(candidate.passages):
            if passage.status != PENDING or passage.match is None:
                continue
            items.append({"id": f"{candidate.row_id}#{position + 1}", "question": candidate.question,
                          "section": section.label, "quotation": passage.text, **diagnosis(passage.match)})
    return items


def diagnosis(match: CitationMatch) -> dict[str, Any]:
    """The matcher's findings in plain words: its verdict, the nearest passage, the departure point."""
    found: dict[str, Any] = {"checker_verdict": match.verdict, "checker_says": _finding(match)}
    departure = match.departure
    if departure is not None:
        found["departs_after"] = _tail(departure.quote_before, 160)
        found["quotation_goes_on"] = departure.quote_after[:160]
        found["paper_goes_on"] = " ".join(departure.paper_after.split())
        if departure.page:
            found["page"] = departure.page
    nearest = match.nearest
    # Only a paraphrase has a nearest passage worth offering: for a quote the paper does not contain
    # at all, the closest sentence is unrelated, and offering it invites swapping in any verbatim text.
    # A window much shorter than the quote (a lone word between margin numbers) is no candidate either.
    if (nearest is not None and match.verdict == PARAPHRASE
            and len(nearest.text.split()) >= max(6, 0.4 * len(match.citation.split()))):
        found["nearest_passage"] = nearest.text
        found["nearest_similarity_percent"] = round(nearest.similarity)
        if nearest.page and "page" not in found:
            found["page"] = nearest.page
    return found


def _tail(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else "…" + text[-width:]


def apply_repairs(candidates: list[Candidate], repairs: Optional[dict[str, Optional[str]]], index: MatchIndex,
                  *, failure: Optional[str] = None) -> None:
    """Check each repaired passage again; what is still not verbatim is dropped with the reason."""
    for candidate in candidates:
        if candidate.dropped:
            continue
        for position, (_, passage) in enumerate(candidate.passages):
            if passage.status != PENDING:
                continue
            first = _finding(passage.match) if passage.match else passage.first_verdict
            if failure is not None:
                passage.status, passage.reason = DROPPED, f"{first}; not repaired: {failure}"
                continue
            item_id = f"{candidate.row_id}#{position + 1}"
            if repairs is None or item_id not in repairs:
                passage.status, passage.reason = DROPPED, f"{first}; the repair reply did not mention it"
                continue
            new = repairs[item_id]
            if new is None:
                passage.status, passage.reason = DROPPED, f"{first}; on repair the model found no passage"
                continue
            match = index.match(new.strip())
            if is_expected_passage(match):
                passage.text, passage.match, passage.status = new.strip(), match, REPAIRED
            else:
                passage.status = DROPPED
                passage.reason = f"{first}; the repair is still not verbatim ({_finding(match)})"


def _finding(match: CitationMatch) -> str:
    """The matcher's one-line verdict ("not found: no passage of the paper says this")."""
    return match.explain().splitlines()[0]


def drop_duplicates(candidates: list[Candidate]) -> None:
    """Within a section, a passage given twice (or repaired into another one) counts once."""
    for candidate in candidates:
        for section in candidate.sections:
            seen: set[str] = set()
            for passage in section.kept:
                key = text_key(passage.text)
                if key in seen:
                    passage.status, passage.reason = DROPPED, "the same passage as another alternative of its section"
                seen.add(key)


# --------------------------------------------------------------------------- rows


def finish(candidates: list[Candidate], paper_id: str, domain: str, index: MatchIndex) -> PaperResult:
    """The kept rows, and the paper's accounting of every row and passage."""
    from pydantic import ValidationError

    from ..families.citation.rows import Row

    drop_duplicates(candidates)
    drop_repeated_questions(candidates)
    rows: list[dict[str, Any]] = []
    dropped_rows: list[dict[str, Any]] = []
    excerpts_left_out = 0  # chunk excerpts (metadata, not evidence) that were not verbatim
    for candidate in candidates:
        reason = candidate.dropped or _lost_section(candidate) or _shared_passage(candidate, index)
        row = None if reason else _row(candidate, paper_id, domain, index)
        if row is not None:
            try:
                Row.model_validate(row)
            except ValidationError as error:
                first = error.errors()[0]
                reason = f"not a valid row: field {'.'.join(map(str, first['loc']))}: {first['msg']}"
        if reason:
            dropped_rows.append({"row_id": candidate.row_id, "question_type": candidate.question_type,
                                 "question": candidate.question, "reason": reason})
        else:
            rows.append(row)  # type: ignore[arg-type]
            if candidate.metadata.get("source_text") and "source_text" not in (row or {}).get("metadata", {}):
                excerpts_left_out += 1
    statuses = [p for c in candidates if not c.dropped for _, p in c.passages]
    report = {
        "paper_id": paper_id,
        "rows_generated": len(candidates),
        "rows_kept": len(rows),
        "passages_written": sum(len(s["alternatives"]) for row in rows for s in row["expected_references"]),
        "passages": {
            "checked": len(statuses),
            "verbatim": sum(p.status == VERBATIM_STATUS for p in statuses),
            "repaired": sum(p.status == REPAIRED for p in statuses),
            "dropped": sum(p.status == DROPPED for p in statuses),
        },
        "repaired_passages": [{"row_id": c.row_id, "section": s.label, "was": p.original, "now": p.text,
                               "verdict": p.first_verdict}
                              for c in candidates if not c.dropped for s, p in c.passages if p.status == REPAIRED],
        "dropped_passages": [{"row_id": c.row_id, "section": s.label, "passage": p.original, "reason": p.reason}
                             for c in candidates if not c.dropped for s, p in c.passages if p.status == DROPPED],
        "dropped_rows": dropped_rows,
        "excerpts_left_out": excerpts_left_out,
    }
    return PaperResult(rows, report)


def _lost_section(candidate: Candidate) -> Optional[str]:
    lost = [s.label for s in candidate.sections if not s.kept]
    if lost and candidate.evidence_required:
        return f"section(s) {', '.join(map(repr, lost))} kept no verbatim passage"
    if candidate.evidence_required and not candidate.sections:
        return "the model gave no evidence for it"
    return None


def _shared_passage(candidate: Candidate, index: MatchIndex) -> Optional[str]:
    """Two sections of a multi-hop row that quote the same passage are one hop: one citation would cover both."""
    from ..families.citation.metrics import spans_overlap

    if candidate.question_type != "multi_hop":
        return None
    spans = [[index.passage_spans(p.text) or () for p in section.kept] for section in candidate.sections]
    for first in range(len(spans)):
        for second in range(first + 1, len(spans)):
            if any(spans_overlap(a, b) for a in spans[first] for b in spans[second]):
                labels = candidate.sections[first].label, candidate.sections[second].label
                return f"sections {labels[0]!r} and {labels[1]!r} quote the same passage: it is no multi-hop question"
    return None


def _row(candidate: Candidate, paper_id: str, domain: str, index: MatchIndex) -> dict[str, Any]:
    # A refuting section that lost its passages leaves an adversarial row, graded by refusal, without it.
    sections = [s for s in candidate.sections if s.kept]
    metadata = {k: v for k, v in candidate.metadata.items() if v not in (None, "")}
    excerpt = metadata.get("source_text")
    if excerpt and not is_expected_passage(index.match(excerpt)):
        del metadata["source_text"]  # the chunk's excerpt is description, not evidence: left out, not repaired
    if candidate.question_type == "multi_hop":
        metadata["required_sections"] = [s.label for s in sections]
    row: dict[str, Any] = {
        "row_id": candidate.row_id,
        "paper_id": paper_id,
        "domain": domain,
        "question_type": candidate.question_type,
        "question": candidate.question,
        "expected_answer": candidate.expected_answer,
        "expected_references": [{"section_label": s.label, "alternatives": [p.text for p in s.kept]}
                                for s in sections],
    }
    if candidate.judge_rubric:
        row["judge_rubric"] = candidate.judge_rubric
    if candidate.question_type == "adversarial":
        row["expected_refusal"] = True
    if metadata:
        row["metadata"] = metadata
    return row
