"""The correctness judge: its weights fitted on tuning pairs (MaternaQA-es, XQuAD-es), then checked
against the hand labels of the obstetrics answers, which the fit never sees.

    python benchmarks/correctness.py                 # fit, print WEIGHTS/THRESHOLD, validate
    python benchmarks/correctness.py --validate-only # the module's committed weights on the labels

Validation: AUROC for "correct: yes" (partly and no are the other class) over every labelled answer
and within each model, with 95 % bootstrap intervals, and Cohen's kappa of the verdict at the
threshold; each feature's AUROC alone beside the combination. Writes
results/benchmarks/correctness.json.
"""

from __future__ import annotations

import argparse
import glob
import time

import numpy as np
import pandas as pd

import _offline  # noqa: F401  (the offline defaults, before any hub library)
from helpers import paths
from helpers.data import load_dataset
from helpers.experiment.label_sheets import load_labels
from helpers.inference.classical import auroc, bootstrap_ci, cohen_kappa
from helpers.judges import context_recall
from helpers.judges.correctness import FEATURES, THRESHOLD, WEIGHTS, correctness
from helpers.judges.models.reference_match import ReferenceMatcher
from helpers.judges.models.reference_tuning import attribution_pairs, tuning_pairs

LABEL_FILES = "benchmarks/labels/obstetrics-*.csv"


def fit(features: np.ndarray, labels: np.ndarray, combine=correctness) -> tuple[tuple[float, ...], float]:
    """(bias + weights, threshold): class-balanced logistic regression (scikit-learn, C=1), and the
    cut on its probabilities with the best Cohen's kappa on the same pairs."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=1000).fit(features, labels)
    weights = (float(model.intercept_[0]), *map(float, model.coef_[0]))
    p = combine(features, weights)
    cuts = np.round(np.arange(0.05, 0.96, 0.01), 2)
    kappas = [cohen_kappa((p >= t).astype(float), labels) for t in cuts]
    return weights, float(cuts[int(np.nanargmax(kappas))])


def validate(matcher: ReferenceMatcher, weights, threshold: float) -> pd.DataFrame:
    labels = pd.concat([load_labels(path) for path in sorted(glob.glob(LABEL_FILES))], ignore_index=True)
    references = load_dataset("obstetrics").answers
    data = load_dataset("obstetrics")
    features = matcher.pair_features(
        labels["answer"].tolist(), [references[q] for q in labels["qid"]], [data.queries[q] for q in labels["qid"]]
    )
    p = correctness(features, weights)
    rows = []
    for model in [None, *labels["model"].unique()]:
        mask = np.ones(len(labels), bool) if model is None else (labels["model"] == model).to_numpy()
        correct = (labels.loc[mask, "correct"] == "yes").to_numpy(dtype=float)
        row = {"models": model or "all", "n": int(mask.sum()), "correct": int(correct.sum())}
        for name, values in [("correctness", p[mask]), *((f, features[mask, i]) for i, f in enumerate(FEATURES[:3]))]:
            estimate, low, high = bootstrap_ci(correct, values, statistic=auroc, seed=0)
            row.update({f"auroc_{name}": estimate, f"auroc_{name}_low": low, f"auroc_{name}_high": high})
        verdict = (p[mask] >= threshold).astype(float)
        estimate, low, high = bootstrap_ci(verdict, correct, statistic=cohen_kappa, seed=0)
        row.update({"kappa": estimate, "kappa_low": low, "kappa_high": high, "judged_correct": int(verdict.sum())})
        rows.append(row)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--validate-only", action="store_true", help="the committed WEIGHTS and THRESHOLD")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    matcher = ReferenceMatcher("es")
    result: dict = {}
    weights, threshold = WEIGHTS, THRESHOLD
    if not args.validate_only:
        start = time.perf_counter()
        pairs = pd.DataFrame(tuning_pairs())
        features = matcher.pair_features(
            pairs["answer"].tolist(), pairs["reference"].tolist(), pairs["question"].tolist()
        )
        labels = pairs["label"].to_numpy(dtype=float)
        weights, threshold = fit(features, labels)
        p = correctness(features, weights)
        print(pairs.groupby(["source", "kind"]).size().to_string())
        print(f"\ntuning pairs: {len(pairs)} ({int(labels.sum())} right), {time.perf_counter() - start:.0f} s")
        print(
            f"in-sample AUROC {auroc(labels, p):.3f}, kappa {cohen_kappa((p >= threshold).astype(float), labels):.3f}"
        )
        print("WEIGHTS =", tuple(round(w, 4) for w in weights), "# bias,", ", ".join(FEATURES))
        print("THRESHOLD =", threshold)
        result["tuning"] = {"pairs": len(pairs), "right": int(labels.sum()), "weights": weights, "threshold": threshold}
        features, labels = attribution_pairs(matcher)
        attribution_weights, attribution_threshold = fit(features, labels, combine=context_recall.attribution)
        p = context_recall.attribution(features, attribution_weights)
        print(
            f"\nattribution pairs: {len(labels)} ({int(labels.sum())} holding), in-sample AUROC {auroc(labels, p):.3f}"
        )
        print(
            "context_recall WEIGHTS =",
            tuple(round(w, 4) for w in attribution_weights),
            "#",
            ", ".join(context_recall.FEATURES),
        )
        print("context_recall THRESHOLD =", attribution_threshold)
        result["attribution"] = {
            "pairs": len(labels),
            "weights": attribution_weights,
            "threshold": attribution_threshold,
        }
    table = validate(matcher, weights, threshold)
    pd.set_option("display.width", 220)
    print("\nAgainst the hand labels (correct: yes vs partly/no):")
    print(table.round(3).to_string(index=False))
    result["validation"] = table.to_dict(orient="records")
    out = paths.write_json(args.out or paths.benchmark_output("correctness"), result)
    print(f"\nwritten: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
