"""What a run did, for its summary and its progress bars: failures by kind and whether the run
failed as a whole, the package versions it ran with."""

from __future__ import annotations

import platform
from collections import Counter
from importlib import metadata

from helpers.judges import score_row

VERSIONS = (
    "ragas",
    "langchain",
    "chromadb",
    "bm25s",
    "sentence-transformers",
    "llama-cpp-python",
    "torch",
    "transformers",
    "pandas",
    "scikit-learn",
    "scipy",
)


def versions() -> dict:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in VERSIONS:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    if out.get("llama-cpp-python"):
        from helpers.local_models.local_weights import llama_kernels

        out["llama.cpp kernels"] = llama_kernels() or "avx2"
    return out


def show_failures(bar, records: list[dict], llm=None) -> None:
    """The progress bar's tail: samples failed so far (and the provider's retries and 429 pauses),
    next to tqdm's rate and time left."""
    shown = {"failed": sum(bool(r.get("error")) for r in records)}
    if llm is not None:
        shown["retries"] = sum(len(c.retried) for c in llm.calls)
        shown["429 pauses"] = llm.limiter.paused
    bar.set_postfix(shown, refresh=False)


def failure_summary(answers: list[dict], score_records: list[dict], max_failure_rate: float) -> dict:
    """Whether the run as a whole failed, and its failures by kind with one example message each.
    A sample fails when its answer failed or a judge raised on it."""
    failed_keys = {a["key"] for a in answers if a.get("error")} | {
        r["answer_key"] for r in score_records if r.get("error")
    }
    by_kind: dict[str, dict] = {}
    for rec in [a for a in answers if a.get("error")] + [r for r in score_records if r.get("error")]:
        entry = by_kind.setdefault(rec.get("error_kind") or "error", {"count": 0, "example": rec["error"][:300]})
        entry["count"] += 1
    pairs = Counter((a["architecture"], a["llm"]) for a in answers)
    failed_pairs = Counter((a["architecture"], a["llm"]) for a in answers if a["key"] in failed_keys)
    all_failed = [f"{arch}/{llm}" for (arch, llm), n in pairs.items() if failed_pairs[(arch, llm)] == n]
    rate = len(failed_keys) / len(answers) if answers else 0.0
    return {
        "ok": bool(answers) and not all_failed and rate <= max_failure_rate,
        "failed_samples": len(failed_keys),
        "failure_rate": round(rate, 4),
        "max_failure_rate": max_failure_rate,
        "all_failed": all_failed,
        "failures": by_kind,
    }


def at_max_tokens(answers: list[dict]) -> list[str]:
    """'architecture/qid' of each answer the model was still writing when max_tokens ran out
    (helpers.generation.answering.AnswerRecord.at_max_tokens): cut, perhaps mid-sentence, so a judge reads
    less than the model meant to say. A run's summary lists them and its log says to raise
    llms[].max_tokens."""
    return [f"{a['architecture']}/{a['qid']}" for a in answers if a.get("at_max_tokens")]


SYSTEM_METRICS = ("latency_s", "retrieval_s", "cost_usd", "output_tokens", "llm_calls")


def system_rows(answers: list[dict], *, run_id: str, dataset: str) -> list[dict]:
    """Cost and speed of each answer as score rows of the judge "system" (the Pareto view's axes)."""
    return [
        score_row(
            run_id=run_id,
            dataset=dataset,
            architecture=a["architecture"],
            llm=a["llm"],
            judge="system",
            qid=a["qid"],
            metric=metric,
            value=float(a[metric]),
        )
        for a in answers
        for metric in SYSTEM_METRICS
        if a.get(metric) is not None
    ]
