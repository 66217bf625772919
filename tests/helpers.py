"""Shared test helpers: the one way tests run pytest on a project (``run_pytest``), paths to the
bundled sample and the optional shared data."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Optional

import pytest

from pytest_researchqa.families.citation import CITATION

METRIC_LABELS = frozenset(m.label for m in CITATION.metrics)

PROJECT = Path(__file__).resolve().parent.parent
SAMPLE = PROJECT / "datasets" / "sample"
# The real papers and datasets: beside the checkout, or where RESEARCHQA_SHARED_DATA says (a worktree).
SHARED = Path(os.environ.get("RESEARCHQA_SHARED_DATA") or PROJECT.parent / "shared")

needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared is not beside this checkout")


def leaderboard_table(result, intervals: bool = False) -> dict[str, dict[str, str]]:
    """The leaderboard's first table from a pytester result: system -> {column: cell}.

    Metric cells are means only ("0.812"), unless ``intervals``: then as printed ("0.812 ±0.031").
    """
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "researchqa leaderboard" in line)
    headers = [c.strip() for c in lines[start + 1].strip("|").split("|")]
    table = {}
    for line in lines[start + 3 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        row = dict(zip(headers, cells))
        if not intervals:
            row = {h: c.split(" ±")[0].split(" [")[0] if h in METRIC_LABELS else c for h, c in row.items()}
        table[cells[0]] = row
    return table


def shared_path(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is not available")
    return path


# A fresh pytest process here leaves Hypothesis's pytest plugin out: the test environment carries
# Hypothesis (for the property tests), whose plugin imports all of Hypothesis at every run's end
# (about 1.5 s of CPU a process), a cost a user's project without Hypothesis never has.
WITHOUT_HYPOTHESIS = ("-p", "no:hypothesispytest")

_NAMED_MODELS = ("--researchqa-model=", "--researchqa-judge=", "--researchqa-judge-pool=",
                 "--researchqa-flagged-judge=")


def run_pytest(pytester: pytest.Pytester, *args: str, cache: Path, server: Optional[Any] = None,
               also: Iterable[str] = (), key: str = "t", subprocess_: bool = False) -> pytest.RunResult:
    """Run pytest in pytester's folder as a user would, with its own answer cache and no cacheprovider.

    With ``server`` (tests/llm_server.py), every model and judge the arguments name, and those in
    ``also``, is pointed at it (unless the arguments point it somewhere already). In a subprocess only
    when the test needs a fresh interpreter (xdist, import checks): in-process runs are much cheaper.
    """
    params: list[str] = []
    if server is not None:
        named = [a.split("=", 1)[1] for a in args if a.startswith(_NAMED_MODELS)]
        for model in dict.fromkeys([*named, *also]):
            if model == "auto" or any(a.startswith(f"--researchqa-model-param={model}:api_base=") for a in args):
                continue
            params += [f"--researchqa-model-param={model}:api_base={server.url}",
                       f"--researchqa-model-param={model}:api_key={key}"]
    full = ("-p", "no:cacheprovider", f"--researchqa-cache-dir={cache}", *args, *params)
    return pytester.runpytest_subprocess(*WITHOUT_HYPOTHESIS, *full) if subprocess_ else pytester.runpytest(*full)
