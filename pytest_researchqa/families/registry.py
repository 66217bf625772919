"""Which benchmark families exist: those the ``pytest_researchqa_families`` hook returns, after every
``pytest_researchqa.families`` entry point is registered as a plugin (Inspect's lazy registry, pluggy's
loading). Discovery imports the families' light declaration modules only; their rows, tests and renderers
load when a run uses them.
"""

from __future__ import annotations

from typing import Optional

import pluggy

from . import Family
from . import hookspecs as _hookspecs

ENTRY_POINT_GROUP = "pytest_researchqa.families"


class FamilyError(ValueError):
    """A family name nobody provides, or two plugins providing the same name."""


def family_plugins(pluginmanager: Optional[pluggy.PluginManager] = None) -> pluggy.PluginManager:
    """``pluginmanager`` (pytest's own during a run; a fresh one for the command line) with every
    family plugin announced by an entry point registered on it."""
    if pluginmanager is None:
        pluginmanager = pluggy.PluginManager("pytest")
    if not hasattr(pluginmanager.hook, "pytest_researchqa_families"):
        pluginmanager.add_hookspecs(_hookspecs)
    pluginmanager.load_setuptools_entrypoints(ENTRY_POINT_GROUP)  # skips plugins already registered
    return pluginmanager


def available_families(pluginmanager: Optional[pluggy.PluginManager] = None) -> dict[str, Family]:
    """Every family by name, in name order."""
    families: dict[str, Family] = {}
    for provided in family_plugins(pluginmanager).hook.pytest_researchqa_families():
        for family in provided:
            if not isinstance(family, Family):
                raise FamilyError(f"a pytest_researchqa_families hook returned {family!r}, not a Family")
            known = families.get(family.name)
            if known is not None and known is not family:
                raise FamilyError(f"two plugins provide a benchmark family named {family.name!r}")
            families[family.name] = family
    return dict(sorted(families.items()))


def find_family(name: str, families: dict[str, Family]) -> Family:
    if name not in families:
        raise FamilyError(f"unknown benchmark family {name!r}; choose from {', '.join(families) or 'none installed'}")
    return families[name]
