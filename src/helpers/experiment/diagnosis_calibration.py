"""Where diagnose's cuts come from (issue 59): judge scores with labels made on many corpora, the
cuts fitted on all of them at once, and each corpus left out in turn to see how the cuts travel.

Two kinds of labelled items, one row each (`corpus`, `language`, `band`, `score`, `label`, `origin`):

    holds    context_recall's score of (reference, k contexts), labelled by whether the contexts
             hold the gold passage. Made without people from every dataset with gold passages and
             references: the gold passage beside the k - 1 BM25 passages ranked highest that are not
             gold (1), and the k highest-ranked passages that are not gold (0: hard negatives from the
             retriever). XQuAD's negatives that contain the answer's words verbatim are dropped
             (a span may recur in another paragraph: that label would be unknown).
    correct  the correctness score of (answer, reference), labelled by whether the answer says what
             the reference says: helpers.judges.models.reference_tuning's pairs (a gold-passage
             window that states the reference in the source's words; another question's passage,
             the question restated, the numbers changed), never a judge's verdict.

People's labels join both kinds where a corpus has a hand-labelled sheet (benchmarks/labels: the
obstetrics guideline's answers and MaternaQA-es's), read as `origin` "person". A fit weighs every
corpus alike (`fit_band`), so that no single corpus decides where a cut sits; `fit_cuts` is what
ships: that cut, with the range the cuts fitted with one corpus left out span as its zone
(`fit_envelope`); `leave_one_out` fits on all corpora but one and reads the one left out.
benchmarks/diagnosis_bands.py runs it all; docs/measurements/diagnosis.md has the numbers.
"""

from __future__ import annotations

import random

import numpy as np
import pandas as pd

from helpers.experiment.diagnosis_cuts import PRECISION, Band

COLUMNS = ["corpus", "language", "band", "origin", "qid", "score", "label"]
HOLDS_DATASETS: dict[str, tuple[dict, int | None]] = {  # dataset -> (loader options, questions sampled)
    "maternaqa": ({}, 150),
    "xquad-es": ({}, 150),
    "xquad-en": ({}, 150),
    "obstetrics": ({}, None),  # the default chunking, as the hand-labelled sheets' context ids
}


# the corpora of the correctness labels and their language (each item: helpers.judges.models.reference_tuning)
CORRECT_CORPORA = {"maternaqa": "es", "xquad-es": "es", "xquad-en": "en"}


def holds_items(data, *, k: int = 5, n: int | None = 150, seed: int = 0) -> list[dict]:
    """Answers (helpers.evaluate's records) whose contexts do (`label` 1) or do not (0) hold each
    sampled question's gold passage: the gold passages first, then BM25's top passages that are not
    gold, k in all; and BM25's top k that are not gold."""
    from helpers.retrieval.architectures.sparse import BM25  # bm25s: loaded only when this runs

    qids = sorted(q for q in data.queries if data.qrels.get(q) and data.answers.get(q))
    if n and n < len(qids):
        qids = sorted(random.Random(seed).sample(qids, n))
    ranked = BM25(data.language).index(data.corpus).retrieve({q: data.queries[q] for q in qids}, k=k + 10)
    text = {doc_id: doc["text"] for doc_id, doc in data.corpus.items()}
    items = []
    for qid in qids:
        gold = [d for d, grade in data.qrels[qid].items() if grade > 0]
        gold_texts = {" ".join(text[d].split()) for d in gold}
        others = [d for d in ranked[qid] if d not in gold and " ".join(text[d].split()) not in gold_texts]
        reference = data.answers[qid]
        base = {"question": data.queries[qid], "answer": "", "reference": reference}
        items.append(base | {"qid": f"{qid}+", "contexts": [text[d] for d in (gold[:k] + others)[:k]], "label": 1})
        negatives = [text[d] for d in others[:k]]
        if data.name.startswith("xquad") and any(reference in passage for passage in negatives):
            continue  # the span recurs elsewhere: whether these contexts answer it is unknown
        items.append(base | {"qid": f"{qid}-", "contexts": negatives, "label": 0})
    return items


def correct_items(dataset: str, *, seed: int = 0) -> list[dict]:
    """(answer, reference, label) pairs of `dataset` (maternaqa, xquad-es or xquad-en) from
    helpers.judges.models.reference_tuning, as answers helpers.evaluate takes."""
    from helpers.judges.models import reference_tuning
    from helpers.text import Tokenizer

    if dataset == "maternaqa":
        pairs = reference_tuning.maternaqa_pairs(Tokenizer("es"), seed=seed)
    else:
        pairs = reference_tuning.xquad_pairs(lang=dataset.rsplit("-", 1)[1], seed=seed)
    return [
        {"qid": f"pair{i}", "question": p["question"], "answer": p["answer"], "contexts": []}
        | {"reference": p["reference"], "label": p["label"]}
        for i, p in enumerate(pairs)
    ]


def scored(items: list[dict], judge: str, metric: str, *, corpus: str, language: str, band: str) -> pd.DataFrame:
    """`items` scored by `judge` (through helpers.judges.evaluate.score_answers, the path a run
    takes), one row per item in COLUMNS; an item its judge could not score is left out."""
    from helpers.judges.evaluate import score_answers

    scores = score_answers(items, [judge], language=language, log=lambda *_: None)
    values = scores[scores["metric"] == metric].set_index("id")["value"]
    frame = pd.DataFrame(
        {
            "corpus": corpus,
            "language": language,
            "band": band,
            "origin": "auto",
            "qid": [i["qid"] for i in items],
            "score": [values.get(i["qid"], np.nan) for i in items],
            "label": [bool(i["label"]) for i in items],
        }
    )
    return frame.dropna(subset=["score"])[COLUMNS]


def auto_items(*, k: int = 5, seed: int = 0) -> pd.DataFrame:
    """Every corpus's labelled items made without people, scored: holds from HOLDS_DATASETS,
    correct from MaternaQA-es and XQuAD (es, en)."""
    from helpers.data import load_dataset

    frames = []
    for name, (options, n) in HOLDS_DATASETS.items():
        data = load_dataset(name, **options)
        frames.append(
            scored(
                holds_items(data, k=k, n=n, seed=seed),
                "context_recall",
                "context_recall",
                corpus=name,
                language=data.language,
                band="holds",
            )
        )
    for name, language in CORRECT_CORPORA.items():
        frames.append(
            scored(
                correct_items(name, seed=seed),
                "correctness",
                "correctness",
                corpus=name,
                language=language,
                band="correct",
            )
        )
    return pd.concat(frames, ignore_index=True)


def person_items(wide: pd.DataFrame, labels: pd.DataFrame, *, corpus: str, language: str) -> pd.DataFrame:
    """A hand-labelled sheet's answers as items: `wide` (diagnose's answers: id, architecture,
    correctness, context_recall) joined with the person's labels (id, architecture, correct,
    reference_in_contexts). `correct`: yes against partly and no (a partly right answer is wrong, as
    in the person's verdict); `holds`: yes against no, partly left out (the person's verdict cannot
    tell a stage there either: diagnosis.person_verdicts)."""
    joined = wide.merge(labels, on=["id", "architecture"])
    frames = []
    for band, score, label in (
        ("correct", "correctness", "correct"),
        ("holds", "context_recall", "reference_in_contexts"),
    ):
        known = ("yes", "no") if band == "holds" else ("yes", "partly", "no")
        part = joined[joined[label].isin(known) & joined[score].notna()]
        frames.append(
            pd.DataFrame(
                {
                    "corpus": corpus,
                    "language": language,
                    "band": band,
                    "origin": "person",
                    "qid": part["id"] + "|" + part["architecture"],
                    "score": part[score].astype(float),
                    "label": part[label] == "yes",
                }
            )
        )
    return pd.concat(frames, ignore_index=True)[COLUMNS]


def fit_band(items: pd.DataFrame, *, precision: float = PRECISION, source: str = "calibration") -> Band:
    """The cuts of one judge on `items` (score, label, corpus), every corpus weighing the same
    (each item 1 / its corpus's count): `high`, the lowest score at and above which the weighted
    share of positives is at least `precision`; `low`, the highest at and below which the weighted
    share of negatives is. As diagnosis_cuts.band_from_labels, which is this with one corpus."""
    scores, positive = items["score"].to_numpy(float), items["label"].to_numpy(bool)
    weight = 1.0 / items.groupby("corpus")["score"].transform("size").to_numpy(float)
    if positive.all() or not positive.any():
        raise ValueError(f"{source}: the cuts need items of both kinds")
    cuts = np.unique(scores)

    def share(mask, of):
        return (weight[mask] * of[mask]).sum() / weight[mask].sum()

    high = next((t for t in cuts if share(scores >= t, positive) >= precision), np.inf)
    low = next((t for t in cuts[::-1] if share(scores <= t, ~positive) >= precision), -np.inf)
    if low >= high:
        low = high = (low + high) / 2
    return Band(float(low), float(high), source)


def fit_envelope(items: pd.DataFrame, *, precision: float = PRECISION, source: str = "calibration") -> Band:
    """The cuts and how far they move with the corpus: `fit_band` on the items of every corpus but
    one, for each corpus in turn (and on all of them); `low` the lowest of those fits' low cuts,
    `high` the highest of their high cuts. A score between them reads yes on some corpora and no on
    others: "cannot tell", not a verdict forced by where one corpus put the cut."""
    corpora = sorted(items["corpus"].unique())
    folds = [items] + ([items[items["corpus"] != c] for c in corpora] if len(corpora) > 2 else [])
    fits = [fit_band(fold, precision=precision, source=source) for fold in folds]
    return Band(min(f.low for f in fits), max(f.high for f in fits), source)


def fit_cuts(items: pd.DataFrame, *, precision: float = PRECISION, source: str = "calibration") -> Band:
    """The cuts diagnose ships: `fit_band` on every corpus, with the envelope of the fits that leave
    one corpus out as its `zone` (where a corpus unlike the others would move the cut)."""
    band = fit_band(items, precision=precision, source=source)
    envelope = fit_envelope(items, precision=precision, source=source)
    return Band(band.low, band.high, source, (envelope.low, envelope.high))


def read(band: Band, scores) -> np.ndarray:
    """1.0 yes, 0.0 no, NaN cannot tell, per score."""
    return np.array([np.nan if (v := band.read(float(s))) is None else float(v) for s in scores])


def agreement(band: Band, items: pd.DataFrame) -> dict:
    """How `band` reads `items`: n, the share it cannot tell, and on the rest Cohen's kappa and
    accuracy against the labels; widened to its zone where more than MAX_IN_ZONE of the items fall
    in it, as diagnose reads a run (diagnosis.unlike)."""
    from helpers.inference.classical import cohen_kappa

    band = band.for_scores(items["score"])  # as diagnose reads a run unlike the calibration corpora
    said = read(band, items["score"])
    decided = ~np.isnan(said)
    truth = items["label"].to_numpy(float)[decided]
    return {
        "n": len(items),
        "cannot_tell": float(1 - decided.mean()) if len(items) else float("nan"),
        "kappa": float(cohen_kappa(said[decided], truth)) if decided.sum() > 1 else float("nan"),
        "accuracy": float((said[decided] == truth).mean()) if decided.any() else float("nan"),
    }


def leave_one_out(items: pd.DataFrame, band: str, *, precision: float = PRECISION, fit=None) -> pd.DataFrame:
    """Per corpus (and per origin within it): the cuts fitted (`fit`) on every other corpus's items
    of `band`, and how they read this corpus's."""
    fit = fit or fit_cuts
    part = items[items["band"] == band]
    rows = []
    for corpus in sorted(part["corpus"].unique()):
        fitted = fit(part[part["corpus"] != corpus], precision=precision, source=f"all but {corpus}")
        for origin, mine in part[part["corpus"] == corpus].groupby("origin"):
            rows.append(
                {"band": band, "left_out": corpus, "language": mine["language"].iloc[0], "origin": origin}
                | {"low": fitted.low, "high": fitted.high}
                | agreement(fitted, mine)
            )
    return pd.DataFrame(rows)
