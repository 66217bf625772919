"""Saved runs: every row's record and the run's manifest, on disk, readable later. No pytest import.

A run folder (default ``.researchqa/runs/<YYYYmmdd-HHMMSS>-<name>/``) holds

* ``rows.jsonl`` -- one :class:`~pytest_researchqa.records.RowRecord` per line, as plain
  data, sorted by system then row id (so a serial and an ``-n 2`` run write the same rows);
* ``manifest.json`` -- what produced it: plugin, pytest and Python versions, git commit,
  dataset file and content hash, prompt and judge-prompt hashes, systems and models with
  their parameters (secrets redacted), selection, gates and outcome, start and end time,
  command line.

Records are appended to ``rows.partial.jsonl`` the moment they arrive, so a run that is
killed keeps what it finished; the final files are written atomically at the end.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import itertools
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Optional

from .records import RecordVersionError, RowRecord
from .text_safety import utf8

if TYPE_CHECKING:  # pragma: no cover
    from .reporting.compare import Baseline
    from .reporting.outcome import RunOutcome
    from .state import RunState

ROWS_FILE = "rows.jsonl"
PARTIAL_FILE = "rows.partial.jsonl"
MANIFEST_FILE = "manifest.json"
SUMMARY_FILE = "summary.json"  # the machine-readable summary (docs/json.md)
DEFAULT_RUNS_DIR = Path(".researchqa") / "runs"
MANIFEST_VERSION = 1
# The partial rows file: appended to, without newline translation on Windows (line offsets are kept).
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)


class RunNotFound(LookupError):
    """A saved run named on the command line that is not on disk."""


def run_folder_name(name: str, started: _dt.datetime) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "run"
    return f"{started.strftime('%Y%m%d-%H%M%S')}-{safe}"


_FOLDER_NAME = re.compile(r"\d{8}-\d{6}(?:\.\d+)?-(?P<name>.+)")


def saved_name(folder_name: str) -> Optional[str]:
    """The ``--researchqa-save`` name a run folder was given (``20261123-101500.2-main`` -> ``main``)."""
    found = _FOLDER_NAME.fullmatch(folder_name)
    return found.group("name") if found else None


def new_run_folder(runs_dir: Path, name: str, started: _dt.datetime) -> Path:
    """A folder no other run uses, made here (so two runs saving in the same second at the same moment
    cannot both take it): a second run in the same second gets ``.2`` after the time, which still
    sorts after the first (so ``last`` stays the most recent). Where no folder can be made (a full
    disk), the first name: the run's writer says why its results were not saved."""
    folder = runs_dir / run_folder_name(name, started)
    stamp, _, rest = folder.name.partition("-")
    time, _, rest = rest.partition("-")
    candidate, counter = folder, 2
    while True:
        try:
            candidate.mkdir(parents=True)
            return candidate
        except FileExistsError:
            candidate = runs_dir / f"{stamp}-{time}.{counter}-{rest}"
            counter += 1
        except OSError:
            return folder


def sort_key(record: RowRecord) -> tuple[str, str, str]:
    return (record.system or "", record.row_id or "", record.nodeid or "")


def redact_params(params: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Model parameters with every credential replaced, at any depth (headers, URLs with a password)."""
    from .llm_params import redact_value

    return {model: {k: redact_value(k, v) for k, v in values.items()} for model, values in params.items()}


def file_sha256(path: Path) -> Optional[str]:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def folder_hashes(folder: Path) -> dict[str, str]:
    """sha256 (first 16 hex digits) of every file in a folder: the judge prompts' fingerprint."""
    if not folder.is_dir():
        return {}
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in sorted(folder.iterdir()) if p.is_file()}


def git_commit(where: Path) -> Optional[str]:
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


# What json.dumps(plain, ensure_ascii=False[, sort_keys=True]) writes, by encoders made once, not once a row;
# without the check for reference cycles (plain data has none: ``RowRecord.to_plain``), which costs a tenth
# of a line's time (issue 24 item 2).
_record_text = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode
_saved_text = json.JSONEncoder(ensure_ascii=False, sort_keys=True, check_circular=False).encode


def record_line(plain: dict[str, Any]) -> str:
    """A record's plain data as its line of the partial rows file (without the newline)."""
    return _record_text(plain)


def saved_line(plain: dict[str, Any]) -> bytes:
    """A record's plain data as its line of ``rows.jsonl``, newline and all: what :meth:`RunWriter.finish`
    writes for it, and what :meth:`RunWriter.add` appends to the partial rows file when it has the plain data
    itself (so the final file can copy that line instead of making it again)."""
    return utf8(_saved_text(plain) + "\n")


class RunWriter:
    """Streams records into a run folder and finishes it with the sorted rows and the manifest.

    A write that fails (a full disk, a folder that cannot be made) stops the saving, not the run:
    ``failed`` says why, and the run's summary says the results were not saved.

    With ``spill`` a record's ``details`` (the row's view: question, answer, quotes and their context,
    most of a record's size) are not kept in memory once its line is on disk: the record keeps an empty
    ``details`` and :meth:`finish` reads them back from the partial file, line by line, for ``rows.jsonl``
    (issue 24 item 4: the controller's memory is otherwise every row's view to the end of the run)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.failed: Optional[str] = None
        self._partial: Optional[int] = None  # the partial rows file, open for appending (a descriptor)
        self._size = 0  # its length so far
        # id(record) -> (where its line starts in the partial file, its length, whether that line is the record's
        # line of rows.jsonl): the records whose lines ``finish`` copies (``final``) or reads their details back
        # from (``spill``). A tuple of numbers only, not one holding the record: Python's collector stops walking
        # such a tuple, where it walked one that holds a record to the end of the run (issue 24 item 2). ``_kept``
        # holds those records, so no id is another record's while they are here.
        self._lines: dict[int, tuple[int, int, bool]] = {}
        self._kept: list[RowRecord] = []

    def add(self, record: RowRecord, plain: Optional[dict[str, Any]] = None, line: Optional[str] = None, *,
            final: bool = False, spill: bool = False) -> None:
        """Append a row to the partial file at once, one ``write`` a row (a killed run keeps its finished rows).
        ``plain`` is the record's plain data when the caller has it already (a report's), ``line`` its text
        (:func:`record_line`, made by an xdist worker): neither is made again. ``final``: ``plain`` (or, without
        it, the record) is what the record's ``to_plain()`` will still give when the run finishes, so the line
        written here is the one ``rows.jsonl`` takes (issue 24 item 2: each record is serialized once).
        ``spill``: once the line is on disk, the record lets go of its ``details`` (see the class); they stay
        where a write fails."""
        if self.failed is not None:
            return
        try:
            if self._partial is None:
                self.folder.mkdir(parents=True, exist_ok=True)
                self._partial = os.open(self.folder / PARTIAL_FILE, _APPEND, 0o666)  # the umask applies, as open's
                self._size = os.fstat(self._partial).st_size
            if line is not None:
                # As text_safety.utf8 writes a file: a lone surrogate as its escape, never an error.
                data = utf8(line + "\n")
                final = False
            else:
                data = saved_line(record.to_plain(copy=False) if plain is None else plain)
            start = self._size
            _write_all(self._partial, data)
            self._size += len(data)
        except OSError as error:
            self._fail(error)
            return
        spilled = spill and bool(record.details)
        if final or spilled:
            if id(record) not in self._lines:
                self._kept.append(record)
            self._lines[id(record)] = (start, len(data), final)
        if spilled:
            record.details = {}

    def _fail(self, error: OSError) -> None:
        self.failed = str(error.strerror or error)
        self._close_partial()

    def _close_partial(self) -> None:
        if self._partial is not None:
            try:
                os.close(self._partial)
            except OSError:
                pass
            self._partial = None

    def finish(self, records: Iterable[RowRecord], manifest: dict[str, Any],
               summary: Optional[dict[str, Any]] = None) -> None:
        """The final files (nothing more once a write failed; a failure here sets ``failed``). A record whose
        line in the partial file is final is copied from there, the others are serialized again."""
        from .papers import atomic_write

        if self.failed is not None:
            return
        try:
            self._close_partial()
            with self._partial_lines() as line_of:
                rows = (line_of(r) for r in sorted(records, key=sort_key))
                atomic_write(self.folder / ROWS_FILE, rows)  # line by line: at the seed's scale the file is ~40 MB
            self._lines.clear()  # the writer holds no record beyond the run's end
            self._kept.clear()
            manifest = {"version": MANIFEST_VERSION, **manifest}
            atomic_write(self.folder / MANIFEST_FILE,
                         utf8(json.dumps(manifest, indent=2, ensure_ascii=False, default=str) + "\n"))
            if summary is not None:  # the machine-readable summary (docs/json.md), beside the manifest
                atomic_write(self.folder / SUMMARY_FILE,
                             utf8(json.dumps(summary, indent=2, ensure_ascii=False, default=str) + "\n"))
        except OSError as error:
            self._fail(error)
            return
        try:
            os.unlink(self.folder / PARTIAL_FILE)
        except OSError:
            pass

    @contextlib.contextmanager
    def _partial_lines(self) -> Iterator[Callable[[RowRecord], bytes]]:
        """A function giving a record's line of ``rows.jsonl``: its line in the partial file where that is final,
        else made again (with the details it let go of read back from there)."""
        try:
            stream = open(self.folder / PARTIAL_FILE, "rb") if self._lines else None
        except OSError:  # gone (removed by hand): every record is serialized again
            stream = None
        with contextlib.ExitStack() as stack:
            if stream is not None:
                stack.enter_context(stream)

            def line_of(record: RowRecord) -> bytes:
                kept = self._lines.get(id(record))
                if stream is not None and kept is not None:
                    start, length, final = kept
                    stream.seek(start)
                    data = stream.read(length)
                    if len(data) == length:
                        if final:
                            return data
                        plain = record.to_plain(copy=False)
                        plain["details"] = json.loads(data).get("details") or {}
                        return saved_line(plain)
                return saved_line(record.to_plain(copy=False))

            yield line_of


def _write_all(descriptor: int, data: bytes) -> None:
    """All of ``data`` (a write to a regular file writes everything unless the disk is full: then it raises)."""
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view):]


@dataclass(frozen=True)
class SavedRun:
    folder: Path
    manifest: dict[str, Any]
    records: tuple[RowRecord, ...]

    @property
    def name(self) -> str:
        return self.folder.name

    @property
    def finished(self) -> bool:
        """False for a run cut short (killed, or stopped before its end): only its partial rows file exists."""
        return (self.folder / ROWS_FILE).is_file()

    @property
    def cut_short(self) -> Optional[str]:
        """Why the run is no baseline (:func:`cut_short`): "unfinished", "interrupted", "crashed"; else None."""
        return cut_short(self.folder, self.manifest)


def cut_short(folder: Path, manifest: Optional[dict[str, Any]] = None) -> Optional[str]:
    """Why a run folder is not a finished run `last` and a name may stand for: ``"unfinished"`` (killed before
    its end: only its partial rows file), ``"interrupted"`` (stopped by Ctrl-C: its files say so), ``"crashed"``
    (a test crashed its xdist worker: a row may be missing or cut short), or None."""
    if not (folder / ROWS_FILE).is_file():
        return "unfinished"
    if manifest is None:
        try:
            manifest = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return None  # no readable manifest (an older run): its rows are whole
    outcome = manifest.get("outcome") if isinstance(manifest, dict) else None
    if not isinstance(outcome, dict):
        return None
    if outcome.get("interrupted") is True:
        return "interrupted"
    return "crashed" if outcome.get("crashed") else None


def resolve_run(spec: str, runs_dir: Path) -> Path:
    """A run folder from a path, a folder name, a name suffix (``baseline``) or ``last``."""
    candidate = Path(spec)
    if candidate.is_dir() and ((candidate / ROWS_FILE).is_file() or (candidate / PARTIAL_FILE).is_file()):
        return candidate
    saved = sorted(p for p in runs_dir.iterdir() if p.is_dir()) if runs_dir.is_dir() else []
    # Runs killed (no rows.jsonl), interrupted (Ctrl-C) or with a crashed xdist worker are no baseline: only a
    # path names them. Each manifest is read only when its folder is a candidate.
    if spec == "last":
        written = [p for p in saved if (p / ROWS_FILE).is_file()]
        # The run that finished last: names sort by start second, and two runs of one second by name.
        written.sort(key=lambda p: ((p / ROWS_FILE).stat().st_mtime_ns, p.name), reverse=True)
        found = next((p for p in written if cut_short(p) is None), None)
        if found is None:
            # The newest run cut short, named by its folder: `show`, `view` and `compare` read it by that path.
            cut = (f" (only runs killed, interrupted or crashed; the newest is {saved[-1]}: name its folder to read "
                   "it)") if saved else ""
            raise RunNotFound(f"no saved run in {runs_dir}{cut}")
        return found
    named = [p for p in saved if p.name == spec or saved_name(p.name) == spec]
    matches = [p for p in named if cut_short(p) is None]
    if not matches:
        latest = itertools.islice((p for p in reversed(saved) if cut_short(p) is None), 5)  # reads 5 manifests or so
        known = ", ".join(p.name for p in reversed(list(latest))) or "none"
        why = {"unfinished": "did not finish (only its partial rows)", "interrupted": "was interrupted",
               "crashed": "had a test crash its xdist worker"}
        unfinished = (f"; {named[-1]} {why[cut_short(named[-1]) or 'unfinished']}: name its folder to read it"
                      if named else "")
        raise RunNotFound(f"no saved run {spec!r} in {runs_dir} (latest: {known}){unfinished}")
    return matches[-1]


def load_run(folder: Path, *, details: bool = True) -> SavedRun:
    """A saved run; a run cut short (no rows.jsonl yet) is read from its partial file.

    Read line by line; a line that is not a row record, and a manifest that is not a JSON
    object, are a ValueError naming the file and line (the commands exit 2, a baseline is a
    usage error before any row runs). ``details``: False leaves each row's ``details`` (its citations' views,
    most of a saved row's bytes) unread, for what shows no row (``show``, ``compare`` of a family whose board
    reads none: :func:`reads_details`)."""
    manifest = read_manifest(folder)
    rows_file = folder / ROWS_FILE if (folder / ROWS_FILE).is_file() else folder / PARTIAL_FILE
    records = []
    with open(rows_file, encoding="utf-8", errors="strict") as stream:
        try:
            for number, line in enumerate(stream, start=1):
                if not line.strip():
                    continue
                try:
                    plain = json.loads(line)
                    if not details and isinstance(plain, dict):
                        plain.pop("details", None)
                    records.append(RowRecord.from_plain(plain))
                except RecordVersionError as error:
                    raise ValueError(f"{rows_file}, line {number}: {error}") from None
                except (ValueError, TypeError, RecursionError) as error:
                    raise ValueError(f"{rows_file}, line {number}: not a row record ({_short(error)})") from None
        except UnicodeDecodeError as error:
            raise ValueError(f"{rows_file}: not UTF-8 text ({error.reason})") from None
    return SavedRun(folder, manifest, tuple(records))


def read_manifest(folder: Path) -> dict[str, Any]:
    """A saved run's manifest ({} when it has none); a ValueError naming the file when it is not one this version
    reads."""
    manifest_file = folder / MANIFEST_FILE
    manifest: dict[str, Any] = {}
    if manifest_file.is_file():
        try:
            read = json.loads(manifest_file.read_text(encoding="utf-8"))
        except (ValueError, RecursionError) as error:
            raise ValueError(f"{manifest_file}: not JSON ({_short(error)})") from None
        if not isinstance(read, dict):
            raise ValueError(f"{manifest_file}: a manifest is a JSON object, not {type(read).__name__}")
        manifest = read
        version = manifest.get("version", MANIFEST_VERSION)  # every manifest so far reads as version 1
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise ValueError(f"{manifest_file}: manifest version {version!r} is not a whole number from 1 up")
        if version > MANIFEST_VERSION:
            raise ValueError(f"{manifest_file}: manifest version {version} is newer than this pytest-researchqa "
                             f"reads (up to {MANIFEST_VERSION}): upgrade pytest-researchqa to read it")
    return manifest


def reads_details(manifest: dict[str, Any]) -> bool:
    """Whether the terminal and Markdown of a saved run read its rows' ``details``: when its family has a board
    or an end-of-run step of its own (the rubric family's read the answers' items); a family not installed here
    keeps them all."""
    from .families import get_family
    from .families.registry import family_plugins

    try:
        family = get_family(str(manifest.get("family") or "citation"), family_plugins())
    except Exception:  # noqa: BLE001 -- any family that cannot be loaded here: read everything
        return True
    return bool(family.renderer or family.after_answers)


def _short(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return text if len(text) <= 200 else text[:200] + "…"


def load_baseline(spec: str, runs_dir: Path, *, details: bool = True) -> "Baseline":
    """The saved run ``--researchqa-compare`` names, ready to compare (RunNotFound, ValueError)."""
    from .reporting.compare import Baseline

    saved = load_run(resolve_run(spec, runs_dir), details=details)
    if not saved.records:
        raise ValueError(f"the saved run {saved.folder} has no rows to compare with")
    dataset = saved.manifest.get("dataset") or {}
    return Baseline(saved.name, saved.records, dataset.get("sha256") if isinstance(dataset, dict) else None,
                    str(saved.manifest.get("family") or "citation"), judging_of(saved.manifest))


# What a manifest says of how its judged metrics were measured (a metric names those it depends on:
# families.MetricSpec.measured_by).
JUDGING_KEYS = ("judges", "judge_mode", "protocol", "flagged_judge")


def judging_of(manifest: Any) -> dict[str, Any]:
    """How a run's judges measured (``JUDGING_KEYS`` of its manifest; a key an older run did not save is left
    out). A run whose premise_flagged the heuristic decided saved ``flagged_judge: null``: "heuristic"."""
    if not isinstance(manifest, dict):
        return {}
    said = {key: manifest[key] for key in JUDGING_KEYS if manifest.get(key) is not None}
    if "flagged_judge" in manifest and manifest["flagged_judge"] is None:
        said["flagged_judge"] = "heuristic"
    return said


def run_judging(state: "RunState") -> dict[str, Any]:
    """How a run's judges measure (``JUDGING_KEYS``), for its manifest and its comparisons."""
    settings = state.settings
    return {"judges": list(settings.judges),
            "judge_mode": state.services.judge_kind() if state.family.judge_kinds else None,
            "protocol": settings.protocol, "flagged_judge": settings.flagged_judge}


def run_manifest(state: "RunState", outcome: "RunOutcome", *, started_at: _dt.datetime, command: Iterable[Any],
                 rootpath: Path) -> dict[str, Any]:
    """What produced a run and what it concluded, as ``manifest.json`` keeps it (plain data)."""
    from .bundled import bundled_path
    from .families import declaration_data

    settings, selection = state.settings, outcome.selection
    return {
        "name": settings.save_name,
        "family": state.family.name,
        "family_declaration": declaration_data(state.family),  # show/view where the family is not installed
        "started": started_at.isoformat(timespec="seconds"),
        "ended": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": [state.redact(str(arg)) for arg in command],
        "environment": environment(),
        "git_commit": git_commit(rootpath),
        "dataset": {"path": str(state.dataset_path), "sha256": file_sha256(state.dataset_path)},
        "systems": list(settings.systems),
        "models": list(settings.models),
        "model_params": redact_params(settings.model_params),
        **run_judging(state),
        "prompt_sha": sorted({r.usage.prompt_sha for r in outcome.records if r.usage.prompt_sha}),
        "judge_prompts": ({**folder_hashes(bundled_path("judges")),
                           **(folder_hashes(settings.judge_prompts) if settings.judge_prompts else {})}
                          if settings.judges or settings.flagged_judge else {}),
        "baseline": settings.baseline,
        "compare_map": dict(settings.compare_map),
        "family_results": outcome.family_results,
        "selection": {"rows": selection.rows, "keyword": selection.keyword, "markexpr": selection.markexpr,
                      "sample": selection.sample, "rerun_subset": selection.rerun_subset},
        "outcome": _outcome_data(outcome),
    }


def _outcome_data(outcome: "RunOutcome") -> dict[str, Any]:
    """The run's conclusion in the manifest: counts, verdict, gates and regressions."""
    return {"measured": outcome.measured, "errors": outcome.errors, "passed": outcome.passed,
            "verdict": outcome.verdict, "interrupted": outcome.interrupted, "crashed": list(outcome.crashed),
            "gates": [{"gate": g.gate.label, "system": g.system, "value": g.value, "passed": g.passed,
                       "state": g.state} for g in outcome.gates],
            "partial_reasons": list(outcome.partial_reasons),
            "compared_with": outcome.comparison.baseline if outcome.comparison else None,
            "regressions": [{"gate": r.gate.label, "metric": r.gate.metric, "system": r.system,
                             "baseline_system": r.baseline_system, "passed": r.passed, "state": r.state,
                             "delta": r.test.delta if r.test else None,
                             "p_worse": r.test.p_worse(r.gate.higher_is_better) if r.test else None}
                            for r in outcome.regressions]}


def environment() -> dict[str, str]:
    import platform

    import pytest

    from . import __version__

    return {"plugin": __version__, "pytest": pytest.__version__, "python": platform.python_version(),
            "platform": sys.platform}
