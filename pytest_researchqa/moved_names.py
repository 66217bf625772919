"""Old import paths kept for one release after a module moved (docs/extending.md, "Where the built-in families live").

An old module holds only ``__getattr__``: a name read through it comes from the new module with a
DeprecationWarning naming that module, so importing the package (or using the new paths) warns
about nothing.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any


def moved_name(old_module: str, new_module: str, name: str) -> Any:
    """``name`` from ``new_module``, warning that ``old_module`` is the old path (an unknown name is
    an AttributeError, as for any module)."""
    if name == "__all__":  # ``from old import *``: the names the new module offers, each read with its warning
        module = importlib.import_module(new_module)
        return list(getattr(module, "__all__", [n for n, v in vars(module).items() if not n.startswith("_")
                                                and getattr(v, "__module__", None) == new_module]))
    if name.startswith("__"):
        raise AttributeError(f"module {old_module!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(new_module), name)
    # Name by name: some old modules still hold names of their own (pytest_researchqa.answers).
    warnings.warn(f"{old_module}.{name} moved to {new_module}: import it from there "
                  "(the old path goes in the next release)", DeprecationWarning, stacklevel=3)
    return value


def moved_attribute(old: str, new_module: str, name: str, owner: Any) -> Any:
    """An attribute (``old``: ``Class.attribute``) that became the function ``name`` of ``new_module``:
    ``name(owner)``, warning where the new home is."""
    value = getattr(importlib.import_module(new_module), name)(owner)
    warnings.warn(f"{old} moved to {new_module}: call {name}(...) from there "
                  "(the old attribute goes in the next release)", DeprecationWarning, stacklevel=3)
    return value
