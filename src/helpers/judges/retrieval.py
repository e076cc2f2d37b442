"""Retrieval quality of each answer's ranking against the dataset's qrels: nDCG, recall and MRR
at the run's k (ranx's definitions, Bassani 2022; nDCG with linear gains, Järvelin & Kekäläinen 2002).
Computed from the answers at the end of every invocation (it costs nothing), never stored."""

from __future__ import annotations

from helpers.judges.judge_base import Judge, Metric, register, score_row
from helpers.retrieval.evaluation.metrics import per_query

KINDS = ("ndcg", "recall", "mrr")


@register
class Retrieval(Judge):
    name, label = "retrieval", "retrieval against the qrels"
    order = 110  # where reports, summaries and panels list it
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

    requires = ()  # a run's rankings, read whole in `score`

    def score(self, samples):
        """Rows of every sample whose question has qrels; a failed answer scores nothing (its
        failure is recorded with it)."""
        k, qrels = self.config.retrieval.k, self.context.qrels
        runs: dict[tuple, dict] = {}
        for sample in samples:
            if not qrels.get(sample.qid) or sample.error:
                continue
            doc_ids = sample.retrieved if sample.retrieved is not None else sample.context_ids  # the top k
            ranking = {doc_id: 1.0 / rank for rank, doc_id in enumerate(list(doc_ids)[:k], 1)}
            runs.setdefault((sample.architecture, sample.llm), {})[sample.qid] = ranking
        metrics = [m.name for m in self.metrics_for(self.config)]
        rows = []
        for (architecture, llm), run in runs.items():
            for qid, values in per_query(qrels, run, metrics).items():
                rows += [
                    score_row(architecture=architecture, llm=llm, judge=self.name, qid=qid, metric=metric, value=value)
                    for metric, value in values.items()
                ]
        return rows
