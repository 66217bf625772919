"""The single-paper, citation-grounded benchmark (the seed's ResearchQA): declarations.

Rows are questions about one paper with expected evidence grouped by section
(``rows.py``); they load from flat JSONL, wrapper JSON, YAML (``loaders.py``, over the
shared ``dataset_files``) or QASPER (``qasper.py``); a system returns an ``answers.Answer``,
graded by the citation matcher (``metrics.py``, ``assertions.py``); the default test is
``protocol.py``. The old top-level paths (``pytest_researchqa.metrics`` ...) are shims.
"""

from __future__ import annotations

import pytest

from .. import Family, JudgeDimension, MetricSpec

QUESTION_TYPES: tuple[str, ...] = ("lookup", "comprehension", "multi_hop", "adversarial")

_ANSWERABLE = "answerable rows"
_FALSE_PREMISE = "false-premise rows"
_ANSWERABLE_TYPES = ("lookup", "comprehension", "multi_hop")
METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("citation_precision", "cite prec", rows=_ANSWERABLE, question_types=_ANSWERABLE_TYPES),
    MetricSpec("section_coverage", "sect cov", rows=_ANSWERABLE, question_types=_ANSWERABLE_TYPES),
    MetricSpec("citation_accuracy", "cite acc", rows=_ANSWERABLE, question_types=_ANSWERABLE_TYPES),
    MetricSpec("refusal_correctness", "refusal", rows=_FALSE_PREMISE, question_types=("adversarial",)),
    MetricSpec("premise_flagged", "flagged", rows=_FALSE_PREMISE, question_types=("adversarial",),
               measured_by=("flagged_judge",)),
)

CITATION = Family(
    name="citation",
    description="single-paper questions graded by verbatim citations (ResearchQA)",
    question_types=QUESTION_TYPES,
    metrics=METRICS,
    judge_dimensions=(JudgeDimension("factual_accuracy", "factual"), JudgeDimension("completeness", "complete")),
    judge_kinds=("rubric", "claims"),
    judges="pytest_researchqa.families.citation.judges:KINDS",
    sample_dataset=("datasets", "sample", "sample.yaml"),
    protocol_module="pytest_researchqa.families.citation.protocol",
    loader="pytest_researchqa.families.citation.loaders:load_dataset",
    model_system="pytest_researchqa.families.citation.model_system:CitedAnswerSystem",
    paper_check="pytest_researchqa.families.citation.metrics:paper_check",
    default_system="bm25",
    systems=(("oracle", "pytest_researchqa.families.citation.oracle:oracle_answer"),
             ("bm25", "pytest_researchqa.families.citation.bm25:Bm25System")),
    scope_note=("cite prec, sect cov, cite acc: means over answerable rows; refusal, flagged: over false-premise "
                "rows (adversarial, unless expected_refusal is false)"),
    paper_protocol=("the seed's evenly spaced sample (--researchqa-sample=N takes row int(i * rows / N)); the "
                    "citations are still graded by this project's matcher and metrics, stricter than the seed's "
                    "harness (no 80-character prefix test, no credit for a near copy), and the judges ask this "
                    "project's prompts: citation figures are not comparable one to one with the seed's Table 1 "
                    "(docs/metrics.md, 'Where this grader differs from the seed harness')"),
)


@pytest.hookimpl
def pytest_researchqa_families() -> list[Family]:
    """The citation family, announced through the ``pytest_researchqa.families`` entry point."""
    return [CITATION]
