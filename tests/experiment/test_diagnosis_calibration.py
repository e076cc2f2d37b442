"""The cuts fitted on many corpora (helpers.experiment.diagnosis_calibration): every corpus weighing
the same, worked out by hand; one corpus left out; the items made without people."""

import pandas as pd
import pytest

from helpers.experiment import diagnosis_calibration as calibration
from helpers.experiment.diagnosis_cuts import band_from_labels


def _items():
    # A: eight items, cleanly apart (no up to 0.4, yes from 0.6); B: two, the other way round
    a = [(0.1, 0), (0.2, 0), (0.3, 0), (0.4, 0), (0.6, 1), (0.7, 1), (0.8, 1), (0.9, 1)]
    b = [(0.65, 0), (0.35, 1)]
    rows = [("A", s, bool(y)) for s, y in a] + [("B", s, bool(y)) for s, y in b]
    return pd.DataFrame(rows, columns=["corpus", "score", "label"]).assign(band="holds", origin="auto", language="es")


def test_every_corpus_weighs_the_same():
    """At precision 0.8. Pooled (B's two items count as two of ten): high 0.6 (from 0.6 up, 4 of 5
    yes), low 0.4 (up to 0.4, 4 of 5 no). Weighted (each of B's items 1/2, each of A's 1/8): from 0.6
    up the yes weigh 4/8 against B's no at 1/2, 0.5; from 0.7 up only yes: high 0.7; up to 0.4 the
    no weigh 4/8 against B's yes at 1/2; up to 0.3 only no: low 0.3."""
    items = _items()
    pooled = band_from_labels(items["score"], items["label"], precision=0.8)
    assert (pooled.low, pooled.high) == (0.4, 0.6)
    weighted = calibration.fit_band(items, precision=0.8)
    assert (weighted.low, weighted.high) == (0.3, 0.7)
    alone = items[items["corpus"] == "A"]  # one corpus: band_from_labels's cuts
    one = band_from_labels(alone["score"], alone["label"], precision=0.8)
    assert (calibration.fit_band(alone, precision=0.8).low, calibration.fit_band(alone, precision=0.8).high) == (
        one.low,
        one.high,
    )


def test_a_corpus_left_out_is_read_by_cuts_fitted_on_the_others():
    """Left out, B is read by A's cuts at 0.8, which cross (high 0.4: 4 of 5 yes from there; low
    0.6) and meet at 0.5: B's no at 0.65 reads yes, its yes at 0.35 reads no: kappa -1, nothing
    cannot tell. A left out is read by B's: B alone says yes below its no, so no cut reaches 0.8 on
    either side (high above every score, low below every one): all of A is cannot tell."""
    table = calibration.leave_one_out(_items(), "holds", precision=0.8).set_index("left_out")
    assert table.loc["B", ["low", "high", "cannot_tell", "kappa", "accuracy"]].tolist() == [0.5, 0.5, 0.0, -1.0, 0.0]
    a = table.loc["A"]
    assert (a["low"], a["high"], a["cannot_tell"], a["n"]) == (float("-inf"), float("inf"), 1.0, 8)
    assert pd.isna(a["kappa"]) and pd.isna(a["accuracy"])


def test_agreement_counts_what_it_cannot_tell_apart():
    from helpers.experiment.diagnosis_cuts import Band

    result = calibration.agreement(Band(0.3, 0.7, "t"), _items())
    # between 0.3 and 0.7 (exclusive): 0.4, 0.6, 0.65, 0.35: 4 of 10; the other 6 read right
    assert result == {"n": 10, "cannot_tell": pytest.approx(0.4), "kappa": 1.0, "accuracy": 1.0}
    with pytest.raises(ValueError, match="items of both kinds"):
        calibration.fit_band(_items()[lambda f: f["label"]])


def test_holds_items_put_the_gold_passage_in_and_keep_it_out():
    from helpers.data.contracts import Dataset

    corpus = {
        "g": {"text": "Folic acid is taken before conception and in the first trimester."},
        "d": {"text": "Folic acid dose and iron are discussed in the first visit."},
        "e": {"text": "Acid reflux is common in the third trimester."},
        "f": {"text": "Nothing about it."},
    }
    data = Dataset(
        "toy",
        "en",
        corpus,
        {"q": "When is folic acid taken?"},
        {"q": {"g": 1}},
        {"q": "Before conception and in the first trimester."},
    )
    positive, negative = calibration.holds_items(data, k=2, n=None)
    assert (positive["qid"], positive["label"], positive["contexts"][0]) == ("q+", 1, corpus["g"]["text"])
    assert len(positive["contexts"]) == 2 and corpus["g"]["text"] not in negative["contexts"]
    assert (negative["qid"], negative["label"], len(negative["contexts"])) == ("q-", 0, 2)
    assert negative["contexts"][0] == corpus["d"]["text"]  # BM25's best passage that is not gold
