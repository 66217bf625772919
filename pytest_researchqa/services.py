"""Systems and judges, built on demand and shared for the run. No pytest import.

Model systems and judges share one :class:`~pytest_researchqa.llm.engine.ModelRunner`
(slots, pacing, retries) and the on-disk cache; plain systems (oracle, bm25,
user functions) are loaded by spec. ``judges_for`` holds the judge-choice
policy (``auto`` picks a judge of another model family than the system).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Sequence, cast

if TYPE_CHECKING:  # pragma: no cover
    from .costs import Spend
    from .families import Family
    from .llm.cache import AnswerCache
    from .llm.engine import ModelRunner
    from .llm.judges import JudgePanel, ModelJudge
    from .settings import Settings
    from .systems import System


class Services:
    def __init__(self, settings: "Settings") -> None:
        self.settings = settings
        self._systems: dict[str, Any] = {}
        self._judges: dict[tuple[str, str], Any] = {}
        self._runner: Optional["ModelRunner"] = None
        self._cache: Optional["AnswerCache"] = None
        self._judge_kinds: "Optional[dict[str, type[ModelJudge]]]" = None
        # Under xdist: the folder where the run's workers keep what each spent, and this worker's name in it.
        self.spend_ledger: Optional[tuple[str, str]] = None
        # The installed families, a conftest.py's among them (pytest's plugin manager: set by activation.new_state),
        # asked only to name the family whose rows an unknown system answers.
        self.families: "Callable[[], Iterable[Family]]" = lambda: ()

    def is_model(self, name: Optional[str]) -> bool:
        return name is not None and name in self.settings.models

    def other_family(self, pool: Sequence[str], systems: Iterable[str]) -> str:
        """The pool's first model of a family none of ``systems`` (the models among them) is known to belong to;
        the pool's first when there is none."""
        from .llm_params import same_family

        families = [self.family_of(s) for s in systems if self.is_model(s)]
        return next((c for c in pool if not any(same_family(self.family_of(c), f) for f in families)), pool[0])

    def family_of(self, name: str) -> Optional[str]:
        """A model's family (``llm_params.model_family``); None (unknown) for a model served on this machine whose
        served name says nothing: an ``openai/<alias>`` on a local server is not OpenAI's."""
        from .llm_params import is_local, model_family

        return model_family(name, local=is_local(self.settings.model_params.get(name) or {}))

    def system(self, name: str) -> "System":
        """The system a spec names (raises SystemSpecError for a bad spec)."""
        if name not in self._systems:
            if self.is_model(name):
                self._systems[name] = self._model_system(name)
            else:
                from .systems import SystemSpecError, load_system, named_system, unknown_system

                family = self.settings.benchmark_family
                declared = dict(family.systems)
                if name in declared:
                    loaded = named_system(name, declared[name], family)
                elif ":" in name:
                    loaded = load_system(name)
                else:  # the choices for this run's rows, and the family whose rows it answers when one names it
                    raise SystemSpecError(unknown_system(name, family, self.families()))
                if loaded.is_async:  # one loop for the run, bounded and pipelined like model calls
                    loaded.runner = self.runner()
                self._systems[name] = loaded
        found: "System" = self._systems[name]
        return found

    def pipelined(self, name: Optional[str]) -> bool:
        """Whether this system's calls can start ahead of their rows' tests (models, async systems)."""
        if name is None:
            return False
        return self.is_model(name) or bool(getattr(self.system(name), "pipelined", False))

    def runner(self) -> "ModelRunner":
        if self._runner is None:
            from .llm.engine import ModelRunner

            self._runner = ModelRunner(self.settings.concurrency, self.settings.rows_per_minute)
            self._runner.budget_usd = self.settings.max_cost
            if self.spend_ledger is not None:  # xdist's workers spend one budget, and say what they spent
                from pathlib import Path

                from .costs import SpendLedger

                folder, name = self.spend_ledger
                self._runner.ledger = SpendLedger(Path(folder), name)
        return self._runner

    def spend(self) -> "Spend":
        """What this process's model calls have cost so far (nothing, when it made none)."""
        from .costs import Spend

        return self._runner.spend() if self._runner is not None else Spend()

    def cache(self) -> "AnswerCache":
        """The run's one answer and verdict cache: a write that fails turns it off for every system and judge."""
        if self._cache is None:
            from .llm.cache import AnswerCache
            from .papers import default_cache_dir

            self._cache = AnswerCache(self.settings.cache_dir or default_cache_dir())
        return self._cache

    def cache_note(self) -> Optional[str]:
        """What the summary says when caching was turned off during the run (None while it was not)."""
        return self._cache.off_note() if self._cache is not None else None

    def _spec(self, name: str) -> tuple[Any, float]:
        """A model's spec and per-call deadline; its provider's slots set by its profile (docs/models.md)."""
        from .llm.system import ModelSpec
        from .llm_params import call_limits

        settings = self.settings
        spec = ModelSpec(name, dict(settings.model_params.get(name, {})))
        slots, timeout_s = call_limits(spec.params, concurrency=settings.concurrency, timeout_s=settings.timeout_s,
                                       given=settings.given)
        if slots != settings.concurrency:
            self.runner().limit(spec.provider, slots)
        return spec, timeout_s

    def refusal(self) -> Optional[str]:
        """Why this run cannot grade as asked (None when it can): its family has no model system for its models,
        or no judge kind for its judges."""
        family = self.settings.benchmark_family
        if not (self.settings.systems or self.settings.models or self.settings.audit):
            return (f"the {family.name} family declares no default system (Family.default_system): name one with "
                    "--researchqa-system, or a model with --researchqa-model")
        if self.settings.models and not family.model_system:
            return (f"--researchqa-model: the {family.name} family declares no model system, so a model cannot "
                    "answer its rows; name a system with --researchqa-system")
        if self.settings.judges and not family.judge_kinds:
            return (f"--researchqa-judge: the {family.name} family declares no judge kind, so a model cannot "
                    "grade its rows; its own test records its metrics")
        return self._declaration_problem()

    def _declaration_problem(self) -> Optional[str]:
        """A part of the family's declaration this run will use that does not load (a third party's typo), said
        before any row runs instead of failing every row."""
        from .families import DeclarationError, resolve
        from .families.protocols import CALLED_AS, call_shape_problem

        family = self.settings.benchmark_family
        models = bool(self.settings.models or self.settings.judges)
        used = [("model_system", family.model_system if self.settings.models else ""),
                ("judges", family.judges if self.settings.judges else ""), ("loader", family.loader),
                ("before_rows", family.before_rows), ("after_answers", family.after_answers),
                ("renderer", family.renderer), ("call_estimate", family.call_estimate if models else ""),
                ("paper_check", family.paper_check if family.uses_papers else "")]  # named systems: named_system
        for field, target in used:
            if not target:
                continue
            try:
                found = resolve(target)
            except Exception as error:  # noqa: BLE001 -- whatever the import raised, said with its field
                return (f"the {family.name} family's {field} ({target}) cannot be loaded: "
                        f"{type(error).__name__}: {error}")
            # Typed by the Protocols of families.protocols: a target of the wrong shape is said before any row.
            problem = call_shape_problem(found, CALLED_AS[field]) if field in CALLED_AS else None
            if problem:
                return f"the {family.name} family's {field} ({target}) {problem}"
        try:  # said here too, where an xdist controller (which collects nothing) checks the run
            family.protocol_file()
        except DeclarationError as error:
            return str(error)
        if self.settings.judges:
            missing = [kind for kind in family.judge_kinds if kind not in self._kinds()]
            if missing:
                return (f"the {family.name} family's judge_kinds name {', '.join(map(repr, missing))}, which its "
                        f"judges table ({family.judges or 'none'}) does not declare")
        return None

    def _model_system(self, name: str) -> Any:
        """The family's model system for a model spec (its task: what each row's call asks)."""
        refused = self.refusal()
        if refused:
            from .systems import SystemSpecError

            raise SystemSpecError(refused)
        from .families import resolve

        family = self.settings.benchmark_family
        spec, timeout_s = self._spec(name)
        factory: Any = resolve(family.model_system)
        if isinstance(factory, type):  # a ModelSystem subclass, named as the class: built as a run builds it
            factory = cast(Any, factory).for_run
        return factory(spec, self.runner(), self.cache(), self.settings, timeout_s=timeout_s)

    def judge_names_for(self, system: str) -> list[str]:
        """The judges of one system's rows, 'auto' resolved to another family than the system's.

        Coverage (the rubric family) is graded by one evaluator for every system, as in the seed: 'auto'
        is the pool's first model of a family none of the run's systems belongs to (else the pool's first),
        so no system's Coverage % comes from a different judge than another's.
        """
        from .llm.judges import DEFAULT_POOL

        names = []
        one_for_all = self._kinds()[self.judge_kind()].same_judge_for_every_system
        for name in self.settings.judges:
            if name == "auto":
                graded = self.settings.all_systems if one_for_all else (system,)
                name = self.other_family(self.settings.judge_pool or DEFAULT_POOL, graded)
            names.append(name)
        return list(dict.fromkeys(names))

    def judges_for(self, system: str) -> "JudgePanel":
        from .llm.judges import JudgePanel

        return JudgePanel([self._judge(name) for name in self.judge_names_for(system)], self.settings.judge_repeats)

    def judge_kind(self) -> str:
        """The kind of judge the family's rows are graded by (the citation family: --researchqa-judge-mode)."""
        kinds = self.settings.benchmark_family.judge_kinds
        return self._protocol_kind(self.settings.judge_mode if self.settings.judge_mode in kinds else kinds[0])

    def _protocol_kind(self, kind: str) -> str:
        """Under --researchqa-protocol=paper, the rubric seed's released prompt for the kind (where it has one)."""
        if self.settings.protocol != "paper":
            return kind
        declared = self._kinds().get(kind)
        return (declared.paper_kind if declared is not None else "") or kind

    def _kinds(self) -> "dict[str, type[ModelJudge]]":
        """The judge kinds of the run's family, by name."""
        if self._judge_kinds is None:
            from .families.registry import judge_kinds

            self._judge_kinds = judge_kinds([self.settings.benchmark_family])
        return self._judge_kinds

    def _judge(self, name: str, kind: Optional[str] = None) -> "ModelJudge":
        kind = kind or self.judge_kind()
        if (name, kind) not in self._judges:
            from .families.registry import make_judge

            settings = self.settings
            spec, timeout_s = self._spec(name)
            made = make_judge(kind, spec, self.runner(), self.cache(), families=[settings.benchmark_family],
                              timeout_s=timeout_s, retries=settings.retries, prompt_folder=settings.judge_prompts)
            made.take_settings(settings)
            self._judges[(name, kind)] = made
        judge: "ModelJudge" = self._judges[(name, kind)]
        return judge

    def premise_judge(self) -> "Optional[ModelJudge]":
        """The model that decides premise_flagged (--researchqa-flagged-judge), or None: the text heuristic."""
        name = self.settings.flagged_judge
        return self._judge(name, "premise") if name and "premise" in self._kinds() else None

    def pairwise_judge(self, first: str, second: str) -> Any:
        """The direct pairwise judge of a battle: the first configured judge, with 'auto' resolved to a
        model of a family neither system belongs to where the pool has one."""
        from .llm.judges import DEFAULT_POOL

        name = self.settings.judges[0]
        if name == "auto":
            name = self.other_family(self.settings.judge_pool or DEFAULT_POOL, (first, second))
        return self._judge(name, self._protocol_kind("pairwise"))

    def stop_new_calls(self) -> None:
        """The run is stopping (Ctrl-C, -x): no model call not yet sent is sent."""
        if self._runner is not None:
            self._runner.stop_new_calls()

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
