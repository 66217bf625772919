"""Which benchmark families exist: those the ``pytest_researchqa_families`` hook returns, after every
``pytest_researchqa.families`` entry point is registered as a plugin (Inspect's lazy registry, pluggy's
loading). Discovery imports the families' light declaration modules only; their rows, tests and renderers
load when a run uses them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Optional

import pluggy

from .. import hookspecs as _hookspecs
from . import Family, resolve

if TYPE_CHECKING:  # pragma: no cover
    from ..llm.judges import ModelJudge

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


def judge_kinds(families: Iterable[Family]) -> "dict[str, type[ModelJudge]]":
    """The judge kinds these families declare (``Family.judges``), by kind name."""
    kinds: "dict[str, type[ModelJudge]]" = {}
    for family in families:
        for name, kind in (resolve(family.judges) if family.judges else {}).items():
            if kinds.setdefault(name, kind) is not kind:
                raise FamilyError(f"two families declare a judge kind named {name!r}")
    return kinds


def make_judge(kind: str, spec: Any, runner: Any, cache: Any, *, families: Optional[Iterable[Family]] = None,
               timeout_s: float = 120.0, retries: int = 3, prompt_folder: Optional[Path] = None) -> "ModelJudge":
    """A judge of ``kind``: among ``families``' kinds (a run: its own family's), else every installed family's."""
    kinds = judge_kinds(families if families is not None else available_families().values())
    if kind not in kinds:
        raise ValueError(f"unknown judge kind {kind!r}; choose from {', '.join(kinds) or 'none declared'}")
    return kinds[kind](spec, runner, cache, timeout_s=timeout_s, retries=retries, prompt_folder=prompt_folder)
