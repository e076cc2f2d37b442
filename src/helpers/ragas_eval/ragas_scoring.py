"""Score answers with ragas, one (sample, metric) at a time, recording a reason for every value.

    judge = RagasJudge(LLM({...}), language="es")
    result = judge.score(samples_from_records(records, ds.answers))
    result.rows            # long format: qid, metric, value, reason, error_kind, judge_calls, seconds, detail
    result.nan_counts()    # {metric: NaN count}

A sample whose metric cannot be computed gets NaN and the reason (parse failure, timeout, refusal,
failed LLM call, nothing to judge); the run goes on. Every judge call goes through the LLM layer
(cache, rate limits, retries, accounting): `result.totals` is its accounting for this run.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import logging
import math
import re
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pandas as pd
from pydantic import ValidationError
from ragas.prompt.utils import extract_json

from helpers.data.contracts import Sample
from helpers.languages import FALLBACK, get_language, prompt_languages
from helpers.llm import LLM, LLMError
from helpers.ragas_eval.adapters import (
    TRACE,
    Trace,
    UnparsedOutput,
    WorkbenchEmbeddings,
    WorkbenchRagasLLM,
    default_embedder,
)
from helpers.ragas_eval.prompts import METRIC_NAMES, build_metrics

if TYPE_CHECKING:
    from ragas.metrics.collections.base import BaseMetric

log = logging.getLogger(__name__)

NEEDS = {
    "faithfulness": ("answer", "contexts"),
    "answer_relevancy": ("answer",),
    "context_precision": ("contexts", "reference"),
    "context_recall": ("contexts", "reference"),
    "answer_correctness": ("answer", "reference"),
}
# a judge that refuses, in any language with texts of its own (helpers.languages `judge_refusal`),
# English's first as it was written (any order matches the same outputs)
_REFUSAL = re.compile(
    r"\b("
    + "|".join(
        get_language(code).judge_refusal for code in sorted(prompt_languages(), key=lambda code: code != FALLBACK)
    )
    + ")",
    re.I,
)


@functools.cache
def _fields(metric_class: type[BaseMetric]) -> frozenset[str]:
    """The sample fields a ragas metric reads: the parameters of its `ascore`."""
    return frozenset(inspect.signature(metric_class.ascore).parameters)


def metric_inputs(
    metric: BaseMetric, question: str, answer: str | None, contexts: Sequence[str], reference: str | None
) -> dict:
    """The keyword arguments of `metric.ascore` for one sample, in ragas's field names: each ragas
    metric names the fields it reads in its signature."""
    fields = {"user_input": question, "response": answer, "retrieved_contexts": list(contexts), "reference": reference}
    return {k: v for k, v in fields.items() if k in _fields(type(metric))}


def samples_from_records(records, references: dict[str, str] | None = None) -> list[Sample]:
    """RAGAS samples from `helpers.generation.answering.AnswerRecord`s: the contexts exactly as prompted."""
    references = references or {}
    return [Sample(r.qid, r.question, r.answer, r.context_texts, references.get(r.qid), r.error) for r in records]


@dataclass
class RagasResult:
    rows: pd.DataFrame
    totals: dict = field(default_factory=dict)
    wall_s: float = 0.0

    def nan_counts(self) -> dict[str, int]:
        return {m: int(g["value"].isna().sum()) for m, g in self.rows.groupby("metric", sort=False)}

    def summary(self) -> pd.DataFrame:
        """Per metric: mean over computed values, n, NaN count and rate, NaN kinds."""
        out = []
        for metric, g in self.rows.groupby("metric", sort=False):
            kinds = g.loc[g["value"].isna(), "error_kind"].value_counts().to_dict()
            out.append(
                {
                    "metric": metric,
                    "mean": g["value"].mean(),
                    "n": len(g),
                    "nan": int(g["value"].isna().sum()),
                    "nan_rate": float(g["value"].isna().mean()),
                    "nan_kinds": kinds,
                    "seconds": round(float(g["seconds"].sum()), 1),
                }
            )
        return pd.DataFrame(out)

    def wide(self) -> pd.DataFrame:
        return self.rows.pivot(index="qid", columns="metric", values="value")


def _unparsed(texts: list[str]) -> list[str]:
    """The judge outputs that hold no JSON value at all."""
    out = []
    for text in texts:
        try:
            json.loads(extract_json(text))
        except (ValueError, TypeError):
            out.append(text)
    return out


def classify_failure(exc: BaseException, texts: list[str]) -> tuple[str, str]:
    """(error kind, reason) for an exception raised while scoring; `texts` are the judge's raw
    outputs for this (sample, metric), repair attempts included."""
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return "timeout", "timeout: the judge did not finish in time"
    if isinstance(exc, (UnparsedOutput, ValidationError, json.JSONDecodeError)):
        bad = _unparsed(texts) or [t for t in texts if t] or [""]
        refusal = next((t for t in bad if _REFUSAL.search(t)), None)
        if refusal is not None:
            return "refusal", f"refusal: {refusal[:200]!r}"
        return "parse", f"parse failure: judge output was not the expected JSON: {bad[0][:200]!r}"
    if isinstance(exc, LLMError):
        return f"llm_{getattr(exc, 'kind', None) or 'error'}", f"LLM call failed: {str(exc)[:300]}"
    return "error", f"{type(exc).__name__}: {str(exc)[:300]}"


def _nan_reason(metric: str) -> tuple[str, str]:
    return "empty", {
        "faithfulness": "no statements could be extracted from the answer",
        "answer_relevancy": "the judge generated only empty questions",
        "context_recall": "the judge classified no reference statements",
        "context_precision": "no verdicts",
        "answer_correctness": "the judge classified no statements",
    }[metric]


def explain(metric: str, outputs: list[tuple[str, dict]]) -> str:
    """The judge's reasons behind a score, in a few lines."""

    def mark(v):
        return "✓" if v else "✗"

    if metric == "faithfulness":
        verdicts = [s for role, o in outputs if role == "verdicts" for s in o["statements"]]
        ok = sum(bool(s["verdict"]) for s in verdicts)
        return f"{ok}/{len(verdicts)} statements supported. " + " ".join(
            f"{mark(s['verdict'])} {s['statement']!r}: {s['reason']}" for s in verdicts
        )
    if metric == "answer_relevancy":
        qs = [o for role, o in outputs if role == "question"]
        return "questions generated from the answer: " + " | ".join(
            f"{o['question']!r}" + (" (noncommittal)" if o["noncommittal"] else "") for o in qs
        )
    if metric == "context_precision":
        vs = [o for role, o in outputs if role == "context_verdict"]
        return f"verdicts by rank {[int(bool(o['verdict'])) for o in vs]}. " + " ".join(
            f"[{i}] {mark(o['verdict'])} {o['reason']}" for i, o in enumerate(vs, 1)
        )
    if metric == "answer_correctness":
        classes: dict = next((o for role, o in outputs if role == "correctness"), {"TP": [], "FP": [], "FN": []})
        counts = ", ".join(f"{len(classes[k])} {k}" for k in ("TP", "FP", "FN"))
        return f"answer vs reference statements: {counts} (0.75 F1 + 0.25 similarity). " + " ".join(
            f"{k}: {s['statement']!r}: {s['reason']}" for k in ("FP", "FN") for s in classes[k]
        )
    cls = [c for role, o in outputs if role == "classifications" for c in o["classifications"]]
    ok = sum(bool(c["attributed"]) for c in cls)
    return f"{ok}/{len(cls)} reference statements attributed. " + " ".join(
        f"{mark(c['attributed'])} {c['statement']!r}: {c['reason']}" for c in cls
    )


class RagasJudge:
    """The four ragas metrics with a workbench judge.

    judge: an `LLM` or any LangChain chat model (through `adapters.WorkbenchRagasLLM`).
    embedder: a workbench embedder for answer relevancy and correctness (default: the cached
      bundled one for the language). language: "es" adjusts the prompts for Spanish (see `prompts`).
    strictness: questions generated per answer for answer relevancy (ragas default 3), drawn as
      independent samples (one request for all where the LLM's `n_per_request` allows).
      timeout_s: per (sample, metric). parse_retries: repair calls after an unparseable output.
      concurrency: (sample, metric) pairs scored at once (default: the LLM's `workers`, i.e. 1 for
      the local model and the provider's concurrency otherwise; 1 for a LangChain chat model)."""

    def __init__(
        self,
        judge,
        embedder=None,
        *,
        language: str = "en",
        metrics=METRIC_NAMES,
        strictness: int = 3,
        timeout_s: float = 180,
        max_tokens: int | None = None,
        parse_retries: int = 1,
        concurrency: int | None = None,
    ):
        self.judge, self.language, self.timeout_s = judge, language, timeout_s
        self.llm = WorkbenchRagasLLM(judge, max_tokens=max_tokens, parse_retries=parse_retries)
        embeddings = None
        if {"answer_relevancy", "answer_correctness"} & set(metrics):
            embeddings = WorkbenchEmbeddings(embedder if embedder is not None else default_embedder(language))
        self.metrics = build_metrics(
            metrics, llm=self.llm, embeddings=embeddings, language=language, strictness=strictness
        )
        if concurrency is None:
            concurrency = judge.workers if isinstance(judge, LLM) else 1  # LLM.workers: the one rule
        self.concurrency = max(1, concurrency)

    async def _score_one(self, sample: Sample, name: str, gate: asyncio.Semaphore) -> dict:
        row = {
            "qid": sample.qid,
            "metric": name,
            "value": math.nan,
            "reason": "",
            "error_kind": None,
            "judge_calls": 0,
            "seconds": 0.0,
            "detail": "[]",
        }
        metric = self.metrics[name]
        needs = NEEDS[name]
        free = name == "context_precision" and not sample.reference and sample.answer
        if free:  # no reference: the reference-free variant, against the answer
            metric, needs = metric.without_reference, ("contexts", "answer")
        missing = [need for need in needs if not getattr(sample, need)]
        if missing:
            why = {
                "answer": "no answer" + (f" (generation failed: {sample.error[:200]})" if sample.error else ""),
                "contexts": "no retrieved contexts",
                "reference": "no reference answer",
            }
            row.update(error_kind="skipped", reason="not computed: " + "; ".join(why[m] for m in missing))
            return row
        async with gate:
            trace = Trace()
            TRACE.set(trace)
            wanted = metric_inputs(metric, sample.question, sample.answer, sample.contexts, sample.reference)
            start = time.perf_counter()
            try:
                value = (await asyncio.wait_for(metric.ascore(**wanted), self.timeout_s)).value
            except Exception as exc:  # every failure becomes a recorded NaN; the run goes on
                kind, reason = classify_failure(exc, trace.texts())
                row.update(error_kind=kind, reason=reason)
                log.info("ragas %s on %s: NaN (%s)", name, sample.qid, reason[:120])
            else:
                value = float(value) if value is not None else math.nan
                row["value"] = value
                if math.isnan(value):
                    row["error_kind"], row["reason"] = _nan_reason(name)
                else:
                    row["reason"] = ("reference-free (contexts judged against the answer): " if free else "") + explain(
                        name, trace.outputs
                    )
            row["seconds"] = round(time.perf_counter() - start, 3)
            row["judge_calls"] = sum(c["n"] for c in trace.calls)
            row["detail"] = json.dumps([{"role": r, **o} for r, o in trace.outputs], ensure_ascii=False)
            return row

    async def ascore(self, samples: list[Sample]) -> RagasResult:
        gate = asyncio.Semaphore(self.concurrency)
        before = len(self.judge.calls) if isinstance(self.judge, LLM) else 0
        start = time.perf_counter()
        ragas_log = logging.getLogger("ragas")
        level = ragas_log.level
        ragas_log.setLevel(logging.CRITICAL)  # its parse-failure logs: every failure is a row here
        try:
            tasks = [asyncio.ensure_future(self._score_one(s, name, gate)) for s in samples for name in self.metrics]
            rows = await asyncio.gather(*tasks)
        finally:
            ragas_log.setLevel(level)
        result = RagasResult(
            pd.DataFrame(
                rows, columns=["qid", "metric", "value", "reason", "error_kind", "judge_calls", "seconds", "detail"]
            ),
            wall_s=round(time.perf_counter() - start, 2),
        )
        if isinstance(self.judge, LLM):
            result.totals = LLM.usage(self.judge.calls[before:])
        log.info(
            "ragas: %d samples scored in %.1fs; NaN per metric %s", len(samples), result.wall_s, result.nan_counts()
        )
        return result

    async def _ascore_on_own_loop(self, samples: list[Sample]) -> RagasResult:
        """`ascore` on a loop of `score`'s own: the judge's blocking calls run in the loop's
        default executor (WorkbenchChatModel uses asyncio.to_thread), whose min(32, cores + 4)
        threads would cap the calls in flight at 6 on 2 cores, so the loop gets one thread per
        (sample, metric) that may be scored at once (asyncio.run shuts it down)."""
        workers = self.concurrency * len(self.metrics)
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(workers, thread_name_prefix="ragas"))
        return await self.ascore(samples)

    def score(self, samples: list[Sample]) -> RagasResult:
        """Synchronous; also works where an event loop is already running (Jupyter): the
        scoring then runs on its own loop in a worker thread."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._ascore_on_own_loop(samples))
        box: dict = {}

        def work():
            try:
                box["result"] = asyncio.run(self._ascore_on_own_loop(samples))
            except BaseException as exc:  # re-raised in the caller's thread
                box["error"] = exc

        thread = threading.Thread(target=work, name="ragas-scoring")
        thread.start()
        thread.join()
        if "error" in box:
            raise box["error"]
        return box["result"]
