"""Score a DataFrame of answers with any registered judge, as a ragas or DeepEval user would:

    import helpers
    result = helpers.evaluate(df, judges=["correctness", "ragas"], llm={"provider": "groq", ...})
    result.scores    # long: id, judge, metric, value, reason (NaN with the reason when a score fails)
    result.summary   # per judge and metric: n, NaN, mean, its bootstrap interval, the judge's validity

Columns: ragas's names (`user_input`, `response`, `retrieved_contexts`, `reference`) or ours
(`question`, `answer`, `contexts`, `reference`); `id` optional (row1, row2, ... when missing);
`architecture` optional (answers of several systems side by side); `answerable` optional (`false`:
the documents do not answer the question, and a refusal is its right answer, as in a run's
questions file). `contexts` is a list of strings
per row, or its JSON text (as a CSV holds it). A judge that calls an LLM (ragas, trace_llm,
ragchecker_llm, ...) uses `llm`: an `helpers.llm.LLM`, or its config as a dict. `helpers judge FILE`
is this over a file (helpers.judges.external).

The validity column says how far people agree with each judge's metric on hand-labelled answers
(helpers.judges.validity): a score whose judge 'cannot tell' is not evidence.
"""

from __future__ import annotations

import ast
import json
import math
from dataclasses import dataclass

import pandas as pd

from helpers.data.contracts import Sample
from helpers.data.questions import NOT_ANSWERABLE
from helpers.errors import UserError
from helpers.inference.classical import MIN_INTERVAL_N, bootstrap_ci
from helpers.judges import validity
from helpers.judges.judge_base import JUDGES, JudgeContext, judge_sample
from helpers.languages import corpus_language, detect

RAGAS_NAMES = {"user_input": "question", "response": "answer", "retrieved_contexts": "contexts"}
REQUIRED = ("question", "answer", "contexts")
LONG_COLUMNS = ["id", "judge", "metric", "value", "reason"]
LLM_NAME = "evaluate"  # the name an LLM judge's options give the one LLM of an evaluation


@dataclass
class Evaluation:
    """The scores, long (LONG_COLUMNS, with `architecture` after `id` when the answers had one),
    and their summary per judge and metric."""

    scores: pd.DataFrame
    summary: pd.DataFrame


def _text(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def _contexts(where: str, value) -> list[str]:
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError as exc:
            try:  # a Python list as str() writes it (['a', 'b']): read as a literal, never evaluated
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                raise UserError(
                    f"{where}, column 'contexts': not a JSON list of strings ({exc.msg}); "
                    'write ["first passage", "second"]'
                ) from None
    if hasattr(value, "tolist") and not isinstance(value, str):  # a numpy array from a parquet file
        value = value.tolist()
    if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
        raise UserError(
            f"{where}, column 'contexts': a JSON list of strings is needed, got {type(value).__name__}; "
            'write ["first passage", "second"]'
        )
    return value


def answers_from_frame(
    frame: pd.DataFrame, *, source: str = "the DataFrame", first_row: int = 1, row_word: str = "row"
):
    """The rows of `frame` as answers (qid, question, answer, contexts, reference, architecture),
    checked: the columns present, ids unique, a question on every row, contexts a list of strings.
    An error names `source`, the row (numbered from `first_row`) and the column."""
    frame = frame.rename(columns={k: v for k, v in RAGAS_NAMES.items() if k in frame.columns})
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise UserError(
            f"{source}: missing column(s) {missing}; the columns are question, answer, contexts [, reference, id] "
            "(or ragas's user_input, response, retrieved_contexts [, reference])"
        )
    if frame.empty:
        raise UserError(f"{source}: no answers in it")
    answers: list = []
    seen: dict = {}
    for i, row in enumerate(frame.to_dict("records")):
        where = f"{source}: {row_word} {row.pop('_line', i + first_row)}"
        if not _text(row.get("question")).strip():
            raise UserError(f"{where}, column 'question': empty; every row needs one")
        qid = _text(row.get("id")).strip() if "id" in frame.columns else f"row{i + 1}"
        if not qid:
            raise UserError(f"{where}, column 'id': empty; every row needs one (or leave the column out)")
        architecture = _text(row.get("architecture")).strip() or None
        if (qid, architecture) in seen:
            also = f" of architecture {architecture!r}" if architecture else ""
            raise UserError(
                f"{where}, column 'id': {qid!r} is also the id{also} of {seen[qid, architecture]}; ids must be unique"
            )
        seen[qid, architecture] = where.rsplit(": ", 1)[-1]
        reference = _text(row.get("reference")).strip()
        answers.append(
            {
                "qid": qid,
                "question": _text(row["question"]),
                "answer": _text(row.get("answer")),
                "contexts": _contexts(where, row["contexts"]),
                "reference": reference or None,
                "architecture": architecture,
                # `answerable: false` as in a questions file: the documents do not answer it
                "unanswerable": _text(row.get("answerable")).strip().lower() in NOT_ANSWERABLE,
            }
        )
    return answers


def guess_language(texts: list[str]) -> str:
    """The texts' ISO 639-1 code by the package's one detector (helpers.languages.detect, py3langid):
    the judges then stem and drop stop words as that language does (helpers.languages's
    `corpus_language`: English's texts where it has none of its own)."""
    return detect([t for t in texts if t])["code"]


class OneLLM:
    """The LLM source (helpers.judges.judge_base.LLMSource) of an evaluation: every judge's LLM is `llm`."""

    def __init__(self, llm):
        from helpers.llm import LLM  # the LLM layer: loaded only when a judge needs one

        self._llm = llm if isinstance(llm, LLM) else LLM(llm)

    def llm(self, name):
        return self._llm

    def llm_copy(self, name):
        from helpers.llm import LLM

        return LLM(self._llm.config)


def usable_judges(*, with_llm: bool) -> list[str]:
    """Judges that score an answer from its question, contexts and reference (the retrieval
    metrics need qrels and a ranking); those that call an LLM only `with_llm`."""
    return [name for name, judge in JUDGES.items() if judge.stored and (with_llm or not judge.uses_llm)]


def score_answers(
    answers: list[dict], judges=None, *, llm=None, options: dict | None = None, language: str | None = None, log=print
) -> pd.DataFrame:
    """Long scores of `answers` (answers_from_frame's records) by each judge in `judges` (default:
    every judge that needs no LLM and can be loaded here), through the path a run takes
    (judge_sample: NaN with the reason for a missing field or a failure, ranges checked)."""
    usable = usable_judges(with_llm=True)
    chosen = list(judges) if judges else usable_judges(with_llm=False)
    unknown = [j for j in chosen if j not in usable]
    if unknown:
        raise UserError(f"judge(s) {unknown} cannot score answers without a run; valid names: {usable}")
    calls_llm = [j for j in chosen if JUDGES[j].uses_llm]
    if calls_llm and llm is None:
        raise UserError(
            f"judge(s) {calls_llm} call an LLM: pass llm=LLM(...) or its config (helpers judge: --llm "
            f'\'{{"provider": "local"}}\'); judges that need none: {usable_judges(with_llm=False)}'
        )
    language = language or guess_language([a["question"] for a in answers] + [a["answer"] for a in answers])
    context = JudgeContext(language=language, llms=OneLLM(llm) if calls_llm else None)
    rows = []
    for name in chosen:
        judge_options = dict((options or {}).get(name) or {})
        if JUDGES[name].uses_llm and "llm" in JUDGES[name].Options.model_fields:
            judge_options.setdefault("llm", LLM_NAME)  # a run names one of its llms; here there is one
        judge = JUDGES[name](judge_options, context=context)
        try:
            judge.prepare()
        except UserError as exc:
            if judges:  # asked for by name: say why it cannot run
                raise
            log(f"skipped judge {name}: {exc}")
            continue
        for sample in filter(judge.wants, samples(answers, language)):
            values, _, _ = judge_sample(judge, sample)
            rows += [
                {"id": sample.qid, "architecture": sample.architecture, "judge": name, "metric": m, "value": v}
                | {"reason": r}
                for m, v, r in values
            ]
    grouped = any(a.get("architecture") for a in answers)  # an architecture column only where answers had one
    return pd.DataFrame(rows, columns=["id", "architecture", *LONG_COLUMNS[1:]] if grouped else LONG_COLUMNS)


def samples(answers: list[dict], language: str = "en") -> list[Sample]:
    """The records as the samples every judge scores. A question is unanswerable as in a run
    (helpers.data.contracts.Dataset.mark_unanswerable): marked `answerable: false`, or its reference
    says the documents do not answer it; without a reference it gets the language's."""
    lang, built = corpus_language(language), []
    for a in answers:
        unanswerable, reference = lang.unanswered(a["reference"], marked=bool(a.get("unanswerable")))
        built.append(
            Sample(
                a["qid"],
                a["question"],
                a["answer"],
                a["contexts"],
                reference,
                architecture=a.get("architecture") or "external",
                unanswerable=unanswerable,
            )
        )
    return built


NO_DATA = "no data: no answer scored"  # a metric with n = 0 has nothing for people to agree with
# what the summary's validity column is about: the judge, on others' answers, not these
VALIDITY_MEANING = (
    "validity: how far people agree with the judge on hand-labelled answers of the shipped table "
    "(helpers/judges/validity.csv), not on these answers; 'cannot tell' and 'not checked': the score is no "
    "evidence (docs/glossary.md)"
)


def summarize_scores(scores: pd.DataFrame, *, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Per judge and metric: answers scored, NaN, mean and its bootstrap interval (none under
    helpers.inference.classical.MIN_INTERVAL_N answers), and `validity`: how far people agree with the judge on
    the hand-labelled answers of helpers/judges/validity.csv (VALIDITY_MEANING), NO_DATA where no
    answer was scored."""
    rows = []
    for (judge, metric), part in scores.groupby(["judge", "metric"], sort=False):
        values = pd.to_numeric(part["value"], errors="coerce").dropna().to_numpy(float)
        mean, low, high = bootstrap_ci(values, confidence=confidence, seed=seed) if len(values) else (float("nan"),) * 3
        if len(values) < MIN_INTERVAL_N:
            low = high = float("nan")
        rows.append(
            {
                "judge": judge,
                "metric": metric,
                "n": len(values),
                "nan": int(len(part) - len(values)),
                "mean": mean,
                "ci_low": low,
                "ci_high": high,
                "validity": validity.status(judge, metric) if len(values) else NO_DATA,
            }
        )
    return pd.DataFrame(rows, columns=["judge", "metric", "n", "nan", "mean", "ci_low", "ci_high", "validity"])


def evaluate(
    data,
    judges=None,
    *,
    llm=None,
    options: dict | None = None,
    language: str | None = None,
    confidence: float = 0.95,
) -> Evaluation:
    """Score `data` (a DataFrame, or records as a list of dicts) with `judges` (default: every
    judge that needs no LLM). `llm`: the LLM the LLM judges call (an LLM or its config dict).
    `options`: {judge: its options} (e.g. {"ragas": {"metrics": ["faithfulness"]}}). `language`:
    an ISO 639-1 code (default: detected from the questions and answers)."""
    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(list(data))
    answers = answers_from_frame(frame)
    scores = score_answers(answers, judges, llm=llm, options=options, language=language)
    return Evaluation(scores, summarize_scores(scores, confidence=confidence))
