"""Every setting comes from the option table: as parsed, or computed from options in read_settings."""

from __future__ import annotations

from pytest_researchqa.options import OPTIONS
from pytest_researchqa.settings import RENAMED, Settings, as_parsed

# read_settings' own computations (a parsed list deduplicated, a choice read as a flag, a family's declaration, why
# a dataset may be another family's).
COMPUTED = {"active", "requested", "systems", "gates", "family", "declaration", "models", "model_params", "judges",
            "judge_pool", "flagged_judge", "compare_map", "regressions", "undecidable_fails", "battles",
            "date_cutoff", "length_words", "given", "unrecognized"}


def test_every_setting_is_an_options_value_or_computed_from_the_options():
    resolved = {option.dest: f"value of {option.dest}" for option in OPTIONS}
    parsed = as_parsed(resolved, exclude=COMPUTED)
    assert set(parsed) | COMPUTED == set(Settings._fields), "a setting neither parsed nor computed takes its default"
    assert parsed["timeout_s"] == "value of researchqa_timeout" and parsed["cache_dir"] == "value of researchqa_cache_dir"
    assert all(f"researchqa_{RENAMED.get(name, name)}" in resolved for name in parsed)
