"""The on-disk answer cache: every answer is stored the moment it arrives.

One JSON file per key, written through a temporary file and a rename, so
concurrent xdist workers never see half a file and a run killed with
``kill -9`` keeps every answer that had arrived.

Processes that share a cache folder (two runs, xdist workers) never pay twice for
one key: a call in flight holds an exclusive lock on one byte of the folder's
``answers/claims.lock`` (a POSIX record lock, ``fcntl``; the byte's offset comes
from the key), and a second process that finds it held waits for the first one's
answer instead of asking. Each process keeps that one file open per cache folder,
so a claim and its release are two ``fcntl`` calls: no file is made or removed per
call. The kernel drops a process's locks when it exits, however it exits, so a
crashed run never blocks another. Record locks belong to a process, not to a
thread or a file descriptor, so the claims of one process are also kept in a
table of its own (calls of one process on one key exclude each other too), and
the file is never closed while the process runs (closing any descriptor of a
file drops all of the process's locks on it).
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import TypeGuard

from ..papers import atomic_write

_MOMENTARY = frozenset({errno.EMFILE, errno.ENFILE, errno.EINTR, errno.EAGAIN})
CLAIMS_FILE = "claims.lock"  # in the answers folder: one byte of it locked per call in flight
# Two keys whose claimed bytes coincide (one chance in 2**48 a pair) only make one wait for the other's call
# to end, then claim its own.
_OFFSET_BYTES = 6


def cache_key(**parts: Any) -> str:
    """A stable key over plain values (model, parameters, prompt hash, row, paper hash)."""
    blob = json.dumps(parts, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


class AnswerCache:
    """Answers and verdicts on disk. An entry that does not validate is a miss (recomputed, and
    counted in ``invalid``). The first write that fails (a full disk, a read-only folder) turns
    caching off for the rest of the run: one warning, no further writes or lock files, and
    ``off_note`` tells the run's summary; it costs re-calls next run, never this run's answers."""

    def __init__(self, root: Path) -> None:
        self.root = root / "answers"
        self._folder = os.fspath(self.root)
        self.invalid = 0
        self.off: Optional[str] = None  # why caching was turned off (the failed write), once it was
        self.stored = 0  # entries written before that
        self.uncached = 0  # entries not written after that
        self._claims: Optional[_ClaimsFile] = None  # opened at the first claim

    def _path(self, key: str) -> str:
        """The entry's file (a string: a Path's joins cost more than the read of a missing file)."""
        return f"{self._folder}{os.sep}{key[:2]}{os.sep}{key}.json"

    def get(self, key: str, accept: Optional[Callable[[dict[str, Any]], bool]] = None) -> Optional[dict[str, Any]]:
        """The entry, or None for a miss: absent, unreadable, malformed, or refused by ``accept`` (the
        reader's own check, e.g. a verdict of another plugin version's shape)."""
        try:
            with open(self._path(key), "rb") as stream:
                entry = json.loads(stream.read())
        except OSError:
            return None
        except ValueError:
            self.invalid += 1
            return None
        if not valid_entry(entry) or (accept is not None and not _accepted(accept, entry)):
            self.invalid += 1
            return None
        return entry

    def claim(self, key: str) -> Optional["Claim"]:
        """This process's claim on ``key`` while it asks for it, or None while another process (or another
        call of this one) holds one.

        Where claims cannot be taken (no ``fcntl``, an unwritable folder, caching turned off, a file system
        without record locks) every caller gets a claim that coordinates nothing: it costs a duplicate call
        at worst, never an answer.
        """
        if self.off is not None:
            return Claim(None, 0)
        claims = self._claims
        if claims is None:
            claims = self._claims = self._open_claims()
            if claims is None:
                return Claim(None, 0)
        return claims.take(_offset(key))

    def claims_held(self) -> int:
        """Claims this process holds on this cache folder now (calls in flight here)."""
        return 0 if self._claims is None else len(self._claims.held)

    def _open_claims(self) -> Optional["_ClaimsFile"]:
        """This process's open claims file of the folder, shared by every cache object on it; None where
        claims cannot be taken (a momentary failure is tried again at the next claim)."""
        if _fcntl() is None:  # pragma: no cover -- Windows: no record locks, calls are not coordinated
            return None
        path = os.path.realpath(self.root / CLAIMS_FILE)
        with _OPEN_LOCK:
            claims = _OPEN.get(path)
            if claims is None:
                try:
                    claims = _OPEN[path] = _ClaimsFile(path)
                except OSError as error:
                    self._failed(error)
                    return None
        return claims

    def put(self, key: str, entry: dict[str, Any]) -> None:
        if self.off is not None:
            self.uncached += 1
            return
        try:
            atomic_write(self._path(key), json.dumps(entry, ensure_ascii=False).encode())
        except OSError as error:
            self._failed(error)
            self.uncached += 1
        else:
            self.stored += 1

    def _failed(self, error: OSError) -> None:
        """A write failed. Out of file descriptors is this moment's problem; anything else (a full disk, a
        read-only or missing folder) turns caching off: warn once, write nothing more this run."""
        if self.off is not None or error.errno in _MOMENTARY:
            return
        self.off = f"{self.root}: {error.strerror or error}"
        import warnings

        try:
            warnings.warn(f"researchqa: cannot write the answer cache ({self.off}); caching is off for the rest "
                          "of this run: answers are used but will be asked for again next run", stacklevel=3)
        except Warning:  # warning filters made it an error: the run's summary still says so
            pass

    def off_note(self) -> Optional[str]:
        """The run summary's line once caching was turned off (plain text, crosses xdist)."""
        if self.off is None:
            return None
        return (f"the answer cache was off after {self.stored} entries were written: a write failed ({self.off}); "
                f"{self.uncached} later answers and verdicts were not cached and will be asked for again next run")


def _accepted(accept: Callable[[dict[str, Any]], bool], entry: dict[str, Any]) -> bool:
    try:
        return bool(accept(entry))
    except Exception:  # noqa: BLE001 -- a check that trips over a strange entry has refused it
        return False


def valid_entry(entry: Any) -> "TypeGuard[dict[str, Any]]":
    """An answer (text and citations) or a verdict: every score an integer from 1 to 5, or for the
    rubric family's kinds, item coverages from 0 to 4 / a preference of A, B or tie, or for the
    premise kind, a yes/no with a reason."""
    if not isinstance(entry, dict):
        return False
    kind = entry.get("kind")
    if kind is not None:
        scores = entry.get("scores")
        if not isinstance(scores, dict):
            return False
        if str(kind).startswith("coverage"):  # coverage, coverage-paper
            items = scores.get("items")
            return (isinstance(items, list) and bool(items)
                    and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 4 for v in items))
        if kind == "premise":  # the citation family's false-premise judge: yes or no, with a reason
            return isinstance(scores.get("flagged"), bool) and isinstance(scores.get("reason"), str)
        return str(kind).startswith("pairwise") and scores.get("preferred") in ("A", "B", "tie")
    if "scores" in entry:
        scores = entry["scores"]
        if not isinstance(scores, dict):
            return False
        numbers = [v for k, v in scores.items() if k != "justifications"]
        return bool(numbers) and all(isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 5 for v in numbers)
    if "answer" in entry:
        citations = entry.get("citations", [])
        return (isinstance(entry["answer"], (str, type(None))) and isinstance(citations, list)
                and all(isinstance(c, str) for c in citations))
    return False


def _offset(key: str) -> int:
    """The byte of the claims file that stands for ``key``: 48 bits of its hash (keys are hashes already, but
    not every caller's; within any 64-bit file offset)."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=_OFFSET_BYTES).digest(), "big")


@functools.lru_cache(maxsize=1)
def _fcntl() -> Any:
    """The ``fcntl`` module, None where there is none (Windows: looked for once, not at every claim)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover
        return None
    return fcntl


class _ClaimsFile:
    """A cache folder's claims file, open for this process's life, and the claims this process holds on it
    (by offset). A claim is a lock on one byte, taken without waiting; a release unlocks that byte."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = self._open()
        self.held: set[int] = set()
        self.lock = threading.Lock()
        self.pid = os.getpid()

    def _open(self) -> int:
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        try:
            return os.open(self.path, flags, 0o666)
        except FileNotFoundError:  # the answers folder is not there yet
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            return os.open(self.path, flags, 0o666)

    def take(self, offset: int) -> Optional["Claim"]:
        fcntl = _fcntl()
        with self.lock:
            if self.pid != os.getpid():  # a forked child holds none of its parent's locks
                self.held.clear()
                self.pid = os.getpid()
            if offset in self.held:
                return None
            fd = self._current()
            if fd is None:
                return Claim(None, 0)
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
            except OSError as error:
                if error.errno in (errno.EACCES, errno.EAGAIN):  # another process holds it
                    return None
                return Claim(None, 0)  # no record locks here (ENOLCK): ask without coordinating
            self.held.add(offset)
            return Claim(self, offset, fd)

    def _current(self) -> Optional[int]:
        """The open file's descriptor; a fresh one when the file was removed under us (the cache folder
        cleared during a run: other processes lock the new file). The old descriptor stays open, so the
        claims still held on it stay held until they are released."""
        try:
            if os.fstat(self.fd).st_nlink > 0:
                return self.fd
            self.fd = self._open()
        except OSError:
            return None
        return self.fd

    def release(self, offset: int, fd: int) -> None:
        fcntl = _fcntl()
        with self.lock:
            try:
                fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset)
            except OSError:  # pragma: no cover -- an unlock does not fail on an open descriptor
                pass
            self.held.discard(offset)


# This process's claims files, by real path: one each, never closed (see the module's docstring).
_OPEN: dict[str, _ClaimsFile] = {}
_OPEN_LOCK = threading.Lock()


class Claim:
    """A held claim on one key (``fd`` is None where claims are unavailable: it coordinates nothing)."""

    def __init__(self, claims: Optional[_ClaimsFile], offset: int, fd: Optional[int] = None) -> None:
        self._claims = claims
        self.offset = offset
        self.fd = fd if claims is not None else None

    def release(self) -> None:
        """Let go of the key: another process's next claim on it succeeds. Once is enough; again, nothing."""
        claims, self._claims = self._claims, None
        if claims is not None and self.fd is not None:
            claims.release(self.offset, self.fd)
        self.fd = None
