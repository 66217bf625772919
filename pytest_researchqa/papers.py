"""Papers: find a row's paper on disk, read it once, and say why when it can't.

A row's paper resolves to ``<paper_id>.pdf``, ``.txt`` or ``.md`` in the papers
folder (``--researchqa-papers``, else ``papers/`` beside the dataset). A path
that would leave that folder (``..``, absolute ids, symlinks pointing out) is
refused: a downloaded dataset must not be able to make the plugin read, and
send to a model provider, files of yours.

PDF text comes from pypdf, page by page, with the offset at which each page
starts, so every message can name a page. Extraction runs once per paper per
machine: results are cached under a key made of the file's content hash, the
pypdf version and this module's extraction version.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import itertools
import json
import os
import sys
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    from .dataset import FamilyRow

T = TypeVar("T")

EXTRACTION_VERSION = "1"
PAPER_SUFFIXES = (".pdf", ".txt", ".md")
# A page of real text carries far more than this many letters and digits.
MIN_LETTERS_PER_PAGE = 25
# The most recently used papers keep everything prepared from them (the matcher's stretch index,
# offset map and line flows: up to about 1 MiB for a 45 KB paper). Older ones are trimmed to what an
# exact hit reads (text and keys: about 93 KB for a 45 KB paper), rebuilding the rest on use.
HOT_PAPERS = 16
# Trimmed papers are kept while they hold at most this many bytes in all (the seed's 494 papers
# take about 44 MiB): a dataset of that size never reads or prepares a paper twice, in any row
# order; a larger one evicts the least recently used, read and prepared again on their next row.
KEPT_BYTES = 64 * 2**20
# On an xdist worker handed each paper's rows together, once (xdist_compat.handed_whole_papers): the papers
# kept whole, none trimmed (a model system's rows read the next papers ahead of their rows).
WHOLE_PAPERS_HOT = 4


class PaperUnavailable(Exception):
    """The paper of a row cannot be had; its rows error with this message."""


@dataclass
class Paper:
    """A paper's text and its pages; what a family prepares from it is kept with it (:meth:`prepared`)."""

    paper_id: str
    text: str = field(repr=False)
    page_starts: tuple[int, ...] = field(default=(), repr=False)
    source: str = ""
    content_hash: str = field(default="", repr=False)
    _prepared: dict[Callable[["Paper"], Any], Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def pages(self) -> list[str]:
        """The text of each page (one item for papers without pages)."""
        if not self.page_starts:
            return [self.text]
        bounds = list(self.page_starts) + [len(self.text)]
        return [self.text[bounds[i] : bounds[i + 1]] for i in range(len(self.page_starts))]

    def page_of(self, offset: int) -> int | None:
        """1-based page number of a character offset, None for papers without pages."""
        if not self.page_starts:
            return None
        return max(1, bisect.bisect_right(self.page_starts, offset))

    def prepared(self, build: Callable[["Paper"], T]) -> T:
        """``build(self)``, built once per paper and kept with it: a family's own structures over the text
        (the citation matcher's index) live as long as the paper stays in its store, and no longer."""
        try:
            found: T = self._prepared[build]
        except KeyError:
            found = self._prepared[build] = build(self)
        return found

    def trim(self) -> None:
        """Let each prepared structure drop what it rebuilds on use (``trim()``): the store calls it
        when the paper leaves its most recently used few."""
        self._ask_prepared("trim")

    def nbytes(self) -> int:
        """About the memory the paper holds: its text and what is prepared from it (``nbytes()``)."""
        return sys.getsizeof(self.text) + 8 * len(self.page_starts) + sum(map(int, self._ask_prepared("nbytes")))

    def release(self) -> None:
        """Drop what was prepared from this paper, letting each prepared structure break its own cycles
        (``release()``): the store calls it when it evicts the paper."""
        self._ask_prepared("release")
        self._prepared.clear()

    def _ask_prepared(self, method: str) -> list[Any]:
        """Call ``method()`` on each prepared structure that has it; their answers."""
        answers = []
        for prepared in self._prepared.values():
            ask = getattr(prepared, method, None)
            if callable(ask):
                answers.append(ask())
        return answers

    def __getattr__(self, name: str) -> Any:
        if name == "match_index":  # the citation matcher's index was a property here; kept for one release
            from .moved_names import moved_attribute

            return moved_attribute("Paper.match_index", "pytest_researchqa.families.citation.matcher", name, self)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


def default_cache_dir() -> Path:
    configured = os.environ.get("RESEARCHQA_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pytest-researchqa"


class PaperStore:
    """Resolves, downloads (when allowed), extracts and remembers papers.

    The :data:`HOT_PAPERS` most recently used papers keep all that is prepared from them; older ones
    are trimmed (:meth:`Paper.trim`) and kept while they hold at most :data:`KEPT_BYTES` in all, the
    least recently used evicted beyond that, so memory stays bounded in the number of papers. A paper
    that cannot be had is remembered with its cause for the whole run.
    """

    def __init__(
        self,
        papers_dir: Path,
        cache_dir: Path,
        *,
        inline: dict[str, str] | None = None,
        allow_download: bool = False,
        allow_private_downloads: bool = False,
        confine_to: Path | None = None,
    ) -> None:
        self.papers_dir = papers_dir
        self.cache_dir = cache_dir
        self.inline = inline or {}
        self.allow_download = allow_download
        self.allow_private_downloads = allow_private_downloads
        # Reads never leave this folder. For a dataset's default papers/ it is that folder's path
        # taken literally (not resolved), so a papers/ that is itself a symlink leads nowhere.
        self.confine_to = confine_to if confine_to is not None else papers_dir.resolve()
        self.hot = HOT_PAPERS
        self.kept_bytes = KEPT_BYTES
        self.loaded = 0  # papers read over the run (one read again after eviction counts again)
        self._papers: OrderedDict[str, Paper] = OrderedDict()  # the least recently used first
        self._hot: OrderedDict[str, None] = OrderedDict()  # the most recently used few, untrimmed
        self._trimmed: dict[str, int] = {}  # the others, with their size when trimmed
        self._trimmed_bytes = 0
        self._unavailable: dict[str, PaperUnavailable] = {}  # small, and never worth asking again

    def for_row(self, row: "FamilyRow") -> Paper:
        """The paper a row is about; a row may also name where to download it (the citation family's
        ``paper_s3_url``), a third party's need not."""
        return self.get(str(row.paper_id), getattr(row, "paper_s3_url", None))

    def get(self, paper_id: str, url: str | None = None) -> Paper:
        """The paper, or raise :class:`PaperUnavailable` with the cause."""
        known = self._papers.get(paper_id)
        if known is not None:
            self._papers.move_to_end(paper_id)
            self._use(paper_id)
            return known
        failed = self._unavailable.get(paper_id)
        if failed is not None:
            raise failed
        try:
            paper = self._load(paper_id, url)
        except PaperUnavailable as error:
            failed = error
        except Exception as error:  # noqa: BLE001 -- a paper must fail its rows, never the run
            failed = PaperUnavailable(
                f"paper {paper_id!r}: unexpected error while reading it ({type(error).__name__}: {error})")
        if failed is not None:
            self._unavailable[paper_id] = failed
            raise failed
        self.loaded += 1
        self._papers[paper_id] = paper
        self._use(paper_id)
        return paper

    def _use(self, paper_id: str) -> None:
        """The paper is the most recently used: among the untrimmed few; the one it displaces is
        trimmed, and the least recently used trimmed ones go while they hold too much."""
        if paper_id in self._hot:
            self._hot.move_to_end(paper_id)
            return
        self._trimmed_bytes -= self._trimmed.pop(paper_id, 0)
        self._hot[paper_id] = None
        while len(self._hot) > self.hot:
            older = self._hot.popitem(last=False)[0]
            paper = self._papers[older]
            paper.trim()
            self._trimmed[older] = size = paper.nbytes()
            self._trimmed_bytes += size
        while self._trimmed_bytes > self.kept_bytes:
            oldest = next(iter(self._papers))  # the least recently used: trimmed (the hot ones are the latest)
            self._trimmed_bytes -= self._trimmed.pop(oldest)
            self._papers.pop(oldest).release()

    def _load(self, paper_id: str, url: str | None) -> Paper:
        if paper_id in self.inline:
            text = self.inline[paper_id]
            return Paper(paper_id, text, source="(inline)", content_hash=_sha256(text.encode()))
        path = self.resolve(paper_id)
        if path is None:
            if url and self.allow_download:
                path = self._download(paper_id, url)
            else:
                hint = (
                    " (pass --researchqa-download-papers to fetch it from paper_s3_url)"
                    if url
                    else ""
                )
                raise PaperUnavailable(
                    f"paper {paper_id!r} not found: looked for {paper_id}.pdf/.txt/.md in {self.papers_dir}{hint}"
                )
        return read_paper(path, paper_id, self.cache_dir)

    def resolve(self, paper_id: str) -> Path | None:
        """The local file of a paper, never outside the papers folder."""
        if not paper_id or "\x00" in paper_id:
            raise PaperUnavailable(f"paper id {paper_id!r} is not a usable file name")
        root = self.confine_to
        for suffix in PAPER_SUFFIXES:
            candidate = self.papers_dir / f"{paper_id}{suffix}"
            resolved = candidate.resolve()
            if not resolved.is_relative_to(root):
                raise PaperUnavailable(
                    f"paper id {paper_id!r} resolves to {resolved}, outside the papers folder {root}: refused "
                    "(a dataset's papers may not lead out of it, also not through a symlink)"
                )
            if resolved.is_file():
                return resolved
        return None

    def _download(self, paper_id: str, url: str) -> Path:
        target = self.cache_dir / "downloads" / f"{hashlib.sha256(url.encode()).hexdigest()[:32]}.pdf"
        if target.is_file():
            return target
        from .downloads import DownloadRefused, fetch_pdf

        try:
            body = fetch_pdf(url, allow_private=self.allow_private_downloads)
        except DownloadRefused as error:
            raise PaperUnavailable(f"paper {paper_id!r}: download from {url} refused: {error}") from None
        try:
            atomic_write(target, body)
        except OSError:
            pass  # an unwritable cache costs a second download next time, nothing else
        return target


def read_paper(path: Path, paper_id: str, cache_dir: Path | None = None) -> Paper:
    """Read a PDF (through the extraction cache) or a text file."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise PaperUnavailable(f"paper {paper_id!r}: cannot read {path}: {error.strerror}") from None
    digest = _sha256(data)
    if path.suffix.lower() != ".pdf":
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise PaperUnavailable(f"paper {paper_id!r}: {path} is not UTF-8 text") from None
        if not any(c.isalnum() for c in text):
            raise PaperUnavailable(f"paper {paper_id!r} ({path.name}): no text (the file is empty)")
        return Paper(paper_id, text, source=str(path), content_hash=digest)
    cached = _cached_extraction(cache_dir, digest) if cache_dir else None
    if cached is None:
        cached = _extract_pdf(data, path, paper_id)
        if cache_dir:
            try:
                atomic_write(_cache_file(cache_dir, digest), json.dumps(cached).encode())
            except OSError:
                pass  # a read-only cache: the paper is read again next run, nothing is lost now
    return Paper(paper_id, cached["text"], tuple(cached["page_starts"]), str(path), digest)


@functools.lru_cache(maxsize=1)
def _pypdf_version() -> str:
    import pypdf

    return pypdf.__version__


def _cache_file(cache_dir: Path, digest: str) -> Path:
    return cache_dir / "extracted" / f"{digest}-pypdf{_pypdf_version()}-v{EXTRACTION_VERSION}.json"


def _cached_extraction(cache_dir: Path, digest: str) -> dict[str, Any] | None:
    try:
        cached = json.loads(_cache_file(cache_dir, digest).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    # A damaged entry is a miss: extracted again and rewritten.
    if isinstance(cached, dict) and isinstance(cached.get("text"), str):
        starts = cached.get("page_starts")
        if (isinstance(starts, list) and all(isinstance(s, int) for s in starts)
                and starts == sorted(starts) and all(0 <= s <= len(cached["text"]) for s in starts)):
            return cached
    return None


def _extract_pdf(data: bytes, path: Path, paper_id: str) -> dict[str, Any]:
    import io

    import pypdf
    from pypdf.errors import PdfReadError

    label = f"paper {paper_id!r} ({path.name})"
    if not data.lstrip()[:5].startswith(b"%PDF"):
        raise PaperUnavailable(f"{label}: not a PDF file (it does not start with %PDF)")
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        # An owner password alone (restrictions, no user password) opens with the empty password,
        # as every viewer opens it.
        if reader.is_encrypted and not reader.decrypt(""):
            raise PaperUnavailable(f"{label}: the PDF is encrypted; decrypt it first (e.g. qpdf --decrypt)")
        pages = [page.extract_text() or "" for page in reader.pages]
    except PaperUnavailable:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, OSError) as error:
        raise PaperUnavailable(f"{label}: pypdf cannot read it ({type(error).__name__}: {error}); the file is "
                               "damaged or its structure is one pypdf does not accept (other viewers may still open "
                               "it): re-save it (e.g. qpdf in.pdf out.pdf, or print to PDF) or replace it with its "
                               f"text as {paper_id}.txt") from None
    except Exception as error:  # noqa: BLE001 -- decompression bombs and other pypdf limits
        raise PaperUnavailable(f"{label}: pypdf gave up on it ({type(error).__name__}: {error})") from None
    if not pages:
        raise PaperUnavailable(f"{label}: the PDF has no pages")
    text_parts, starts, offset = [], [], 0
    for page in pages:
        starts.append(offset)
        text_parts.append(page + "\n")
        offset += len(page) + 1
    text = "".join(text_parts)
    letters = sum(map(str.isalnum, text))
    if letters == 0 or (len(pages) > 1 and letters < MIN_LETTERS_PER_PAGE * len(pages)):
        raise PaperUnavailable(
            f"{label}: no extractable text ({letters} letters and digits over {len(pages)} pages); "
            "it looks image-only -- run OCR on it first"
        )
    return {"text": text, "page_starts": starts}


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# Temporary files of atomic writes: this process's id and a counter name each one, made with O_EXCL so a
# name another process (or a killed one) left behind is skipped, never shared.
_TEMPORARIES = itertools.count()
_TEMPORARY_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_TEMPORARY_TRIES = 100


def atomic_write(target: "Path | str", data: bytes | Iterable[bytes]) -> None:
    """Write via a temporary file and rename: safe with concurrent xdist workers, and a reader (or a run
    killed mid-write) never sees half a file. ``data`` may come in pieces (a saved run's rows, line by
    line: never the whole file in memory at once).

    Lean, since every model answer is written this way as it arrives: the temporary file is made at mode
    0666 less the umask (as any new file; no ``fchmod`` after ``mkstemp``'s private 0600), bytes go in one
    ``write``, and the folder is made only when the first open finds it missing."""
    handle, temporary = _temporary_beside(target)
    try:
        if isinstance(data, bytes):
            with memoryview(data) as view:
                written = 0
                while written < len(view):  # a regular file takes it in one write; a short one continues
                    written += os.write(handle, view[written:])
        else:
            with os.fdopen(os.dup(handle), "wb") as stream:
                stream.writelines(data)
        os.close(handle)
        handle = -1
        os.replace(temporary, target)
    except BaseException:
        if handle >= 0:
            os.close(handle)
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _temporary_beside(target: "Path | str") -> tuple[int, str]:
    """A new file in ``target``'s folder (made if missing), open for writing, and its path."""
    folder = os.path.dirname(os.fspath(target))
    for _ in range(_TEMPORARY_TRIES):
        temporary = os.path.join(folder, f".tmp-{os.getpid()}-{next(_TEMPORARIES)}")
        try:
            return os.open(temporary, _TEMPORARY_FLAGS, 0o666), temporary
        except FileExistsError:  # left by a killed process that had this id, or one on another machine
            continue
        except FileNotFoundError:  # the folder is not there yet
            os.makedirs(folder or ".", exist_ok=True)
    raise FileExistsError(f"no free temporary file name in {folder} after {_TEMPORARY_TRIES} tries")
