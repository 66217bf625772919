"""The on-disk answer cache: every answer is stored the moment it arrives.

One JSON file per key, written through a temporary file and a rename, so
concurrent xdist workers never see half a file and a run killed with
``kill -9`` keeps every answer that had arrived.

Processes that share a cache folder (two runs, xdist workers) never pay twice for
one key: a call in flight holds an exclusive ``flock`` on ``<key>.lock``, and a
second process that finds it held waits for the first one's answer instead of
asking. The kernel drops the lock when its owner exits, however it exits, so a
crashed run never blocks another.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import TypeGuard

from ..papers import atomic_write

_MOMENTARY = frozenset({errno.EMFILE, errno.ENFILE, errno.EINTR, errno.EAGAIN})
CLAIM_ATTEMPTS = 5  # a lock file replaced under us this often: ask without a claim


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
        self.invalid = 0
        self.off: Optional[str] = None  # why caching was turned off (the failed write), once it was
        self.stored = 0  # entries written before that
        self.uncached = 0  # entries not written after that

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str, accept: Optional[Callable[[dict[str, Any]], bool]] = None) -> Optional[dict[str, Any]]:
        """The entry, or None for a miss: absent, unreadable, malformed, or refused by ``accept`` (the
        reader's own check, e.g. a verdict of another plugin version's shape)."""
        try:
            entry = json.loads(self._path(key).read_text(encoding="utf-8"))
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
        """This process's claim on ``key`` while it asks for it, or None while another process holds one.

        Where claims cannot be taken (no ``fcntl``, an unwritable folder, caching turned off) every
        caller gets a claim that coordinates nothing: it costs a duplicate call at worst, never an answer.
        """
        try:
            import fcntl
        except ImportError:  # pragma: no cover -- Windows
            return Claim(None, None)
        path = self._path(key).with_suffix(".lock")
        for _ in range(CLAIM_ATTEMPTS):
            if self.off is not None:
                return Claim(None, None)
            try:
                try:
                    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
                except FileNotFoundError:  # the key's folder is not there yet
                    path.parent.mkdir(parents=True, exist_ok=True)
                    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as error:
                self._failed(error)
                return Claim(None, None)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                return None
            try:
                # The owner before us may have removed the file between our open and our lock: a lock on
                # a removed file excludes nobody, so take the claim afresh.
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except OSError:
                same = False
            if not same:
                os.close(fd)
                continue
            try:
                # Who holds it, for a person looking (never truncate: ext4 flushes a truncated file on close).
                # Only a courtesy: on a full disk the lock holds without it.
                os.pwrite(fd, f"{os.getpid():>10}\n".encode(), 0)
            except OSError:
                pass
            return Claim(path, fd)
        return Claim(None, None)  # the lock file keeps being replaced under us: ask without coordinating

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


class Claim:
    """A held claim on one key (``path`` and ``fd`` are None where claims are unavailable)."""

    def __init__(self, path: Optional[Path], fd: Optional[int]) -> None:
        self.path = path
        self.fd = fd

    def release(self) -> None:
        """Remove the lock file, then let go: a waiter that locks the removed file takes a fresh claim."""
        if self.fd is None:
            return
        try:
            if self.path is not None:
                self.path.unlink(missing_ok=True)
        except OSError:
            pass
        finally:
            os.close(self.fd)
            self.fd = None
