"""TRACe (RAGBench, Friel et al. 2024) with the offline judge: trained trees over lexical
features, stacked with the evidence model when one is trained (helpers.judges.models.trace_trees)."""

from __future__ import annotations

from helpers.judges.judge_base import Judge, Metric, register
from helpers.trace.scoring import METRICS as TRACE_METRICS

# TRACe's four scores in [0, 1]; `adherence` is the one that says whether the answer is supported
TRACE = tuple(Metric(m, grounding=(m == "adherence")) for m in TRACE_METRICS)


@register
class OfflineTrace(Judge):
    name, label = "offline", "offline TRACe judge"
    order = 10  # where reports, summaries and panels list it
    # adherence_score: P(supported) before the 0.5 threshold that makes `adherence`
    # its binary adherence is a threshold on adherence_score, P(supported): the score is the one to compare
    # its binary adherence is checked against people's `supported` labels too
    metrics = tuple(Metric(m.name, validated_by="supported" if m.grounding else None) for m in TRACE) + (
        Metric("adherence_score", grounding=True, quality=False, description="P(every sentence supported)"),
    )

    def prepare(self) -> None:
        from helpers.judges.models.trace_trees import OfflineJudge  # trees and, when trained, a torch model

        self.judge = OfflineJudge.load()  # stacked with the evidence model when one is trained
        self.artefact = self.judge.describe()
        print(f"offline TRACe judge: {self.artefact}")

    def score_one(self, sample):
        scores = self.judge.judge(sample.question, list(sample.contexts), sample.answer).scores
        values = {m: getattr(scores, m) for m in TRACE_METRICS} | {"adherence_score": scores.adherence_score}
        return [(m, v, "") for m, v in values.items()], None
