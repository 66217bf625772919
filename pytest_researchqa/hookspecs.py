"""The hook a benchmark family implements, added to pytest with ``pytest_addhooks`` (as pytest-xdist adds
its ``newhooks``): a family package implements it without importing anything of the plugin's run.

A package announces its family through the ``pytest_researchqa.families`` entry point, naming the module
that implements this hook; the built-in families are announced the same way (pyproject.toml). A project's
own ``conftest.py`` may implement it too.

The plugin loads this module at every start-up (``plugin.py``: from its byte-code, past pytest's
rewriter). PYTEST_DONT_REWRITE: it holds no test's asserts (docs/architecture.md).
"""

from __future__ import annotations

from typing import Any, Sequence

import pytest


@pytest.hookspec
def pytest_researchqa_families() -> Sequence[Any]:
    """The benchmark families this plugin provides: ``pytest_researchqa.families.Family`` declarations
    (see docs/extending.md; the type is named, not imported, so that this module stays below the families).

    Keep the module that implements it light: it is imported whenever the benchmark runs, before any row
    is loaded. Name heavy code (row loader, default test, renderer) by dotted path in the declaration.
    """
    raise NotImplementedError  # a hook specification: pluggy never calls its body


# The plugin's own, not a family's: ``stash`` (which every module imports) reaches ``activation`` through them
# instead of importing it, so the lowest module imports nothing above it and start-up loads neither.
@pytest.hookspec(firstresult=True)
def pytest_researchqa_activate(config: pytest.Config) -> Any:
    """Read the settings and register the run's hooks, once; the settings (``startup_hooks.py`` implements it)."""
    raise NotImplementedError


@pytest.hookspec(firstresult=True)
def pytest_researchqa_run_state(config: pytest.Config) -> Any:
    """The run's state, built on first use (``startup_hooks.py`` implements it)."""
    raise NotImplementedError
