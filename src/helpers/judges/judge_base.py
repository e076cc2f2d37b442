"""The judge contract and its registry.

A judge scores typed samples (helpers.data.contracts.Sample: question, answer, contexts,
reference, ...) with its options. It says what it produces (its metrics, with their range and
direction), which sample fields it requires (as ragas's metrics declare their columns), whether it
needs an LLM and which one, and scores one sample at a time. `Judge.score_sample` is the one path every
caller takes (a run, `helpers judge FILE`, a panel): it gives NaN with the reason when a required
field is missing, so no judge repeats that guard, and checks each value against its metric's
range. `JUDGES` maps config names to judge classes, as `BUILDERS` does for architectures; a judge
registered with `@register` is run by any config that switches it on, and read by the analysis,
figures and panels, without another file changing.

    @register
    class Length(Judge):
        name, label = "length", "answer length"
        metrics = (Metric("words", low=0, high=None, higher_is_better=False),)
        def score_one(self, sample):
            return [("words", len(sample.answer.split()), "")], None

    Length().score([Sample("q1", "Why?", "because it is")])   # long rows; no run needed
    # config: judges: {length: {}}      (options, if any, go to the judge's `Options` model)
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Protocol, TypeVar, cast

from pydantic import BaseModel, ConfigDict

from helpers.data.contracts import Sample
from helpers.errors import UserError
from helpers.extras import missing_extra


class RunConfig(Protocol):
    """What a judge reads of a run's config (helpers.experiment.config.ExperimentConfig): a
    protocol, so the judges (layer 3) name no type of the experiment layer above them."""

    judges: Any  # JudgesConfig: each judge's switch and options
    retrieval: Any  # RetrievalConfig: k, and each architecture's section
    generate: bool  # False: a retrieval-only run (no answers to judge)


Row = tuple[str, Any, str]  # (metric, value or None, reason)
OptionsT = TypeVar("OptionsT", bound=BaseModel)  # a judge's own Options model

# why a judge scores NaN when a sample lacks a field it requires
MISSING = {
    "question": "no question",
    "answer": "no answer to judge",
    "contexts": "no contexts were retrieved",
    "reference": "the question has no reference answer",
}


class LLMSource(Protocol):
    """Where a judge gets its LLM clients (helpers.experiment.runner.Experiment)."""

    def llm(self, name: str | None) -> Any: ...

    def llm_copy(self, name: str) -> Any: ...


@dataclass
class JudgeContext:
    """What a judge may read beyond a sample and its options: the corpus's language, the run's
    config (None outside a run), the dataset's qrels, and a source of LLM clients (None: no LLM)."""

    language: str = "en"
    config: RunConfig | None = None
    qrels: dict = field(default_factory=dict)
    llms: LLMSource | None = None

    def llm(self, name: str | None, *, copy: bool = False):
        """The configured LLM `name` (`copy`: another client of it, its own call list)."""
        if self.llms is None:
            raise UserError(f"this judge calls the LLM {name!r}, and none is configured here: judge inside a run")
        if not copy:
            return self.llms.llm(name)
        if name is None:  # a copy is of a named entry (the runner looks the name up in llms)
            raise UserError("a copy of an LLM needs the LLM's name")
        return self.llms.llm_copy(name)


# the long score row of a run's scores.parquet: one number of one judge for one answer
SCORE_COLUMNS = ["run_id", "dataset", "architecture", "llm", "judge", "qid", "metric", "value", "reason"]


def score_row(
    *,
    architecture: str,
    llm: str,
    judge: str,
    qid: str,
    metric: str,
    value: Any,
    reason: str = "",
    run_id: str | None = None,
    dataset: str | None = None,
) -> dict:
    """One long score row (SCORE_COLUMNS): `value` as given (callers convert it); `run_id` and
    `dataset` only when given (the runner adds them to a judge's rows when it stores them)."""
    row = {} if run_id is None and dataset is None else {"run_id": run_id, "dataset": dataset}
    row.update(architecture=architecture, llm=llm, judge=judge, qid=qid, metric=metric, value=value, reason=reason)
    return row


@dataclass(frozen=True)
class Metric:
    """One number a judge produces: its range (None: unbounded) and which way is better.
    `grounding`: it says whether the answer is supported by its contexts (faithfulness,
    adherence): such metrics are compared with each other and with people's labels."""

    name: str
    low: float | None = 0.0
    high: float | None = 1.0
    higher_is_better: bool = True
    grounding: bool = False
    quality: bool = True  # a headline score of summaries and figures (False: a diagnostic)
    # the score at which the judge's verdict flips (value >= threshold: the good side); the
    # validity table measures its agreement with people's labels there (None: 0.5)
    threshold: float | None = None
    # the people's label it is checked against (helpers.judges.validity): "supported", "correct",
    # "context" (the reference's answer is in the contexts), "qrels" (computed against people's
    # relevance labels: valid by construction); None: "supported" for grounding metrics, else none
    validated_by: str | None = None

    @property
    def label(self) -> str | None:
        return self.validated_by or ("supported" if self.grounding else None)

    description: str = ""

    def check(self, value):
        """`value` as a float, None for a missing one; ValueError outside the range."""
        if value is None or value != value:
            return None
        value = float(value)
        if (self.low is not None and value < self.low - 1e-9) or (self.high is not None and value > self.high + 1e-9):
            raise ValueError(f"{self.name} = {value} outside [{self.low}, {self.high}]")
        return value


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Judge(Generic[OptionsT]):
    """Subclasses set `name`, `label`, `metrics` and implement `score_one(sample)`; the rest has
    defaults. `Judge(options, context=JudgeContext(...))`: `options` is the judge's own `Options`
    model (defaults when None; a judge with options is a `Judge[X]` with `Options = X`, so that
    `self.options` is typed); `context` what it may read beyond the sample (JudgeContext)."""

    name: ClassVar[str]
    label: ClassVar[str]  # for people: panels, figures, logs
    order: ClassVar[int] = 1000  # reports list judges by it, then by name (the built-ins 10-120)
    metrics: ClassVar[tuple[Metric, ...]] = ()
    # the judge's own config section, if any (a ClassVar cannot name OptionsT: the casts say Judge[X]'s is X)
    Options: ClassVar[type[BaseModel]] = NoOptions
    # stored: each answer's scores are a record in the run store (False: recomputed from the
    # answers at the end of every invocation, for judges that cost nothing, e.g. retrieval metrics)
    stored: ClassVar[bool] = True
    # calls an LLM (the one llm_name names): such a judge cannot score answers from a file alone
    uses_llm: ClassVar[bool] = False
    # the Sample fields it cannot score without (checked in this order; MISSING gives the reason)
    requires: ClassVar[tuple[str, ...]] = ("answer",)

    def __init__(self, options: OptionsT | dict | None = None, *, context: JudgeContext | None = None):
        chosen = self.Options(**options) if isinstance(options, dict) else options or self.Options()
        self.options = cast(OptionsT, chosen)
        self.context = context or JudgeContext()
        self.workers = 1  # samples scored at once
        self.artefact: str | None = None  # which trained model judged

    @property
    def config(self) -> "RunConfig | None":
        """The run's config (None outside a run)."""
        return self.context.config

    @property
    def language(self) -> str:
        return self.context.language

    # ---- what the config switches on
    @classmethod
    def enabled(cls, config: "RunConfig") -> bool:
        """On when the config's `judges` section turns it on (helpers.experiment.judges_config)."""
        return config.judges.on(cls.name)

    @classmethod
    def needed_by(cls, data) -> bool:
        """Whether a dataset needs this judge although the config leaves it off (the refusal judge:
        questions the documents do not answer); default never."""
        return False

    @classmethod
    def options_of(cls, config: "RunConfig") -> OptionsT:
        """This judge's options in `config` (its `Options`, the defaults where the config has none)."""
        return cast(OptionsT, cls.Options(**config.judges.options(cls.name)))

    @classmethod
    def switch(cls, judges: dict, on: bool, llm: str | None = None) -> None:
        """Turn this judge on or off in a config's raw `judges` section (the run panel's choice);
        `llm`: the LLM it judges with, for judges that use one."""
        judges[cls.name] = (judges.get(cls.name) or {}) if on else False

    @classmethod
    def metrics_for(cls, config: "RunConfig | None" = None) -> tuple[Metric, ...]:
        return cls.metrics

    @classmethod
    def is_quality(cls, metric: str) -> bool:
        """Whether a stored metric of this judge is a headline quality score (summaries, figures)."""
        return any(m.name == metric and m.quality for m in cls.metrics_for(None))

    @classmethod
    def llm_name(cls, config: "RunConfig") -> str | None:
        """The name of the configured LLM this judge calls (None: none)."""
        return None

    # ---- scoring
    def wants(self, sample: Sample) -> bool:
        """Whether this judge scores `sample` at all (default: every one; RAGAS: its questions)."""
        return True

    def prepare(self) -> None:
        """Load what scoring needs (models, clients); called only when some sample is left to score."""

    def score_one(self, sample: Sample) -> tuple[list[Row], dict | None]:
        """(rows for this sample, its LLM usage or None); the sample has every field in `requires`.
        Raise on failure: the caller records the error with NaN scores and goes on."""
        raise NotImplementedError

    def score_sample(self, sample: Sample) -> tuple[list[Row], dict | None]:
        """`score_one` behind the checks every judge shares: NaN with MISSING's reason for the
        first required field the sample lacks; each value within its metric's declared range
        (a ValueError otherwise, which the caller records as the judge's failure)."""
        metrics = self.metrics_for(self.config)
        for name in self.requires:
            if sample.lacks(name):
                return [(m.name, None, MISSING[name]) for m in metrics], None
        rows, usage = self.score_one(sample)
        checked = {m.name: m for m in metrics}
        return [(m, checked[m].check(v) if m in checked else v, r) for m, v, r in rows], usage

    def score(self, samples: list[Sample]) -> list[dict]:
        """Long rows (architecture, llm, judge, qid, metric, value, reason) of the samples it
        wants: what a judge with `stored = False` contributes to scores.parquet, and a way to
        score outside a run. Raises on a failed sample (judge_sample records it and goes on)."""
        rows = []
        for sample in filter(self.wants, samples):
            values, _ = self.score_sample(sample)
            rows += [
                score_row(
                    architecture=sample.architecture,
                    llm=sample.llm,
                    judge=self.name,
                    qid=sample.qid,
                    metric=metric,
                    value=value,
                    reason=reason,
                )
                for metric, value, reason in values
            ]
        return rows


def judge_sample(judge: Judge, sample: Sample) -> tuple[list[Row], dict | None, Exception | None]:
    """`judge.score_sample(sample)`, or NaN rows with the error as their reason when it raises: (rows,
    usage, the exception or None). One sample's failure is recorded and the rest go on, in a run
    and in `helpers judge FILE` alike."""
    try:
        rows, usage = judge.score_sample(sample)
        return rows, usage, None
    except Exception as exc:  # noqa: BLE001 - any failure of one sample is recorded, not raised
        reason = f"judge failed: {missing_extra(exc) or f'{type(exc).__name__}: {exc}'}"
        return [(m.name, None, reason) for m in judge.metrics_for(judge.config)], None, exc


class JudgeRegistry(MutableMapping):
    """Config name -> judge class, in report order (each class's `order`, then its name). The
    first read imports the judge modules (helpers.judges.discover): importing helpers.judges
    imports no judge, and a new judge is a module of the package, named in no list."""

    def __init__(self) -> None:
        self._classes: dict[str, type[Judge]] = {}
        self._state = "new"  # "discovering", then "ready"
        self._order: list[str] | None = None  # the names in report order, until the next change

    def loaded(self) -> list[str]:
        """The judges registered so far, without discovering the others."""
        return list(self._classes)

    def _ready(self) -> dict[str, type[Judge]]:
        if self._state == "new":
            self._state = "discovering"
            try:
                discover()
            except BaseException:
                self._state = "new"  # a judge module that fails to import fails every read, not just the first
                raise
            self._state = "ready"
        return self._classes

    def __getitem__(self, name: str) -> type[Judge]:
        return self._ready()[name]

    def __iter__(self):
        classes = self._ready()
        if self._order is None:
            self._order = sorted(classes, key=lambda name: (classes[name].order, name))
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._ready())

    def __setitem__(self, name: str, judge: type[Judge]) -> None:
        self._classes[name] = judge  # registering reads nothing: a module being discovered registers
        self._order = None

    def __delitem__(self, name: str) -> None:
        del self._ready()[name]
        self._order = None

    def __repr__(self) -> str:
        return f"JudgeRegistry({list(self)})"


JUDGES = JudgeRegistry()


# the modules of this package that hold no judge: the contract, the front end, and tools that read
# the registry (importing them here would load the data layer for every user of a judge)
NOT_JUDGES = frozenset({"judge_base", "evaluate", "judge_eval", "external", "validity"})


def judge_modules() -> list[str]:
    """The judge modules on the package's path (a folder added to `helpers.judges.__path__` is
    searched too), by name; subpackages (judges.models) and NOT_JUDGES are left out. The package
    is this module's parent, imported before it: read from sys.modules, not imported."""
    return sorted(
        m.name
        for m in pkgutil.iter_modules(sys.modules[__package__].__path__)
        if not m.ispkg and m.name not in NOT_JUDGES
    )


def discover() -> list[str]:
    """Import every judge module not imported yet (each registers its judges as it is imported):
    a new judge is a module in this package, named in no list. The names of the judges this call
    registered, in registry order."""
    before = set(JUDGES.loaded())
    for name in judge_modules():
        importlib.import_module(f"{__package__}.{name}")
    return [name for name in JUDGES if name not in before]


def register(judge: type[Judge]) -> type[Judge]:
    """Add `judge` to JUDGES under its `name` (a class decorator)."""
    if not getattr(judge, "name", None) or not getattr(judge, "label", None):
        raise TypeError(f"{judge.__name__}: a judge needs a `name` and a `label`")
    JUDGES[judge.name] = judge
    return judge


def judge_class(name: str) -> type[Judge]:
    if name not in JUDGES:
        raise UserError(f"unknown judge {name!r}; valid names: {sorted(JUDGES)}")
    return JUDGES[name]


def active_judges(config: "RunConfig", data=None) -> list[type[Judge]]:
    """The judges a config runs on `data` (a Dataset; None: the config's alone), in registry order:
    those the config turns on and those the data needs (`Judge.needed_by`); none when the run does
    not generate."""
    if not config.generate:
        return []
    return [j for j in JUDGES.values() if j.enabled(config) or (data is not None and j.needed_by(data))]


def metric_names(judge: str, config: "RunConfig | None" = None) -> list[str]:
    return [m.name for m in judge_class(judge).metrics_for(config)] if judge in JUDGES else []


def is_quality(judge: str, metric: str) -> bool:
    """A score row's (judge, metric) is a quality score (the other rows of a run are costs:
    latency, tokens, ...; and diagnostics)."""
    return judge in JUDGES and JUDGES[judge].is_quality(metric)


def grounding_metrics() -> list[tuple[str, str, str]]:
    """(judge, metric, label) of every metric that says whether an answer is supported."""
    return [
        (judge.name, m.name, f"{judge.label}: {m.name}")
        for judge in JUDGES.values()
        for m in judge.metrics_for(None)
        if m.grounding
    ]
