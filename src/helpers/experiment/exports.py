"""Files a run derives from its scores: the TRACe summary in the seed guide's JSON shape, one file
per TRACe judge that scored (`trace.json` for the offline judge, `trace-llm.json` for the LLM judge).
Retrieval quality against qrels is the `retrieval` judge (helpers.judges.retrieval)."""

from __future__ import annotations

SEED_ORDER = ("utilization", "relevance", "adherence", "completeness")  # the seed guide's key order
TRACE_FILES = {"offline": "trace.json", "trace_llm": "trace-llm.json"}  # TRACe judge -> its file in the run


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
        out[architecture] = {
            **means,
            "average": round(sum(known) / len(known), 4) if known else None,
            "num_samples": int(wide.notna().all(axis=1).sum()),
            "individual_scores": individual,
        }
    return out
