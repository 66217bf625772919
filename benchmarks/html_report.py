"""Size and filter time of the HTML report at the seed's scale: 6,211 rows x 3 systems.

Synthetic records shaped like a real run's (question, answer, three citations with their
views, sections), rendered by the plugin's own renderer, then opened in headless Chromium:
the figures are the file size, the embedded data before and after compression, and the time
the page takes to draw the row table for a filter (read from the page itself).

    python benchmarks/html_report.py [--rows 6211] [--systems 3]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
import urllib.parse
from pathlib import Path

from pytest_researchqa.families.citation import CITATION
from pytest_researchqa.records import RowRecord
from pytest_researchqa.reporting.html import page_data, render
from pytest_researchqa.session import ResearchSession

TYPES = ("lookup", "comprehension", "multi_hop", "adversarial")
WORDS = ("model retrieval evidence paper section results method students dataset accuracy baseline effect "
         "significant table figure analysis sample cohort measured reported increase decrease").split()


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def record(rng: random.Random, system: str, n: int) -> RowRecord:
    quotes = [sentence(rng, 22) for _ in range(3)]
    grounded = [rng.random() < 0.8 for _ in quotes]
    citations = []
    for quote, ok in zip(quotes, grounded):
        view = {"quote": quote, "verdict": "verbatim" if ok else "altered", "grounded": ok, "pages": [rng.randint(1, 12)],
                "evidence": True, "sections": ["Results"] if ok else []}
        if ok:
            view["context"] = [sentence(rng, 40), quote, sentence(rng, 40)]
        else:
            view["nearest"] = {"text": sentence(rng, 30), "page": 3, "similarity": 71.0}
            view["explain"] = "altered: a real passage with words or numbers changed"
        citations.append(view)
    return RowRecord(
        row_id=f"row-{n}", system=system, paper_id=f"paper-{n // 12}", question_type=TYPES[n % 4],
        domain=f"domain-{n % 9}", outcome="passed" if all(grounded) else "below_bar",
        metrics={"citation_accuracy": sum(grounded) / 3, "section_coverage": rng.random(),
                 "citation_precision": rng.random()},
        diagnosis=None if all(grounded) else "citation accuracy 0.67 < 1.00: 1 of 3 citations not grounded",
        details={"question": sentence(rng, 18), "expected_answer": sentence(rng, 20), "answer": " ".join(quotes),
                 "cited": quotes, "citations": citations,
                 "sections": [{"section": "Results", "covered": True}, {"section": "Methods", "covered": False}]})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=6211)
    parser.add_argument("--systems", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(7)
    session = ResearchSession(CITATION)
    for s in range(args.systems):
        for n in range(args.rows):
            session.add(record(rng, f"system-{s}", n))
    started = time.perf_counter()
    outcome = session.outcome()
    data = page_data(outcome, CITATION, "benchmark")
    text = render(outcome, CITATION, "benchmark")
    took = time.perf_counter() - started
    raw = len(json.dumps(data, ensure_ascii=False).encode("utf-8"))
    print(f"{args.rows * args.systems} rows: HTML {len(text.encode()) / 1e6:.1f} MB "
          f"(embedded data {raw / 1e6:.1f} MB before gzip); rendered in {took:.1f} s")
    chromium = shutil.which("chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("playwright (pip install playwright) drives Debian's chromium for the timings: not installed")
        return
    if chromium is None:
        print("chromium not installed: no browser figures")
        return
    with tempfile.TemporaryDirectory() as folder, sync_playwright() as driver:
        report = Path(folder) / "report.html"
        report.write_text(text, encoding="utf-8")
        browser = driver.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        started = time.perf_counter()
        page.goto(report.as_uri())
        page.wait_for_selector("body[data-ready='1']", timeout=120_000)
        print(f"  open (inflate and parse the data, draw the first {500} rows): {time.perf_counter() - started:.2f} s")
        for fragment in ("type=lookup", "q=" + urllib.parse.quote("row-42"), "metric=section_coverage&min=0.9",
                         "system=system-1&outcome=below_bar", ""):
            started = time.perf_counter()
            page.evaluate(f"location.hash = {json.dumps(fragment)}")
            page.wait_for_function("document.body.dataset.drawMs !== undefined")
            wall = time.perf_counter() - started
            drawn = page.evaluate("document.body.dataset.drawMs")
            count = page.inner_text("#count")
            print(f"  filter #{fragment or '(none)':<38} draws in {drawn} ms (round trip {wall * 1000:.0f} ms; "
                  f"{count})   target < 1000 ms")
        browser.close()


if __name__ == "__main__":
    main()
