"""The module pytest loads at every start-up (the ``pytest11`` entry point): the plugin's hooks
(``startup_hooks``) and fixtures (``fixtures``), loaded by Python's own import system.

pytest's assertion rewriter claims every module of an installed plugin and, where byte-code is not written
(``PYTHONDONTWRITEBYTECODE=1``), parses and compiles each from source at every start, even one marked
``PYTEST_DONT_REWRITE``. The start-up modules hold no test's asserts, so the rewriter would only cost time:
``load`` runs them from the byte-code pip wrote at install, as Python's own import does. Only this module and
the package's ``__init__`` pass through the rewriter, and both are kept small (docs/performance.md). Every other
module loads on first use, as usual.

PYTEST_DONT_REWRITE: it holds no test's asserts (docs/architecture.md).
"""

import sys
from importlib.machinery import PathFinder
from importlib.util import module_from_spec


def load(name: str) -> object:
    """Import ``pytest_researchqa.<name>`` through Python's own loader, past pytest's rewriter."""
    qualified = f"{__package__}.{name}"
    if qualified not in sys.modules:
        package = sys.modules[__package__]
        spec = PathFinder.find_spec(qualified, package.__path__)
        sys.modules[qualified] = module = module_from_spec(spec)  # type: ignore[arg-type]
        try:
            spec.loader.exec_module(module)  # type: ignore[union-attr]
        except BaseException:
            del sys.modules[qualified]  # as the import system does: no half-made module left behind
            raise
        setattr(package, name, module)
    return sys.modules[qualified]


# In dependency order: each module's own imports find the ones before it already imported.
for _name in ("options", "hookspecs", "fixtures", "startup_hooks"):
    load(_name)
del _name

from .fixtures import *  # noqa: E402, F403  (pytest finds the fixtures and hooks as attributes of the plugin)
from .startup_hooks import *  # noqa: E402, F403
