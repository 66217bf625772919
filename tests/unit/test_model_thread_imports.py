"""The model thread never parses a module with pytest's assertion rewriter while the test thread may (a crash
of CPython 3.11's ast, found by a tester: "SystemError: AST constructor recursion depth mismatch")."""

from __future__ import annotations

import importlib
import sys

from pytest_researchqa.llm.engine import ModelRunner


def first_finder(name: str) -> tuple[str, str]:
    """Which finder of ``sys.meta_path`` would import ``name`` now, and with which loader."""
    package = importlib.import_module(name.rpartition(".")[0])
    for finder in sys.meta_path:
        spec = finder.find_spec(name, package.__path__)
        if spec is not None:
            return type(finder).__name__, type(spec.loader).__name__
    raise AssertionError(f"no finder finds {name}")


def test_on_the_model_thread_the_plugins_modules_load_with_pythons_own_loader_and_elsewhere_as_before():
    before = first_finder("pytest_researchqa.costs"), first_finder("yaml.cyaml")
    runner = ModelRunner()
    try:
        async def from_the_model_thread() -> tuple[tuple[str, str], tuple[str, str]]:
            return first_finder("pytest_researchqa.costs"), first_finder("yaml.cyaml")

        plugin, other = runner.run(from_the_model_thread).result(timeout=10)
    finally:
        runner.close()
    # pytest's rewriter (first in sys.meta_path when it rewrites the plugin, as in a regular install) is never
    # reached for the plugin's modules there: the runner's finder stands before it and serves them unparsed.
    assert sys.meta_path.index(next(f for f in sys.meta_path if type(f).__name__ == "_PlainImportsOnModelThread")) == 0
    assert plugin == ("_PlainImportsOnModelThread", "SourceFileLoader")
    assert other == before[1], "other packages are left to the usual finders"
    assert (first_finder("pytest_researchqa.costs"), first_finder("yaml.cyaml")) == before, "as before on this thread"
