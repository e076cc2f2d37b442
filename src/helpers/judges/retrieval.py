"""Retrieval quality of each answer's ranking against the dataset's qrels: nDCG, recall and MRR
at the run's k (ranx's definitions, Bassani 2022; nDCG with linear gains, Järvelin & Kekäläinen 2002).
Computed from the answers at the end of every invocation (it costs nothing), never stored."""

from __future__ import annotations

from helpers.judges.base import Judge, Metric, register, score_row
from helpers.retrieval.evaluation.metrics import per_query

KINDS = ("ndcg", "recall", "mrr")


@register
class Retrieval(Judge):
    name, label = "retrieval", "retrieval against the qrels"
    stored = False

    @classmethod
    def enabled(cls, config) -> bool:
        return True  # wherever the dataset has qrels; answers without them score nothing

    @classmethod
    def switch(cls, judges, on, llm=None):
        pass  # always on where the dataset has qrels

    @classmethod
    def is_quality(cls, metric: str) -> bool:
        return metric.split("@")[0] in KINDS  # at whatever k the run used

    @classmethod
    def metrics_for(cls, config=None):
        k = config.retrieval.k if config is not None else "k"
        return tuple(Metric(f"{kind}@{k}", validated_by="qrels") for kind in KINDS)

    def score(self, answers):
        """Rows of every answer whose question has qrels; a failed answer scores nothing (its
        failure is recorded with it)."""
        k, qrels = self.config.retrieval.k, self.data.qrels
        runs: dict[tuple, dict] = {}
        for answer in answers:
            if not qrels.get(answer["qid"]) or answer.get("error"):
                continue
            doc_ids = answer.get("retrieved")  # the ranking's top k; older records: the contexts given
            if doc_ids is None:
                doc_ids = [c["doc_id"] for c in sorted(answer.get("contexts") or [], key=lambda c: c.get("rank", 0))]
            ranking = {doc_id: 1.0 / rank for rank, doc_id in enumerate(list(doc_ids)[:k], 1)}
            runs.setdefault((answer["architecture"], answer["llm"]), {})[answer["qid"]] = ranking
        metrics = [m.name for m in self.metrics_for(self.config)]
        rows = []
        for (architecture, llm), run in runs.items():
            for qid, values in per_query(qrels, run, metrics).items():
                rows += [
                    score_row(architecture=architecture, llm=llm, judge=self.name, qid=qid, metric=metric, value=value)
                    for metric, value in values.items()
                ]
        return rows
