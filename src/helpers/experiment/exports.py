"""Rows and files a run derives from its answers: retrieval quality where the dataset has qrels
(judge `retrieval`), and the TRACe summary in the seed guide's JSON shape (`trace.json`)."""
from __future__ import annotations

import math


SEED_ORDER = ("utilization", "relevance", "adherence", "completeness")   # the seed guide's key order


def retrieval_values(doc_ids: list[str], relevant: dict[str, int]) -> dict[str, float]:
    """nDCG, recall and MRR of a ranking's top k (`doc_ids`, in rank order) against graded `relevant` {doc_id: grade}; nDCG with linear gains
    (Järvelin & Kekäläinen 2002), as ranx and trec_eval compute it."""
    k = len(doc_ids)
    gains = [relevant.get(d, 0) for d in doc_ids]
    dcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, 1))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal, 1))
    positives = {d for d, g in relevant.items() if g > 0}
    first = next((rank for rank, d in enumerate(doc_ids, 1) if d in positives), None)
    return {"ndcg": dcg / idcg if idcg else 0.0,
            "recall": len(positives & set(doc_ids)) / len(positives) if positives else 0.0,
            "mrr": 1.0 / first if first else 0.0}


def retrieval_rows(answers: list[dict], qrels: dict, k: int) -> list[dict]:
    """Score rows (judge 'retrieval', metrics ndcg@k, recall@k, mrr@k) of every answer whose
    question has qrels; a failed answer scores nothing (its failure is recorded with it)."""
    rows = []
    for answer in answers:
        relevant = qrels.get(answer["qid"])
        if not relevant or answer.get("error"):
            continue
        doc_ids = answer.get("retrieved")   # the ranking's top k; older records: the contexts given
        if doc_ids is None:
            doc_ids = [c["doc_id"] for c in sorted(answer.get("contexts") or [], key=lambda c: c.get("rank", 0))]
        doc_ids = list(doc_ids)[:k]
        for metric, value in retrieval_values(doc_ids, relevant).items():
            rows.append({"architecture": answer["architecture"], "llm": answer["llm"], "judge": "retrieval",
                         "qid": answer["qid"], "metric": f"{metric}@{k}", "value": value, "reason": ""})
    return rows


def trace_json(scores, judge: str = "offline") -> dict:
    """{architecture: the seed guide's TRACe result} from a run's long score table: the mean
    `utilization`, `relevance`, `adherence`, `completeness` and their `average`, `num_samples`,
    and `individual_scores` (one dict per sample, with its qid). Samples a judge could not score
    (NaN) are left out of the means and listed with None."""
    table = scores[(scores["judge"] == judge) & scores["metric"].isin(SEED_ORDER)]
    out = {}
    for architecture, part in table.groupby("architecture", sort=True):
        wide = part.pivot_table(index="qid", columns="metric", values="value", aggfunc="last", dropna=False)
        wide = wide.reindex(columns=list(SEED_ORDER))
        individual = []
        for qid, row in wide.iterrows():
            values = {m: (None if row[m] != row[m] else round(float(row[m]), 4)) for m in SEED_ORDER}
            known = [v for v in values.values() if v is not None]
            values["average"] = round(sum(known) / len(known), 4) if len(known) == len(SEED_ORDER) else None
            individual.append({"qid": str(qid), **values})
        means = {m: round(float(wide[m].mean()), 4) if wide[m].notna().any() else None for m in SEED_ORDER}
        known = [v for v in means.values() if v is not None]
        out[architecture] = {**means, "average": round(sum(known) / len(known), 4) if known else None,
                             "num_samples": int(wide.notna().all(axis=1).sum()), "individual_scores": individual}
    return out
