"""Papers: resolution, extraction with a page map, the cache, and every way a paper can be unreadable."""

from __future__ import annotations

import http.server
import os
import threading
from pathlib import Path

import pytest
from helpers import SAMPLE, needs_shared, shared_path

from pytest_researchqa import papers
from pytest_researchqa.families.citation.matcher import match_index
from pytest_researchqa.papers import PaperStore, PaperUnavailable, read_paper

SAMPLE_PDF = SAMPLE / "papers" / "sample-env.pdf"


def test_a_pdf_is_read_into_text_with_a_page_map(tmp_path):
    paper = read_paper(SAMPLE_PDF, "sample-env", tmp_path)
    assert len(paper.pages) == len(paper.page_starts) >= 3
    for number, page in enumerate(paper.pages, start=1):
        start = paper.page_starts[number - 1]
        assert paper.text[start : start + len(page)] == page
        assert paper.page_of(start) == number
        assert paper.page_of(start + len(page) - 1) == number


def test_extraction_runs_once_per_paper_per_machine(tmp_path, monkeypatch):
    first = read_paper(SAMPLE_PDF, "sample-env", tmp_path)
    cached = list((tmp_path / "extracted").glob("*.json"))
    assert len(cached) == 1
    import pypdf

    assert f"pypdf{pypdf.__version__}" in cached[0].name, "the pypdf version is part of the key"

    def no_second_extraction(*args):
        raise AssertionError("extracted twice")

    monkeypatch.setattr(papers, "_extract_pdf", no_second_extraction)
    again = read_paper(SAMPLE_PDF, "sample-env", tmp_path)
    assert again.text == first.text and again.page_starts == first.page_starts


def test_a_copy_of_the_same_pdf_under_another_name_hits_the_cache(tmp_path, monkeypatch):
    read_paper(SAMPLE_PDF, "sample-env", tmp_path / "cache")
    copy = tmp_path / "renamed.pdf"
    copy.write_bytes(SAMPLE_PDF.read_bytes())
    monkeypatch.setattr(papers, "_extract_pdf", lambda *a: pytest.fail("extracted twice"))
    assert read_paper(copy, "renamed", tmp_path / "cache").paper_id == "renamed"


def encrypted_pdf(path: Path) -> Path:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for page in PdfReader(SAMPLE_PDF).pages:
        writer.add_page(page)
    writer.encrypt("secret")
    with path.open("wb") as stream:
        writer.write(stream)
    return path


def image_only_pdf(path: Path) -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    for _ in range(3):
        pdf.add_page()
        pdf.rect(20, 20, 100, 100, style="F")
    pdf.output(str(path))
    return path


UNREADABLE = {
    "encrypted": (encrypted_pdf, "the PDF is encrypted"),
    "image-only": (image_only_pdf, "no extractable text"),
    "truncated": (lambda p: (p.write_bytes(SAMPLE_PDF.read_bytes()[:1500]), p)[1], "pypdf cannot read it"),
    "not a PDF": (lambda p: (p.write_text("<html>Not found</html>"), p)[1], "not a PDF file"),
    "empty": (lambda p: (p.write_bytes(b""), p)[1], "not a PDF file"),
}


@pytest.mark.slow
@pytest.mark.parametrize(("make", "cause"), UNREADABLE.values(), ids=UNREADABLE.keys())
def test_an_unreadable_pdf_raises_with_its_cause(tmp_path, make, cause):
    path = make(tmp_path / "bad.pdf")
    with pytest.raises(PaperUnavailable, match=cause) as error:
        read_paper(path, "bad", tmp_path / "cache")
    assert "paper 'bad' (bad.pdf)" in str(error.value)


@needs_shared
@pytest.mark.parametrize(
    ("name", "cause"),
    [
        ("libreoffice-writer-password.pdf", "encrypted"),
        ("imagemagick-images.pdf", "no extractable text"),
        ("unreadablemetadata.pdf", "pypdf cannot read it"),
    ],
)
def test_real_problem_pdfs_raise_with_their_cause(tmp_path, name, cause):
    with pytest.raises(PaperUnavailable, match=cause):
        read_paper(shared_path("pdf-edge-cases", name), Path(name).stem, tmp_path)


@needs_shared
@pytest.mark.parametrize("name", ["habibi.pdf", "multicolumn.pdf", "pdflatex-4-pages.pdf", "google-doc-document.pdf"])
def test_real_readable_edge_case_pdfs_are_read(tmp_path, name):
    paper = read_paper(shared_path("pdf-edge-cases", name), Path(name).stem, tmp_path)
    assert paper.text.strip()


def test_text_and_markdown_papers_are_read_as_is(tmp_path):
    (tmp_path / "a.txt").write_text("Plain text paper.")
    (tmp_path / "b.md").write_text("# Markdown paper")
    store = PaperStore(tmp_path, tmp_path / "cache")
    assert store.get("a").text == "Plain text paper."
    assert store.get("b").text == "# Markdown paper"
    assert store.get("a").page_of(3) is None, "text papers have no pages"


def test_the_store_keeps_at_most_its_quota_of_prepared_papers_and_reads_an_evicted_one_again_alike(tmp_path):
    for number in range(5):
        (tmp_path / f"p{number}.txt").write_text(f"Paper number {number} says something about {number}.")
    store = PaperStore(tmp_path, tmp_path / "cache")
    store.hot, store.kept_bytes = 2, 0
    first = {number: store.get(f"p{number}") for number in range(5)}
    assert len(store._papers) == 2, "only the two most recently used papers are held"
    assert list(store._papers) == ["p3", "p4"]
    again = store.get("p0")
    assert again is not first[0], "an evicted paper is read again"
    assert (again.text, again.content_hash) == (first[0].text, first[0].content_hash)
    assert match_index(again).match("says something about 0").grounded
    assert store.get("p0") is again and store.loaded == 6, "a kept paper is not read again"
    assert len(store._papers) == 2


def test_papers_beyond_the_most_recent_few_are_trimmed_and_kept_within_the_byte_budget(tmp_path):
    texts = {f"p{number}": f"Paper number {number} says something about topic {number}. " * 200 for number in range(6)}
    store = PaperStore(tmp_path, tmp_path / "cache", inline=texts)
    store.hot = 2
    for paper_id in texts:
        index = match_index(store.get(paper_id))
        assert index.match(f"says something about topic {paper_id[1:]}").grounded
        index.grams.build()  # as a fabrication's search would
    assert list(store._papers) == list(texts), "all six kept: within the default budget"
    assert store.loaded == 6
    assert [match_index(store._papers[p]).grams.built for p in texts] == [False] * 4 + [True] * 2
    trimmed = store._papers["p0"].nbytes()
    assert trimmed < 3 * len(texts["p0"]), "a trimmed paper holds its text and keys, not its stretch index"
    store.kept_bytes = 2 * trimmed + 1
    store.get("p0")  # the most recently used again: p1 is trimmed, and the oldest trimmed ones go
    assert list(store._papers) == ["p3", "p4", "p5", "p0"] and store.loaded == 6


def test_an_unavailable_paper_is_remembered_with_its_cause_and_not_looked_for_again(tmp_path):
    store = PaperStore(tmp_path, tmp_path / "cache")
    with pytest.raises(PaperUnavailable) as first:
        store.get("W1")
    (tmp_path / "W1.txt").write_text("It appeared later.")
    with pytest.raises(PaperUnavailable) as second:
        store.get("W1")
    assert second.value is first.value


def test_a_missing_paper_names_where_it_looked(tmp_path):
    store = PaperStore(tmp_path, tmp_path / "cache")
    with pytest.raises(PaperUnavailable, match=rf"looked for W1.pdf/.txt/.md in {tmp_path}"):
        store.get("W1")
    with pytest.raises(PaperUnavailable, match="--researchqa-download-papers"):
        store.get("W2", "https://example.org/W2.pdf")


@pytest.mark.parametrize("paper_id", ["../outside", "../../etc/passwd", "/etc/passwd", "sub/../../outside"])
def test_paper_ids_cannot_leave_the_papers_folder(tmp_path, paper_id):
    folder = tmp_path / "papers"
    folder.mkdir()
    (tmp_path / "outside.txt").write_text("secret")
    with pytest.raises(PaperUnavailable, match="outside the papers folder"):
        PaperStore(folder, tmp_path / "cache").resolve(paper_id)


def test_a_symlink_pointing_out_of_the_papers_folder_is_refused(tmp_path):
    folder = tmp_path / "papers"
    folder.mkdir()
    (tmp_path / "secret.txt").write_text("API_KEY=1")
    os.symlink(tmp_path / "secret.txt", folder / "innocent.txt")
    with pytest.raises(PaperUnavailable, match="outside the papers folder"):
        PaperStore(folder, tmp_path / "cache").get("innocent")


@pytest.fixture
def pdf_server():
    """A local HTTP server on 127.0.0.1 serving the sample PDF; counts requests."""
    requests: list[str] = []
    body = SAMPLE_PDF.read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            requests.append(self.path)
            if self.path.endswith("missing.pdf"):
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/pdf")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", requests
    server.shutdown()
    server.server_close()


def test_missing_papers_are_downloaded_once_into_the_cache_when_allowed(tmp_path, pdf_server):
    base, requests = pdf_server
    url = f"{base}/papers/W42.pdf"
    # The test server is on 127.0.0.1: a real dataset's URL on loopback would be refused.
    store = PaperStore(tmp_path / "papers", tmp_path / "cache", allow_download=True, allow_private_downloads=True)
    paper = store.get("W42", url)
    assert "Street Tree Canopy" in paper.text
    assert requests == ["/papers/W42.pdf"]
    fresh = PaperStore(tmp_path / "papers", tmp_path / "cache", allow_download=True, allow_private_downloads=True)
    assert fresh.get("W42", url).text == paper.text
    assert requests == ["/papers/W42.pdf"], "the second run reads the cache"


def test_a_failed_download_is_the_row_error(tmp_path, pdf_server):
    base, _ = pdf_server
    store = PaperStore(tmp_path / "papers", tmp_path / "cache", allow_download=True, allow_private_downloads=True)
    with pytest.raises(PaperUnavailable, match="download from .*missing.pdf refused: HTTP 404"):
        store.get("W404", f"{base}/missing.pdf")
    with pytest.raises(PaperUnavailable, match="only http and https are fetched, not 'file'"):
        store.get("W9", "file:///etc/passwd")


@pytest.mark.slow
def test_the_plugin_downloads_only_with_the_flag(pytester, pdf_server, tmp_path):
    base, requests = pdf_server
    row = {
        "row_id": "r1", "paper_id": "W42", "paper_s3_url": f"{base}/W42.pdf", "domain": "environment",
        "question_type": "lookup", "question": "How many scenes?", "expected_answer": "27",
        "expected_references": [{"section_label": "Data", "alternatives": [
            "We kept only the 27 scenes in which every study block was free of cloud."]}],
    }
    import json

    pytester.path.joinpath("rows.jsonl").write_text(json.dumps(row) + "\n")
    common = ("--researchqa-dataset=rows.jsonl", "--researchqa-system=oracle", f"--researchqa-cache-dir={tmp_path}",
              "-p", "no:cacheprovider")
    pytester.runpytest(*common).assert_outcomes(errors=1)
    assert requests == []
    refused = pytester.runpytest(*common, "--researchqa-download-papers")
    refused.assert_outcomes(errors=1)
    refused.stdout.fnmatch_lines(["*resolves to 127.0.0.1, a loopback, private, link-local or reserved address*"])
    assert requests == [], "a dataset cannot make the plugin fetch from this machine"
    pytester.runpytest(*common, "--researchqa-download-papers",
                       "--researchqa-download-allow-private").assert_outcomes(passed=1)
    assert len(requests) == 1


def test_a_paper_evicted_from_the_store_frees_its_match_index_without_waiting_for_a_garbage_collection(tmp_path):
    import gc
    import weakref

    texts = {"a": "Spaced retrieval practice raised final exam scores by five points in every section.\n",
             "b": "A different paper about something else entirely, with its own sentences.\n"}
    store = PaperStore(tmp_path, cache_dir=tmp_path, inline=texts)
    store.hot, store.kept_bytes = 1, 0
    index = match_index(store.get("a"))
    assert index.match("raised final exam scores by five points").grounded  # remembered: a cycle with the index
    gone = weakref.ref(index)
    del index
    gc.disable()
    try:
        store.get("b")  # evicts "a"
        assert gone() is None, "freed when evicted, not at the next full collection"
    finally:
        gc.enable()
