"""The hooks an installed but unused plugin runs: thin, each delegating to a small module.

Where a row goes: ``state`` decides the cases and ``families`` names them;
``fixtures`` load the row (``loaders``), its paper (``papers``) and the
system's answer (``systems``, ``llm``); assertions grade it (``assertions``,
``metrics``, ``matcher``) into the item's record (``records``); the record
rides the test report to the controller, where ``session`` aggregates,
``reporting`` renders and gates decide the exit status.

``plugin`` (the module pytest loads) loads this module, ``options``, ``fixtures`` and, at ``pytest_addhooks``,
``hookspecs`` at every start-up: they hold only what an unused plugin needs. When the plugin is first used (an
option given, xdist workers, or a test asking for a row), ``activation`` reads the settings and registers the
run's hooks (``active_hooks``, ``run_hooks``).

PYTEST_DONT_REWRITE: it holds no test's asserts (docs/architecture.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from .options import add_options, given_options

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Mapping

    from .settings import Settings
    from .state import RunState

# What the plugin module takes from here (``plugin.py``).
__all__ = ["pytest_addhooks", "pytest_addoption", "pytest_configure", "pytest_generate_tests",
           "pytest_researchqa_activate", "pytest_researchqa_run_state"]


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """The hook a benchmark family implements (hookspecs.py), as pytest-xdist adds its own."""
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_configure(config: pytest.Config) -> None:
    """Activate now when an option is given (or xdist workers report here); otherwise on first use (a
    test asking for a row), so a project that never uses the plugin loads and registers nothing more."""
    _forget_modules_dropped_since_the_last_run()
    if config.option.help:
        return  # the options' help needs no settings, and a bad setting must not hide the help that explains it
    if given_options(config) or _under_xdist(config):
        from .activation import activate

        activate(config)
    elif _strict_markers(config):
        from .activation import register_installed_families_markers

        register_installed_families_markers(config)  # a project's own `@pytest.mark.lookup` may load before rows


def _forget_modules_dropped_since_the_last_run() -> None:
    """pytester's in-process runs (``runpytest``) drop from ``sys.modules`` what a run imported, but a package
    keeps its attribute for each dropped submodule, and for each public name it handed out (``exports``):
    ``from . import active_hooks`` would then find the last run's module (with the last run's stash keys) and
    ``from pytest_researchqa import Answer`` the last run's class, while the next run's code checks against
    fresh ones. Forgetting those attributes makes every import of the next run find one module again."""
    import sys

    prefix = f"{__package__}."
    ours = [m for n, m in list(sys.modules.items()) if m is not None and (n == __package__ or n.startswith(prefix))]
    # A dropped submodule leaves its attribute on a surviving package (the top one always survives): look there
    # first, so a run after none dropped (every run of a user, most of a test suite's) walks a few names only.
    dropped = any(_from_a_dropped_module(value, prefix, sys.modules)
                  for module in ours if hasattr(module, "__path__") for value in list(vars(module).values()))
    if dropped:
        for module in ours:
            for attribute, value in list(vars(module).items()):
                if _from_a_dropped_module(value, prefix, sys.modules):
                    delattr(module, attribute)
    package = sys.modules[__package__]
    # numpy's C extension stays loaded once dropped, so every later run must hear it, not only the first.
    if dropped and "numpy" not in sys.modules:
        package._numpy_dropped_by_an_earlier_run = True  # type: ignore[attr-defined]
    if vars(package).get("_numpy_dropped_by_an_earlier_run") and "numpy" not in sys.modules:  # no __getattr__
        try:  # numpy cannot be imported again once dropped: say so now, not as a crash after the rows
            import numpy  # noqa: F401
        except ImportError as error:
            raise pytest.UsageError(
                "researchqa: an earlier in-process run in this interpreter (pytester's runpytest) loaded numpy, "
                f"which pytester then dropped and which cannot be loaded twice ({error}). Import numpy in "
                "your conftest.py before the first run (pytester keeps what was loaded before it), or use "
                "pytester.runpytest_subprocess (docs/systems.md).") from None


def _from_a_dropped_module(value: object, prefix: str, modules: Mapping[str, object]) -> bool:
    """Whether ``value`` is one of this package's submodules, or a class or function of one, that is no longer
    the one ``sys.modules`` holds."""
    import types

    if isinstance(value, types.ModuleType):
        return value.__name__.startswith(prefix) and modules.get(value.__name__) is not value
    if not isinstance(value, (type, types.FunctionType)):
        return False
    home = getattr(value, "__module__", None)
    if not isinstance(home, str) or not home.startswith(prefix):
        return False
    module = modules.get(home)
    return module is None or getattr(module, value.__name__, value) is not value


def pytest_researchqa_activate(config: pytest.Config) -> "Settings":
    from .activation import activate

    return activate(config)


def pytest_researchqa_run_state(config: pytest.Config) -> "RunState":
    from .activation import new_state

    return new_state(config)


def _strict_markers(config: pytest.Config) -> bool:
    """Whether an unknown mark fails collection: pytest 9 reads its ``strict_markers`` ini key, then
    ``strict``; pytest 8 has the command-line flags only."""
    for key in ("strict_markers", "strict"):
        try:
            value = config.getini(key)
        except ValueError:  # pytest 8: no such ini key
            break
        if value is not None:
            return bool(value)
    return bool(getattr(config.option, "strict_markers", False) or getattr(config.option, "strict", False))


def _under_xdist(config: pytest.Config) -> bool:
    """A run with xdist workers: the controller gathers their rows whatever the options say."""
    return config.pluginmanager.hasplugin("xdist") and getattr(config.option, "dist", "no") != "no"


# stash.CASE_FIXTURES, named again: importing the stash here would load it at every start-up.
CASE_FIXTURES = ("researchqa_case", "researchqa_answered")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # The parametrized fixture: researchqa_case (every fixture of a row builds on it), or the built-in
    # test's one fixture that makes them all (researchqa_answered).
    for name in CASE_FIXTURES:
        if name in metafunc.fixturenames:
            from .activation import parametrize

            return parametrize(metafunc, name)
