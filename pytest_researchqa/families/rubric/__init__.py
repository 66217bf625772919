"""Survey-mined research queries judged against rubric items (the seed's second benchmark): declarations.

A row is a research query with its field, subdomain, general domain, a date
cutoff and up to about eight rubric items (``rows.py``). Systems write a
citation-supported long-form answer (``task.py``); a coverage judge scores every
rubric item 0-4 (``grading.py``, ``llm/judges.py``); once every row of every
system is answered, pairwise battles judged by the ensemble rule feed a
Bradley-Terry leaderboard (``tournament.py``, ``bradley_terry.py``); the bias
checks of the seed sit under it (``checks.py``); ``render.py`` prints it all.

This module is light: declarations only, no pydantic, numpy or litellm.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional, cast

import pytest

from .. import Family, JudgeDimension, MetricSpec, first_row_keys

if TYPE_CHECKING:  # pragma: no cover
    from ...dataset import FamilyRow
    from .rows import ResearchRow


def _research(row: "FamilyRow") -> "ResearchRow":
    return cast("ResearchRow", row)  # this family's loader made it (declarations import no row module)

# The benchmark's seven general domains, as marker names (-m health_sciences_medicine).
GENERAL_DOMAINS: dict[str, str] = {
    "health_sciences_medicine": "Health Sciences & Medicine",
    "life_earth_sciences": "Life & Earth Sciences",
    "engineering_computer_science": "Engineering & Computer Science",
    "physical_sciences": "Physical Sciences",
    "social_sciences": "Social Sciences",
    "humanities": "Humanities",
    "economics": "Economics",
}
OTHER_DOMAIN = "other_domain"
DOMAIN_MARKERS: tuple[str, ...] = (*GENERAL_DOMAINS, OTHER_DOMAIN)
_DOMAIN_ALIASES = {"engineering_cs": "engineering_computer_science", "health_sciences": "health_sciences_medicine",
                   "medicine": "health_sciences_medicine", "life_sciences": "life_earth_sciences"}


def slug(text: Optional[str]) -> str:
    """A -k friendly word: letters and digits, everything else one underscore ("Public_Health")."""
    return re.sub(r"[^0-9A-Za-z]+", "_", text or "").strip("_")


def domain_marker(general_domain: Optional[str]) -> str:
    """The marker of a general domain; domains outside the seven share ``other_domain``."""
    key = slug(general_domain).lower()
    key = _DOMAIN_ALIASES.get(key, key)
    return key if key in GENERAL_DOMAINS else OTHER_DOMAIN


METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("coverage", "coverage (0-1)", rows="rows with rubric items, judged",
               measured_by=("judges", "judge_mode", "protocol"), needs_judge=True,
               board_label="Coverage %"),  # x100 on the board
)


@dataclass(frozen=True)
class RubricFamily(Family):
    """Cases are named ``<system>-<field>-<id>``; -k matches field, subdomain and general domain."""

    def case_id(self, row: "FamilyRow", system: Optional[str]) -> str:
        row = _research(row)
        parts = [system, slug(row.field) or "unknown_field", row.row_id] if system else [
            slug(row.field) or "unknown_field", row.row_id]
        return "-".join(re.sub(r"\s+", "_", str(p)) for p in parts)

    def keywords(self, row: "FamilyRow") -> set[str]:
        row = _research(row)
        words = {row.row_id, slug(row.field), slug(row.subdomain), slug(row.general_domain),
                 domain_marker(row.general_domain)}
        return {w for w in words if w}

    def marks(self, row: "FamilyRow") -> list[str]:
        return [domain_marker(_research(row).general_domain)]

    def recognizes(self, path: Path, head: str) -> bool:
        """Rubric rows carry a ``query`` or ``rubric`` (or, in the 50-query JSONL shape, a ``task_id`` with
        ``general_domain`` metadata)."""
        if path.suffix.lower() in (".yaml", ".yml"):
            return re.search(r"^\s*(?:-\s+)?(?:query|rubric)\s*:", head, re.MULTILINE) is not None
        keys = first_row_keys(head)
        return bool({"query", "rubric"} & keys) or ("task_id" in keys and "general_domain" in head[:4096])


RUBRIC = RubricFamily(
    name="rubric",
    description="survey-mined research queries judged against rubric items (ResearchQA rubric benchmark)",
    question_types=DOMAIN_MARKERS,
    metrics=METRICS,
    judge_dimensions=(JudgeDimension("coverage", "coverage (0-4)", 0, 4),),  # the judges' item mean, labelled apart
    protocol_module="pytest_researchqa.families.rubric.protocol",
    loader="pytest_researchqa.families.rubric.rows:load_queries",
    scope_note=("Coverage %: mean rubric-item coverage (0-4) / 4 over judged rows, [95% bootstrap interval over "
                "queries]; Elo: Bradley-Terry on ensemble-judged battles, median of 1,000 bootstraps ± SD"),
    judge_kinds=("coverage",),
    judges="pytest_researchqa.families.rubric.judges:KINDS",
    uses_papers=False,
    audits=True,  # its test describes each row's rubric when auditing
    sample_dataset=("datasets", "rubric-sample", "rubric-sample.yaml"),
    model_system="pytest_researchqa.families.rubric.task:ResearchAnswerSystem",
    after_answers="pytest_researchqa.families.rubric.tournament:run_tournament",
    before_rows="pytest_researchqa.families.rubric.tournament:schedule_refusal",
    renderer="pytest_researchqa.families.rubric.render:leaderboard",
    call_estimate="pytest_researchqa.families.rubric.calls:estimate_lines",
    default_system="rubric-oracle",
    systems=(("rubric-oracle", "pytest_researchqa.families.rubric.oracle:rubric_oracle"),),
    paper_protocol=("the rubric paper's procedure: its coverage and pairwise reply formats (prompts in this "
                    "project's words unless --researchqa-judge-prompts gives the released ones), its battle "
                    "schedule, plain Bradley-Terry, the mean of 1,000 bootstraps; the ensemble counts Eq. 1's 4 "
                    "points a direct vote (--researchqa-ensemble=notebook: Table 3's 5); the bootstrap resamples "
                    "battles, not the notebook's duplicated rows (docs/rubric.md, 'Reproducing the paper')"),
)


@pytest.hookimpl
def pytest_researchqa_families() -> list[Family]:
    """The rubric family, announced through the ``pytest_researchqa.families`` entry point."""
    return [RUBRIC]
