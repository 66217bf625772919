"""A third-party benchmark family, as small as one can be: each row asks for a term's definition and names
the keywords a good one uses; the metric is the share of those keywords the answer uses.

It is a package of its own (``glossary_family-1.0.dist-info`` beside it is what pip would install): its
entry point in the ``pytest_researchqa.families`` group names this module, which implements the
``pytest_researchqa_families`` hook. Nothing in pytest-researchqa knows it exists. Light, like any
family's declaration module: its loader, default test and system load when a run uses them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_researchqa.families import Family, JudgeDimension, MetricSpec, first_row_keys


class GlossaryFamily(Family):
    """Recognizes its datasets by their rows' ``term`` key, so ``--researchqa-family`` is not needed."""

    def recognizes(self, path: Path, head: str) -> bool:
        return path.suffix == ".jsonl" and "term" in first_row_keys(head)


GLOSSARY = GlossaryFamily(
    name="glossary",
    description="definitions of terms, graded by the keywords they use",
    question_types=("definition",),
    metrics=(MetricSpec("keyword_recall", "kw recall"),),
    judge_dimensions=(JudgeDimension("accuracy", "accuracy"),),
    protocol_module="glossary_family.protocol",
    loader="glossary_family.rows:load_terms",
    uses_papers=False,
    default_system="glossary_family.systems:dictionary",
    systems=(("glossary-echo", "glossary_family.systems:echo"),),  # --researchqa-system=glossary-echo
    model_system="glossary_family.model:DefinitionModel",  # --researchqa-model answers its rows
    judge_kinds=("definition",),  # --researchqa-judge grades them
    judges="glossary_family.model:KINDS",
)


@pytest.hookimpl
def pytest_researchqa_families() -> list[Family]:
    return [GLOSSARY]
