"""The cuts `helpers diagnose` reads its two judges through (helpers.experiment.diagnosis_cuts.SHIPPED),
fitted on many corpora and checked on each corpus left out (issue 59).

    python benchmarks/diagnosis_bands.py [--refresh] [--precision 0.95]

Items (helpers.experiment.diagnosis_calibration): labels made without people on MaternaQA-es,
XQuAD (es, en) and the obstetrics guideline's qrels (gold passage in the contexts or not; answers
that state the reference or not), and people's labels of the default model's answers on two corpora
(benchmarks/labels: the obstetrics guideline, 60 answers; benchmarks/labels/maternaqa: MaternaQA-es,
60 answers), each answer scored here from the sheet's own answer text and context ids (no run, no
LLM). Printed and written to results/benchmarks/diagnosis-bands.json:

1. per band (`holds`, `correct`) and corpus left out: the cuts fitted on every other corpus (each
   corpus weighing the same), the share of the left-out corpus's items they cannot tell, and
   Cohen's kappa of what they read against the labels; per language;
2. per corpus with people's labels: the verdicts (correct / retrieval / generation; refused read as
   generation, unanswerable as retrieval) against the person's, with the cuts fitted without that
   corpus, the cuts shipped before, and cuts fitted on the corpus's own labels (in-sample);
3. the cuts fitted on every corpus: what SHIPPED holds;
4. each judge's own threshold (correctness 0.68, context_recall 0.69: the validity table's kappa
   is read there) per corpus, against the threshold fitted with that corpus left out.

Write-up: docs/measurements/diagnosis.md.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd

import _offline  # noqa: F401  (the offline defaults, before any hub library)
from helpers.data import load_dataset
from helpers.experiment import diagnosis
from helpers.experiment import diagnosis_calibration as calibration
from helpers.experiment.diagnosis_cuts import SHIPPED, Band, read_diagnosis_labels
from helpers.inference.classical import cohen_kappa
from helpers.judges.context_recall import THRESHOLD as RECALL_THRESHOLD
from helpers.judges.correctness import THRESHOLD as CORRECT_THRESHOLD
from helpers.judges.evaluate import score_answers
from helpers.paths import PROJECT_ROOT, RESULTS_DIR

LABELS = PROJECT_ROOT / "benchmarks" / "labels"
PEOPLE = {  # corpus -> (answers sheet, dataset): its contexts sheet lies beside it
    "obstetrics": (LABELS / "obstetrics-qwen2.5-coder-1.5b.csv", "obstetrics"),
    "maternaqa": (LABELS / "maternaqa" / "maternaqa-qwen2.5-coder-1.5b.csv", "maternaqa"),
}
OUT = RESULTS_DIR / "benchmarks"
PRECISIONS = (0.8, 0.85, 0.9, 0.95)  # the precisions the cuts may be fitted at
MAX_CANNOT_TELL = 0.2
PREVIOUS = {  # the cuts shipped before issue 59: fitted on the obstetrics sheet alone
    "correct": Band(0.5761623631917797, 0.5761623631917797, "before"),
    "holds": Band(0.9520570106992229, 0.9836560759853521, "before"),
}


def sheet_answers(corpus: str) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """(diagnose's wide answers scored from the sheet, the person's labels, language) of a
    hand-labelled corpus: each labelled answer judged by correctness, context_recall and refusal
    from its text and the contexts the sheet names."""
    sheet, name = PEOPLE[corpus]
    data = load_dataset(name)
    labels = read_diagnosis_labels(sheet, required=("correct", "reference_in_contexts"))
    answers = [
        {"qid": r.id, "architecture": r.architecture, "question": data.queries[r.id], "answer": r.answer}
        | {"contexts": [data.corpus[d]["text"] for d in r.context_ids.split()], "reference": data.answers[r.id]}
        for r in labels.itertuples()
    ]
    scores = score_answers(answers, ["correctness", "context_recall", "refusal"], language=data.language)
    wide = diagnosis.wide_from_judged(scores, str(sheet))
    wide["answer"] = [a["answer"] for a in answers]  # score_answers keeps the order
    return wide, labels, data.language


def verdict_agreement(wide: pd.DataFrame, labels: pd.DataFrame, bands: dict) -> dict:
    """The verdicts through `bands` against the person's (diagnosis.compare): kappa over the answers
    both decide, how many, and the share of answers ours cannot tell."""
    confusion, kappa, decided = diagnosis.compare(diagnosis.verdicts(wide, bands), labels)
    total = int(confusion.to_numpy().sum())
    ours_cannot_tell = int(confusion.loc["cannot tell"].sum()) if "cannot tell" in confusion.index else 0
    return {
        "kappa": kappa,
        "decided": decided,
        "n": total,
        "cannot_tell": ours_cannot_tell / total,
        "confusion": confusion.to_dict(),
    }


def choose_precision(auto: pd.DataFrame) -> float:
    """The precision the cuts are fitted at, chosen on the items made without people only (people's
    labels judge the choice, they do not make it): the best worst kappa over every (band, corpus
    left out), among the precisions whose share cannot tell stays within MAX_CANNOT_TELL on average
    (the cuts must travel to every corpus, not to most); ties go to the best mean."""
    rows = []
    for precision in PRECISIONS:
        loo = pd.concat([calibration.leave_one_out(auto, band, precision=precision) for band in ("holds", "correct")])
        rows.append(
            {"precision": precision, "worst_kappa": loo["kappa"].min(), "mean_kappa": loo["kappa"].mean()}
            | {"cannot_tell": loo["cannot_tell"].mean()}
        )
    table = pd.DataFrame(rows)
    print("\nthe precision, chosen on the items made without people (each corpus left out, both bands):")
    print(table.round(3).to_string(index=False))
    allowed = table[table["cannot_tell"] <= MAX_CANNOT_TELL].round(3)
    return float(allowed.sort_values(["worst_kappa", "mean_kappa"]).iloc[-1]["precision"])


def best_threshold(items: pd.DataFrame) -> float:
    """The single cut with the best Cohen's kappa on `items`, every corpus weighing the same (each
    corpus's kappa averaged)."""
    cuts = np.round(np.arange(0.05, 0.96, 0.01), 2)
    per_corpus = [
        [cohen_kappa((g["score"].to_numpy() >= t).astype(float), g["label"].to_numpy(float)) for t in cuts]
        for _, g in items.groupby("corpus")
    ]
    return float(cuts[int(np.nanargmax(np.nanmean(per_corpus, axis=0)))])


def thresholds(items: pd.DataFrame) -> pd.DataFrame:
    """Each judge's threshold (the validity table's kappa is read at it) per corpus: kappa at the
    shipped threshold, and at the best threshold fitted on the other corpora."""
    rows = []
    for band, shipped in (("correct", CORRECT_THRESHOLD), ("holds", RECALL_THRESHOLD)):
        part = items[items["band"] == band]
        for corpus in sorted(part["corpus"].unique()):
            mine, rest = part[part["corpus"] == corpus], part[part["corpus"] != corpus]
            fitted = best_threshold(rest)
            y = mine["label"].to_numpy(float)
            rows.append(
                {"band": band, "corpus": corpus, "n": len(mine), "shipped": shipped}
                | {"kappa_shipped": float(cohen_kappa((mine["score"].to_numpy() >= shipped).astype(float), y))}
                | {"left_out_fit": fitted}
                | {"kappa_left_out": float(cohen_kappa((mine["score"].to_numpy() >= fitted).astype(float), y))}
            )
    return pd.DataFrame(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--precision",
        type=float,
        default=None,
        help="default: chosen among PRECISIONS on the items made without people",
    )
    parser.add_argument("--refresh", action="store_true", help="score the items made without people again")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    cached = OUT / "diagnosis-calibration-items.parquet"
    if args.refresh or not cached.exists():
        calibration.auto_items().to_parquet(cached)
    people = {corpus: sheet_answers(corpus) for corpus in PEOPLE}
    items = pd.concat(
        [pd.read_parquet(cached)]
        + [
            calibration.person_items(wide, labels, corpus=corpus, language=language)
            for corpus, (wide, labels, language) in people.items()
        ],
        ignore_index=True,
    )
    pd.set_option("display.width", 200)
    print("items:", items.groupby(["band", "corpus", "origin"]).size().to_dict())
    if args.precision is None:
        args.precision = choose_precision(items[items["origin"] == "auto"])
    report = {"precision": args.precision, "items": len(items)}

    loo = pd.concat([calibration.leave_one_out(items, band, precision=args.precision) for band in ("holds", "correct")])
    print("\n1. each corpus left out of the fit (cuts from the others):")
    print(loo.round(3).to_string(index=False))
    report["leave_one_corpus_out"] = loo.to_dict("records")

    shipped = {
        band: calibration.fit_cuts(items[items["band"] == band], precision=args.precision, source="all corpora")
        for band in ("correct", "holds")
    }
    print("\n3. fitted on every corpus (SHIPPED):", shipped)
    report["fitted_on_all"] = {
        b: {"low": band.low, "high": band.high, "zone": band.zone} for b, band in shipped.items()
    }

    print("\n2. verdicts against the person's, per corpus with people's labels:")
    report["verdicts"] = {}
    for corpus, (wide, labels, _) in people.items():
        others = items[items["corpus"] != corpus]
        left_out = {
            band: calibration.fit_cuts(others[others["band"] == band], precision=args.precision, source="left out")
            for band in ("correct", "holds")
        }
        own = items[(items["corpus"] == corpus) & (items["origin"] == "person")]
        in_corpus = {
            band: calibration.fit_band(own[own["band"] == band], precision=args.precision, source="in corpus")
            for band in ("correct", "holds")
        }
        rows = {}
        for name, bands in (("left out", left_out), ("before (obstetrics only)", PREVIOUS), ("in corpus", in_corpus)):
            result = verdict_agreement(wide, labels, bands)
            cuts = {
                b: f"{bands[b].low:.3f}-{bands[b].high:.3f}"
                + (f" zone {bands[b].zone[0]:.3f}-{bands[b].zone[1]:.3f}" if bands[b].zone else "")
                for b in bands
            }
            rows[name] = result | {"cuts": cuts}
            print(
                f"  {corpus:10s} {name:25s} kappa {result['kappa']:.3f} on {result['decided']} of {result['n']}, "
                f"cannot tell {result['cannot_tell']:.0%}, cuts {cuts}"
            )
        print(pd.DataFrame(rows["left out"]["confusion"]).fillna(0).astype(int).to_string())
        report["verdicts"][corpus] = rows

    table = thresholds(items)
    print("\n4. the judges' thresholds per corpus, shipped and fitted with the corpus left out:")
    print(table.round(3).to_string(index=False))
    report["thresholds"] = table.to_dict("records")
    languages = loo.groupby(["band", "language"])[["kappa", "cannot_tell"]].mean()
    print("\nper language (mean over corpora left out):\n" + languages.round(3).to_string())
    report["per_language"] = languages.reset_index().to_dict("records")
    print(f"(SHIPPED now: { {b: (band.low, band.high) for b, band in SHIPPED.items()} })")
    (OUT / "diagnosis-bands.json").write_text(json.dumps(report, indent=2, default=str))
    print(f"\nwritten: {OUT / 'diagnosis-bands.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
