"""Hand labels of answers (helpers.experiment.label_sheets): the sheet's checks, the label summary, and
judges scored against labels (AUROC for "supported: no", accuracy and Cohen's kappa = sklearn's);
the repository's labelled sheets load and agree with their runs' keys."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from helpers.errors import UserError
from helpers.experiment.label_sheets import judges_vs_labels, label_figure, label_summary, load_labels
from helpers.inference.classical import cohen_kappa as stats_kappa

LABELS_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "labels"


def _sheet(tmp_path, rows, name="labels.csv") -> Path:
    path = tmp_path / name
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _rows():
    return [
        {"model": "m", "architecture": "bm25", "qid": f"q{i}", "supported": s, "correct": c}
        for i, (s, c) in enumerate([("yes", "yes"), ("partly", "no"), ("no", "no"), ("yes", "partly")], 1)
    ]


def test_load_labels_checks_values_columns_and_duplicates(tmp_path):
    frame = load_labels(_sheet(tmp_path, [{**r, "supported": r["supported"].upper()} for r in _rows()]))
    assert frame["supported"].tolist() == ["yes", "partly", "no", "yes"]  # case and spaces forgiven
    bad = _rows()
    bad[2]["correct"] = "maybe"
    with pytest.raises(UserError, match=r"labels.csv: row 4, column 'correct': 'maybe' is not one of"):
        load_labels(_sheet(tmp_path, bad))
    with pytest.raises(UserError, match=r"missing column\(s\) \['correct'\]"):
        load_labels(_sheet(tmp_path, [{k: v for k, v in r.items() if k != "correct"} for r in _rows()]))
    with pytest.raises(UserError, match="row 4: .*labelled more than once"):
        load_labels(_sheet(tmp_path, _rows()[:2] + [_rows()[0]]))
    with pytest.raises(UserError, match="labels file not found"):
        load_labels(tmp_path / "none.csv")


def test_one_labels_format_for_the_panel_the_sheets_and_estimate(tmp_path):
    """The panel's labels.csv, a shipped sheet and `estimate --labels` read one format
    (helpers.experiment.label_format): an earlier panel file's `llm` column is read as `model`, an
    empty label is "not labelled" (an error only where a sheet needs it filled), a bad value names
    its row and column."""
    from helpers.experiment.estimates import read_labels
    from helpers.experiment.label_format import COLUMNS, read_answer_labels

    panel = [
        {"architecture": "bm25", "llm": "local", "qid": "q1", "supported": "Yes ", "answers": "yes", "correct": ""},
        {"architecture": "dense", "llm": "local", "qid": "q1", "supported": "no", "answers": "no", "correct": "no"},
    ]
    frame = read_answer_labels(_sheet(tmp_path, panel))
    assert set(COLUMNS) <= set(frame.columns)
    assert frame["model"].tolist() == ["local", "local"] and frame["supported"].tolist() == ["yes", "no"]
    assert frame["correct"].tolist() == ["", "no"] and frame["note"].tolist() == ["", ""]
    labels, column = read_labels(tmp_path / "labels.csv")
    assert column == "correct" and labels.to_dict("records") == [{"item": "q1", "architecture": "dense", "label": 0.0}]
    with pytest.raises(
        UserError, match=r"labels.csv: row 2, column 'correct': '' is not one of \['yes', 'partly', 'no'\]"
    ):
        load_labels(tmp_path / "labels.csv")  # a sheet needs every answer's `correct`
    panel[1]["answers"] = "partly"
    with pytest.raises(UserError, match=r"labels.csv: row 3, column 'answers': 'partly' is not one of \['yes', 'no'\]"):
        read_answer_labels(_sheet(tmp_path, panel))
    with pytest.raises(UserError, match=r"x.csv: missing column\(s\) \['model'\]; a labels file has \['model'"):
        read_answer_labels(_sheet(tmp_path, [{"architecture": "a", "qid": "q"}], name="x.csv"))
    shipped = read_answer_labels(LABELS_DIR / "obstetrics-qwen2.5-coder-1.5b.csv", filled=("supported", "correct"))
    assert len(shipped) == 60 and set(shipped["model"]) == {"qwen2.5-coder-1.5b"}


def test_label_summary_counts_and_scores(tmp_path):
    summary = label_summary(load_labels(_sheet(tmp_path, _rows())))
    row = summary[summary["architecture"] == "bm25"].iloc[0]
    assert (row["supported_yes"], row["supported_partly"], row["supported_no"]) == (2, 1, 1)
    assert row["supported_score"] == pytest.approx((1 + 0.5 + 0 + 1) / 4)
    assert row["correct_score"] == pytest.approx((1 + 0 + 0 + 0.5) / 4)
    assert row["supported_low"] <= row["supported_score"] <= row["supported_high"]
    assert summary["architecture"].tolist() == ["bm25", "all"]
    fig = label_figure(summary)  # one bar per (model, architecture), 'all' left out, in each panel
    assert [len(ax.patches) for ax in fig.axes] == [1, 1]
    assert fig.axes[0].patches[0].get_height() == pytest.approx(row["supported_score"])


def test_cohen_kappa_matches_sklearn():
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 2, 40), rng.integers(0, 2, 40)
    b[:25] = a[:25]
    assert float(stats_kappa(a, b)) == pytest.approx(cohen_kappa_score(a, b))


def test_judges_vs_labels_auroc_and_agreement(tmp_path):
    labels = load_labels(_sheet(tmp_path, _rows()))
    scores = pd.DataFrame(
        [
            {
                "model": "m",
                "architecture": "bm25",
                "qid": q,
                "judge": "offline",
                "metric": "adherence_score",
                "value": v,
            }
            for q, v in [("q1", 0.9), ("q2", 0.7), ("q3", 0.2), ("q4", 0.6)]
        ]
        + [
            {"model": "m", "architecture": "bm25", "qid": q, "judge": "ragas", "metric": "faithfulness", "value": v}
            for q, v in [("q1", 0.1), ("q2", 0.9), ("q3", 1.0), ("q4", None)]
        ]
    )
    table = judges_vs_labels(labels, pd.concat([scores, scores])).set_index("judge")  # judged twice: counted once
    offline = table.loc["offline"]
    assert offline["n"] == 4 and offline["labelled_positive"] == 1
    assert offline["auroc"] == 1.0  # the one unsupported answer scores lowest
    assert offline["accuracy"] == 1.0 and offline["kappa"] == pytest.approx(1.0)
    ragas = table.loc["ragas"]
    assert ragas["n"] == 3  # a NaN score is left out, not counted as a verdict
    assert ragas["auroc"] == 0.0  # the unsupported answer scores highest: wrong way round
    assert ragas["accuracy"] == pytest.approx(1 / 3)
    strict = judges_vs_labels(labels, scores, positive=("no", "partly")).set_index("judge").loc["offline"]
    assert strict["labelled_positive"] == 2  # q2 (partly) and q3 (no)
    assert strict["auroc"] == pytest.approx(0.75)  # q2's 0.7 sits above q4's 0.6: 3 of 4 pairs ordered


@pytest.mark.parametrize("sheet", sorted(LABELS_DIR.glob("contexts-*.csv")), ids=lambda p: p.name)
def test_the_repository_context_labels_are_complete(sheet):
    """Every committed context sheet labels 10 questions x 6 architectures, names the contexts
    (doc_ids) it labelled, and says which of them hold the answer whenever it is there."""
    from helpers.experiment.label_sheets import load_context_labels

    labels = load_context_labels(sheet)
    assert len(labels) == 60 and labels.groupby("architecture").size().eq(10).all()
    assert (labels["context_ids"].str.split().str.len() == 5).all()
    holding = labels["contexts_holding"].str.strip() != ""
    assert (holding == (labels["context"] != "no")).all()


@pytest.mark.parametrize("sheet", sorted(LABELS_DIR.glob("obstetrics-*.csv")), ids=lambda p: p.name)
def test_the_repository_labels_are_complete(sheet):
    """Every committed answer sheet is fully labelled: 10 questions x 6 architectures, valid labels."""
    labels = load_labels(sheet)
    assert len(labels) == 60 and labels.groupby("architecture").size().eq(10).all()
    assert labels["qid"].nunique() == 10
