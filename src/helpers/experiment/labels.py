"""A person's labels of a run's answers, and the judges checked against them.

    sheet = answers_sheet("obstetrics-qwen-1a2b3c4d")        # one row per answer, label columns empty
    sheet.to_csv("benchmarks/labels/obstetrics-qwen.csv")     # a person fills `supported` and `correct`
    labels = load_labels("benchmarks/labels/obstetrics-qwen.csv")
    label_summary(labels)                                     # shares per model and architecture
    judges_vs_labels(labels, load_scores(run_id))             # AUROC for "supported: no", agreement

Labels: `supported` (is every claim of the answer backed by its own contexts?) and `correct` (does it
answer the question as the guideline and the seed's ground truth do?), each yes / partly / no. An
answer that says the contexts do not hold the answer is supported; it is correct only when the
guideline indeed lacks it. Scores of a label: yes 1, partly 0.5, no 0.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from helpers.errors import UserError
from helpers.experiment.analysis import natural_key, run_dir
from helpers.experiment.store import RunStore
from helpers.judges import grounding_metrics
from helpers.stats import auroc, bootstrap_ci, cohen_kappa

LABELS = ("yes", "partly", "no")
# What a labelled sheet keeps in the repository: the answer and where its contexts came from, not
# the guideline's text or the seed's questions (data stays in data/; `answers_sheet` shows them)
COMMITTED_COLUMNS = ("model", "architecture", "qid", "context_pages", "answer", "supported", "correct", "note")
LABEL_SCORE = {"yes": 1.0, "partly": 0.5, "no": 0.0}
LABEL_COLUMNS = ("supported", "correct")
KEY_COLUMNS = ("model", "architecture", "qid")
# Judge scores where higher means "better supported"; the AUROC is for detecting "supported: no",
# so each is negated (a lower score should mean an unsupported answer). Source: the run's scores.
JUDGE_SCORES = {(judge, metric): label for judge, metric, label in grounding_metrics()}


def answers_sheet(
    run_id: str, *, model: str | None = None, results_dir: Path | None = None, references: dict[str, str] | None = None
) -> pd.DataFrame:
    """One row per answer of a run, ready to label: model, architecture, qid, question, the
    reference answer, the answer, its contexts (rank, page, text), and empty label columns.
    model: the name written in the `model` column (default: the answering LLM's model)."""
    directory = run_dir(run_id, results_dir)
    if not (directory / "records.jsonl").exists():  # checked first: RunStore would create the folder
        raise UserError(f"run {run_id}: no answers in {directory}/records.jsonl")
    rows = []
    for record in RunStore(directory).of_kind("answer"):
        pages = record.get("pages") or []
        contexts = "\n".join(
            f"[{c['rank']}] (p. {pages[i] if i < len(pages) else None}) {c['text']}"
            for i, c in enumerate(record.get("contexts") or [])
        )
        rows.append(
            {
                "model": model or record.get("model") or record["llm"],
                "architecture": record["architecture"],
                "qid": record["qid"],
                "question": record["question"],
                "reference": (references or {}).get(record["qid"], ""),
                "answer": record.get("answer") or "",
                "context_pages": " ".join(str(p) for p in pages),
                "contexts": contexts,
                "supported": "",
                "correct": "",
                "note": "",
            }
        )
    if not rows:
        raise UserError(f"run {run_id}: no answers in {directory}/records.jsonl")
    frame = pd.DataFrame(rows)
    return frame.sort_values(["architecture", "qid"], key=lambda s: s.map(natural_key)).reset_index(drop=True)


def load_labels(path: str | Path) -> pd.DataFrame:
    """A labelled sheet (CSV), checked: the key and label columns present, every label one of
    yes / partly / no, no answer labelled twice. Errors name the file, row and column."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: labels file not found")
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in (*KEY_COLUMNS, *LABEL_COLUMNS) if c not in frame.columns]
    if missing:
        raise UserError(f"{path}: missing column(s) {missing}; a sheet from answers_sheet() has them all")
    for column in LABEL_COLUMNS:
        frame[column] = frame[column].str.strip().str.lower()
        bad = frame.index[~frame[column].isin(LABELS)]
        if len(bad):
            row = int(bad[0])
            raise UserError(
                f"{path}: row {row + 2}, column '{column}': {frame.at[row, column]!r} is not one of "
                f"{list(LABELS)} ({len(bad)} such row(s))"
            )
    duplicated = frame.duplicated(list(KEY_COLUMNS), keep="first")
    if duplicated.any():
        row = int(frame.index[duplicated][0])
        raise UserError(f"{path}: row {row + 2}: {dict(frame.loc[row, list(KEY_COLUMNS)])} is labelled more than once")
    return frame


def label_summary(labels: pd.DataFrame, *, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Per model and architecture (and 'all'): answers, counts of each label, and the mean label
    score (yes 1, partly 0.5, no 0) with its bootstrap interval, for `supported` and `correct`."""
    rows = []
    groups = list(labels.groupby(["model", "architecture"], sort=False)) + [
        ((model, "all"), frame) for model, frame in labels.groupby("model", sort=False)
    ]
    for (model, architecture), frame in groups:
        row = {"model": model, "architecture": architecture, "answers": len(frame)}
        for column in LABEL_COLUMNS:
            counts = frame[column].value_counts()
            row.update({f"{column}_{label}": int(counts.get(label, 0)) for label in LABELS})
            estimate, low, high = bootstrap_ci(
                frame[column].map(LABEL_SCORE).to_numpy(), confidence=confidence, seed=seed
            )
            row.update({f"{column}_score": estimate, f"{column}_low": low, f"{column}_high": high})
        rows.append(row)
    return pd.DataFrame(rows)


def judges_vs_labels(
    labels: pd.DataFrame,
    scores: pd.DataFrame,
    *,
    threshold: float = 0.5,
    positive: tuple[str, ...] = ("no",),
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Each judge score of JUDGE_SCORES present in `scores` (a run's long table, or several runs'
    concatenated, with a `model` column naming the answering model) against the `supported` labels:
    n, answers labelled `positive` (default "no"; ("no", "partly") for "not fully supported"),
    AUROC for detecting them (the score negated), and agreement of the judge's verdict (score >=
    threshold: supported) with the label (not `positive`: supported) as accuracy and Cohen's kappa,
    each with its bootstrap interval."""
    merged_rows = []
    for (judge, metric), description in JUDGE_SCORES.items():
        picked = scores[(scores["judge"] == judge) & (scores["metric"] == metric)]
        # the same answer judged in two runs (a default run and a judges-only run over its cached
        # answers) counts once
        picked = picked.drop_duplicates(list(KEY_COLUMNS))
        if picked.empty:
            continue
        merged = labels.merge(picked[["model", "architecture", "qid", "value"]], on=list(KEY_COLUMNS), how="inner")
        merged = merged[merged["value"].notna()]
        if merged.empty:
            continue
        unsupported = merged["supported"].isin(positive).to_numpy(dtype=float)
        value = merged["value"].to_numpy(dtype=float)
        verdict = (value >= threshold).astype(float)
        label_supported = 1 - unsupported
        area = bootstrap_ci(unsupported, -value, statistic=auroc, confidence=confidence, seed=seed)
        accuracy = bootstrap_ci((verdict == label_supported).astype(float), confidence=confidence, seed=seed)
        kappa = bootstrap_ci(verdict, label_supported, statistic=cohen_kappa, confidence=confidence, seed=seed)
        merged_rows.append(
            {
                "judge": judge,
                "metric": metric,
                "description": description,
                "models": ", ".join(sorted(merged["model"].unique())),
                "positive": "/".join(positive),
                "n": len(merged),
                "labelled_positive": int(unsupported.sum()),
                "auroc": area[0],
                "auroc_low": area[1],
                "auroc_high": area[2],
                "accuracy": accuracy[0],
                "accuracy_low": accuracy[1],
                "accuracy_high": accuracy[2],
                "kappa": kappa[0],
                "kappa_low": kappa[1],
                "kappa_high": kappa[2],
            }
        )
    return pd.DataFrame(merged_rows)


# the columns of judges_vs_labels a person reads (the command line and the benchmark print them)
AGREEMENT_COLUMNS = [
    "judge",
    "metric",
    "positive",
    "n",
    "labelled_positive",
    "auroc",
    "auroc_low",
    "auroc_high",
    "accuracy",
    "kappa",
    "kappa_low",
    "kappa_high",
]


def label_figure(summary: pd.DataFrame):
    """Bars of the mean label score per architecture, one colour per model, with the bootstrap
    interval; `supported` and `correct` side by side (from label_summary)."""
    import matplotlib.pyplot as plt

    frame = summary[summary["architecture"] != "all"]
    models = list(dict.fromkeys(frame["model"]))
    architectures = list(dict.fromkeys(frame["architecture"]))
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), sharey=True)
    width = 0.8 / max(1, len(models))
    for ax, column in zip(axes, LABEL_COLUMNS):
        for i, model in enumerate(models):
            rows = frame[frame["model"] == model].set_index("architecture").reindex(architectures)
            x = np.arange(len(architectures)) + (i - (len(models) - 1) / 2) * width
            estimate = rows[f"{column}_score"].to_numpy(dtype=float)
            errors = [
                estimate - rows[f"{column}_low"].to_numpy(dtype=float),
                rows[f"{column}_high"].to_numpy(dtype=float) - estimate,
            ]
            ax.bar(x, estimate, width, yerr=errors, capsize=3, label=f"{model} (n={int(rows['answers'].sum())})")
        ax.set_xticks(np.arange(len(architectures)), architectures, rotation=30, ha="right")
        ax.set_title(f"{column} (hand labels: yes 1, partly 0.5, no 0)", fontsize=10)
        ax.set_ylim(0, 1.05)
    axes[0].set_ylabel("mean, 95% bootstrap interval")
    axes[1].legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig
