"""The citation family's modules moved into families/citation; the old paths warn when used, and only then."""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys
import warnings

import pytest

import pytest_researchqa

OLD_PATHS = ["rows", "loaders", "qasper", "answers", "metrics", "assertions"]
# The matcher became a package of pieces: its old paths serve the names the package (or textkey) offers.
MOVED_INTO_PACKAGE = {
    "matcher": ("pytest_researchqa.families.citation.matcher", ["MatchIndex", "CitationMatch", "match_citation",
                                                                "match_index", "VERBATIM", "MIN_QUOTE_KEY"]),
    "textkey": ("pytest_researchqa.families.citation.matcher.textkey", ["text_key", "key_offsets", "part_keys"]),
    # The named systems moved into the families whose rows they answer (Family.systems).
    "systems.bm25": ("pytest_researchqa.families.citation.bm25", ["Bm25System", "passages", "shared_cache"]),
    "systems.oracle": ("pytest_researchqa.families.citation.oracle", ["oracle_answer"]),
    "systems.rubric_oracle": ("pytest_researchqa.families.rubric.oracle", ["rubric_oracle"]),
}


@pytest.mark.parametrize("old", OLD_PATHS)
def test_a_name_read_through_an_old_path_warns_and_is_the_same_object(old):
    new = importlib.import_module(f"pytest_researchqa.families.citation.{old}")
    shim = importlib.import_module(f"pytest_researchqa.{old}")
    name = next(n for n, v in vars(new).items()
                if not n.startswith("_") and getattr(v, "__module__", None) == new.__name__)
    with pytest.warns(DeprecationWarning, match=rf"pytest_researchqa\.{old}\.{name} moved to {new.__name__}"):
        value = getattr(shim, name)
    assert value is getattr(new, name)


@pytest.mark.parametrize(("old", "name"), [(old, name) for old, (_, names) in MOVED_INTO_PACKAGE.items()
                                            for name in names])
def test_a_name_read_through_the_matchers_old_paths_warns_and_is_the_same_object(old, name):
    new_module, _ = MOVED_INTO_PACKAGE[old]
    shim = importlib.import_module(f"pytest_researchqa.{old}")
    with pytest.warns(DeprecationWarning, match=rf"pytest_researchqa\.{re.escape(old)}\.{name} moved to {new_module}"):
        value = getattr(shim, name)
    assert value is getattr(importlib.import_module(new_module), name)


def test_the_matcher_package_offers_every_public_name_the_old_module_had():
    package = importlib.import_module("pytest_researchqa.families.citation.matcher")
    assert set(package.__all__) <= set(vars(package))
    assert {"MatchIndex", "CitationMatch", "Departure", "NearestPassage", "HasMatchIndex", "match_citation",
            "match_index", "VERBATIM", "VERBATIM_ELIDED", "VERBATIM_WITH_COMMENTARY", "ALTERED", "STITCHED",
            "PARAPHRASE", "NOT_FOUND", "TOO_SHORT", "NOT_EVIDENCE", "GROUNDED_VERDICTS", "NON_EVIDENCE_VERDICTS",
            "MIN_QUOTE_KEY", "MIN_ANCHOR", "ELISION_WINDOW"} <= set(package.__all__)


def test_an_old_path_warns_at_the_line_that_imports_from_it():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from pytest_researchqa.metrics import section_report  # noqa: F401
    assert [w.filename for w in caught] == [__file__]


def test_a_name_the_new_module_lacks_is_an_attribute_error_through_the_old_path():
    shim = importlib.import_module("pytest_researchqa.metrics")
    with pytest.raises(AttributeError):
        _ = shim.no_such_name


@pytest.mark.slow
def test_importing_every_module_of_the_package_and_its_top_level_names_warns_about_nothing():
    """Nothing inside the package uses an old path (run in a fresh interpreter: modules here are loaded)."""
    old = {f"pytest_researchqa.{name}" for name in [*OLD_PATHS, *MOVED_INTO_PACKAGE, "__main__"]}
    names = [m.name for m in pkgutil.walk_packages(pytest_researchqa.__path__, "pytest_researchqa.")
             if m.name not in old]
    code = ("import importlib, warnings, os\n"
            "os.environ.setdefault('LITELLM_LOCAL_MODEL_COST_MAP', 'True')\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "    warnings.simplefilter('always')\n"
            f"    for name in {names!r}:\n"
            "        importlib.import_module(name)\n"
            "    import pytest_researchqa as package\n"
            "    [getattr(package, name) for name in package.__all__]\n"
            "print([str(w.message) for w in caught if 'moved to' in str(w.message)])\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]"


def test_the_citation_model_system_read_from_llm_system_warns_and_is_the_familys():
    from pytest_researchqa.families.citation.model_system import CitedAnswerSystem
    from pytest_researchqa.llm import system

    with pytest.warns(DeprecationWarning, match=r"pytest_researchqa\.llm\.system\.LlmSystem moved to "
                                                 r"pytest_researchqa\.families\.citation\.model_system"):
        assert system.LlmSystem is CitedAnswerSystem
    with pytest.raises(AttributeError):
        _ = system.NoSuchSystem


def test_a_papers_match_index_property_warns_and_is_the_index_the_matcher_keeps_for_it():
    from pytest_researchqa import match_index
    from pytest_researchqa.papers import Paper

    paper = Paper("p", "Spaced retrieval practice raised final exam scores by five points.\n", (0,))
    with pytest.warns(DeprecationWarning, match=r"Paper\.match_index moved to pytest_researchqa\.families\.citation\.matcher"):
        old = paper.match_index
    assert old is match_index(paper) is match_index(paper), "prepared once, kept with the paper"
    assert old.match("raised final exam scores by five points").grounded
    with pytest.raises(AttributeError):
        _ = paper.no_such_index


@pytest.mark.parametrize(("name", "new_module"), [
    ("parse_verdict", "pytest_researchqa.families.citation.judges"),
    ("RubricCoverageJudge", "pytest_researchqa.families.rubric.judges"),
    ("make_judge", "pytest_researchqa.families.registry")])
def test_a_judge_name_read_from_llm_judges_warns_and_is_the_one_its_family_holds(name, new_module):
    from pytest_researchqa.llm import judges

    with pytest.warns(DeprecationWarning, match=rf"pytest_researchqa\.llm\.judges\.{name} moved to {new_module}"):
        value = getattr(judges, name)
    assert value is getattr(importlib.import_module(new_module), name)


@pytest.mark.parametrize(("old", "name", "new_module"), [
    ("pytest_researchqa.options", "Settings", "pytest_researchqa.settings"),
    ("pytest_researchqa.options", "read_settings", "pytest_researchqa.settings"),
    ("pytest_researchqa.families.hookspecs", "pytest_researchqa_families", "pytest_researchqa.hookspecs")])
def test_names_moved_off_pytests_start_up_path_warn_and_are_the_same_object(old, name, new_module):
    with pytest.warns(DeprecationWarning, match=rf"{old}\.{name} moved to {new_module}"):
        value = getattr(importlib.import_module(old), name)
    assert value is getattr(importlib.import_module(new_module), name)


def test_a_star_import_from_an_old_path_gives_the_new_modules_names_and_warns():
    new = importlib.import_module("pytest_researchqa.families.citation.metrics")
    namespace: dict = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec("from pytest_researchqa.metrics import *", namespace)
    assert namespace["SectionReport"] is new.SectionReport
    assert {w.category for w in caught} == {DeprecationWarning}
    assert any(str(w.message).startswith("pytest_researchqa.metrics.SectionReport moved to") for w in caught)
