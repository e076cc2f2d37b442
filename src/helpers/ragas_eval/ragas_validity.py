"""Is ragas faithfulness, with our judge, a hallucination detector? Measured on RAGBench.

RAGBench (Friel et al. 2024, arXiv:2407.11005) labels each response: `adherence_score` is False
when some response sentence is unsupported by the documents (a hallucination). Low faithfulness
should flag those rows: AUROC of (1 - faithfulness) against `adherence_score == False`
(helpers.inference.classical.auroc; 0.5 = chance), with a percentile-bootstrap interval
(helpers.inference.classical.bootstrap_ci). The paper's own ragas run (GPT-3.5 judge) ships as the
`ragas_faithfulness` column, so the same rows give a reference AUROC.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from helpers.data import load_ragbench
from helpers.data.contracts import Sample
from helpers.inference.classical import auroc, bootstrap_ci


def sample_ragbench(
    subsets=("covidqa", "delucionqa", "emanual", "hotpotqa"),
    *,
    per_subset: int = 6,
    hallucinated_share: float = 0.5,
    seed: int = 0,
    max_context_chars: int | None = 6000,
    split: str = "test",
    ragbench_dir=None,
) -> pd.DataFrame:
    """A seeded sample of `per_subset` rows per subset, `hallucinated_share` of them with
    adherence False (hallucinations are 3-16% of the rows, so a plain random sample of a few rows
    would often hold none and AUROC would be undefined). `max_context_chars` drops rows whose
    documents are longer (a small local judge's context window; this biases toward short rows,
    reported by the caller). Rows without the shipped column are dropped."""
    rng = np.random.default_rng(seed)
    parts = []
    for subset in subsets:
        frame = load_ragbench(subset, split, ragbench_dir)
        frame = frame[frame["ragas_faithfulness"].notna()]
        if max_context_chars:
            frame = frame[frame["documents"].map(lambda docs: sum(map(len, docs))) <= max_context_chars]
        bad, good = frame[~frame["adherence_score"].astype(bool)], frame[frame["adherence_score"].astype(bool)]
        n_bad = min(len(bad), int(round(per_subset * hallucinated_share)))
        n_good = min(len(good), per_subset - n_bad)
        for group, n in ((bad, n_bad), (good, n_good)):
            if n:
                parts.append(group.iloc[np.sort(rng.choice(len(group), size=n, replace=False))])
    out = pd.concat(parts, ignore_index=True)
    # RAGBench ids repeat within a subset now and then: the row position keeps qids unique
    out["qid"] = out["subset"] + ":" + out["id"].astype(str) + ":" + out.index.astype(str)
    return out


def ragbench_samples(frame: pd.DataFrame) -> list[Sample]:
    return [Sample(row.qid, row.question, row.response, tuple(row.documents)) for row in frame.itertuples()]


def hallucination_auroc(labels_adherent, faithfulness) -> float:
    """AUROC of (1 - faithfulness) for detecting adherence == False; NaN if a class is missing."""
    return auroc(~np.asarray(labels_adherent, dtype=bool), 1.0 - np.asarray(faithfulness, dtype=float))


def hallucination_auroc_ci(
    labels_adherent, faithfulness, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """(AUROC, low, high): hallucination_auroc with a percentile-bootstrap interval over rows
    (helpers.inference.classical.bootstrap_ci; resamples holding one class are dropped)."""
    return bootstrap_ci(
        ~np.asarray(labels_adherent, dtype=bool),
        1.0 - np.asarray(faithfulness, dtype=float),
        statistic=auroc,
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
    )


def validity_table(
    frame: pd.DataFrame, ours: str = "ours_faithfulness", shipped: str = "ragas_faithfulness"
) -> pd.DataFrame:
    """Per subset and overall: rows, hallucinated rows, our NaNs, AUROC (ours, with bootstrap
    CI) and the shipped column's AUROC on the same rows (where ours is defined), plus the shipped
    column on every sampled row."""
    rows = []
    groups = [(subset, g) for subset, g in frame.groupby("subset")] + [("all", frame)]
    for name, g in groups:
        defined = g[g[ours].notna()]
        _, lo, hi = (
            hallucination_auroc_ci(defined["adherence_score"], defined[ours])
            if name == "all"
            else (np.nan, np.nan, np.nan)
        )
        rows.append(
            {
                "subset": name,
                "rows": len(g),
                "hallucinated": int((~g["adherence_score"].astype(bool)).sum()),
                "ours_nan": int(g[ours].isna().sum()),
                "auroc_ours": hallucination_auroc(defined["adherence_score"], defined[ours]),
                "auroc_ours_ci95": (round(lo, 3), round(hi, 3)),
                "auroc_shipped_same_rows": hallucination_auroc(defined["adherence_score"], defined[shipped]),
                "auroc_shipped_all_sampled": hallucination_auroc(g["adherence_score"], g[shipped]),
                "mean_ours": defined[ours].mean(),
                "mean_shipped": g[shipped].mean(),
            }
        )
    return pd.DataFrame(rows)


def shipped_auroc_full(
    subsets=("covidqa", "delucionqa", "emanual", "hotpotqa"), *, split: str = "test", ragbench_dir=None
) -> pd.DataFrame:
    """The shipped column's AUROC on every row of each split (no judge calls): the reference a
    small sample's numbers should be read against."""
    rows = []
    for subset in subsets:
        frame = load_ragbench(subset, split, ragbench_dir)
        frame = frame[frame["ragas_faithfulness"].notna()]
        rows.append(
            {
                "subset": subset,
                "rows": len(frame),
                "hallucinated": int((~frame["adherence_score"].astype(bool)).sum()),
                "auroc_shipped": hallucination_auroc(frame["adherence_score"], frame["ragas_faithfulness"]),
            }
        )
    return pd.DataFrame(rows)
