"""Why an answer is wrong, walked through on three real answers of the default run (notebook 06):
the 1.5B model's answers as the hand-labelled sheet keeps them (benchmarks/labels), scored here by
the two judges `helpers diagnose` reads (correctness, context recall), read through the shipped
cuts, and set beside the person's verdict from the same sheets.

    bm25 q2     right: first visit in the first trimester, ideally before week 10
    rerank q2   the same question, the reference's sentence in context [2], and a wrong answer:
                the generator lost it (a retriever change would not help)
    bm25 q1     wrong, and no retrieved passage holds the reference: the retriever lost it
"""

from __future__ import annotations

import pandas as pd

from helpers.experiment.diagnosis import SHIPPED, person_verdicts, verdict
from helpers.paths import PROJECT_ROOT
from helpers.teaching.exercises import exercise

SHEET = PROJECT_ROOT / "benchmarks" / "labels" / "obstetrics-qwen2.5-coder-1.5b.csv"
CONTEXTS_SHEET = SHEET.with_name(f"contexts-{SHEET.name}")
THREE = (("bm25", "q2"), ("rerank", "q2"), ("bm25", "q1"))  # (architecture, qid): right, generation, retrieval


def three_answers(picked=THREE) -> pd.DataFrame:
    """The picked answers with their question, reference, contexts, the two judges' scores, our
    verdict and its evidence, and the person's verdict (their `correct` and `context` labels)."""
    from helpers.data import load_dataset
    from helpers.data.contracts import Sample
    from helpers.judges.judge_base import JudgeContext, judge_class

    sheet = pd.read_csv(SHEET, dtype=str, keep_default_na=False)
    contexts = pd.read_csv(CONTEXTS_SHEET, dtype=str, keep_default_na=False)
    sheet = sheet.merge(contexts[["architecture", "qid", "context"]], on=["architecture", "qid"])
    sheet = sheet.set_index(["architecture", "qid"]).loc[list(picked)].reset_index()
    data = load_dataset("obstetrics")
    judges = [
        judge_class(name)(context=JudgeContext(language=data.language)) for name in ("correctness", "context_recall")
    ]
    for judge in judges:
        judge.prepare()
    rows = []
    for r in sheet.itertuples():
        passages = tuple(data.corpus[d]["text"] for d in r.context_ids.split())
        sample = Sample(r.qid, data.queries[r.qid], r.answer, passages, data.answers[r.qid])
        scores = {
            metric: (value, reason) for judge in judges for metric, value, reason in judge.score_sample(sample)[0]
        }
        ours, evidence = verdict(
            scores["correctness"][0], scores["context_recall"][0], scores["context_recall"][1], False, SHIPPED
        )
        rows.append(
            {
                "architecture": r.architecture,
                "qid": r.qid,
                "question": sample.question,
                "reference": sample.reference,
                "answer": r.answer,
                "contexts": [f"[{i}] {text[:160]}" for i, text in enumerate(passages, 1)],
                "correctness": round(scores["correctness"][0], 3),
                "context_recall": round(scores["context_recall"][0], 3),
                "verdict": ours,
                "evidence": evidence,
                "correct (person)": r.correct,
                "in contexts (person)": r.context,
            }
        )
    frame = pd.DataFrame(rows)
    people = frame.rename(columns={"correct (person)": "correct", "in contexts (person)": "reference_in_contexts"})
    return frame.assign(**{"person's verdict": person_verdicts(people)})


TOPIC = "06-compare-architectures"
exercise(
    "diagnosis-verdict",
    TOPIC,
    "An answer scores correctness 0.10; context recall 0.997, its reason 'statement 1: in context [2] (1.00)'. "
    "Read through the shipped cuts, what is its verdict?",
    lambda: verdict(0.10, 0.997, "statement 1: in context [2] (1.00)", False, SHIPPED)[0],
    "correctness below its cut: wrong; context recall above the 'holds' band: the contexts had it",
)
_HOLDS_ZONE = SHIPPED["holds"].zone
assert _HOLDS_ZONE is not None  # the shipped cuts carry their zone (helpers.experiment.diagnosis_cuts)
exercise(
    "diagnosis-cannot-tell",
    TOPIC,
    "A run on documents unlike the calibration corpora: a third of its context recalls fall where the "
    "corpora put the 'holds' cut differently (its zone). One wrong answer (correctness 0.05) has context "
    "recall 0.80. What does diagnose say?",
    lambda: verdict(0.05, 0.80, "", False, {**SHIPPED, "holds": SHIPPED["holds"].widened()})[0],
    f"the 'holds' cut is {SHIPPED['holds'].high:.3f}, its zone {_HOLDS_ZONE[0]:.3f}-"
    f"{_HOLDS_ZONE[1]:.3f}: more than a fifth of a run's scores in the zone widens the cut to it",
)
