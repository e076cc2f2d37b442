"""The offline TRACe judge: small gradient-boosted trees over language-agnostic lexical features
(`trace_features.py`, per example `trace_examples.py`), trained on RAGBench's non-test data only
(every validation split + every train split), deterministic, CPU-only, a few MB.

Two stages (stacked generalisation, Wolpert 1992):
1. sentence models: P(relevant) and P(utilized) per document sentence, P(supported) per response
   sentence (labels: RAGBench's gold keys);
2. example models: relevance, utilization and completeness (regression) and P(adherent)
   (classification) from the example's pooled features and the stage-1 probabilities, which are
   predicted out-of-fold during training so stage 2 learns from honest inputs.
Per-sentence predictions come from stage 1, the four TRACe scores from stage 2. P(supported) is
the mean of trees and a logistic regression (more robust across subsets in leave-one-subset-out
validation); the adherence score is the mean of stage 2's P(adherent) and min P(supported).

Stacked with the evidence model (`evidence.py`, a trained cross-encoder) when one is given or,
with `load(evidence="auto")`, trained: each response sentence's P(supported) is (1 - w) x the
lexical one + w x the neural one, and the adherence score (1 - w) x the lexical score + w x the
lowest neural P(supported), w chosen on held-out data (`evidence_training.fit_stack_weight`, in the
model's card; 1/2 without). `use="evidence"` takes the neural signal alone (to measure each part).

    from helpers.judges.models.trace_trees import OfflineJudge, train_judge
    info = train_judge()                          # -> {'train_s', 'artefact_bytes', 'path', ...}
    judge = OfflineJudge.load()
    out = judge.judge(question, ["doc text", ...], "response text")
    out.scores.relevance, out.document_predictions, out.response_predictions
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from helpers import paths
from helpers.artefacts import read_artefact, write_artefact
from helpers.data import training_frame
from helpers.errors import UserError
from helpers.judges.models.evidence_model import EvidenceModel
from helpers.judges.models.trace_examples import Example, featurise, featurise_frame
from helpers.judges.models.trace_features import DOC_FEATURES, RESPONSE_FEATURES
from helpers.trace.scoring import TraceScores
from helpers.trace.sentence_keys import as_documents_sentences, as_response_sentences

FORMAT_VERSION = 2
DEFAULT_PATH = paths.MODELS_DIR / "offline_judge.skops"
RETRAIN = "python -m helpers train-judge"
N_OOF_FOLDS = 3
# Tree settings chosen by leave-one-subset-out and in-subset 2-fold CV on the validation splits.
SENTENCE_TREES = dict(
    max_iter=100, learning_rate=0.1, max_leaf_nodes=31, min_samples_leaf=40, l2_regularization=1.0, early_stopping=False
)
EXAMPLE_TREES = dict(
    max_iter=150,
    learning_rate=0.05,
    max_leaf_nodes=15,
    min_samples_leaf=30,
    l2_regularization=1.0,
    early_stopping=False,
)


@dataclass
class Judgement:
    scores: TraceScores
    document_predictions: list[dict] = field(default_factory=list)  # key, sentence, p_relevant, p_utilized
    response_predictions: list[dict] = field(default_factory=list)  # key, sentence, p_supported

    def keys(self, threshold: float = 0.5) -> dict:
        """Predicted key lists, RAGBench's column names."""
        return {
            "all_relevant_sentence_keys": [d["key"] for d in self.document_predictions if d["p_relevant"] >= threshold],
            "all_utilized_sentence_keys": [d["key"] for d in self.document_predictions if d["p_utilized"] >= threshold],
            "unsupported_response_sentence_keys": [
                r["key"] for r in self.response_predictions if r["p_supported"] < threshold
            ],
        }


def _pooled(example: Example) -> np.ndarray:
    """Example-level pooling of the sentence features (mean, max, 75th percentile; response: mean, min, max)."""
    doc = example.doc_x if len(example.doc_x) else np.zeros((1, len(DOC_FEATURES)))
    resp = example.resp_x if len(example.resp_x) else np.zeros((1, len(RESPONSE_FEATURES)))
    return np.concatenate(
        [doc.mean(0), doc.max(0), np.quantile(doc, 0.75, axis=0), resp.mean(0), resp.min(0), resp.max(0)]
    )


def _summary(p_rel, p_util, p_sup) -> np.ndarray:
    """Stage-1 probabilities summarised per example (the stage-2 inputs next to the pooled features)."""
    p_sup = p_sup if len(p_sup) else np.ones(1)
    p_rel = p_rel if len(p_rel) else np.zeros(1)
    p_util = p_util if len(p_util) else np.zeros(1)
    expected_completeness = (p_rel * p_util).sum() / max(p_rel.sum(), 1e-9)
    return np.array(
        [
            p_rel.mean(),
            p_util.mean(),
            expected_completeness,
            p_sup.min(),
            p_sup.mean(),
            np.prod(p_sup),
            p_rel.max(),
            p_util.max(),
            np.quantile(p_rel, 0.75),
            np.quantile(p_util, 0.75),
        ]
    )


USES = ("lexical", "evidence", "stacked")


class OfflineJudge:
    def __init__(
        self,
        sentence_models: dict,
        example_models: dict,
        meta: dict,
        evidence=None,
        use: str | None = None,
        path: Path | None = None,
    ):
        self.sentence_models = sentence_models
        self.example_models = example_models
        self.meta = meta
        self.evidence, self.path = evidence, path
        self.use = use or ("stacked" if evidence is not None else "lexical")
        if self.use not in USES:
            raise UserError(f"offline judge use {self.use!r}; valid: {', '.join(USES)}")
        # the neural part's weight in the stack: chosen on held-out data at training (the card), else 1/2
        self.stack_weight = float((getattr(evidence, "card", None) or {}).get("stacking", {}).get("weight", 0.5))
        if self.use != "lexical" and evidence is None:
            raise UserError(f"offline judge use {self.use!r} needs a trained evidence model: run `make evidence-model`")

    def describe(self) -> str:
        """Which artefacts judge: printed by judge-eval and kept in run summaries."""
        text = f"{self.use}: lexical judge {self.path or '(in memory)'}"
        if self.evidence is not None and self.use != "lexical":
            card = self.evidence.card
            text += (
                f" + evidence model {self.evidence.path} (trained {card.get('trained_at', '?')}, "
                f"data {card.get('data_sha256', {}).get('support', '?')}"
                + (f", weight {self.stack_weight:g})" if self.use == "stacked" else ")")
            )
        return text

    # ---- persistence
    def save(self, path: str | Path | None = None) -> Path:
        path = Path(path or DEFAULT_PATH)
        write_artefact(
            {
                "format_version": FORMAT_VERSION,
                "sentence_models": self.sentence_models,
                "example_models": self.example_models,
                "meta": self.meta,
            },
            path,
            card={"what": "offline TRACe judge", "format_version": FORMAT_VERSION, **self.meta},
        )
        return path

    @classmethod
    def load(cls, path: str | Path | None = None, evidence="auto", use: str | None = None) -> "OfflineJudge":
        """`evidence`: "auto" (the trained evidence model under data/models/evidence/ if there is
        one), None (lexical only), or an evidence-model folder."""
        path = Path(path or DEFAULT_PATH)
        blob = read_artefact(path, what="trained judge", retrain=RETRAIN)
        if blob.get("format_version") != FORMAT_VERSION:
            raise ValueError(
                f"{path}: judge format {blob.get('format_version')}, expected "
                f"{FORMAT_VERSION}; retrain with `python -m helpers train-judge`"
            )
        if evidence == "auto":
            evidence = EvidenceModel.load() if EvidenceModel.exists() and use != "lexical" else None
        elif evidence is not None and not isinstance(evidence, EvidenceModel):
            evidence = EvidenceModel.load(evidence)
        return cls(blob["sentence_models"], blob["example_models"], blob["meta"], evidence, use, path)

    # ---- prediction (batched over examples: one predict call per model)
    def _sentence_probabilities_many(self, examples: list[Example]):
        models = self.sentence_models

        def batched(attr, predict):
            sizes = [len(getattr(e, attr)) for e in examples]
            if not sum(sizes):
                return [np.zeros(0) for _ in examples]
            p = predict(np.vstack([getattr(e, attr) for e in examples if len(getattr(e, attr))]))
            return np.split(p, np.cumsum(sizes)[:-1])

        p_rel = batched("doc_x", lambda x: models["relevant"].predict_proba(x)[:, 1])
        p_util = batched("doc_x", lambda x: models["utilized"].predict_proba(x)[:, 1])
        p_sup = batched(
            "resp_x",
            lambda x: (
                (models["supported"].predict_proba(x)[:, 1] + models["supported_linear"].predict_proba(x)[:, 1]) / 2
            ),
        )
        return list(zip(p_rel, p_util, p_sup))

    def _sentence_probabilities(self, example: Example):
        return self._sentence_probabilities_many([example])[0]

    def _scores_many(self, examples: list[Example], probabilities, neural=None) -> list[TraceScores]:
        scores: list[TraceScores | None] = [None] * len(examples)
        rows = [i for i, e in enumerate(examples) if len(e.doc_x)]
        if rows:
            x = np.vstack([np.concatenate([_pooled(examples[i]), _summary(*probabilities[i])]) for i in rows])
            models = self.example_models
            rel, util, comp = (
                np.clip(models[m].predict(x), 0, 1) for m in ("relevance", "utilization", "completeness")
            )
            p_adherent = models["adherence"].predict_proba(x)[:, 1]
            for r, i in enumerate(rows):
                p_sup = probabilities[i][2]
                score = (float(p_adherent[r]) + (float(p_sup.min()) if len(p_sup) else 1.0)) / 2
                if neural is not None:
                    lowest = float(neural[i].min()) if len(neural[i]) else 1.0
                    w = 1.0 if self.use == "evidence" else self.stack_weight
                    score = (1 - w) * score + w * lowest
                scores[i] = TraceScores(float(rel[r]), float(util[r]), float(comp[r]), float(score >= 0.5), score)
        return [s or TraceScores.failed("no document sentences") for s in scores]

    def judge_many(self, items) -> list[Judgement]:
        """Judge (question, documents, response) triples in one batch."""
        keyed = [(q, as_documents_sentences(d), as_response_sentences(r)) for q, d, r in items]
        examples = [featurise(q, d, r) for q, d, r in keyed]
        neural = (
            self.evidence.response_support_many(keyed) if self.evidence is not None and self.use != "lexical" else None
        )
        with threadpool_limits(1):
            probabilities = self._sentence_probabilities_many(examples)
            scores = self._scores_many(examples, probabilities, neural)
        if neural is not None:  # per-sentence support as the scores use it
            w = 1.0 if self.use == "evidence" else self.stack_weight
            probabilities = [(a, b, (1 - w) * c + w * n) for (a, b, c), n in zip(probabilities, neural)]
        out = []
        for (_, docs, resp), example, (p_rel, p_util, p_sup), score in zip(keyed, examples, probabilities, scores):
            doc_sentences = [s for doc in docs for _, s in doc]
            out.append(
                Judgement(
                    score,
                    [
                        {"key": k, "sentence": s, "p_relevant": float(a), "p_utilized": float(b)}
                        for k, s, a, b in zip(example.doc_keys, doc_sentences, p_rel, p_util)
                    ],
                    [{"key": k, "sentence": s, "p_supported": float(c)} for (k, s), c in zip(resp, p_sup)],
                )
            )
        return out

    def judge(self, question: str, documents, response) -> Judgement:
        """Per-sentence predictions and TRACe scores. `documents`: texts or RAGBench
        documents_sentences; `response`: text or response_sentences."""
        return self.judge_many([(question, documents, response)])[0]

    def judge_frame(self, frame: pd.DataFrame, batch_size: int = 256) -> list[Judgement]:
        items = list(zip(frame["question"], frame["documents_sentences"], frame["response_sentences"]))
        return [
            j for start in range(0, len(items), batch_size) for j in self.judge_many(items[start : start + batch_size])
        ]


# ---- training
def _fit_sentence_models(examples: list[Example], seed: int, max_iter: int | None = None) -> dict:
    def stacked(attr_x, attr_y):
        xs = [getattr(e, attr_x) for e in examples if len(getattr(e, attr_x))]
        ys = [getattr(e, attr_y) for e in examples if len(getattr(e, attr_x))]
        return np.vstack(xs), np.concatenate(ys).astype(int)

    models = {}
    for name, attr_x, attr_y in (
        ("relevant", "doc_x", "y_relevant"),
        ("utilized", "doc_x", "y_utilized"),
        ("supported", "resp_x", "y_supported"),
    ):
        x, y = stacked(attr_x, attr_y)
        trees = SENTENCE_TREES | ({"max_iter": max_iter} if max_iter else {})
        models[name] = HistGradientBoostingClassifier(random_state=seed, **trees).fit(x, y)
        if name == "supported":
            models["supported_linear"] = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=2000)).fit(
                x, y
            )
    return models


def fit_judge(
    examples: list[Example], seed: int = 0, meta: dict | None = None, max_iter: int | None = None
) -> OfflineJudge:
    """Both stages on featurised, labelled examples (stage-2 inputs predicted out-of-fold).
    `max_iter` overrides the number of boosting rounds (tests use few; None: the tuned settings)."""
    example_trees = EXAMPLE_TREES | ({"max_iter": max_iter} if max_iter else {})
    examples = [e for e in examples if len(e.doc_x)]
    folds = np.arange(len(examples)) % N_OOF_FOLDS
    summaries = np.zeros((len(examples), len(_summary(np.zeros(1), np.zeros(1), np.ones(1)))))
    with threadpool_limits(1):
        for fold in range(N_OOF_FOLDS):
            fitted = _fit_sentence_models([e for e, f in zip(examples, folds) if f != fold], seed, max_iter)
            held_out = np.flatnonzero(folds == fold)
            probabilities = OfflineJudge(fitted, {}, {})._sentence_probabilities_many([examples[i] for i in held_out])
            for i, p in zip(held_out, probabilities):
                summaries[i] = _summary(*p)
        sentence_models = _fit_sentence_models(examples, seed, max_iter)
        x = np.column_stack([np.vstack([_pooled(e) for e in examples]), summaries])
        y = np.array([e.targets for e in examples], float)
        example_models = {
            name: HistGradientBoostingRegressor(random_state=seed, **example_trees).fit(x, y[:, col])
            for col, name in enumerate(("relevance", "utilization", "completeness"))
        }
        example_models["adherence"] = HistGradientBoostingClassifier(random_state=seed, **example_trees).fit(
            x, y[:, 3].astype(int)
        )
    meta = dict(
        meta or {},
        seed=seed,
        n_examples=len(examples),
        training_means=dict(
            zip(("relevance", "utilization", "completeness", "adherence"), map(float, np.nanmean(y, axis=0)))
        ),
    )
    return OfflineJudge(sentence_models, example_models, meta)


def _fingerprint(frame: pd.DataFrame) -> str:
    ids = "|".join(f"{s}/{p}/{i}" for s, p, i in zip(frame["subset"], frame["split"], frame["id"]))
    return hashlib.sha256(ids.encode()).hexdigest()[:16]


def train_judge(
    out_path: str | Path | None = None,
    seed: int = 0,
    ragbench_dir=None,
    subsets: list[str] | None = None,
    limit: int | None = None,
    max_iter: int | None = None,
) -> dict:
    """Train on RAGBench's non-test splits and save the artefact (default data/models/offline_judge.skops).
    Returns training time (s), artefact size (bytes), path and data summary."""
    start = time.perf_counter()
    frame = training_frame(ragbench_dir, subsets, limit)
    examples = featurise_frame(frame)
    featurise_s = time.perf_counter() - start
    splits = sorted({f"{s}/{p}" for s, p in zip(frame["subset"], frame["split"])})
    judge = fit_judge(
        examples, seed, meta={"trained_on": splits, "data_fingerprint": _fingerprint(frame)}, max_iter=max_iter
    )
    path = judge.save(out_path)
    return {
        "path": str(path),
        "train_s": round(time.perf_counter() - start, 1),
        "featurise_s": round(featurise_s, 1),
        "artefact_bytes": path.stat().st_size,
        "n_examples": len(examples),
        "trained_on": splits,
        "seed": seed,
    }
