"""`helpers.diagnose(df)`: why the answers of a DataFrame fail, as `helpers diagnose` says it of a run.

    import helpers
    result = helpers.diagnose(df)                # answers: question, answer, contexts, reference
    result = helpers.diagnose(helpers.evaluate(df, judges=["correctness", "context_recall", "refusal"]))
    print(result)        # per architecture: correct / retrieval / generation / ... with intervals
    result.answers       # id, architecture, verdict, evidence: one row per answer with a reference
    result.table         # architecture, n, verdict, count, share, low, high (Clopper-Pearson)

`data` is what `helpers.evaluate` takes (the answers are then judged by correctness, context_recall
and refusal, the judges the verdicts read), its `Evaluation`, or its long scores. The verdicts and
the cuts are helpers.experiment.diagnosis's; `cuts_from` (a labels CSV) fits the cuts on a
person's labels, and `labels` compares the verdicts with a person's (Cohen's kappa).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from helpers.errors import UserError
from helpers.experiment import diagnosis
from helpers.judges.evaluate import Evaluation, answers_from_frame, score_answers

JUDGES = ["correctness", "context_recall", "refusal"]  # what the verdicts read


@dataclass
class Diagnosis:
    """The verdicts of the answers (`answers`), their shares per architecture with intervals
    (`table`), the cuts they were read with (`bands`), and, with `labels`, the agreement with a
    person's verdicts: (confusion table, Cohen's kappa, answers both decide)."""

    table: pd.DataFrame
    answers: pd.DataFrame
    bands: dict
    agreement: tuple[pd.DataFrame, float, int] | None = None

    def __str__(self) -> str:
        text = diagnosis.format_table(self.table, self.bands)
        if self.agreement is not None:
            confusion, kappa, n = self.agreement
            text += f"\n\nAgainst the person's labels (Cohen's kappa {kappa:.2f} on {n} answers both decide):\n"
            text += confusion.to_string()
        return text


def _is_long(frame: pd.DataFrame) -> bool:
    return {"judge", "metric", "value"} <= set(frame.columns)


def judged_wide(answers: list[dict], language: str | None = None) -> pd.DataFrame:
    """Answers (answers_from_frame's records) judged by the verdicts' judges, one row per answer as
    diagnose reads them, with each answer's question, answer, contexts and reference beside its
    scores (a generation verdict quotes the answer; an intervention answers the question again)."""
    wide = diagnosis.wide_from_judged(score_answers(answers, JUDGES, language=language))
    by_key = {(a["qid"], a["architecture"] or "answers"): a for a in answers}
    for column in ("question", "answer", "contexts", "reference"):
        wide[column] = [by_key[key][column] for key in zip(wide["id"], wide["architecture"])]
    return wide


def diagnose(
    data,
    *,
    labels: str | Path | None = None,
    cuts_from: str | Path | None = None,
    confidence: float = 0.95,
    language: str | None = None,
) -> Diagnosis:
    """Each answer's verdict (correct, retrieval, generation, refused, unanswerable, cannot tell)
    and their shares per architecture. `data`: answers (a DataFrame or records, as
    `helpers.evaluate` takes them; judged here, no LLM), an `Evaluation`, or its long scores.
    `labels`: a person's labels (correct, reference_in_contexts) to compare with; `cuts_from`: labels
    to fit the judges' cuts on (default: the shipped cuts). `language`: as in `helpers.evaluate`."""
    if isinstance(data, Evaluation):
        wide = diagnosis.wide_from_judged(data.scores)
    elif isinstance(data, pd.DataFrame) and _is_long(data):
        wide = diagnosis.wide_from_judged(data)
    else:
        wide = judged_wide(
            answers_from_frame(data if isinstance(data, pd.DataFrame) else pd.DataFrame(list(data))), language
        )
    if cuts_from is not None and not Path(cuts_from).is_file():
        raise UserError(f"cuts_from={str(cuts_from)!r}: labels file not found")
    bands = diagnosis.bands_for(wide, cuts_from)
    answers = diagnosis.verdicts(wide, bands)
    if answers.empty:
        raise UserError("no answer has a correctness score (no reference): nothing to diagnose")
    table = diagnosis.verdict_table(answers, confidence=confidence)
    agreement = diagnosis.agreement(answers, labels) if labels is not None else None
    return Diagnosis(table, answers, bands, agreement)
