"""`python -m helpers estimate`: the three estimates from a scores CSV and a labels CSV, and each bad
input's error (naming the file, column and fix) with nothing written."""

import json

import numpy as np
import pandas as pd
import pytest

from helpers.__main__ import main
from helpers.inference.ppi import paired_difference, three_estimates

ITEMS = [f"q{i}" for i in range(1, 9)]
SCORES = {
    "a": [0.9, 0.2, 0.8, 0.3, 0.7, 0.6, 0.1, 0.85],
    "b": [0.6, 0.1, 0.5, 0.2, 0.4, 0.5, 0.1, 0.3],
}
LABELS = {"a": ["yes", "no", "yes", "partly", "", "", "", ""], "b": ["yes", "no", "no", "no", "", "", "no", ""]}


@pytest.fixture
def files(tmp_path):
    scores = pd.DataFrame(
        [
            {"id": q, "architecture": a, "judge": "correctness", "metric": "correctness", "value": v, "reason": ""}
            for a, values in SCORES.items()
            for q, v in zip(ITEMS, values)
        ]
    )
    labels = pd.DataFrame(
        [{"id": q, "architecture": a, "correct": label} for a, row in LABELS.items() for q, label in zip(ITEMS, row)]
    )
    scores.to_csv(tmp_path / "scores.csv", index=False)
    labels.to_csv(tmp_path / "labels.csv", index=False)
    return tmp_path


def _run(capsys, *argv):
    code = main(["estimate", *map(str, argv)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_three_estimates_per_architecture_and_the_paired_difference(files, capsys):
    code, out, _ = _run(capsys, files / "scores.csv", "--labels", files / "labels.csv", "--json")
    assert code == 0
    result = json.loads(out)
    rows = {(r["architecture"], r["method"]): r for r in result["estimates"]}
    assert set(rows) == {(g, m) for g in ("a", "b", "(all architectures)", "b - a") for m in ("labels", "judge", "ppi")}
    assert rows[("(all architectures)", "labels")]["estimate"] == pytest.approx(3.5 / 9)  # the 9 labels pooled
    assert rows[("a", "labels")]["estimate"] == pytest.approx(2.5 / 4)  # yes, no, yes, partly
    assert (rows[("b", "ppi")]["n_labels"], rows[("b", "ppi")]["n_unlabelled"]) == (5, 3)
    value = {"yes": 1.0, "partly": 0.5, "no": 0.0, "": np.nan}
    la, lb = (np.array([value[x] for x in LABELS[k]]) for k in ("a", "b"))
    expected = {e.method: e for e in three_estimates(lb, SCORES["b"])}
    assert rows[("b", "ppi")]["low"] == pytest.approx(max(0.0, expected["ppi"].low))  # clipped to the labels' range
    assert rows[("b", "ppi")]["high"] == pytest.approx(expected["ppi"].high)
    difference = {e.method: e for e in paired_difference(lb, SCORES["b"], la, SCORES["a"])}
    assert rows[("b - a", "ppi")]["estimate"] == pytest.approx(difference["ppi"].estimate)
    assert rows[("b - a", "labels")]["n_labels"] == 4  # q7 is labelled for b only
    assert rows[("b - a", "judge")]["baseline"] == "a"


def test_the_text_table_and_figure(files, capsys):
    code, out, _ = _run(
        capsys, files / "scores.csv", "--labels", files / "labels.csv", "--figure", files / "est.png", "--baseline", "b"
    )
    assert code == 0
    assert "judge only (biased: not valid)" in out and "a - b" in out
    assert (files / "est.png").stat().st_size > 10_000


def test_labels_matching_no_score(files, capsys):
    pd.DataFrame({"id": ["x1", "x2"], "architecture": ["a", "a"], "correct": ["yes", "no"]}).to_csv(
        files / "other.csv", index=False
    )
    code, _, err = _run(capsys, files / "scores.csv", "--labels", files / "other.csv")
    assert code == 2
    assert (
        f"{files / 'other.csv'}: none of its 2 labelled answers matches a scored answer of {files / 'scores.csv'}"
        in err
    )


def test_a_label_outside_the_mapping(files, capsys):
    labels = pd.read_csv(files / "labels.csv", dtype=str, keep_default_na=False)
    labels.loc[1, "correct"] = "maybe"
    labels.to_csv(files / "labels.csv", index=False)
    code, _, err = _run(capsys, files / "scores.csv", "--labels", files / "labels.csv", "--figure", files / "e.png")
    assert code == 2
    assert "labels.csv: row 3, column 'correct': 'maybe' is not a label (yes = 1, partly = 0.5, no = 0" in err
    assert not (files / "e.png").exists()  # nothing written half


def test_a_missing_label_column(files, capsys):
    code, _, err = _run(capsys, files / "scores.csv", "--labels", files / "labels.csv", "--label", "supported")
    assert code == 2
    assert "no label column 'supported'; columns: ['id', 'architecture', 'correct']. Pass --label COLUMN" in err


def test_fewer_than_two_labels_in_a_group(files, capsys):
    labels = pd.read_csv(files / "labels.csv", dtype=str, keep_default_na=False)
    labels.loc[labels["architecture"] == "b", "correct"] = ["yes"] + [""] * 7
    labels.to_csv(files / "labels.csv", index=False)
    code, _, err = _run(capsys, files / "scores.csv", "--labels", files / "labels.csv")
    assert code == 2
    assert "architecture 'b' has 1 labelled answer(s) with a correctness/correctness score; at least 2" in err


def test_a_metric_no_judge_produced(files, capsys):
    code, _, err = _run(capsys, files / "scores.csv", "--labels", files / "labels.csv", "--metric", "faithfulness")
    assert code == 2
    assert (
        "metric 'faithfulness' was not produced by any judge (none); metrics there: ['correctness/correctness']" in err
    )


def test_a_file_without_architectures_is_one_group(files, capsys):
    scores = pd.read_csv(files / "scores.csv")
    scores[scores["architecture"] == "a"].drop(columns="architecture").to_csv(files / "one.csv", index=False)
    pd.DataFrame({"id": ITEMS[:4], "label": ["yes", "no", "1", "0.5"]}).to_csv(files / "l.csv", index=False)
    code, out, _ = _run(capsys, files / "one.csv", "--labels", files / "l.csv", "--json")
    assert code == 0
    rows = json.loads(out)["estimates"]
    assert {r["architecture"] for r in rows} == {"all"}
    assert next(r for r in rows if r["method"] == "labels")["estimate"] == pytest.approx(2.5 / 4)
