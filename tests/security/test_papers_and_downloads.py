"""Attacks through a dataset's papers: escaping its folder, hostile PDFs and cache files, hostile servers."""

from __future__ import annotations

import http.server
import io
import os
import threading
import time
from pathlib import Path

import pytest

from pytest_researchqa.downloads import DownloadRefused, fetch_pdf
from pytest_researchqa.papers import PaperStore, PaperUnavailable, read_paper

SAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "sample"
SAMPLE_PDF = SAMPLE / "papers" / "sample-edu.pdf"


def test_a_papers_folder_that_is_a_symlink_cannot_lead_out_of_the_dataset_folder(tmp_path):
    secret = tmp_path / "home" / "notes"
    secret.mkdir(parents=True)
    (secret / "W1.txt").write_text("API_KEY=do-not-send")
    dataset = tmp_path / "downloaded-dataset"
    dataset.mkdir()
    (dataset / "papers").symlink_to(secret, target_is_directory=True)
    store = PaperStore(dataset / "papers", tmp_path / "cache", confine_to=dataset.resolve() / "papers")
    with pytest.raises(PaperUnavailable, match="outside the papers folder .*refused"):
        store.get("W1")


def test_a_symlinked_paper_inside_the_folder_pointing_out_is_refused(tmp_path):
    (tmp_path / "secret.txt").write_text("API_KEY=do-not-send")
    dataset = tmp_path / "d"
    (dataset / "papers").mkdir(parents=True)
    (dataset / "papers" / "W1.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(PaperUnavailable, match="refused"):
        PaperStore(dataset / "papers", tmp_path / "cache", confine_to=dataset.resolve() / "papers").get("W1")


def test_a_damaged_extraction_cache_entry_is_a_miss_and_is_rewritten(tmp_path):
    cache = tmp_path / "cache"
    first = read_paper(SAMPLE_PDF, "edu", cache)
    [entry] = (cache / "extracted").iterdir()
    entry.write_text('{"text": "x", "page_starts": "not a list"}')
    again = read_paper(SAMPLE_PDF, "edu", cache)
    assert again.text == first.text
    assert '"page_starts": [' in entry.read_text()


def test_a_read_only_cache_still_reads_the_paper(tmp_path):
    if os.geteuid() == 0:
        cache = tmp_path / "cache-is-a-file"
        cache.write_text("not a folder")  # root ignores permissions: a file in the way fails writes too
    else:
        cache = tmp_path / "cache"
        cache.mkdir()
        cache.chmod(0o500)
    paper = read_paper(SAMPLE_PDF, "edu", cache)
    assert "quiz" in paper.text.lower()


def test_an_unexpected_error_reading_a_paper_fails_its_rows_not_the_run(tmp_path):
    papers = tmp_path / "papers"
    papers.mkdir()
    (papers / "W1.pdf").write_bytes(b"%PDF-1.7\n" + b"\x00" * 64)
    store = PaperStore(papers, tmp_path / "cache")
    with pytest.raises(PaperUnavailable, match="paper 'W1'"):
        store.get("W1")


def test_an_owner_password_only_pdf_opens_as_any_viewer_opens_it(tmp_path):
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for page in PdfReader(SAMPLE_PDF).pages:
        writer.add_page(page)
    writer.encrypt(user_password="", owner_password="owner-secret")
    target = tmp_path / "restricted.pdf"
    with target.open("wb") as stream:
        writer.write(stream)
    assert "quiz" in read_paper(target, "restricted").text.lower()
    locked = PdfWriter()
    locked.add_page(PdfReader(SAMPLE_PDF).pages[0])
    locked.encrypt(user_password="user-secret", owner_password="owner-secret")
    buffer = io.BytesIO()
    locked.write(buffer)
    (tmp_path / "locked.pdf").write_bytes(buffer.getvalue())
    with pytest.raises(PaperUnavailable, match="encrypted"):
        read_paper(tmp_path / "locked.pdf", "locked")


@pytest.fixture
def hostile_server():
    """127.0.0.1: a redirect to an FTP URL, a server that trickles, a huge body, a non-PDF."""
    body = SAMPLE_PDF.read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/to-ftp":
                self.send_response(302)
                self.send_header("Location", "ftp://127.0.0.1/paper.pdf")
                self.end_headers()
            elif self.path == "/trickle":
                self.send_response(200)
                self.send_header("Content-Type", "application/pdf")
                self.end_headers()
                try:
                    for _ in range(30):
                        self.wfile.write(b"%")
                        self.wfile.flush()
                        time.sleep(0.2)
                except OSError:
                    pass
            elif self.path == "/huge":
                self.send_response(200)
                self.send_header("Content-Length", str(200 * 1024 * 1024))
                self.end_headers()
            elif self.path == "/html":
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"<html>not a paper</html>")
            else:
                self.send_response(200)
                self.end_headers()
                self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_downloads_refuse_loopback_and_private_addresses_unless_allowed(hostile_server):
    for url in (f"{hostile_server}/paper.pdf", "http://10.0.0.1/paper.pdf", "http://169.254.169.254/latest"):
        with pytest.raises(DownloadRefused, match="loopback, private, link-local or reserved"):
            fetch_pdf(url)
    assert fetch_pdf(f"{hostile_server}/paper.pdf", allow_private=True).startswith(b"%PDF")


def test_every_redirect_hop_is_checked(hostile_server):
    with pytest.raises(DownloadRefused, match="only http and https are fetched, not 'ftp'"):
        fetch_pdf(f"{hostile_server}/to-ftp", allow_private=True)


def test_a_server_that_trickles_its_reply_meets_a_wall_clock_deadline(hostile_server):
    started = time.monotonic()
    with pytest.raises(DownloadRefused, match="not finished within"):
        fetch_pdf(f"{hostile_server}/trickle", allow_private=True, deadline_s=1.0)
    assert time.monotonic() - started < 5


def test_size_is_capped_and_only_pdfs_are_kept(hostile_server):
    with pytest.raises(DownloadRefused, match="byte cap"):
        fetch_pdf(f"{hostile_server}/huge", allow_private=True)
    with pytest.raises(DownloadRefused, match="not a PDF"):
        fetch_pdf(f"{hostile_server}/html", allow_private=True)


def test_the_plugin_never_reads_through_a_dataset_whose_papers_folder_is_a_symlink(pytester, tmp_path):
    import json

    secret = tmp_path / "elsewhere"
    secret.mkdir()
    (secret / "W1.txt").write_text("We enrolled 240 adults. API_KEY=do-not-send")
    (pytester.path / "papers").symlink_to(secret, target_is_directory=True)
    row = {"row_id": "r1", "paper_id": "W1", "question_type": "lookup", "question": "How many?",
           "expected_answer": "240", "expected_references": [{"section_label": "M", "alternatives": [
               "We enrolled 240 adults."]}]}
    (pytester.path / "rows.jsonl").write_text(json.dumps(row) + "\n")
    result = pytester.runpytest("--researchqa-dataset=rows.jsonl", "--researchqa-system=oracle",
                                f"--researchqa-cache-dir={tmp_path / 'cache'}", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*outside the papers folder*refused*"])
