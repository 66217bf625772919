"""The GitHub Actions recipe of docs/gating.md, run as the workflow would run it.

The Benchmark step's script is read from the doc itself (so the doc cannot drift from what
is tested) and run with bash in a fresh project: a small offline dataset of three papers, an
imperfect system of the project's own (``my_rag.pipeline:answer``), the baseline carried from
the push job to the pull request's job as the workflow's cache would carry it. The figures a
pull request's run draws are checked here too: the recipe pays for them anyway.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
import yaml
from helpers import WITHOUT_HYPOTHESIS

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "datasets" / "sample"

pytestmark = pytest.mark.slow

# An imperfect system: cites one expected passage per row (so multi-section rows miss some);
# with MY_RAG_BROKEN set it cites a real sentence of the paper that answers nothing.
PIPELINE = '''
import os
import re

from pytest_researchqa import Answer


def answer(question, paper, *, row):
    expected = [alt for section in row.expected_references for alt in section.alternatives]
    if row.is_adversarial and row.expected_refusal is not False:
        return Answer(text=row.expected_answer, citations=[], refused=True)
    if os.environ.get("MY_RAG_BROKEN"):
        sentences = [s.strip() for s in re.split(r"(?<=[.])\\s+", " ".join(paper.text.split()))]
        other = next(s for s in sentences if 60 < len(s) < 200 and not any(s in e or e in s for e in expected))
        return Answer(text=other, citations=[other])
    return Answer(text=row.expected_answer, citations=expected[:1])
'''


def workflow() -> dict:
    text = (ROOT / "docs" / "gating.md").read_text(encoding="utf-8")
    block = text.split("```yaml\n# .github/workflows/researchqa.yml\n", 1)[1].split("```", 1)[0]
    return yaml.safe_load(block)


def step(name: str) -> dict:
    [found] = [s for s in workflow()["jobs"]["benchmark"]["steps"] if s.get("name") == name]
    return found


def benchmark_script(event: str) -> str:
    script = step("Benchmark")["run"]
    return (script.replace("${{ github.event_name }}", event)
            .replace("${{ github.event.pull_request.number }}", "7"))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's repository: its pipeline package and its dataset, with no tests of its own."""
    folder = tmp_path / "repo"
    (folder / "my_rag").mkdir(parents=True)
    (folder / "my_rag" / "__init__.py").write_text("")
    (folder / "my_rag" / "pipeline.py").write_text(PIPELINE)
    (folder / "eval").mkdir()
    shutil.copytree(SAMPLE / "papers", folder / "eval" / "papers")
    rows = yaml.safe_load((SAMPLE / "sample.yaml").read_text(encoding="utf-8"))["rows"]
    (folder / "eval" / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def run_step(project: Path, event: str, *, broken: bool = False) -> subprocess.CompletedProcess[str]:
    bin_dir = project.parent / "bin"
    bin_dir.mkdir(exist_ok=True)
    if not (bin_dir / "python").exists():  # `python` is this interpreter, with its environment, as in CI
        (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        (bin_dir / "python").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GITHUB_"))}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=str(project),
               RESEARCHQA_CACHE_DIR=str(project.parent / "cache"), LITELLM_LOCAL_MODEL_COST_MAP="True",
               PYTEST_ADDOPTS=" ".join(WITHOUT_HYPOTHESIS))
    if broken:
        env["MY_RAG_BROKEN"] = "1"
    return subprocess.run(["bash", "-e", "-c", benchmark_script(event)], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300)


def junit_gates(project: Path) -> tuple[ElementTree.Element, list[ElementTree.Element]]:
    suite = ElementTree.parse(project / "researchqa-junit.xml").getroot().find("testsuite")
    assert suite is not None
    return suite, [t for t in suite.iter("testcase") if (t.get("classname") or "").startswith("researchqa.gates")]


FIGURES = ("domains", "frontier-latency", "paper-deltas", "question-types")


def assert_figures(project: Path, run: subprocess.CompletedProcess[str]) -> None:
    """The figures a pull request's run draws (``--researchqa-plots``): one for every view the run has data for."""
    assert (f"researchqa: figures (PNG and SVG) in researchqa-figures: {', '.join(FIGURES)}"
            in run.stdout.splitlines()), run.stdout[-3000:]
    for name in FIGURES:
        png = (project / "researchqa-figures" / f"{name}.png").read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 10_000
        assert (project / "researchqa-figures" / f"{name}.svg").read_text().lstrip().startswith("<?xml")
    assert not (project / "researchqa-figures" / "frontier-cost.png").exists(), "no system has a known cost"


def test_the_recipe_installs_the_extras_its_steps_use():
    install = step("Install")["run"]
    assert "pytest-researchqa[" in install and "llm" in install, "the step passes an API key: litellm is needed"
    assert "plots" in install, "the pull request job draws figures"
    assert "OPENAI_API_KEY" in str(step("Benchmark").get("env"))


def test_push_then_pull_requests_exit_as_the_docs_say(project: Path):
    fresh = project.parent / "fresh-pr"
    shutil.copytree(project, fresh)

    push = run_step(project, "push")
    assert push.returncode == 0, push.stdout[-3000:]
    assert "report only: no gate configured" in push.stdout
    assert list((project / ".researchqa" / "runs").glob("*-main"))
    suite, gates = junit_gates(project)
    assert suite.get("failures") == "0" and gates == []

    first_pr = run_step(fresh, "pull_request")
    assert first_pr.returncode == 0, first_pr.stdout[-3000:]
    assert "no baseline: nothing compared" in first_pr.stdout
    assert "no baseline: nothing compared" in (fresh / "researchqa.md").read_text()
    assert json.loads((fresh / "researchqa.json").read_text())["verdict"] == "undecidable"

    unchanged = run_step(project, "pull_request")
    assert unchanged.returncode == 0, unchanged.stdout[-3000:]
    assert "gates passed" in unchanged.stdout
    suite, gates = junit_gates(project)
    assert suite.get("failures") == "0" and len(gates) == 2
    assert_figures(project, unchanged)  # every view, the paper deltas all zero


    shutil.rmtree(project / "researchqa-figures")
    regressed = run_step(project, "pull_request", broken=True)
    assert regressed.returncode == 1, regressed.stdout[-3000:]
    assert_figures(project, regressed)  # and with real drops to draw
    suite, gates = junit_gates(project)
    assert int(suite.get("failures") or 0) >= 1, "JUnit agrees with the exit status"
    coverage = next(g for g in gates if g.get("name", "").startswith("section_coverage"))
    failure = coverage.find("failure")
    assert failure is not None and "decided on effect size alone" in (failure.get("message") or "")
    markdown = (project / "researchqa.md").read_text()
    assert markdown.startswith("## researchqa — gates FAILED ❌") and "✅" not in markdown.splitlines()[0]
    summary = json.loads((project / "researchqa.json").read_text())
    assert summary["verdict"] == "failed"
    [state] = [r["state"] for r in summary["regressions"] if r["metric"] == "section_coverage"]
    assert state == "failed"
