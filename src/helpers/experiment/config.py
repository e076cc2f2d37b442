"""Typed experiment configs, loaded from YAML. Unknown keys are rejected with their name."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from helpers.errors import UserError
from helpers.experiment.judges_config import JudgesConfig
from helpers.inputs import load_yaml, safe_name
from helpers.llm.llm_settings import LLMConfig
from helpers.retrieval.registry import ARCHITECTURES, LANGCHAIN, RetrievalOptions, architecture


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DatasetConfig(Strict):
    name: str = "obstetrics"
    options: dict = Field(
        default_factory=dict,
        description="loader options, e.g. pages, chunk_size "
        "(the loader's keyword parameters: helpers.data.dataset_options(name))",
    )
    questions: list[str] | None = Field(None, description="qids to use (default: all)")
    n_questions: int | None = Field(
        None,
        gt=0,
        description="a sample of this many questions (seeded by "
        "statistics.seed; after `questions` when both are given)",
    )

    @model_validator(mode="before")
    @classmethod
    def _flat_options(cls, data):
        """`{name: ragbench, subset: covidqa, n: 50}` reads as `{name: ragbench, options: {subset: ...}}`."""
        if isinstance(data, dict):
            flat = {key: value for key, value in data.items() if key not in cls.model_fields}
            if flat:
                data = {key: value for key, value in data.items() if key in cls.model_fields}
                data["options"] = {**flat, **(data.get("options") or {})}
        return data

    @model_validator(mode="after")
    def _known_dataset_and_options(self):
        from helpers.data import check_dataset_options  # pandas: loaded only when this runs

        check_dataset_options(self.name, self.options)  # a misspelt option fails here, not mid-run
        return self


class RetrievalConfig(RetrievalOptions):
    """`k` plus one section of options per architecture (helpers.retrieval.architectures.options), e.g.
    `retrieval: {k: 5, hybrid: {candidates: 100, method: rrf}, rerank: {candidates: 50, scorer: ltr}}`."""

    k: int = Field(5, gt=0, description="contexts given to the generator")

    @property
    def options(self) -> RetrievalOptions:
        """The architecture sections alone, as build_retriever takes them."""
        return self.sections()


class NamedLLM(LLMConfig):
    name: str = "local"


class GenerationConfig(Strict):
    prompt: str | dict = Field(
        "cite-sentences",
        description=(
            "the answer prompt: a name in helpers.generation.answer_prompts.ANSWER_PROMPTS (cite-sentences, "
            "quote-then-answer, question-first, say-no-se) or {system: TEXT, user: TEXT with {contexts} "
            "and {question}}; a sweep axis (generation.prompt)"
        ),
    )
    language: str | None = Field(None, description="the prompt's language (es, en); None: the corpus's")
    prompt_text: dict | None = Field(
        None, description="filled in: the texts the model is sent (saved in the run's config.yaml; not an input)"
    )

    @model_validator(mode="after")
    def _resolve_prompt(self):
        from helpers.generation.answer_prompts import get_prompt

        try:
            resolved = get_prompt(self.prompt).resolved()
        except UserError as exc:
            raise ValueError(str(exc)) from None
        object.__setattr__(self, "prompt_text", resolved)
        return self


class StatisticsConfig(Strict):
    baseline: str = "bm25"
    confidence: float = Field(0.95, gt=0, lt=1)
    alpha: float = Field(0.05, gt=0, lt=1)
    n_resamples: int = Field(10_000, gt=99)
    seed: int = 0


class DecisionsConfig(Strict):
    """When a comparison is settled: the decision lines after every run (helpers.experiment.analysis
    `decided_lines`, helpers.inference.classical `settle`) and `run --until-decided` (helpers.experiment.until_decided)."""

    metric: str | None = Field(
        None,
        description="judge/metric the decision is on (values in [0, 1]); default: correctness/correctness "
        "when answers are generated, else retrieval/ndcg@k",
    )
    alpha: float | None = Field(None, gt=0, lt=1, description="error of the decision; default statistics.alpha")
    margin: float = Field(
        0.05,
        ge=0,
        lt=1,
        description="the smallest difference that matters (on the metric's 0-1 scale: 0.05 is 5 points): a pair "
        "whose interval lies within ±margin is tied, and 'questions needed' is for a difference of margin; "
        "0: only an exact tie is one",
    )
    bets: list[float] = Field(
        default_factory=lambda: [0.5], description="the confidence sequence's constant bets, in (0, 1)"
    )
    adaptive: bool = Field(True, description="also the plug-in bet that adapts to the differences' spread")
    batch: int | None = Field(
        None, gt=0, description="questions answered between two looks at the data; default the LLM's workers"
    )

    @field_validator("bets")
    @classmethod
    def _bets_in_range(cls, bets):
        bad = [b for b in bets if not 0 < b < 1]
        if bad:
            raise ValueError(f"every bet must be in (0, 1); got {bad}")
        return bets

    @model_validator(mode="after")
    def _some_bet(self):
        if not self.bets and not self.adaptive:
            raise ValueError("decisions: no bet at all (bets empty and adaptive false); set bets: [0.5]")
        return self


class DiagnosisConfig(Strict):
    """What `helpers diagnose` adds after a run (helpers.experiment.diagnosis, .intervention)."""

    intervene: bool = Field(
        False,
        description="a second opinion on each wrong answer: answered again with the passage that holds the "
        "reference first (one LLM call each); right then: retrieval, still wrong: generation",
    )


class ExperimentConfig(Strict):
    run_id: str | None = Field(None, description="results/<run_id>/; default: name + config hash")
    name: str = "experiment"
    dataset: DatasetConfig = Field(default_factory=DatasetConfig)
    architectures: list[str] = Field(
        default_factory=lambda: list(ARCHITECTURES),
        description="names in the architecture registry (helpers.retrieval.registry.ARCHITECTURES); default all",
    )
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    llms: list[NamedLLM] = Field(default_factory=lambda: [NamedLLM()])
    generation_llm: str | None = Field(
        None, description="LLM (by name) for answers, HyDE and rewrites; default the first"
    )
    generation: GenerationConfig = Field(default_factory=GenerationConfig)
    judges: JudgesConfig = Field(
        default_factory=lambda: JudgesConfig({}),
        description="judges: {NAME: {options}} (helpers.experiment.judges_config); NAME: false turns one off",
    )
    statistics: StatisticsConfig = Field(default_factory=StatisticsConfig)
    decisions: DecisionsConfig = Field(default_factory=DecisionsConfig)
    diagnosis: DiagnosisConfig = Field(default_factory=DiagnosisConfig)
    generate: bool = Field(
        True,
        description="False: retrieval only (the top k and, where the dataset has "
        "qrels, retrieval scores; no answers, no judges): cheap sweeps over retrieval settings",
    )
    figures: bool = True
    max_failure_rate: float = Field(
        0.2, ge=0, le=1, description="a run whose share of failed samples exceeds this exits non-zero"
    )

    @field_validator("name", "run_id")
    @classmethod
    def _safe_names(cls, value, info):
        # both become folder and file names under results/ and figures/
        return value if value is None else safe_name(value, info.field_name)

    @field_validator("architectures")
    @classmethod
    def _known_architectures(cls, names):
        unknown = [n for n in names if n not in ARCHITECTURES and not n.startswith(LANGCHAIN)]
        if unknown:
            raise ValueError(
                f"unknown architecture(s) {unknown}; valid names: {sorted(ARCHITECTURES)} or {LANGCHAIN}MODULE:FACTORY"
            )
        for name in names:
            if name.startswith(LANGCHAIN):
                try:
                    architecture(name)  # the form only: the module is imported when the run builds it
                except UserError as exc:
                    raise ValueError(str(exc)) from None
        return names

    @model_validator(mode="after")
    def _ragas_architectures_run(self):
        extra = set(self.judges.options("ragas").get("architectures") or []) - set(self.architectures)
        if extra:
            raise ValueError(
                f"judges.ragas.architectures names {sorted(extra)}, not in architectures {self.architectures}"
            )
        return self

    def decision_metric(self) -> str:
        """judge/metric comparisons are decided on: decisions.metric, else correctness when the run
        answers, else nDCG@k."""
        if self.decisions.metric:
            return self.decisions.metric
        return "correctness/correctness" if self.generate else f"retrieval/ndcg@{self.retrieval.k}"

    def questions_of(self, data) -> dict[str, str]:
        """{qid: question} of a run of this config on `data`: dataset.questions (or all), sampled
        to dataset.n_questions (seeded by statistics.seed)."""
        qids = self.dataset.questions or list(data.queries)
        unknown = [q for q in qids if q not in data.queries]
        if unknown:
            raise ConfigError(
                f"dataset.questions names unknown qids {unknown[:5]}; valid: {list(data.queries)[:10]}..."
            )
        n = self.dataset.n_questions
        if n and n > len(qids):
            raise ConfigError(
                f"dataset.n_questions is {n} but {self.dataset.name} gives {len(qids)} questions"
                " here; ask for fewer, or have the loader give more (RAGBench samples `dataset.options.n`"
                " examples, 50 unless set; null for all)"
            )
        if n and n < len(qids):
            qids = sorted(random.Random(self.statistics.seed).sample(sorted(qids), n))
        return {q: data.queries[q] for q in qids}

    def llm(self, name: str | None) -> NamedLLM:
        for llm in self.llms:
            if llm.name == name:
                return llm
        raise ConfigError(f"no LLM named {name!r} in llms; names: {[l.name for l in self.llms]}")

    def resolved_run_id(self) -> str:
        if self.run_id:
            return self.run_id
        # the default prompt is left out, so configs written before prompts were a setting keep their ids;
        # so is what never changes an answer and came later (the prompt store's size, bit-identical answers)
        # decisions only say when `--until-decided` stops, and diagnosis what is read after: neither changes an answer
        exclude: dict[str, bool | dict[str, set[str]]] = {
            "run_id": True,
            "figures": True,
            "decisions": True,
            "diagnosis": True,
        }
        exclude["llms"] = {"__all__": {"prompt_store_mb"}}
        if self.generation == GenerationConfig():
            exclude["generation"] = True
        payload = self.model_dump(exclude=exclude)
        payload["judges"] = self.judges.id_form()  # the judges' form before issue 47: ids unchanged
        digest = hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:8]
        return f"{self.name}-{digest}"


class ConfigError(UserError):
    """A config file that does not validate; the message names the file and each bad key."""


def load_config(path: str | Path) -> ExperimentConfig:
    path = Path(path)
    try:
        raw = load_yaml(path) or {}
    except UserError as exc:
        raise ConfigError(str(exc)) from None
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{path}: a config is a mapping of keys (dataset, architectures, llms, ...), not a {type(raw).__name__}"
        )
    return _validated(raw, str(path))


def _validated(raw: dict, where: str) -> ExperimentConfig:
    """`raw` as a config, or a ConfigError naming `where` and every key that is wrong."""
    try:
        return ExperimentConfig(**raw)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            key = ".".join(str(p) for p in error["loc"])
            if error["type"] == "extra_forbidden":
                problems.append(f"unknown key '{key}' (check its spelling; see configs/default.yaml)")
            else:
                problems.append(f"'{key}': {error['msg'].removeprefix('Value error, ')}")
        raise ConfigError(f"{where}: " + "; ".join(problems)) from None


def with_overrides(config: ExperimentConfig, *, architectures: str | None = None, name: str | None = None):
    """`config` with the command line's `--architectures a,b,c` and `--name NAME` in place of its own,
    checked as a config file's keys are."""
    raw = config.model_dump(mode="json")
    if architectures:
        raw["architectures"] = [a.strip() for a in architectures.split(",") if a.strip()]
    if name:
        raw["name"] = name
    return _validated(raw, "the command line (--architectures, --name)")
