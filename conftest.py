"""Project-wide test configuration.

pytest-researchqa is registered through its entry point, so it is not listed
in pytest_plugins here (registering it twice is an error); pytester is.
"""

import fcntl
import gc
import os
import sys

# litellm must never fetch its price map from the network during tests.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# The fresh interpreters the tests start (pytester's subprocess runs, xdist workers, the CLI) keep the
# byte code they compile, as Python does by default: where PYTHONDONTWRITEBYTECODE is set, each of them
# would rewrite and compile the plugin's modules again (pytest rewrites an entry-point plugin's asserts),
# 0.7 s of CPU a process. What they write goes to __pycache__ folders, which git ignores.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# pytester's in-process runs restore sys.modules afterwards, and numpy (under
# rank_bm25) refuses to be imported twice in one process: load it once here.
import pytest  # noqa: E402
import rank_bm25  # noqa: E402,F401

# Likewise the plugin's answer type: a project module a run imports must meet the same Answer class the
# plugin checks against, which a reload between in-process runs would replace.
import pytest_researchqa.families.citation.answers  # noqa: E402,F401
import pytest_researchqa.systems  # noqa: E402,F401

pytest_plugins = ["pytester"]


@pytest.fixture(scope="session")
def litellm_loaded():
    """litellm, imported in this test process before a test's in-process runs use models.

    Its import costs about 6 s of CPU, so a test process loads it only for the tests that ask: modules that
    use models name this fixture in ``pytestmark``, and the scripted ``server`` fixture asks for it. Imported
    inside an in-process run instead, litellm would be dropped with that run's modules (pytester restores
    sys.modules), imported again by the next run, and what it leaves behind hides every installed
    distribution from importlib.metadata, so later in-process runs load no plugin: ``_litellm_stays_loaded``
    fails such a test, naming this fixture."""
    if "litellm" not in sys.modules:
        import litellm  # noqa: F401

        _freeze_long_lived_objects()
        _LITELLM_FROZEN.append(True)


_LITELLM_IMPORTS: list[str] = []
_LITELLM_FROZEN: list[bool] = []


def _note_litellm_imports(event: str, args: tuple) -> None:
    if event == "import" and args[0] == "litellm":
        _LITELLM_IMPORTS.append(os.environ.get("PYTEST_CURRENT_TEST", ""))


sys.addaudithook(_note_litellm_imports)  # "import" is raised only when a module is loaded, not when found


@pytest.fixture(autouse=True)
def _litellm_stays_loaded():
    """A test whose in-process run imported litellm while this process had not: see ``litellm_loaded``.
    A test that imported it directly (a unit test of a model caller) keeps it: its objects are frozen, as
    ``litellm_loaded`` freezes them, so later in-process runs' garbage collections do not walk them."""
    before = len(_LITELLM_IMPORTS)
    yield
    if len(_LITELLM_IMPORTS) > before:
        if "litellm" not in sys.modules:
            pytest.fail("litellm was imported inside an in-process pytest run and dropped after it: ask for the "
                        "litellm_loaded fixture (or the server fixture) in this test or its module's pytestmark",
                        pytrace=False)
        if not _LITELLM_FROZEN:
            _freeze_long_lived_objects()
            _LITELLM_FROZEN.append(True)


def pytest_collection_modifyitems(config, items):
    """Tests that read real papers (``read_once``) are slow: pypdf takes seconds a paper, more than a
    developer's inner loop (``-m "not slow"``) can spend. Others are marked ``slow`` where they are written:
    fresh interpreters, xdist, kills, a browser, and those measured at 0.3 s of CPU or more (whole pytester
    scenarios, Hypothesis properties, model scenarios), so that the inner loop keeps its budget of 30 s. CI
    runs them all.

    Slow tests run first: under xdist a long test dealt out last keeps one worker busy while the other idles
    (longest first is the classic rule for two machines). The order is the same in every worker, as xdist
    requires."""
    unlisted = set()
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "read_once" in fixtures:
            item.add_marker(pytest.mark.slow)
        if "litellm_loaded" in fixtures and not _uses_models(item.nodeid):
            unlisted.add(item.nodeid.split("::", 1)[0])
    if unlisted:
        raise pytest.UsageError(f"tests using models in {sorted(unlisted)}: add them (or the tests) to MODEL_MODULES "
                                "in conftest.py")
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


# The test modules with tests that use models (the ``litellm_loaded`` fixture), or the single tests
# ("path::name") where a module's other tests do not: collection checks the list.
MODEL_MODULES = frozenset({
    "tests/security/test_full_disk_and_limits.py", "tests/security/test_models_runtime.py",
    "tests/test_families.py::test_its_own_model_system_answers_and_its_own_judge_kind_grades_with_its_own_prompts",
    "tests/test_generate.py", "tests/test_judges.py", "tests/test_llm.py", "tests/test_premise_judge.py",
    "tests/test_rubric_family.py", "tests/unit/test_rubric_calls.py::test_a_model_without_a_price_has_none_never_zero"})


def _uses_models(nodeid: str) -> bool:
    module, _, name = nodeid.partition("::")
    return module in MODEL_MODULES or f"{module}::{name.split('[', 1)[0]}" in MODEL_MODULES


def pytest_xdist_make_scheduler(config, log):
    """Under ``-n`` without ``--dist`` (xdist's ``load``), the modules (and single tests) that use models go to
    one worker as one unit, the other tests one at a time to whichever worker is free: one worker pays litellm's
    import (about 6 s of CPU), not both, a fifth of the inner loop's (``-m "not slow"``). An explicit ``--dist``
    (CI's ``worksteal``) is left as it is."""
    if config.getoption("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModelsInOneWorker(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "models" if _uses_models(nodeid) else nodeid

    return ModelsInOneWorker(config, log)


def pytest_sessionstart(session):
    if not (session.config.getoption("numprocesses", None) and not os.environ.get("PYTEST_XDIST_WORKER")):
        _load_what_in_process_runs_import()  # not in xdist's controller, which runs no test
        _parse_and_extract_each_input_once()
    _freeze_long_lived_objects()


def pytest_sessionfinish(session):
    """The model runners' garbage is collected while pytest still handles logging: litellm leaves a logging
    task on each runner's loop, and asyncio's "Task was destroyed but it is pending!" for each would
    otherwise be printed on stderr at exit. (What was frozen stays frozen: collecting it costs seconds.)"""
    gc.collect()


def _load_what_in_process_runs_import():
    """pytester's in-process runs restore sys.modules afterwards: whatever a run imports that this process
    had not loaded yet was imported again by the next run (and its asserts rewritten again where pytest
    marks it): the plugin's own modules, pypdf, pydantic, YAML, tabulate, and Hypothesis's (its pytest plugin
    imports it at each run's end), 2 s of CPU for a one-row run. Loaded once here, they stay. Not litellm
    (6 s of CPU): the tests that use models load it (``litellm_loaded``)."""
    import importlib
    import pkgutil

    import hypothesis  # noqa: F401
    import pydantic  # noqa: F401
    import pypdf  # noqa: F401
    import tabulate  # noqa: F401
    import yaml  # noqa: F401

    for module in pkgutil.walk_packages(pytest_researchqa.__path__, "pytest_researchqa."):
        if module.name != "pytest_researchqa.__main__":
            importlib.import_module(module.name)


def _parse_and_extract_each_input_once():
    """Most in-process runs read the same inputs: the bundled sample (20 KB of YAML) and its three PDFs.
    Each run parsed the YAML with PyYAML's pure-Python parser and extracted the PDFs with pypdf into its
    own fresh cache folder: a quarter of an in-process run's CPU, paid again by every run. In this test
    process (never in the plugin, never in a fresh interpreter) both are done once per distinct input:

    * ``yaml.compose`` keeps the node tree it composed for a text and a loader class (each run still
      builds its own rows from the nodes, and a text that does not compose raises every time);
    * ``papers._extract_pdf`` keeps what pypdf extracted from a file's bytes (a PDF that cannot be read
      raises every time; the run still writes its own extraction cache, and tests that replace
      ``_extract_pdf`` to count extractions replace this memo too)."""
    import functools
    import hashlib

    import yaml

    from pytest_researchqa import papers

    compose, extract = yaml.compose, papers._extract_pdf
    composed: dict = {}
    extracted: dict = {}

    def remember(memo: dict, key, make):
        if key not in memo:
            if len(memo) >= 64:  # tests that write their own inputs: keep the latest few
                memo.pop(next(iter(memo)))
            memo[key] = make()
        return memo[key]

    @functools.wraps(compose)
    def compose_once(stream, Loader=yaml.Loader):
        if not isinstance(stream, str) or len(stream) > 1_000_000:
            return compose(stream, Loader=Loader)
        return remember(composed, (stream, Loader.__module__, Loader.__qualname__),
                        lambda: compose(stream, Loader=Loader))

    @functools.wraps(extract)
    def extract_once(data, path, paper_id):
        found = remember(extracted, hashlib.sha256(data).digest(), lambda: extract(data, path, paper_id))
        return {"text": found["text"], "page_starts": list(found["page_starts"])}

    yaml.compose = compose_once
    papers._extract_pdf = extract_once


def _freeze_long_lived_objects():
    """Every in-process pytester run ends with pytest's full garbage collections (unraisable-exception
    check), which walk every object of this process: the test session's own modules, litellm's
    included, 0.3 s each. Objects loaded once for the whole session are moved out of the collector's
    sight (gc.freeze); what a test creates is still collected and checked as before."""
    gc.collect()
    gc.freeze()


@pytest.fixture(scope="session")
def read_once(request, tmp_path_factory):
    """``read_once(path, paper_id=None)``: a paper read through one extraction cache that outlives the run.

    pypdf takes seconds a real paper (30 s of CPU for ../shared/papers, a tenth of the whole suite): each
    is extracted once, into pytest's cache folder (``.pytest_cache/d/researchqa-extracted``, the same
    folder under ``-p no:cacheprovider``, which only stops pytest's own cache: this one is the suite's),
    and later runs read the cached text. The plugin's own extraction cache does the keying: the file's
    SHA-256, pypdf's version and the extraction's version, so an edited paper, another pypdf or a changed
    extraction is read again. Under xdist the workers share the folder (one extracts a paper while the
    other waits). A checkout that cannot be written extracts into the session's temporary folder. Tests
    of reading and caching itself call ``read_paper``.
    """
    from pytest_researchqa.papers import read_paper

    if getattr(request.config, "cache", None) is not None:
        cache = request.config.cache.mkdir("researchqa-extracted")
    else:
        cache = request.config.rootpath / ".pytest_cache" / "d" / "researchqa-extracted"
        try:
            cache.mkdir(parents=True, exist_ok=True)
        except OSError:
            base = tmp_path_factory.getbasetemp()
            cache = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "extracted-papers"
    papers: dict = {}

    def read(path, paper_id=None):
        key = (path, paper_id or path.stem)
        if key not in papers:
            cache.mkdir(parents=True, exist_ok=True)
            # One worker extracts a paper while the other waits, then reads the cached text.
            with open(cache / f"{key[1]}.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                papers[key] = read_paper(path, key[1], cache)
        return papers[key]

    return read


@pytest.fixture
def server(litellm_loaded):
    """The scripted OpenAI-compatible server on 127.0.0.1 (tests/llm_server.py), for one test: its callers
    are models, so litellm is loaded first (``litellm_loaded``)."""
    from llm_server import ScriptedLLM

    with ScriptedLLM() as scripted:
        yield scripted
