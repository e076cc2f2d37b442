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
from helpers.experiment.analysis import load_scores, natural_key, run_dir
from helpers.experiment.label_format import KEY_COLUMNS, LABEL_SCORE, LABELS, read_answer_labels
from helpers.experiment.store import RunStore
from helpers.inference.classical import auroc, bootstrap_ci, cohen_kappa
from helpers.judges import grounding_metrics, judge_class
from helpers.judges.evaluate import usable_judges
from helpers.judges.validity import agreement

# What a labelled sheet keeps in the repository: the answer and where its contexts came from, not
# the guideline's text or the seed's questions (data stays in data/; `answers_sheet` shows them)
COMMITTED_COLUMNS = (
    "model", "architecture", "qid", "context_pages", "context_ids", "answer", "supported", "correct", "note",
)  # fmt: skip
# the labels a sheet must hold (the format's `answers` column is the panel's: optional here)
SHEET_LABELS = ("supported", "correct")
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
                "context_ids": " ".join(c["doc_id"] for c in record.get("contexts") or []),
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
    """A labelled sheet (CSV, helpers.experiment.label_format), checked: the key columns and
    `supported` and `correct` present and filled, each label one of yes / partly / no, no answer
    labelled twice. Errors name the file, row and column."""
    frame = read_answer_labels(path, required=SHEET_LABELS, filled=SHEET_LABELS)
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
        for column in SHEET_LABELS:
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
    for ax, column in zip(axes, SHEET_LABELS):
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


# ---------------------------------------------------------------- the validity table from the sheets
CONTEXT_LABEL_COLUMNS = ("model", "architecture", "qid", "context_ids", "context", "contexts_holding", "note")


def _label_sheet(path: str | Path, label: str, required: tuple[str, ...], columns: tuple[str, ...]) -> pd.DataFrame:
    """A sheet keyed by (model, architecture, qid) with one yes / partly / no column, `label`."""
    path = Path(path)
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in (*KEY_COLUMNS, label, *required) if c not in frame.columns]
    if missing:
        raise UserError(f"{path}: missing column(s) {missing}; a {label} sheet has {list(columns)}")
    frame[label] = frame[label].str.strip().str.lower()
    bad = frame.index[~frame[label].isin(LABELS)]
    if len(bad):
        row = int(bad[0])
        raise UserError(
            f"{path}: row {row + 2}, column {label!r}: {frame.at[row, label]!r} is not one of {list(LABELS)}"
        )
    return frame


def load_context_labels(path: str | Path) -> pd.DataFrame:
    """A sheet of context-set labels: per (model, architecture, qid), `context` (is the reference's
    answer in the contexts the answer was written from? yes / partly / no), `contexts_holding` (the
    context numbers that hold it) and the `context_ids` (doc_ids under the default chunking)."""
    return _label_sheet(path, "context", ("context_ids",), CONTEXT_LABEL_COLUMNS)


CITATION_LABEL_COLUMNS = ("model", "architecture", "qid", "citation", "cited", "holding", "note")


def load_citation_labels(path: str | Path) -> pd.DataFrame:
    """A sheet of citation labels: per answer, `citation` (does every [n] point at a context that
    holds its sentence? yes / partly / no), what it `cited`, the contexts `holding` its main claim."""
    return _label_sheet(path, "citation", (), CITATION_LABEL_COLUMNS)


def labelled_sheets(folder: str | Path) -> pd.DataFrame:
    """Every sheet of `folder` (obstetrics-*.csv answer labels, contexts-*.csv context labels,
    citations-*.csv citation labels) as one
    frame keyed by (model, architecture, qid), with `context_ids` where a context sheet gives them."""
    folder = Path(folder)
    answers = [load_labels(p) for p in sorted(folder.glob("obstetrics-*.csv"))]
    if not answers:
        raise UserError(f"{folder}: no answer sheets (obstetrics-*.csv) to check the judges against")
    labels = pd.concat(answers, ignore_index=True)
    contexts = [load_context_labels(p) for p in sorted(folder.glob("contexts-*.csv"))]
    if contexts:
        context = pd.concat(contexts, ignore_index=True)[[*KEY_COLUMNS, "context", "context_ids"]]
        labels = labels.drop(columns=[c for c in ("context",) if c in labels]).merge(
            context, on=list(KEY_COLUMNS), how="left", suffixes=("", "_context")
        )
        if "context_ids_context" in labels:  # the answer sheet's own ids first, the context sheet's where it has none
            given = labels["context_ids"].fillna("").astype(str)
            labels["context_ids"] = given.where(given.str.strip() != "", labels["context_ids_context"].fillna(""))
            labels = labels.drop(columns="context_ids_context")
    citations = [load_citation_labels(p) for p in sorted(folder.glob("citations-*.csv"))]
    if citations:
        citation = pd.concat(citations, ignore_index=True)[[*KEY_COLUMNS, "citation"]]
        labels = labels.drop(columns=[c for c in ("citation",) if c in labels]).merge(
            citation, on=list(KEY_COLUMNS), how="left"
        )
    return labels


def sheet_scores(labels: pd.DataFrame, *, judges: list[str] | None = None) -> pd.DataFrame:
    """Scores of the labelled answers by every judge that needs no LLM (helpers.judges.evaluate),
    with the obstetrics questions, references and, where the sheet names them, the contexts the
    answer was written from (default chunking). Long: model, architecture, qid, judge, metric, value."""
    from helpers.data import load_dataset
    from helpers.judges.evaluate import score_answers  # noqa: I001 (the judges' models load here)

    data = load_dataset("obstetrics")
    ids = labels["context_ids"].fillna("") if "context_ids" in labels else pd.Series("", index=labels.index)
    unknown = sorted({d for cell in ids for d in cell.split() if d not in data.corpus})
    if unknown:
        raise UserError(f"context_ids {unknown[:3]} are not chunks of the default chunking; relabel the sheet")
    answers = [
        {
            "qid": f"{row.model}|{row.architecture}|{row.qid}",
            "question": data.queries[row.qid],
            "answer": row.answer,
            "contexts": [data.corpus[d]["text"] for d in ids[i].split()],
            "reference": data.answers.get(row.qid),
        }
        for i, row in zip(labels.index, labels.itertuples())
    ]
    # answers whose contexts the sheet does not name are judged only against their reference
    with_contexts = [a for a, cell in zip(answers, ids) if cell.strip()]
    without = [a for a, cell in zip(answers, ids) if not cell.strip()]
    parts = [score_answers(with_contexts, judges, language=data.language)] if with_contexts else []
    if without:
        by_reference = [j for j in (judges or usable_judges(with_llm=False)) if _compares_to_reference(j)]
        parts.append(score_answers(without, by_reference, language=data.language))
    scores = pd.concat(parts, ignore_index=True)
    scores[list(KEY_COLUMNS)] = scores["id"].str.split("|", expand=True)
    return scores.drop(columns="id")


def _compares_to_reference(judge: str) -> bool:
    """A judge whose every metric is checked against `correct`: it reads the answer and the
    reference, not the contexts."""
    return all(m.label == "correct" for m in judge_class(judge).metrics_for(None))


def validity_from_sheets(folder: str | Path, *, runs: dict[str, str] | None = None, seed: int = 0) -> pd.DataFrame:
    """The validity table (helpers.judges.validity.COLUMNS) of every judge against the sheets of
    `folder`: the judges that need no LLM score the labelled answers here; LLM judges are read from
    `runs` ({model: run_id}) of the same answers (matched by model, architecture, qid and answer
    text: an answer that changed since it was labelled is left out)."""
    labels = labelled_sheets(folder)
    scores = [sheet_scores(labels)]
    for model, run_id in (runs or {}).items():
        from_run = load_scores(run_id).assign(model=model)
        answers = {(r["architecture"], r["qid"]): r.get("answer") for r in RunStore(run_dir(run_id)).of_kind("answer")}
        same = labels[labels["model"] == model]
        unchanged = {
            (r.architecture, r.qid) for r in same.itertuples() if answers.get((r.architecture, r.qid)) == r.answer
        }
        keep = [(a, q) in unchanged for a, q in zip(from_run["architecture"], from_run["qid"])]
        scores.append(from_run[keep & ~from_run["judge"].isin(usable_judges(with_llm=False))])
    table = agreement(labels, pd.concat(scores, ignore_index=True), seed=seed)
    table["labels"] = ", ".join(
        sorted(
            p.name for p in Path(folder).glob("*.csv") if p.name.startswith(("obstetrics-", "contexts-", "citations-"))
        )
    )
    return table
