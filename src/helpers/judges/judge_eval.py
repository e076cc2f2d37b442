"""Judging the judges: our TRACe judges side by side with RAGBench's shipped baselines and the
trivial training-mean predictor, on any directory laid out as `<subset>/<split>-*.parquet`.

Metrics as in RAGBench (arXiv:2407.11005, Table 4): hallucination detection AUROC (positive class:
adherence_score == False, scored by minus the judge's adherence score; helpers.inference.classical.auroc, with a
95% percentile-bootstrap interval from helpers.inference.classical.bootstrap_ci) and RMSE of relevance,
utilization and completeness against the gold scores. Baselines (shipped columns):
ragas (faithfulness, context_relevance), trulens (groundedness, context_relevance) and gpt3.5
(gpt3_adherence, gpt3_context_relevance, gpt35_utilization); a metric a baseline has no column for
is NaN. The trivial predictor is the mean of the training data (constant, so its AUROC is 0.5).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import pandas as pd

from helpers.data import list_splits, load_ragbench, training_frame
from helpers.errors import UserError
from helpers.inference.classical import auroc, bootstrap_ci, rmse
from helpers.judges.models.evidence_model import EvidenceModel
from helpers.judges.models.trace_annotator import llm_judge_frame
from helpers.trace.scoring import to_json

# judge name -> {metric: shipped column}
BASELINES = {
    "ragas": {"adherence": "ragas_faithfulness", "relevance": "ragas_context_relevance"},
    "trulens": {"adherence": "trulens_groundedness", "relevance": "trulens_context_relevance"},
    "gpt3.5": {
        "adherence": "gpt3_adherence",
        "relevance": "gpt3_context_relevance",
        "utilization": "gpt35_utilization",
    },
}
SCORED = ("relevance", "utilization", "completeness")
GOLD = {"relevance": "relevance_score", "utilization": "utilization_score", "completeness": "completeness_score"}


def hallucination_auroc(hallucinated, adherence_score, *, n_resamples: int = 500, seed: int = 0) -> dict:
    """{"auroc", "auroc_ci95", "n"}: AUROC of detecting hallucinations (hallucinated == 1) from the
    adherence score (low = hallucinated, so -score is the detector's score), with its 95%
    percentile-bootstrap interval over rows (resamples with one class dropped); rows with a NaN
    are dropped; NaN when a class is missing."""
    y = np.asarray(hallucinated, float)
    s = -np.asarray(adherence_score, float)
    estimate, low, high = bootstrap_ci(y, s, statistic=auroc, confidence=0.95, n_resamples=n_resamples, seed=seed)
    return {"auroc": estimate, "auroc_ci95": [low, high], "n": int((~(np.isnan(y) | np.isnan(s))).sum())}


def score_predictions(frame: pd.DataFrame, predictions: dict[str, np.ndarray]) -> dict:
    """Metrics of one judge on one subset. `predictions`: metric -> array (may lack metrics)."""
    hallucinated = 1.0 - frame["adherence_score"].astype(float).to_numpy()
    out = {}
    if "adherence" in predictions:
        out.update(hallucination_auroc(hallucinated, predictions["adherence"]))
    else:
        out.update({"auroc": math.nan, "auroc_ci95": [math.nan, math.nan]})
    for metric in SCORED:
        out[f"rmse_{metric}"] = rmse(predictions[metric], frame[GOLD[metric]]) if metric in predictions else math.nan
    scored = predictions.get("relevance", predictions.get("adherence"))
    out["n_scored"] = int(np.sum(~np.isnan(np.asarray(scored, float)))) if scored is not None else 0
    return out


OUR_JUDGES = ("offline", "lexical", "evidence", "stacked", "llm")


def _judge_predictions(name: str, frame: pd.DataFrame, offline_judges: dict, llm_config) -> tuple[dict, list]:
    """(metric -> predictions, failure reasons) of one of our judges."""
    if name in offline_judges:
        judgements = offline_judges[name].judge_frame(frame)
        scores = [j.scores for j in judgements]
    elif name == "llm":
        judgements = llm_judge_frame(frame, llm_config)
        scores = [j.scores for j in judgements]
    else:
        raise ValueError(f"unknown judge {name!r}; valid: {', '.join(OUR_JUDGES)}")
    preds = {m: np.array([getattr(s, m) for s in scores], float) for m in SCORED}
    preds["adherence"] = np.array([s.adherence_score for s in scores], float)
    failures = [s.error for s in scores if s.error]
    return preds, failures


def _offline_judges(judges: list[str], judge_path, evidence_path) -> dict:
    """name -> OfflineJudge for the offline judges asked for; one evidence model loaded once."""
    from helpers.judges.models.trace_trees import OfflineJudge  # sklearn: loaded only when this runs

    names = [j for j in judges if j in ("offline", "lexical", "evidence", "stacked")]
    if not names:
        return {}
    needs = any(j in ("evidence", "stacked") for j in names)  # loading raises, saying how to train it
    evidence = EvidenceModel.load(evidence_path) if evidence_path or needs or EvidenceModel.exists() else None
    lexical = OfflineJudge.load(judge_path, evidence=None)
    uses = {
        "offline": "stacked" if evidence is not None else "lexical",
        "lexical": "lexical",
        "evidence": "evidence",
        "stacked": "stacked",
    }
    return {
        name: OfflineJudge(
            lexical.sentence_models,
            lexical.example_models,
            lexical.meta,
            evidence if uses[name] != "lexical" else None,
            uses[name],
            lexical.path,
        )
        for name in names
    }


def training_means(ragbench_dir=None, offline_judge=None) -> dict:
    """The trivial predictor: the offline judge's training means, else the non-test splits'."""
    if offline_judge is not None and "training_means" in offline_judge.meta:
        return offline_judge.meta["training_means"]

    try:
        frame = training_frame(ragbench_dir)
    except Exception as exc:  # noqa: BLE001 - said, then the shipped data instead
        logging.getLogger(__name__).warning(
            "training means: %s could not be read (%s: %s); the shipped RAGBench data's instead",
            ragbench_dir,
            type(exc).__name__,
            exc,
        )
        frame = training_frame(None)
    return {m: float(frame[GOLD[m]].mean()) for m in SCORED} | {
        "adherence": float(frame["adherence_score"].astype(float).mean())
    }


def judge_eval(
    ragbench_dir=None,
    split: str = "test",
    judges=("offline",),
    llm_config: dict | None = None,
    limit: int | None = None,
    judge_path: str | Path | None = None,
    evidence_path: str | Path | None = None,
) -> dict:
    """Per subset: AUROC and RMSEs of our judges, the shipped baselines and the trivial predictor.
    Judges: offline (stacked when an evidence model is trained, else lexical), lexical, evidence
    (the evidence model's adherence alone), stacked, llm."""
    judges = [j.strip() for j in (judges.split(",") if isinstance(judges, str) else judges) if j.strip()]
    unknown = sorted(set(judges) - set(OUR_JUDGES))
    if unknown:
        raise UserError(f"unknown judge(s) {', '.join(unknown)}; valid: {', '.join(OUR_JUDGES)}")
    offline_judges = _offline_judges(judges, judge_path, evidence_path)
    first = next(iter(offline_judges.values()), None)
    means = training_means(ragbench_dir, first)
    result = {
        "split": split,
        "ragbench_dir": str(ragbench_dir or "default"),
        "judges": judges,
        "artefacts": {name: j.describe() for name, j in offline_judges.items()},
        "baselines": list(BASELINES),
        "trivial_means": means,
        "limit": limit,
        "subsets": {},
    }
    for subset, splits in list_splits(ragbench_dir).items():
        if split not in splits:
            continue
        frame = load_ragbench(subset, split, ragbench_dir)
        frame = frame.head(limit) if limit else frame
        rows = {}
        for name in judges:
            preds, failures = _judge_predictions(name, frame, offline_judges, llm_config)
            rows[name] = score_predictions(frame, preds) | {"n_failed": len(failures), "failures": failures[:5]}
        for name, columns in BASELINES.items():
            preds = {m: frame[c].astype(float).to_numpy() for m, c in columns.items()}
            rows[name] = score_predictions(frame, preds)
        trivial = {m: np.full(len(frame), means[m]) for m in SCORED} | {"adherence": np.full(len(frame), 0.5)}
        rows["trivial"] = score_predictions(frame, trivial)
        result["subsets"][subset] = {
            "n": len(frame),
            "n_hallucinated": int((~frame["adherence_score"].astype(bool)).sum()),
            "judges": rows,
        }
    return result


def result_frame(result: dict) -> pd.DataFrame:
    """One row per (subset, judge): auroc, rmse_relevance, rmse_utilization, rmse_completeness."""
    rows = []
    for subset, block in result["subsets"].items():
        for judge, metrics in block["judges"].items():
            rows.append(
                {
                    "subset": subset,
                    "judge": judge,
                    "n": block["n"],
                    "n_hallucinated": block["n_hallucinated"],
                    **{
                        k: metrics.get(k, math.nan)
                        for k in ("auroc", "rmse_relevance", "rmse_utilization", "rmse_completeness")
                    },
                }
            )
    return pd.DataFrame(rows)


def format_table(result: dict) -> str:
    """Plain-text table, subsets by judge; '—' where a judge has no score for a metric."""
    frame = result_frame(result)
    if frame.empty:
        return f"(no subset has a '{result['split']}' split)"
    lines = [f"judge {name}: {text}" for name, text in result.get("artefacts", {}).items()]
    lines += [
        f"split: {result['split']}   AUROC: hallucination detection (higher is better); RMSE vs gold (lower is better)",
        f"{'subset':12s} {'judge':9s} {'n':>5s} {'halluc':>6s} {'AUROC':>7s} {'RMSE rel':>9s} "
        f"{'RMSE util':>9s} {'RMSE comp':>9s}",
    ]
    fmt = lambda v: "      —" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:7.3f}"
    for _, r in frame.iterrows():
        lines.append(
            f"{r.subset:12s} {r.judge:9s} {r.n:5d} {r.n_hallucinated:6d} {fmt(r.auroc)} "
            f"  {fmt(r.rmse_relevance)}   {fmt(r.rmse_utilization)}   {fmt(r.rmse_completeness)}"
        )
    return "\n".join(lines)


def save_result(result: dict, path: str | Path) -> str:
    return to_json(result, path)
