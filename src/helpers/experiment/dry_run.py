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
from helpers.llm.limits import RateLimiter
from helpers.llm.responder import SchemaResponder, estimate_tokens
from helpers.local_models.local_weights import resolve_local_model

DEFAULT_SAMPLE = 3


@dataclass
class Stage:
    stage: str  # "answer <architecture>" or "judge <name>"
    llm: str
    samples: int  # still to do
    per_sample: dict  # measured on the sample: requests, input_tokens, output_tokens, max_output_tokens
    price: tuple[float, float]  # USD per million tokens, input and output

    def total(self, key: str) -> int:
        return math.ceil(self.samples * self.per_sample.get(key, 0.0))

    def cost(self, output: str) -> float:
        """USD with `output` tokens: "output_tokens" (expected) or "max_output_tokens" (at most)."""
        return (self.total("input_tokens") * self.price[0] + self.total(output) * self.price[1]) / 1e6


@dataclass
class Estimate:
    run_id: str
    stages: list[Stage]
    sampled: list[str]  # the qids whose prompts were built
    warnings: list[str] = field(default_factory=list)

    def totals(self) -> dict:
        keys = ("requests", "input_tokens", "output_tokens", "max_output_tokens")
        return {key: sum(s.total(key) for s in self.stages) for key in keys} | {
            "cost_usd": round(sum(s.cost("output_tokens") for s in self.stages), 4),
            "max_cost_usd": round(sum(s.cost("max_output_tokens") for s in self.stages), 4),
        }

    def format(self) -> str:
        head = ("stage", "llm", "samples", "requests", "tokens in", "out", "out, at most", "USD", "USD, at most")
        rows: list[tuple[object, ...]] = [
            (s.stage, s.llm, s.samples, s.total("requests"), s.total("input_tokens"), s.total("output_tokens"),
             s.total("max_output_tokens"), s.cost("output_tokens"), s.cost("max_output_tokens"))
            for s in self.stages
        ]  # fmt: skip
        t = self.totals()
        rows.append(("total", "", "", t["requests"], t["input_tokens"], t["output_tokens"], t["max_output_tokens"],
                     t["cost_usd"], t["max_cost_usd"]))  # fmt: skip

        def cells(row):
            return [f"{v:,.4f}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) else v for v in row]

        table = [head, *map(cells, rows)]
        widths = [max(len(str(c)) for c in column) for column in zip(*table)]
        lines = [
            f"dry run of {self.run_id}: prompts built for {len(self.sampled)} question(s) "
            f"({', '.join(self.sampled[:5])}), no provider called; 'out' as the stand-in answered "
            "(a guess), 'at most' with every answer at max_tokens"
        ]
        for row in table:
            lines.append(
                "  ".join(str(c).ljust(w) if i < 2 else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
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


def missing_keys(config: ExperimentConfig) -> list[str]:
    """One line per LLM the run calls (the generator, the LLM judges') whose provider needs an API
    key that is not set (environment, a panel's key field, the project's .env): found before any call."""
    from helpers.llm.backends import missing_key

    used = {config.generation_llm or config.llms[0].name} if config.generate else set()
    used |= {name for judge in active_judges(config) if (name := judge.llm_name(config))}
    return [f"llm '{llm.name}': {why}" for llm in config.llms if llm.name in used and (why := missing_key(llm))]


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
    stages: list = []
    warnings: list = []

    def finished(key: str) -> bool:
        return done is not None and done.finished(key)

    for arch in config.architectures:
        todo = [q for q in queries if not finished(answer_key(arch, gen, q))]
        measured = [r for r in records if r.get("kind") == "answer" and r["architecture"] == arch]
        stages.append(_stage(f"answer {arch}", gen, len(todo), measured, config))
    for judge_cls in active_judges(config):
        llm_name = judge_cls.llm_name(config)
        if not judge_cls.stored or not llm_name:
            continue  # no LLM, no cost
        judge = judge_cls(config.judges.options(judge_cls.name), context=probe.judge_context(data))
        candidates = [
            (done.records.get(answer_key(a, gen, q)) if done else None)
            or {"key": answer_key(a, gen, q), "architecture": a, "qid": q, "llm": gen}
            for a in config.architectures
            for q in queries
        ]
        candidates = [a for a, sample in zip(candidates, probe.samples(candidates, data)) if judge.wants(sample)]
        unscored = [a for a in candidates if not (a.get("answer") and finished(score_key(judge_cls.name, a)))]
        measured = [
            r["usage"] for r in records if r.get("kind") == "score" and r["judge"] == judge_cls.name and r.get("usage")
        ]
        stages.append(_stage(f"judge {judge_cls.name}", llm_name, len(unscored), measured, config))
    warnings = [f"{why}: the run would stop before its first call" for why in missing_keys(config)] + warnings
    warnings += _limit_notes(stages, config)
    if any(token_counter(config.llm(s.llm).model_dump()) is estimate_tokens for s in stages if s.per_sample):
        warnings.append("prompt tokens of hosted models are estimated (about 15 %): their tokenizers are not shipped")
    return Estimate(run_id, stages, sampled, warnings)


def _stage(name: str, llm_name: str, todo: int, measured: list[dict], config) -> Stage:
    """`measured`: the probe's answer records (llm_requests, ...) or judges' usage (requests, ...)."""
    keys = {"requests": ("llm_requests", "requests"), "input_tokens": ("input_tokens",)}
    keys |= {"output_tokens": ("output_tokens",), "max_output_tokens": ("max_output_tokens",)}
    per_sample = {
        key: sum(next((m[n] for n in names if m.get(n) is not None), 0) for m in measured) / len(measured)
        for key, names in keys.items()
    } if measured else {}  # fmt: skip
    price = config.llm(llm_name).price()
    return Stage(name, llm_name, todo, per_sample, (price.input_per_mtok, price.output_per_mtok))


def _limit_notes(stages: list[Stage], config) -> list[str]:
    """Daily limits the run would pass, and the least time its request and token limits allow."""
    notes = []
    for entry in config.llms:
        mine = [s for s in stages if s.llm == entry.name]
        calls = sum(s.total("requests") for s in mine)
        tokens = sum(s.total("input_tokens") + s.total("max_output_tokens") for s in mine)
        if not calls:
            continue
        if entry.requests_per_day and calls > entry.requests_per_day:
            notes.append(
                f"{entry.name}: {calls:,} calls, over its {entry.requests_per_day:,.0f} requests per day: "
                "the run will stop on 429s until tomorrow; run fewer questions or split it over days"
            )
        if entry.tokens_per_day and tokens > entry.tokens_per_day:
            notes.append(f"{entry.name}: up to {tokens:,} tokens, over its {entry.tokens_per_day:,.0f} tokens per day")
        by_requests = calls / entry.requests_per_minute if entry.requests_per_minute else 0.0
        # the provider counts what is really generated; the client books max_tokens until it knows
        expected = sum(s.total("input_tokens") + s.total("output_tokens") for s in mine)
        low = max(by_requests, expected / entry.tokens_per_minute if entry.tokens_per_minute else 0.0)
        high = max(by_requests, tokens / entry.tokens_per_minute if entry.tokens_per_minute else 0.0)
        if high >= 1:
            span = f"{low:,.0f}" if round(low) == round(high) else f"{low:,.0f}-{high:,.0f}"
            notes.append(f"{entry.name}: {span} min at its rate limits (the more when every answer runs to max_tokens)")
    return notes
