"""LLM judges: what every judge kind shares, over the shared model caller.

A kind is a small subclass of :class:`ModelJudge` that lives with its family (the citation family's
anchored rubric, claims and premise kinds in ``families/citation/judges``; the rubric family's coverage
and pairwise kinds in ``families/rubric/judges``), declared by the family's ``judges`` table and built by
``families.registry.make_judge``. Every kind shares the model runner (slots, pacing, retries), the on-disk
cache (a re-run makes no call; the prompt's hash is in every key, so editing a prompt re-judges) and the
structured-output path with the systems under test. A verdict that never parses is a judge *error* for
that row: never a score of 0, never dropped.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, ClassVar, Iterable, Optional, Sequence, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, ValidationError

from ..answers import placeholder_reason
from ..bundled import bundled_path
from ..costs import total_cost
from ..dataset import FamilyRow
from ..llm_params import is_local, model_family  # model_family re-exported
from ..records import JudgeResult, JudgeScores, VerdictCosts
from .cache import AnswerCache, cache_key
from .contract import MalformedReply, json_object, schema_of, validation_problem
from .engine import CallResult, ModelRunner, ProviderError, with_retries
from .prompts import fill as fill_placeholders
from .prompts import missing_placeholders
from .system import ModelCaller, ModelSpec, _acompletion, _structured_output

if TYPE_CHECKING:  # pragma: no cover
    from ..answers import Answer


DEFAULT_POOL = ("gpt-5.4", "anthropic/claude-opus-4-7", "gemini/gemini-3.1-pro-preview")
# Judges run at temperature 0 with a fixed seed where the provider honours one.
JUDGE_CALL_PARAMS = {"temperature": 0, "seed": 20260101}

def _not_a_boolean(value: Any) -> Any:
    # JSON true would pass as 1 (pydantic reads bools as ints): a boolean is not a score.
    if isinstance(value, bool):
        raise ValueError("a score is a whole number, not true/false")
    return value


Score = Annotated[int, BeforeValidator(_not_a_boolean)]


def _own_words(value: str) -> str:
    # The judge writes its reason before its score (docs/judges.md): "..." or "<reason>" is a template
    # copied back, as it is in an answer, and a score resting on no reason is no verdict.
    reason = placeholder_reason(value)
    if reason is not None:
        raise ValueError(f"must be the judge's own words: {reason}")
    return value


# Text a verdict's scores rest on (a justification, a reason, a claim): never empty, never template filler.
# In the verdict's schema (not its validation) it opens on a letter or digit: a grammar-constrained model
# (llama.cpp) then cannot write "..." or "<reason>" at all, instead of needing the repair turn for it.
OWN_WORDS_PATTERN = r'^[A-Za-z0-9][^"\\\n]*$'
Justification = Annotated[str, Field(min_length=1, json_schema_extra={"pattern": OWN_WORDS_PATTERN}),
                          AfterValidator(_own_words)]


def own_words(text: Any) -> bool:
    """Whether a cached verdict's justification is one :data:`Justification` admits (an entry saved before
    filler was refused is a miss: judged again, never reused)."""
    return isinstance(text, str) and placeholder_reason(text) is None


_Verdict = TypeVar("_Verdict", bound=BaseModel)


def validated_verdict(model: type[_Verdict], text: Optional[str]) -> _Verdict:
    """The reply's JSON object as ``model``; a reply that does not fit is malformed, naming the field."""
    try:
        return model.model_validate(json_object(text, "verdict"))
    except ValidationError as error:
        raise MalformedReply(f"verdict {validation_problem(error)}") from None


def small_model_schema(schema: Any) -> Any:
    """A schema a small model's grammar can hold it to: every bounded integer (a 1-5 score, a 0-4
    coverage) spelled out as an ``enum`` of its values, and every string that must not be empty
    given ``minLength``. llama.cpp turns an enum into a grammar that admits only those numbers;
    ``minimum``/``maximum`` alone let a 135M model answer 0 on a 1-5 scale. A copy; pure."""
    if isinstance(schema, list):
        return [small_model_schema(value) for value in schema]
    if not isinstance(schema, dict):
        return schema
    copy = {key: small_model_schema(value) for key, value in schema.items()}
    low, high = copy.get("minimum"), copy.get("maximum")
    if copy.get("type") == "integer" and isinstance(low, int) and isinstance(high, int) and high - low <= 10:
        copy["enum"] = list(range(low, high + 1))
    return copy


# ------------------------------------------------------------------ prompts


def _load_guidance() -> tuple[dict[str, str], str]:
    import yaml

    text = bundled_path("judges", "guidance.yaml").read_text(encoding="utf-8")
    return {k: (v or "") for k, v in (yaml.safe_load(text) or {}).items()}, text


def fill(template: str, values: dict[str, str], blocks: Sequence[str] = ("ANSWER",)) -> str:
    """Fill ``{name}`` placeholders in one pass and put a fresh nonce on each data block's markers.

    Nothing inserted is ever read as a placeholder. Each ``<<<NAME`` / ``NAME>>>`` pair gets a
    random nonce on every call, so data inside a block cannot close it with a lookalike marker:
    it cannot know the nonce. The nonce is never part of a cache key.
    """
    for block in blocks:
        nonce = secrets.token_hex(6)
        template = template.replace(f"<<<{block}", f"<<<{block} {nonce}").replace(f"{block}>>>", f"{block} {nonce}>>>")
    return fill_placeholders(template, values)


def judge_prompt_path(mode: str, folder: Optional[Path] = None, own: Optional[Path] = None) -> Path:
    """The user's own prompt file for a judge kind (--researchqa-judge-prompts) when the folder has one,
    else the kind's own (``own``: a family's folder), else the bundled one."""
    for where in (folder, own):
        if where is not None and (where / f"{mode}.md").is_file():
            return where / f"{mode}.md"
    found = bundled_path("judges", f"{mode}.md")
    if not found.is_file():
        looked = ", ".join(str(w) for w in (folder, own) if w is not None) or "no folder of its own"
        raise FileNotFoundError(f"no prompt {mode}.md for this judge kind: looked in {looked} and {found.parent} "
                                "(a family's kind names its folder: ModelJudge.prompts)")
    return found


def check_prompt_folder(folder: Path, kinds: Iterable[type["ModelJudge"]]) -> list[str]:
    """A folder of the user's judge prompts (--researchqa-judge-prompts) checked against the prompts its files
    replace, before any verdict is asked: a ValueError for a missing folder, or for a file that lacks a
    placeholder of the prompt it replaces (every verdict would fail); a warning for each ``.md`` file that
    replaces no prompt of these kinds (a misspelt name is never read)."""
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a folder")
    replaced = {}
    for kind in kinds:
        name = kind.prompt_file or kind.kind
        try:
            replaced[name] = judge_prompt_path(name, own=kind.prompts)
        except FileNotFoundError:
            continue  # a kind without a prompt file fails where it is made, with its own message
    warnings = []
    for path in sorted(folder.glob("*.md")):
        if path.name.lower() == "readme.md":
            continue
        if path.stem not in replaced:
            valid = ", ".join(f"{name}.md" for name in sorted(replaced))
            warnings.append(f"warning: {path} replaces no judge prompt and is not read (the names are: {valid})")
            continue
        missing = missing_placeholders(path.read_text(encoding="utf-8"),
                                       replaced[path.stem].read_text(encoding="utf-8"))
        if missing:
            wanted = ", ".join(f"{{{name}}}" for name in missing)
            raise ValueError(f"{path} lacks {wanted}, which the bundled {path.name} fills in: every verdict "
                             "would be asked without it")
    return warnings


class JudgePrompt:
    """A judge prompt file under judges/ and its hash (with guidance.yaml, which the citation kinds use)."""

    def __init__(self, mode: str, folder: Optional[Path] = None, own: Optional[Path] = None) -> None:
        self.mode = mode
        self.path = judge_prompt_path(mode, folder, own)
        self.template = self.path.read_text(encoding="utf-8")
        self.guidance, guidance_text = _load_guidance()
        self.sha = hashlib.sha256((self.template + guidance_text).encode()).hexdigest()[:16]

def answer_as_data(answer: "Answer") -> str:
    quoted = "\n".join(f"- {c}" for c in answer.citations)
    return str(answer.text) + (f"\n\nQuoted evidence:\n{quoted}" if quoted else "")


def neutralize(text: str, blocks: Sequence[str] = ("ANSWER",)) -> str:
    """Data cannot close (or reopen) its own delimiters."""
    for block in blocks:
        for marker in (f"<<<{block}", f"{block}>>>"):
            text = text.replace(marker, marker.replace("<", "‹").replace(">", "›"))
    return text


# ------------------------------------------------------------------ the judge kinds


class ModelJudge(ModelCaller):
    """What every judge kind shares: its prompt file, cache keys, the call with retries and validation.

    A kind says how to render its prompt, which schema its verdict follows, how
    to parse a reply into scores (raising ``MalformedReply``), and what its cache
    key covers. ``submit(*subject)`` returns the verdict's future: from the cache,
    from a call already in flight, or a new call through the runner.
    """

    kind: ClassVar[str] = ""
    # The kind that asks this one's question with the seed's released prompt (--researchqa-protocol=paper).
    paper_kind: ClassVar[str] = ""
    # One evaluator grades every system's answers ('auto' avoids all the run's model families), as the rubric
    # seed's coverage does; otherwise 'auto' avoids only the graded system's family.
    same_judge_for_every_system: ClassVar[bool] = False
    activity_kind = "verdict"
    prompt_file: ClassVar[str] = ""  # the prompt's name (<name>.md); empty: the kind's
    prompts: ClassVar[Optional[Path]] = None  # the folder of the kind's prompt (a family's own); None: judges/
    verdict_model: ClassVar[type[BaseModel]]  # the verdict's pydantic model: its JSON schema is sent
    # Verdicts whose scores are not 1-5 dimensions carry their kind in the cache, validated by it.
    cached_as_kind: ClassVar[bool] = False

    def __init__(self, spec: ModelSpec, runner: ModelRunner, cache: AnswerCache, *,
                 timeout_s: float = 120.0, retries: int = 3, prompt_folder: Optional[Path] = None) -> None:
        super().__init__(spec, runner, cache, timeout_s=timeout_s, retries=retries)
        self.prompt = JudgePrompt(self.prompt_file or self.kind, prompt_folder, self.prompts)
        self.family = model_family(spec.name, local=is_local(spec.params))  # None: unknown
        self._taken: set[str] = set()  # keys whose verdict a submitter has taken, with its cost

    @property
    def mode(self) -> str:
        return self.kind

    # -- what a kind defines ---------------------------------------------------------
    def take_settings(self, settings: Any) -> None:
        """What the run's options change in this kind (nothing, unless a kind says so)."""

    def key_parts(self, *subject: Any) -> dict[str, Any]:
        raise NotImplementedError(_undefined(self, "key_parts(*subject): what of a subject enters its cache key"))

    def render(self, *subject: Any) -> str:
        raise NotImplementedError(_undefined(self, "render(*subject): the prompt for one subject"))

    def parse(self, text: Optional[str], *subject: Any) -> dict[str, Any]:
        raise NotImplementedError(_undefined(self, "parse(text, *subject): the reply's scores, raising "
                                                   "llm.contract.MalformedReply for a reply that does not fit"))

    def reusable(self, scores: dict[str, Any], *subject: Any) -> bool:
        """Whether cached scores have the shape this kind's readers need for this subject (an entry of
        another plugin version, or a damaged one, is a miss: judged again, never a row error)."""
        raise NotImplementedError(_undefined(self, "reusable(scores, *subject): whether cached scores fit"))

    def _accepts(self, subject: tuple[Any, ...]) -> Callable[[dict[str, Any]], bool]:
        return lambda entry: isinstance(entry.get("scores"), dict) and self.reusable(entry["scores"], *subject)

    def schema(self, *subject: Any) -> dict[str, Any]:
        """The verdict's JSON schema for one subject (sent in JSON-schema mode and in the repair turn)."""
        model = getattr(self, "verdict_model", None)
        if model is None:
            raise NotImplementedError(_undefined(self, "verdict_model (a pydantic model of its verdict) or schema()"))
        schema: dict[str, Any] = small_model_schema(schema_of(model))
        return schema

    def judges_row(self, row: Any) -> bool:
        """Whether this kind judges the answers to ``row`` at all (before any answer: the call plan asks)."""
        return True

    def subject(self, row: Any, answer: Any) -> Optional[tuple[Any, ...]]:
        """What this kind judges of one row's answer (None: nothing to judge). Each family's rows and
        answers are its own types, so the shared base takes any."""
        return (row, answer)

    @staticmethod
    def combine(by_judge: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """The judges' scores of one answer combined: ``consensus`` and ``spread`` (and ``items``, per item)."""
        raise NotImplementedError("a judge kind must define combine(by_judge): the judges' consensus and spread")

    # -- shared -----------------------------------------------------------------------
    def key(self, *subject: Any, repeat: int = 0) -> str:
        return cache_key(judge=self.spec.name, params=self.spec.cache_params, prompt=self.prompt.sha, mode=self.kind,
                         repeat=repeat, **self.key_parts(*subject))

    def has_verdict(self, row: Any, answer: Any, repeat: int = 0) -> bool:
        """Whether the cache holds this judge's verdict on this answer already (a call the run will not make)."""
        return self.holds(*(self.subject(row, answer) or ()), repeat=repeat)

    def holds(self, *subject: Any, repeat: int = 0) -> bool:
        """Whether the cache holds this judge's verdict on ``subject`` (as ``submit`` takes it) already."""
        return self.cache.get(self.key(*subject, repeat=repeat), self._accepts(subject)) is not None

    def prefetch(self, *subject: Any) -> None:
        """Start the verdict's call now (unless it is on disk or in flight); the row's ``submit`` takes it."""
        key = self.key(*subject)
        with self._lock:
            if key not in self._pending:
                self._asked(subject, key)

    def submit(self, *subject: Any, repeat: int = 0) -> concurrent.futures.Future[Any]:
        """The verdict's future: from the cache, from a call already in flight, or a new call. Identical
        answers share a verdict: the first submitter of a call takes what it cost, the others take it as
        cached (paid for once, counted once)."""
        key = self.key(*subject, repeat=repeat)
        with self._lock:
            asked = self._pending.get(key)
            if asked is None:
                asked = self._asked(subject, key)
            if key in self._taken:
                return _reused(asked)
            self._taken.add(key)
            return asked

    def _asked(self, subject: tuple[Any, ...], key: str) -> concurrent.futures.Future[Any]:
        """The verdict from the cache (taken already), or a new call in flight (callers hold ``_lock``)."""
        accept = self._accepts(subject)
        cached = self.cache.get(key, accept)
        if cached is None:
            return self._in_flight(key, lambda: self._call(subject, key), accept)
        self._found(key)
        self._taken.add(key)  # nothing was paid this run: whoever takes it takes it as cached
        done: concurrent.futures.Future[Any] = concurrent.futures.Future()
        done.set_result({**cached, "from_cache": True})
        return done

    async def _call(self, subject: tuple[Any, ...], key: str) -> dict[str, Any]:
        messages = [{"role": "user", "content": self.render(*subject)}]
        params = self.output_capped({**JUDGE_CALL_PARAMS, **self.spec.call_params})
        schema = self.schema(*subject)
        if "response_format" not in params and schema:
            # The same structured_output parameter as systems: JSON-schema mode where supported.
            params.update(_structured_output(self.spec, schema, f"{self.kind}_verdict"))

        async def attempt() -> CallResult:
            await self.runner.pace(self.spec.provider, priced=not self.spec.local)
            # Priced (unless served on this machine): --researchqa-max-cost counts a verdict's cost as an answer's.
            return await self.runner.send(_acompletion(self.spec.name, messages, self.timeout_s, params,
                                                       priced=not self.spec.local, router=self.router))

        result, scores = await with_retries(attempt, retries=self.retries, describe=f"judge {self.name}",
                                            validate=lambda r: self.parse(r.content, *subject),
                                            schema=schema)
        entry = {"judge": self.name, "prompt_sha": self.prompt.sha, "mode": self.kind, "scores": scores,
                 "latency_s": result.latency_s, "cost_usd": result.cost_usd, "repaired": result.repaired}
        if self.cached_as_kind:
            entry["kind"] = self.kind
        self.cache.put(key, entry)
        return entry


class JudgePanel(list["ModelJudge"]):
    """The judges of one row, and how many extra times to re-judge sampled rows (flip-rate probe)."""

    def __init__(self, judges: Sequence["ModelJudge"], repeats: int = 0) -> None:
        super().__init__(judges)
        self.repeats = repeats


def in_flip_sample(row_id: str) -> bool:
    """A deterministic quarter of the rows, the same in every run and on every worker."""
    return int(hashlib.sha256(row_id.encode()).hexdigest(), 16) % 4 == 0


def judge_all(judges: Sequence[ModelJudge], row: "FamilyRow", answer: "Answer", timeout_s: Optional[float] = None, *,
              combine: Optional[Callable[[dict[str, dict[str, Any]]], dict[str, Any]]] = None) -> JudgeResult:
    """Every judge's scores for one answer, and their consensus and spread (a :class:`JudgeResult`).

    Each judge is given its kind's ``subject(row, answer)``; ``combine`` turns the
    judges' scores into the consensus (default: the kind's own). With a panel's
    ``repeats`` and a row in the flip sample, each judge also re-judges the same
    answer that many times (``repeats``: judge -> [its verdicts]).
    """
    repeats = getattr(judges, "repeats", 0) if in_flip_sample(row.row_id) else 0
    subjects = {judge.name: judge.subject(row, answer) or () for judge in judges}
    futures = {judge.name: judge.submit(*subjects[judge.name]) for judge in judges}
    extra = {judge.name: [judge.submit(*subjects[judge.name], repeat=repeat) for repeat in range(1, repeats + 1)]
             for judge in judges}
    by_judge: dict[str, dict[str, Any]] = {}
    verdicts: list[dict[str, Any]] = []  # the cache entries of every verdict given (what they cost)
    for name, future in futures.items():
        try:
            verdicts.append(future.result(timeout=timeout_s))
            by_judge[name] = dict(verdicts[-1]["scores"])
        except ProviderError as error:
            by_judge[name] = {"error": str(error)}
    combine = combine or (type(judges[0]).combine if judges else _nothing_combined)
    combined = combine(by_judge)
    again: Optional[dict[str, list[JudgeScores]]] = None
    if repeats:
        again = {}
        for name, pending in extra.items():
            probes, failed = [], False
            for probe in pending:
                try:
                    probes.append(probe.result(timeout=timeout_s))
                except ProviderError:
                    failed = True
            verdicts += probes  # paid for, whether or not a sibling probe failed
            if not failed:  # a judge with a probe that errored tells nothing about flips
                again[name] = [JudgeScores(by_judge[name]), *(JudgeScores(dict(p["scores"])) for p in probes)]
    return JudgeResult(by_judge={name: JudgeScores(scores) for name, scores in by_judge.items()},
                       consensus=combined["consensus"], spread=combined["spread"], items=combined.get("items"),
                       repeats=again, costs=verdict_costs(verdicts))


def _reused(asked: concurrent.futures.Future[Any]) -> concurrent.futures.Future[Any]:
    """``asked``'s verdict for a second subject with the same key, marked as not paid for again."""
    reused: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def settle(finished: concurrent.futures.Future[Any]) -> None:
        if finished.cancelled():
            reused.cancel()
            return
        error = finished.exception()
        if error is not None:
            reused.set_exception(error)
        else:
            reused.set_result({**finished.result(), "from_cache": True})

    asked.add_done_callback(settle)
    return reused


def verdict_costs(verdicts: Sequence[dict[str, Any]]) -> VerdictCosts:
    """What the given verdicts cost when they were made (a cached one as its call cost; unknown when any
    price is, an entry cached before verdicts kept their cost included) and what this run paid for them
    (its own calls only)."""
    fresh = [v.get("cost_usd") for v in verdicts if not v.get("from_cache")]
    return VerdictCosts(count=len(verdicts), made_usd=total_cost(v.get("cost_usd") for v in verdicts),
                        spent_usd=total_cost(fresh) if fresh else 0.0)


def is_score(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _undefined(judge: ModelJudge, what: str) -> str:
    return f"judge kind {judge.kind or type(judge).__name__!r} ({type(judge).__name__}) must define {what}"


def _nothing_combined(by_judge: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"consensus": {}, "spread": {}}


# Names that moved to the family that uses them; read through here, they warn (kept for one release).
_MOVED = {
    **dict.fromkeys(("DIMENSIONS", "Graded", "RubricVerdict", "CLAIM_STATUSES", "Claim", "ClaimsVerdict",
                     "claims_scores", "claims_justifications", "parse_verdict", "verdict_schema", "AnchoredRubricJudge",
                     "ClaimsJudge", "PremiseVerdict", "parse_premise", "PremiseJudge", "consensus", "CitationJudge"),
                    "pytest_researchqa.families.citation.judges"),
    **dict.fromkeys(("generic_rubric", "answer_with_references", "COVERAGE_MAX", "ItemCoverage", "CoverageVerdict",
                     "parse_coverage", "RubricCoverageJudge", "PairwiseVerdict", "parse_preference", "PairwiseJudge",
                     "PAPER_COVERAGE_LABELS", "parse_paper_coverage", "PaperCoverageJudge", "parse_paper_preference",
                     "PaperPairwiseJudge", "coverage_consensus"), "pytest_researchqa.families.rubric.judges"),
    "make_judge": "pytest_researchqa.families.registry",
}


def __getattr__(name: str) -> Any:
    new_module = _MOVED.get(name)
    if new_module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ..moved_names import moved_name

    return moved_name(__name__, new_module, name)
