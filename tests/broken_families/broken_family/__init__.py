"""A family plugin broken in the way the ``BROKEN_FAMILY`` environment variable names (unset: it works).
Its rows are JSONL lines with a ``shard`` key; the tests install it as pip would (tests/test_families.py)."""

import json
import os

import pytest

from pytest_researchqa.families import Family, MetricSpec, first_row_keys

MODE = os.environ.get("BROKEN_FAMILY", "")
if MODE == "import_error":
    raise ImportError("a dependency of broken_family is missing")


class BrokenFamily(Family):
    def recognizes(self, path, head):
        if MODE == "recognizes_raises":  # reads the first row as JSON, whatever the file holds
            return "shard" in json.loads(head.splitlines()[0])
        return path.suffix == ".jsonl" and "shard" in first_row_keys(head)


LOADERS = {"dict_rows": "broken_family.rows:load_dicts", "no_question_type": "broken_family.rows:load_partial",
           "loader_list": "broken_family.rows:load_list", "dataset_error": "broken_family.rows:load_refusing"}

BROKEN = BrokenFamily(
    name="broken", description="a family plugin with one defect", question_types=("shard",),
    metrics=(MetricSpec("score", "score"),), judge_dimensions=(), uses_papers=False,
    loader=LOADERS.get(MODE, "broken_family.rows:load"),
    protocol_module={"protocol_missing": "broken_family.nothere", "protocol_empty": "broken_family.rows"}.get(
        MODE, "broken_family.protocol"),
    default_system="broken_family.rows:echo",
    renderer="broken_family.rows:raising_renderer" if MODE == "renderer_raises" else "",
    after_answers="broken_family.rows:raising_step" if MODE == "after_raises" else "")

if MODE != "no_hook":
    @pytest.hookimpl
    def pytest_researchqa_families():
        if MODE == "hook_raises":
            raise RuntimeError("the hook of broken_family exploded")
        if MODE == "not_family":
            return [{"name": "broken"}]
        return [BROKEN]
