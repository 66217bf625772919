"""The generation run: papers in, verified rows and a report out.

Model calls go through the answer pipeline's machinery: one
:class:`~pytest_researchqa.llm.engine.ModelRunner` (slots per provider,
pacing, retries), the on-disk :class:`~pytest_researchqa.llm.cache.AnswerCache`
(keys hold the prompt's hash, so a re-run makes no call and a changed prompt
asks again) and litellm through the same call path as systems and judges.
Per paper: one generation call (or, when the context window cannot hold the
prompt, some of the paper and the reply of every question asked, several calls
of fewer questions each, each shown its own part of the paper: ``RowWriter.plan``),
then at most one repair call after each for the passages the matcher did not
find verbatim. A paper that fails is reported; the others go on. The output
file and its report are written atomically at the end.
"""

from __future__ import annotations

import concurrent.futures
import json
import sys
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, TextIO

from ..costs import add_cost, spend_text
from ..families.citation import QUESTION_TYPES
from ..families.citation.matcher import match_index
from ..llm.cache import AnswerCache, cache_key
from ..llm.engine import CallResult, ModelRunner, ProviderError
from ..llm.prompts import Prompt, fill, load_prompt
from ..llm.system import CHARS_PER_TOKEN, LOCAL_CHARS_PER_TOKEN, ModelCaller, ModelSpec, _structured_output
from ..llm_params import call_limits, known_secrets, redact
from ..papers import PAPER_SUFFIXES, Paper, PaperStore, PaperUnavailable, atomic_write, default_cache_dir
from . import checking
from .reply import generation_schema, parse_generation, parse_repairs, quotable_sentences, repair_schema, reply_tokens

GENERATE_PROMPT, REPAIR_PROMPT = "generate_rows", "repair_passages"
PROMPTS = Path(__file__).resolve().parent / "prompts"
# Tokens kept free for the prompt's own text and the long reply (a dozen questions with passages).
REPLY_RESERVE_TOKENS = 8000
# A local server's window is small: the paper gets what the prompt's text, the reply's cap and this
# margin (the tokenizer's count is not ours) leave; less of the paper than this is no paper to ask about.
LOCAL_MARGIN_TOKENS = 200
MIN_PAPER_CHARS = 2000
# The generate command's defaults away from a local server (the local-server profile has its own).
DEFAULT_CONCURRENCY, DEFAULT_TIMEOUT_S = 5, 600.0
REPORT_EVERY_S = 15.0
MALFORMED_HINT = (" (a reply cut off mid-JSON is usually the provider's output limit: raise it with "
                  "--param max_tokens=N, or ask for fewer questions with --count)")
OUTPUT_SUFFIXES = (".yaml", ".yml", ".jsonl", ".json")


class GenerateError(Exception):
    """A usage problem that stops the run before any call (exit status 2)."""


@dataclass(frozen=True)
class GenerateOptions:
    model: str
    params: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, Any] = field(default_factory=lambda: dict(checking.DEFAULT_COUNTS))
    domain: Optional[str] = None
    concurrency: Optional[int] = None  # None: the profile's (1 for a local server, else 5)
    rows_per_minute: Optional[int] = None
    timeout_s: Optional[float] = None  # None: the profile's (900 s for a local server, else 600 s)
    retries: int = 3
    cache_dir: Optional[Path] = None
    refresh: bool = False


@dataclass
class Usage:
    """Requests sent (every one: repair follow-ups, retries and failed requests too), replies reused."""

    calls: int = 0
    failed: int = 0  # of ``calls``: requests that brought no usable reply (a timeout, an error, a bad reply)
    cached: int = 0
    cost_usd: Optional[float] = None  # "—" until a priced call; None again once any call's price is unknown
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, call: dict[str, Any]) -> None:
        if call["cached"]:
            self.cached += 1
            return
        self._cost(call.get("cost_usd"), priced_before=self.calls - self.failed > 0)
        attempts = max(1, int(call.get("attempts") or 1))
        self.calls += attempts
        self.failed += attempts - 1  # a repaired reply or a retried fault: the earlier requests gave nothing
        self.prompt_tokens += call.get("prompt_tokens") or 0
        self.completion_tokens += call.get("completion_tokens") or 0

    def add_failure(self, requests: int) -> None:
        """A call that failed for good after ``requests`` requests (their price is unknown: nothing is added)."""
        self.calls += requests
        self.failed += requests

    def merge(self, other: "Usage") -> None:
        if other.calls - other.failed > 0:
            self._cost(other.cost_usd, priced_before=self.calls - self.failed > 0)
        self.calls += other.calls
        self.failed += other.failed
        self.cached += other.cached
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens

    def _cost(self, cost: Optional[float], *, priced_before: bool) -> None:
        self.cost_usd = add_cost(self.cost_usd, cost) if priced_before else cost

    @property
    def spend(self) -> str:
        return spend_text(self.cost_usd)

    def to_plain(self) -> dict[str, Any]:
        return {"calls": self.calls, "failed_calls": self.failed, "from_cache": self.cached, "cost_usd": self.cost_usd,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}


@dataclass
class Batch:
    """One generation call of a paper: the questions it asks for, the part of the paper it shows, its rows."""

    number: int  # from 0, in the plan's order
    counts: dict[str, int]
    numbered_after: dict[str, int]  # questions of each type earlier calls asked for: this call's rows follow theirs
    text: str = ""
    start: int = 0  # where ``text`` begins in the paper
    candidates: list[Any] = field(default_factory=list)
    error: Optional[str] = None
    closed: bool = False


def split_counts(counts: dict[str, int], per_call: int) -> list[dict[str, int]]:
    """``counts`` dealt into calls of at most ``per_call`` questions: a chunk's lookup and comprehension
    questions side by side (one chunk serves both), then multi-hop, then false-premise questions."""
    order: list[str] = []
    lookups, comprehensions = counts.get("lookup", 0), counts.get("comprehension", 0)
    for number in range(max(lookups, comprehensions)):
        order += [kind for kind, wanted in (("lookup", lookups), ("comprehension", comprehensions)) if number < wanted]
    order += ["multi_hop"] * counts.get("multi_hop", 0) + ["adversarial"] * counts.get("adversarial", 0)
    return [{kind: order[start:start + per_call].count(kind) for kind in QUESTION_TYPES}
            for start in range(0, len(order), max(1, per_call))]


@dataclass
class PaperJob:
    """One paper's way through the run."""

    paper_id: str
    source: Path
    paper: Optional[Paper] = None
    text: str = ""  # what the first call shows the model (the whole paper unless it had to be cut)
    candidates: list[Any] = field(default_factory=list)
    domain: str = "unknown"
    notes: dict[str, Any] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    rows: list[Any] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)
    error: Optional[str] = None
    batches: list[Batch] = field(default_factory=list)


# --------------------------------------------------------------------------- papers


def find_papers(folder: Path) -> tuple[list[Path], list[str]]:
    """The papers of a folder (``.pdf``, ``.txt``, ``.md``), one per name, and what was passed over."""
    if not folder.is_dir():
        raise GenerateError(f"{folder}: not a folder of papers")
    chosen: dict[str, Path] = {}
    skipped: list[str] = []
    for path in sorted(folder.iterdir(), key=lambda p: (p.stem, PAPER_SUFFIXES.index(p.suffix)
                                                         if p.suffix in PAPER_SUFFIXES else 9)):
        if not path.is_file() or path.name.startswith("."):
            continue
        if path.suffix not in PAPER_SUFFIXES:
            if path.suffix.lower() in PAPER_SUFFIXES:
                skipped.append(f"{path.name}: rename it to {path.stem}{path.suffix.lower()} (paper files end in "
                               f"{', '.join(PAPER_SUFFIXES)}, in lower case)")
            continue
        if path.stem in chosen:
            # The plugin resolves a paper id to .pdf, then .txt, then .md: the same order here.
            skipped.append(f"{path.name}: {chosen[path.stem].name} has the same paper id and is used")
            continue
        chosen[path.stem] = path
    return list(chosen.values()), skipped


# --------------------------------------------------------------------------- model calls


class RowWriter(ModelCaller):
    """Asks the model for a paper's questions, and for repairs; every reply is cached as it arrives."""

    def __init__(self, spec: ModelSpec, runner: ModelRunner, cache: AnswerCache, *, refresh: bool = False,
                 timeout_s: float = 600.0, retries: int = 3) -> None:
        super().__init__(spec, runner, cache, timeout_s=timeout_s, retries=retries)
        self.refresh = refresh
        self.generate_prompt: Prompt = load_prompt(PROMPTS, GENERATE_PROMPT)
        self.repair_prompt: Prompt = load_prompt(PROMPTS, REPAIR_PROMPT)
        self._priced = True

    def output_cap(self, counts: dict[str, int]) -> Optional[int]:
        """``max_tokens`` as given; on a local server, what a reply of ``counts`` questions needs (an
        abandoned request goes on generating on a server that cannot cancel it: this bounds it too)."""
        given = self.spec.params.get("max_tokens")
        if isinstance(given, int) and given > 0:
            return given
        return reply_tokens(counts) if self.spec.local else None

    def paper_chars(self, counts: dict[str, int]) -> int:
        """How much of a paper the prompt can hold: the context window (``max_input_tokens``, else what a
        local server reports, else litellm's figure) less the prompt's text and the reply."""
        window = self.context_tokens
        if not self.spec.local:
            return max(window // 2, window - REPLY_RESERVE_TOKENS) * CHARS_PER_TOKEN
        prompt_tokens = len(self.generate_prompt.template) // LOCAL_CHARS_PER_TOKEN
        free = window - prompt_tokens - (self.output_cap(counts) or 0) - LOCAL_MARGIN_TOKENS
        return max(0, free * LOCAL_CHARS_PER_TOKEN)

    def plan(self, counts: dict[str, int]) -> list[dict[str, int]]:
        """The generation calls of one paper: all of ``counts`` in one call when the window holds the prompt,
        ``MIN_PAPER_CHARS`` of the paper and the reply; else the most questions a call that fits can ask, in
        as many calls as it takes. Fails before any call when not even one question a call fits."""
        if self.paper_chars(counts) >= MIN_PAPER_CHARS:
            return [dict(counts)]
        for per_call in range(sum(counts.values()) - 1, 0, -1):
            calls = split_counts(counts, per_call)
            if all(self.paper_chars(call) >= MIN_PAPER_CHARS for call in calls):
                return calls
        one = min(split_counts(counts, 1), key=lambda call: self.output_cap(call) or 0, default=dict(counts))
        raise GenerateError(
            f"{self.name}: a context window of {self.context_tokens} tokens cannot hold the prompt "
            f"(~{len(self.generate_prompt.template) // LOCAL_CHARS_PER_TOKEN} tokens), {MIN_PAPER_CHARS} characters "
            f"of a paper and a reply of even one question (up to {self.output_cap(one)} tokens): serve a larger "
            "window (llama_cpp.server --n_ctx 8192) and pass --param max_input_tokens=8192 if the server does not "
            "report it, or lower --param max_tokens")

    def plan_line(self, calls: list[dict[str, int]], papers: int) -> str:
        """What the run will ask, in one line (printed before the first call)."""
        asked = sum(sum(call.values()) for call in calls)
        most = max(sum(call.values()) for call in calls)
        cap = max((self.output_cap(call) or 0) for call in calls)
        prompt = len(self.generate_prompt.template) // (LOCAL_CHARS_PER_TOKEN if self.spec.local else CHARS_PER_TOKEN)
        fits = (f"a {self.context_tokens}-token window holds the prompt (~{prompt} tokens), "
                f"{min(self.paper_chars(call) for call in calls)} characters of a paper"
                + (f" and a reply of up to {cap} tokens" if cap else ""))
        return (f"generate: plan: {asked} question(s) a paper in {len(calls)} call(s) of at most {most} ({fits}); "
                f"{papers} paper(s): {papers * len(calls)} generation call(s), then at most one repair call after "
                "each (retries and repair turns are counted as they happen)")

    def model_text(self, paper: Paper, counts: dict[str, int], number: int = 0) -> tuple[str, int]:
        """The part of the paper call ``number`` shows, and where it starts: the whole paper when
        the window holds it; else as much as fits, each call the next part of the paper from its start
        (a call past the paper's end is shown its last part)."""
        budget = self.paper_chars(counts)
        if len(paper.text) <= budget:
            return paper.text, 0
        start = min(number * budget, len(paper.text) - budget)
        if start:
            space = paper.text.find(" ", start, start + 200)  # begin at a word
            start = space + 1 if space >= 0 else start
        return paper.text[start:start + budget], start

    def _call_params(self, counts: dict[str, int], schema: dict[str, Any], name: str) -> dict[str, Any]:
        kwargs = dict(self.spec.call_params)
        cap = self.output_cap(counts)
        if cap is not None:
            kwargs["max_tokens"] = cap
        if "response_format" not in kwargs:
            kwargs.update(_structured_output(self.spec, schema, name))
        return kwargs

    def generation(self, job: PaperJob, batch: Batch) -> Future[Any]:
        assert job.paper is not None
        counts = batch.counts
        chunks = max(counts.get("lookup", 0), counts.get("comprehension", 0))
        prompt = fill(self.generate_prompt.template, dict(
            paper=batch.text, source=job.paper_id, chunks=str(chunks), chunk_questions=_chunk_questions(counts),
            multi_hop=str(counts.get("multi_hop", 0)), adversarial=str(counts.get("adversarial", 0))))
        schema = generation_schema(counts, self.quotable(job, batch.text)) if self.spec.local else generation_schema()
        kwargs = self._call_params(counts, schema, self.generate_prompt.name)
        # A paper's several calls are several questions asked (one call keeps the key it always had).
        part = {"part": batch.number, "start": batch.start} if len(job.batches) > 1 else {}
        key = cache_key(task="generate_rows", model=self.spec.name, params=kwargs,
                        prompt=self.generate_prompt.sha, paper=job.paper.content_hash, counts=counts,
                        seen=len(batch.text), **part)
        self.ready()
        return self.runner.submit(self.spec.provider, lambda: self._reply(
            key, prompt, kwargs, self.generate_prompt, parse_generation, schema, job.paper_id))

    def repair(self, job: PaperJob, batch: Batch, items: list[dict[str, Any]]) -> Future[Any]:
        assert job.paper is not None
        counts = batch.counts
        listed = json.dumps(items, ensure_ascii=False, indent=1)
        prompt = fill(self.repair_prompt.template, dict(paper=batch.text, source=job.paper_id, items=listed))
        # The repair prompt lists the items instead of the generation prompt's instructions, and its reply
        # is shorter than the generation's: both fit where the generation did.
        schema = (repair_schema([item["id"] for item in items], self.quotable(job, batch.text)) if self.spec.local
                  else repair_schema())
        kwargs = self._call_params(counts, schema, self.repair_prompt.name)
        key = cache_key(task="repair_passages", model=self.spec.name, params=kwargs,
                        prompt=self.repair_prompt.sha, paper=job.paper.content_hash, items=items,
                        seen=len(batch.text), **({"start": batch.start} if batch.start else {}))
        self.ready()
        return self.runner.submit(self.spec.provider, lambda: self._reply(
            key, prompt, kwargs, self.repair_prompt, parse_repairs, schema, job.paper_id))

    def quotable(self, job: PaperJob, text: str) -> list[str]:
        """On a server that holds replies to a grammar (JSON-object mode), the sentences of what the model
        sees (``text``) that the matcher finds verbatim: the only quotations the grammar lets it write."""
        if self.spec.params.get("structured_output", "json_object") != "json_object" or job.paper is None:
            return []
        index = match_index(job.paper)
        return [s for s in quotable_sentences(text) if checking.is_expected_passage(index.match(s))]

    async def _reply(
        self, key: str, prompt: str, kwargs: dict[str, Any], template: Prompt,
        parse: Callable[[Optional[str]], Any], schema: dict[str, Any], paper_id: str,
    ) -> tuple[Any, dict[str, Any]]:
        from ..llm.contract import MalformedReply

        if not self.refresh:
            entry = self.cache.get(key)
            if entry is not None:
                try:
                    return parse(entry["answer"]), {"cached": True}
                except MalformedReply:
                    pass  # stored by an older parser that accepted it: ask again
        messages = [{"role": "user", "content": prompt}]

        def validate(result: CallResult) -> Any:
            if result.cost_usd is None:
                self._priced = False  # litellm has no price for this model: stop asking
            return parse(result.content)

        # The shared call path: pacing, a malformed or cut-off reply repaired once with its error. A local
        # server goes on generating a request whose deadline passed: asking again would queue behind it.
        result, parsed = await self._ask(messages, kwargs, validate=validate, schema=schema,
                                         describe=f"{self.name} ({paper_id})", priced=self._priced,
                                         retry_timeouts=not self.spec.local)
        call = {"cached": False, "latency_s": result.latency_s, "prompt_tokens": result.prompt_tokens,
                "completion_tokens": result.completion_tokens, "cost_usd": result.cost_usd,
                "attempts": result.attempts}
        # Stored as an answer entry of the shared cache: the reply's text, parsed again when reused.
        self.cache.put(key, {"answer": result.content or "", "citations": [], "task": template.name,
                             "model": self.name, "prompt_sha": template.sha,
                             **{k: v for k, v in call.items() if k != "cached"}})
        return parsed, call


def _chunk_questions(counts: dict[str, int]) -> str:
    lookup, comprehension = counts.get("lookup", 0), counts.get("comprehension", 0)
    if lookup and comprehension:
        if lookup == comprehension:
            return 'one "lookup" question and one "comprehension" question.'
        fewer = "comprehension" if comprehension < lookup else "lookup"
        return (f'one "lookup" question and one "comprehension" question, except that only the first '
                f'{min(lookup, comprehension)} chunks get a "{fewer}" question (null in the others).')
    if lookup:
        return 'one "lookup" question ("comprehension": null).'
    if comprehension:
        return 'one "comprehension" question ("lookup": null).'
    return "nothing (no chunks were asked for: return [])."


# --------------------------------------------------------------------------- the run


class GenerationRun:
    def __init__(self, papers_dir: Path, options: GenerateOptions, stream: TextIO) -> None:
        self.papers_dir = papers_dir
        self.options = options
        self.stream = stream
        self.secrets = known_secrets({options.model: options.params})
        self.cache_dir = options.cache_dir or default_cache_dir()
        self.store = PaperStore(papers_dir, self.cache_dir)
        self.started = time.monotonic()
        self.done = 0
        self.total = 0
        self.plan: list[dict[str, int]] = [dict(options.counts)]

    def say(self, line: str = "") -> None:
        print(redact(line, self.secrets), file=self.stream, flush=True)

    def run(self) -> list[PaperJob]:
        sources, skipped = find_papers(self.papers_dir)
        for note in skipped:
            self.say(f"skipped {note}")
        if not sources:
            raise GenerateError(f"{self.papers_dir}: no papers (.pdf, .txt or .md files) in it")
        jobs = [PaperJob(path.stem, path) for path in sources]
        self.total = len(jobs)
        given = frozenset(name for name, value in (("researchqa_concurrency", self.options.concurrency),
                                                   ("researchqa_timeout", self.options.timeout_s)) if value is not None)
        slots, timeout_s = call_limits(self.options.params, concurrency=self.options.concurrency or DEFAULT_CONCURRENCY,
                                       timeout_s=self.options.timeout_s or DEFAULT_TIMEOUT_S, given=given)
        runner = ModelRunner(slots, self.options.rows_per_minute)
        try:
            writer = RowWriter(ModelSpec(self.options.model, dict(self.options.params)), runner,
                               AnswerCache(self.cache_dir), refresh=self.options.refresh,
                               timeout_s=timeout_s, retries=self.options.retries)
            calls = writer.plan(self.options.counts)
            if writer.spec.local:
                cap = max((writer.output_cap(call) or 0) for call in calls)
                self.say(f"generate: {self.options.model} on a local server: {slots} call(s) at a time, "
                         f"{timeout_s:.0f} s a call, a {writer.context_tokens}-token context window, "
                         f"replies capped at {cap} tokens")
            if len(calls) > 1 or writer.spec.local:
                self.say(writer.plan_line(calls, len(jobs)))
            self.plan = calls
            self._run(jobs, writer)
        finally:
            runner.close()
        return jobs

    def _run(self, jobs: list[PaperJob], writer: RowWriter) -> None:
        pending: dict[Future[Any], tuple[PaperJob, Batch, str]] = {}
        for job in jobs:
            try:
                job.paper = self.store.get(job.paper_id)
            except PaperUnavailable as error:
                self._fail(job, str(error))
                continue
            after = {kind: 0 for kind in QUESTION_TYPES}
            for number, counts in enumerate(self.plan):
                text, start = writer.model_text(job.paper, counts, number)
                job.batches.append(Batch(number, counts, dict(after), text, start))
                after = {kind: after[kind] + counts.get(kind, 0) for kind in QUESTION_TYPES}
            job.text = job.batches[0].text
            self._note_cut(job)
            for batch in job.batches:
                pending[writer.generation(job, batch)] = (job, batch, "generate")
        last_line = time.monotonic()
        while pending:
            finished, _ = concurrent.futures.wait(pending, timeout=REPORT_EVERY_S,
                                                  return_when=concurrent.futures.FIRST_COMPLETED)
            if not finished and time.monotonic() - last_line >= REPORT_EVERY_S:
                last_line = time.monotonic()
                self.say(f"generate: {self.progress(jobs)}, {len(pending)} call(s) queued or in flight")
            for future in finished:
                job, batch, stage = pending.pop(future)
                try:
                    follow_up = self._advance(job, batch, stage, future, writer)
                except Exception as error:  # noqa: BLE001 -- one paper's trouble must not end the run
                    if not batch.closed:
                        batch.error = f"{type(error).__name__}: {error}"
                        self._close(job, batch)
                    continue
                if follow_up is not None:
                    pending[follow_up] = (job, batch, "repair")

    def _note_cut(self, job: PaperJob) -> None:
        assert job.paper is not None
        whole, seen = len(job.paper.text), [len(batch.text) for batch in job.batches]
        if max(seen) >= whole:
            return
        if len(seen) == 1:
            job.notes["cut"] = (f"the model saw the first {seen[0]} of {whole} characters (the context window is "
                                "smaller than the paper; --param max_input_tokens=N sets it)")
            return
        starts = ", ".join(str(batch.start) for batch in job.batches)
        job.notes["cut"] = (f"each of the {len(seen)} calls saw up to {max(seen)} of {whole} characters, from "
                            f"character {starts} (the context window is smaller than the paper; "
                            "--param max_input_tokens=N sets it)")

    def _advance(self, job: PaperJob, batch: Batch, stage: str, future: Future[Any],
                 writer: RowWriter) -> Optional[Future[Any]]:
        """Take a finished call further: check the generated rows (maybe asking for repairs), or close the call."""
        try:
            parsed, call = future.result()
        except ProviderError as error:
            job.usage.add_failure(error.calls)
            if stage == "generate":
                batch.error = str(error) + (MALFORMED_HINT if "malformed reply" in str(error) else "")
                self._close(job, batch)
            else:  # the passages stay unrepaired: dropped with this cause, the paper's other rows go on
                self._after_repair(job, batch, None, failure=str(error))
            return None
        job.usage.add(call)
        if stage == "generate":
            return self._after_generation(job, batch, parsed, writer)
        self._after_repair(job, batch, parsed)
        return None

    def _after_generation(self, job: PaperJob, batch: Batch, parsed: Any, writer: RowWriter) -> Optional[Future[Any]]:
        assert job.paper is not None
        if job.domain == "unknown" or self.options.domain:
            job.domain = self.options.domain or parsed.domain or "unknown"
        batch.candidates, notes = checking.candidates_from(parsed, job.paper_id, batch.counts,
                                                           template=writer.generate_prompt.template,
                                                           numbered_after=batch.numbered_after)
        for name, found in notes.items():
            if found:
                job.notes.setdefault(name, []).extend(found)
        earlier = [c for other in job.batches if other is not batch for c in other.candidates]
        checking.drop_repeated_questions([*earlier, *batch.candidates])  # before any repair is asked for them
        checking.check_passages(batch.candidates, match_index(job.paper))
        items = checking.repair_requests(batch.candidates)
        if items:
            return writer.repair(job, batch, items)
        self._after_repair(job, batch, {})
        return None

    def _after_repair(self, job: PaperJob, batch: Batch, repairs: Optional[dict[str, Any]],
                      failure: Optional[str] = None) -> None:
        assert job.paper is not None
        checking.apply_repairs(batch.candidates, repairs, match_index(job.paper),
                               failure=redact(failure, self.secrets) if failure else None)
        self._close(job, batch)

    def _close(self, job: PaperJob, batch: Batch) -> None:
        """One call of the paper is through; the paper is finished with its last one (failed when all failed)."""
        assert job.paper is not None
        batch.closed = True
        if not all(b.closed for b in job.batches):
            return
        errors = [b.error for b in job.batches if b.error]
        if len(errors) == len(job.batches):
            self._fail(job, errors[0] if len(errors) == 1 else "; ".join(
                f"call {n + 1} of {len(errors)}: {error}" for n, error in enumerate(errors)))
            return
        if errors:
            job.notes["failed_calls"] = [f"call {b.number + 1} of {len(job.batches)} failed, its questions are "
                                         f"missing: {b.error}" for b in job.batches if b.error]
        job.candidates = [c for b in job.batches for c in b.candidates]
        result = checking.finish(job.candidates, job.paper_id, job.domain, match_index(job.paper))
        job.rows, job.report = result.rows, result.report
        self._finished(job)

    def _fail(self, job: PaperJob, message: str) -> None:
        job.error = redact(message, self.secrets)
        self._finished(job)

    def _finished(self, job: PaperJob) -> None:
        self.done += 1
        prefix = f"[{self.done}/{self.total}] {job.paper_id}"
        if job.error:
            self.say(f"{prefix}: FAILED: {job.error}")
            return
        passages = job.report["passages"]
        calls = (f"{job.usage.calls} calls" + (f" ({job.usage.failed} failed)" if job.usage.failed else "")
                 + (f", {job.usage.cached} from cache" if job.usage.cached else ""))
        self.say(f"{prefix}: {job.report['rows_kept']} of {job.report['rows_generated']} rows kept; passages: "
                 f"{passages['verbatim']} verbatim, {passages['repaired']} repaired, {passages['dropped']} dropped "
                 f"({calls}, spend {job.usage.spend})")
        for note in job.notes.get("shortfalls", []) + job.notes.get("malformed", []) + job.notes.get(
                "failed_calls", []) + ([job.notes["cut"]] if "cut" in job.notes else []):
            self.say(f"    note: {note}")
        for dropped in job.report["dropped_passages"]:
            self.say(f"    dropped passage of {dropped['row_id']} ({dropped['section']}): {dropped['reason']}")
        for dropped in job.report["dropped_rows"]:
            self.say(f"    dropped row {dropped['row_id']}: {dropped['reason']}")

    def progress(self, jobs: list[PaperJob]) -> str:
        usage = Usage()
        for job in jobs:
            usage.merge(job.usage)
        failed = sum(1 for job in jobs if job.error)
        elapsed = time.monotonic() - self.started
        return (f"{self.done}/{self.total} papers, {failed} failed, {usage.calls} calls ({usage.failed} failed), "
                f"{usage.cached} from cache, "
                f"spend {usage.spend}, elapsed {elapsed:.0f}s")


# --------------------------------------------------------------------------- output


def report_path_for(out: Path) -> Path:
    return out.with_name(f"{out.name.rsplit('.', 1)[0]}.report.json")


def write_rows(out: Path, rows: list[dict[str, Any]], header: dict[str, Any]) -> None:
    """The rows in the file shape the suffix names, written atomically."""
    suffix = out.suffix.lower()
    if suffix == ".jsonl":
        lines = [json.dumps(_flat(row), ensure_ascii=False) for row in rows]
        data = ("\n".join(lines) + "\n" if lines else "").encode()
    elif suffix == ".json":
        data = (json.dumps({"version": "1", "generated": header, "rows": rows}, ensure_ascii=False, indent=1)
                + "\n").encode()
    else:
        import yaml

        body = yaml.safe_dump({"version": "1", "generated": header, "rows": rows}, sort_keys=False,
                              allow_unicode=True, width=110)
        data = ("# Benchmark rows written by `python -m pytest_researchqa generate`: every expected passage\n"
                "# was checked verbatim against its paper's extracted text.\n" + body).encode()
    atomic_write(out, data)


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    """The published flat shape: metadata as top-level ``metadata_*`` keys."""
    flat = {k: v for k, v in row.items() if k != "metadata"}
    flat.update({f"metadata_{k}": v for k, v in row.get("metadata", {}).items()})
    return flat


def generate(papers_dir: Path, out: Path, options: GenerateOptions, *, report: Optional[Path] = None,
             stream: Optional[TextIO] = None) -> int:
    """Run generation; 0 when every paper gave its rows, 1 when some paper failed (the others are written)."""
    if out.suffix.lower() not in OUTPUT_SUFFIXES:
        raise GenerateError(f"{out}: the output must end in .yaml, .jsonl or .json")
    for kind, count in options.counts.items():
        if kind not in QUESTION_TYPES:
            raise GenerateError(f"unknown question type {kind!r} (use {', '.join(QUESTION_TYPES)})")
        if count < 0:
            raise GenerateError(f"{kind}={count}: a count cannot be negative")
    run = GenerationRun(papers_dir, options, stream or sys.stdout)
    jobs = run.run()
    rows = [row for job in jobs for row in job.rows]
    header = {"by": "python -m pytest_researchqa generate", "model": options.model,
              "prompts": {name: load_prompt(PROMPTS, name).sha for name in (GENERATE_PROMPT, REPAIR_PROMPT)},
              "counts": dict(options.counts), "papers": len(jobs)}
    write_rows(out, rows, header)
    report_file = report or report_path_for(out)
    usage = Usage()
    for job in jobs:
        usage.merge(job.usage)
    papers = []
    for job in jobs:
        entry: dict[str, Any] = {"paper_id": job.paper_id, "source": str(job.source)}
        if job.error:
            entry.update(status="failed", error=job.error)
        else:
            entry.update(status="ok", domain=job.domain, **job.report, notes=job.notes)
        entry["usage"] = job.usage.to_plain()
        papers.append(entry)
    totals = {"papers": len(jobs), "failed": sum(1 for j in jobs if j.error), "rows_kept": len(rows),
              "rows_generated": sum(j.report.get("rows_generated", 0) for j in jobs),
              **{k: sum(j.report.get("passages", {}).get(k, 0) for j in jobs)
                 for k in ("checked", "verbatim", "repaired", "dropped")},
              "passages_written": sum(j.report.get("passages_written", 0) for j in jobs),
              "usage": usage.to_plain()}
    # The calls each paper was planned (one, or several of fewer questions when the window is small).
    plan = {"calls_per_paper": len(run.plan), "questions_per_call": run.plan}
    document = {"output": str(out), **header, "plan": plan, "totals": totals, "papers": papers}
    atomic_write(report_file, (json.dumps(document, ensure_ascii=False, indent=1) + "\n").encode())
    run.say(f"generate: {run.progress(jobs)}")
    kept_from = sum(1 for j in jobs if not j.error)
    run.say(f"wrote {len(rows)} rows from {kept_from} of {len(jobs)} papers to {out} (report: {report_file})")
    run.say(f"self-test: python -m pytest --researchqa-dataset={out} --researchqa-papers={papers_dir} "
            "--researchqa-system=oracle")
    return 1 if totals["failed"] else 0
