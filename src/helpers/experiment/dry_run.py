"""`helpers run CONFIG --dry-run`: what a run will ask of its LLMs (calls, tokens, dollars, time
at the rate limits) before it starts, from a sample of its real prompts.

A few questions (`sample`) go through the whole run — retrieval, the answer prompt, HyDE and
multi-query rewrites, every judge's prompts — in a temporary folder, with each LLM replaced by
the deterministic responder (helpers.llm.responder): nothing is sent to any provider and the
response cache is neither read nor written. Each stage's calls and prompt tokens per sample are
then scaled to the samples the run still has to do (a resumed run: only those not finished).

Prompt tokens are counted with the model's own tokenizer for the bundled local models, and
estimated (helpers.llm.responder.estimate_tokens, ~15 %) for hosted ones. Output tokens are
bounded by each call's max_tokens: the estimate is a ceiling ("at most"), as is its cost.
"""

from __future__ import annotations

import functools
import math
import tempfile
from dataclasses import dataclass, field

from helpers import paths
from helpers.data import load_dataset
from helpers.experiment.config import ExperimentConfig
from helpers.experiment.runner import Experiment
from helpers.experiment.store import RunStore, answer_key, score_key
from helpers.inputs import inside
from helpers.judges import active_judges
from helpers.llm import LLM
from helpers.llm.backends import resolve_local_model
from helpers.llm.limits import RateLimiter
from helpers.llm.responder import SchemaResponder, estimate_tokens

DEFAULT_SAMPLE = 3


@dataclass
class Stage:
    stage: str  # "answer <architecture>" or "judge <name>"
    llm: str
    samples: int  # still to do
    calls: float  # per sample, measured on the sample
    input_tokens: float  # per sample
    max_output_tokens: float  # per sample
    price: tuple[float, float]  # USD per million tokens, input and output

    @property
    def total_calls(self) -> int:
        return math.ceil(self.samples * self.calls)

    @property
    def total_input(self) -> int:
        return round(self.samples * self.input_tokens)

    @property
    def total_output(self) -> int:
        return round(self.samples * self.max_output_tokens)

    @property
    def max_cost_usd(self) -> float:
        return (self.total_input * self.price[0] + self.total_output * self.price[1]) / 1e6


@dataclass
class Estimate:
    run_id: str
    stages: list[Stage]
    sampled: list[str]  # the qids whose prompts were built
    warnings: list[str] = field(default_factory=list)

    def totals(self) -> dict:
        return {
            "calls": sum(s.total_calls for s in self.stages),
            "input_tokens": sum(s.total_input for s in self.stages),
            "max_output_tokens": sum(s.total_output for s in self.stages),
            "max_cost_usd": round(sum(s.max_cost_usd for s in self.stages), 4),
        }

    def format(self) -> str:
        lines = [
            f"dry run of {self.run_id}: prompts built for {len(self.sampled)} question(s) "
            f"({', '.join(self.sampled[:5])}), no provider called",
            f"{'stage':<24} {'llm':<12} {'samples':>8} {'calls':>8} {'tokens in':>11} {'out, at most':>13} {'USD, at most':>13}",
        ]
        for s in self.stages:
            lines.append(
                f"{s.stage:<24} {s.llm:<12} {s.samples:>8} {s.total_calls:>8,} {s.total_input:>11,} "
                f"{s.total_output:>13,} {s.max_cost_usd:>13.4f}"
            )
        t = self.totals()
        lines.append(
            f"{'total':<24} {'':<12} {'':>8} {t['calls']:>8,} {t['input_tokens']:>11,} "
            f"{t['max_output_tokens']:>13,} {t['max_cost_usd']:>13.4f}"
        )
        return "\n".join(lines + [f"note: {w}" for w in self.warnings])


@functools.lru_cache(maxsize=4)
def _local_tokenizer(model: str):
    from llama_cpp import Llama  # the tokenizer alone: vocab_only loads no weights

    return Llama(model_path=resolve_local_model(model), vocab_only=True, verbose=False)


def token_counter(settings: dict):
    """len(tokens) of a text for this LLM entry: the GGUF's own tokenizer for local models,
    helpers.llm.responder.estimate_tokens for hosted ones (their tokenizers are not shipped)."""
    if settings.get("provider", "local") == "local":
        try:
            vocab = _local_tokenizer(settings.get("model") or "smollm2")
        except Exception:  # noqa: BLE001 - no llama.cpp or no file: the estimate, said in the notes
            return estimate_tokens
        return lambda text: len(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=True))
    return estimate_tokens


def _stand_in(settings: dict) -> LLM:
    """An LLM client of the same settings that answers with the responder, caches nothing and
    waits for no rate limit (its own limiter, without limits)."""
    settings = settings | {"cache": "off"}
    limiter = RateLimiter(None, None, settings.get("concurrency") or 4)
    return LLM(settings, backend=SchemaResponder(token_counter(settings)), limiter=limiter)


def estimate(config: ExperimentConfig, *, sample: int = DEFAULT_SAMPLE, results_dir=None) -> Estimate:
    """The run's LLM use, stage by stage, scaled from `sample` of its questions."""
    run_id = config.resolved_run_id()
    directory = inside(results_dir or paths.RESULTS_DIR, run_id, what="run id")
    done = RunStore(directory) if (directory / "records.jsonl").exists() else None
    data = load_dataset(config.dataset.name, **config.dataset.options)
    with tempfile.TemporaryDirectory() as tmp:
        queries = Experiment(config, results_dir=tmp).questions(data)
        sampled = sorted(queries)[: max(1, sample)]
        dataset = config.dataset.model_copy(update={"questions": sampled, "n_questions": None})
        probe_config = config.model_copy(update={"dataset": dataset, "run_id": "dry-run", "figures": False})
        probe = Experiment(probe_config, results_dir=tmp)
        probe.make_llm = _stand_in
        probe.run()
        records = list(probe.store.records.values())
    gen = config.generation_llm or config.llms[0].name
    stages, warnings = [], []

    def finished(key: str) -> bool:
        return done is not None and done.finished(key)

    for arch in config.architectures:
        todo = [q for q in queries if not finished(answer_key(arch, gen, q))]
        measured = [
            {
                "calls": r.get("llm_calls"),
                "input_tokens": r.get("input_tokens"),
                "max_output_tokens": r.get("max_output_tokens"),
            }
            for r in records
            if r.get("kind") == "answer" and r["architecture"] == arch
        ]
        stages.append(_stage(f"answer {arch}", gen, len(todo), measured, config))
    for judge_cls in active_judges(config):
        llm_name = judge_cls.llm_name(config)
        if not judge_cls.stored or not llm_name:
            continue  # no LLM, no cost
        judge = judge_cls(probe, data, judge_cls.Options(**config.judges.other.get(judge_cls.name, {})))
        candidates = judge.select(
            [
                (done.records.get(answer_key(a, gen, q)) if done else None)
                or {"key": answer_key(a, gen, q), "architecture": a, "qid": q, "llm": gen}
                for a in config.architectures
                for q in queries
            ]
        )
        todo = [a for a in candidates if not (a.get("answer") and finished(score_key(judge_cls.name, a)))]
        measured = [
            r["usage"] for r in records if r.get("kind") == "score" and r["judge"] == judge_cls.name and r.get("usage")
        ]
        stages.append(_stage(f"judge {judge_cls.name}", llm_name, len(todo), measured, config))
    warnings += _limit_notes(stages, config)
    if any(token_counter(config.llm(s.llm).model_dump()) is estimate_tokens for s in stages if s.calls):
        warnings.append("prompt tokens of hosted models are estimated (about 15 %): their tokenizers are not shipped")
    return Estimate(run_id, stages, sampled, warnings)


def _stage(name: str, llm_name: str, todo: int, measured: list[dict], config) -> Stage:
    def mean(key):
        values = [m.get(key) or 0 for m in measured]
        return sum(values) / len(values) if values else 0.0

    price = config.llm(llm_name).price()
    return Stage(
        name,
        llm_name,
        todo,
        mean("calls"),
        mean("input_tokens"),
        mean("max_output_tokens"),
        (price.input_per_mtok, price.output_per_mtok),
    )


def _limit_notes(stages: list[Stage], config) -> list[str]:
    """Daily limits the run would pass, and the least time its request and token limits allow."""
    notes = []
    for entry in config.llms:
        mine = [s for s in stages if s.llm == entry.name]
        calls = sum(s.total_calls for s in mine)
        tokens = sum(s.total_input + s.total_output for s in mine)
        if not calls:
            continue
        if entry.requests_per_day and calls > entry.requests_per_day:
            notes.append(
                f"{entry.name}: {calls:,} calls, over its {entry.requests_per_day:,.0f} requests per day: "
                "the run will stop on 429s until tomorrow; run fewer questions or split it over days"
            )
        if entry.tokens_per_day and tokens > entry.tokens_per_day:
            notes.append(f"{entry.name}: up to {tokens:,} tokens, over its {entry.tokens_per_day:,.0f} tokens per day")
        minutes = [calls / entry.requests_per_minute if entry.requests_per_minute else 0.0]
        if entry.tokens_per_minute:
            minutes.append(tokens / entry.tokens_per_minute)
        if max(minutes) >= 1:
            notes.append(f"{entry.name}: at least {max(minutes):,.0f} min at its rate limits")
    return notes
