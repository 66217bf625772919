"""Which benchmark families exist: those the ``pytest_researchqa_families`` hook returns, after every
``pytest_researchqa.families`` entry point is registered as a plugin (Inspect's lazy registry, pluggy's
loading). Discovery imports the families' light declaration modules only; their rows, tests and renderers
load when a run uses them.

A family plugin that is broken (its module does not import, its hook raises or returns something other than
``Family`` declarations) breaks only the runs that ask for it: discovery keeps the others and remembers why
(``broken_plugins``), a run of another family says so in one line, and a run that names a family such a
plugin may provide is a usage error naming it. An entry point whose module implements no hook is named too.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
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


@dataclass(frozen=True)
class BrokenPlugin:
    """A family plugin discovery skipped, and why (one line)."""

    name: str  # the entry point's name, or the plugin's (a conftest.py's path)
    origin: str  # where it comes from, for the reader
    problem: str

    def __str__(self) -> str:
        return f"the benchmark family plugin {self.name!r} ({self.origin}) {self.problem}"


@dataclass
class _Discovery:
    """What loading the entry points found on one plugin manager (kept: each entry point is tried once)."""

    origins: dict[str, str]  # plugin name -> "entry point NAME = VALUE of package DIST VERSION"
    broken: dict[str, BrokenPlugin]
    scanned: bool = False  # the installed packages were read (once a plugin manager: they do not change in a run)


_DISCOVERED: "weakref.WeakKeyDictionary[pluggy.PluginManager, _Discovery]" = weakref.WeakKeyDictionary()


def family_plugins(pluginmanager: Optional[pluggy.PluginManager] = None) -> pluggy.PluginManager:
    """``pluginmanager`` (pytest's own during a run; a fresh one for the command line) with every
    family plugin announced by an entry point registered on it; one that does not import is remembered
    (``broken_plugins``) instead of raised."""
    if pluginmanager is None:
        pluginmanager = pluggy.PluginManager("pytest")
    if not hasattr(pluginmanager.hook, "pytest_researchqa_families"):
        pluginmanager.add_hookspecs(_hookspecs)
    _load_entry_points(pluginmanager)
    return pluginmanager


def _discovery(pluginmanager: pluggy.PluginManager) -> _Discovery:
    found = _DISCOVERED.get(pluginmanager)
    if found is None:
        found = _DISCOVERED[pluginmanager] = _Discovery({}, {})
    return found


def _load_entry_points(pluginmanager: pluggy.PluginManager) -> None:
    """Register each entry point's module as pluggy's ``load_setuptools_entrypoints`` would, one at a time,
    so that one that fails to import is named and skipped instead of stopping every run."""
    from importlib.metadata import distributions

    found = _discovery(pluginmanager)
    if found.scanned:
        return
    found.scanned = True
    for dist in list(distributions()):
        # Most packages announce no family: a look at the file's text spares parsing its entry points.
        if f"[{ENTRY_POINT_GROUP}]" not in (dist.read_text("entry_points.txt") or ""):
            continue
        for entry in dist.entry_points:
            if (entry.group != ENTRY_POINT_GROUP or entry.name in found.broken
                    or pluginmanager.get_plugin(entry.name) or pluginmanager.is_blocked(entry.name)):
                continue
            package = dist.metadata["Name"] or "?"
            origin = f"entry point {entry.name} = {entry.value} in {ENTRY_POINT_GROUP}, package {package}"
            found.origins[entry.name] = origin
            try:
                plugin = entry.load()
                pluginmanager.register(plugin, name=entry.name)
            except Exception as error:  # noqa: BLE001 -- whatever its import raised, said with its name
                found.broken[entry.name] = BrokenPlugin(entry.name, origin,
                                                        f"failed to load: {type(error).__name__}: {error}")


def broken_plugins(pluginmanager: Optional[pluggy.PluginManager] = None) -> list[BrokenPlugin]:
    """The family plugins discovery skipped on this plugin manager (after ``available_families``)."""
    if pluginmanager is None:
        return []
    return list(_discovery(pluginmanager).broken.values())


def families_without_hook(pluginmanager: pluggy.PluginManager) -> list[str]:
    """The entry points whose module was loaded but implements no ``pytest_researchqa_families``."""
    found = _discovery(pluginmanager)
    hooked = {pluginmanager.get_name(impl.plugin) for impl in
              pluginmanager.hook.pytest_researchqa_families.get_hookimpls()}
    return [f"{found.origins[name]}" for name in found.origins
            if name not in found.broken and name not in hooked and pluginmanager.get_plugin(name) is not None]


def available_families(pluginmanager: Optional[pluggy.PluginManager] = None) -> dict[str, Family]:
    """Every family by name, in name order. Each plugin's hook is called on its own: one that raises or
    returns something else than ``Family`` declarations is left out and remembered (``broken_plugins``)."""
    manager = family_plugins(pluginmanager)
    found = _discovery(manager)
    families: dict[str, Family] = {}
    providers: dict[str, str] = {}  # each family's plugin, named in a clash
    for impl in manager.hook.pytest_researchqa_families.get_hookimpls():
        if impl.hookwrapper or getattr(impl, "wrapper", False):
            continue
        name = impl.plugin_name
        try:
            returned: Any = impl.function()
            if not isinstance(returned, (list, tuple)):
                raise FamilyError(f"returned {returned!r}, not a list of Family declarations")
            provided: list[Family] = list(returned)
            wrong = next((f for f in provided if not isinstance(f, Family)), None)
            if wrong is not None:
                raise FamilyError(f"returned {wrong!r}, not a Family")
        except Exception as error:  # noqa: BLE001 -- a third party's hook: named, not raised
            origin = found.origins.get(name) or _origin(impl.plugin, name)
            problem = str(error) if isinstance(error, FamilyError) else f"raised {type(error).__name__}: {error}"
            found.broken[name] = BrokenPlugin(name, origin, f"has a pytest_researchqa_families hook that {problem}")
            continue
        origin = found.origins.get(name) or _origin(impl.plugin, name)
        for family in provided:
            known = families.get(family.name)
            if known is not None and known is not family:
                raise FamilyError(f"two plugins provide a benchmark family named {family.name!r}: "
                                  f"{providers[family.name]} and {origin}")
            families[family.name], providers[family.name] = family, origin
    return dict(sorted(families.items()))


def _origin(plugin: Any, name: str) -> str:
    path = getattr(plugin, "__file__", None)
    return f"hook in {path}" if path else f"plugin {name}"


def find_family(name: str, families: dict[str, Family],
                pluginmanager: Optional[pluggy.PluginManager] = None) -> Family:
    """The family of that name; a FamilyError naming the broken family plugins (which may be the one
    asked for) or the entry points without a hook when it is not found."""
    if name not in families:
        message = f"unknown benchmark family {name!r}; choose from {', '.join(families) or 'none installed'}"
        if pluginmanager is not None:
            broken = broken_plugins(pluginmanager)
            if broken:
                message += "; " + "; ".join(map(str, broken))
            bare = families_without_hook(pluginmanager)
            if bare:
                message += ("; these family plugins implement no pytest_researchqa_families hook: "
                            + ", ".join(bare))
        raise FamilyError(message)
    return families[name]


def unrecognized_note(dataset: Path, families: dict[str, Family],
                      pluginmanager: Optional[pluggy.PluginManager] = None) -> str:
    """Why a dataset file no family recognizes may be another family's than the default one: a third party's
    family is installed (its reader may have found the file's first row unreadable), or a family plugin is
    broken (its family never got to look); "" when only the built-in families are installed, all working."""
    own = [name for name, family in families.items() if not family.loader.startswith("pytest_researchqa.")]
    broken = broken_plugins(pluginmanager)
    if not own and not broken:
        return ""
    note = f"no installed benchmark family recognizes {dataset} (installed: {', '.join(families)})"
    return "; ".join([note, *map(str, broken)])


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
