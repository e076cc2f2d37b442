"""Judging answers that came from elsewhere (a user's own RAG system), with any registered judge
that needs neither an LLM nor a run:

    python -m helpers judge answers.csv [--judges correctness,context_recall] [--out scores.csv]

The file (CSV or JSONL) has one answer per row: `id`, `question`, `answer`, `contexts` (a JSON list
of strings: the passages the answer was written from) and, optionally, `reference` (the answer a
person expects; correctness and context recall need it). A malformed row is an error naming the
row and the column, never a silent drop. Scores come back long (`id, judge, metric, value, reason`);
a judge that fails on one answer leaves NaN with the error as its reason and goes on.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pandas as pd

from helpers.data.contracts import Sample
from helpers.errors import UserError
from helpers.judges.base import JUDGES, JudgeContext, judge_sample
from helpers.stats import MIN_INTERVAL_N, bootstrap_ci

REQUIRED = ("id", "question", "answer", "contexts")
LONG_COLUMNS = ["id", "judge", "metric", "value", "reason"]
# words that tell Spanish from English in a few questions (the judges' stemmers and stop words)
_SPANISH = {
    "el",
    "la",
    "los",
    "las",
    "de",
    "del",
    "que",
    "en",
    "y",
    "para",
    "con",
    "por",
    "una",
    "es",
    "se",
    "cuál",
    "qué",
}
_ENGLISH = {"the", "of", "and", "to", "in", "is", "for", "with", "what", "which", "how", "are", "a", "an", "it"}


def _row_error(path: Path, where: str, column: str, problem: str) -> UserError:
    return UserError(f"{path}: {where}, column '{column}': {problem}")


def _contexts(path: Path, where: str, value) -> list[str]:
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError as exc:
            raise _row_error(
                path, where, "contexts", f'not a JSON list of strings ({exc.msg}); write ["first passage", "second"]'
            ) from None
    if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
        raise _row_error(
            path,
            where,
            "contexts",
            f'a JSON list of strings is needed, got {type(value).__name__}; write ["first passage", "second"]',
        )
    return value


def read_answers(path: str | Path) -> list[dict]:
    """The rows of a CSV or JSONL answers file, checked: the columns present, ids unique and not
    empty, a question on every row, `contexts` a JSON list of strings. Rows are numbered as a
    spreadsheet shows them (the header is row 1) or by line for JSONL."""
    path = Path(path)
    if not path.is_file():
        raise UserError(
            f"{path}: answers file not found (a CSV or JSONL with columns {', '.join(REQUIRED)} [, reference])"
        )
    if path.suffix.lower() == ".csv":
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            columns = reader.fieldnames or []
            rows = [(f"row {i}", row) for i, row in enumerate(reader, 2)]
    elif path.suffix.lower() in (".jsonl", ".json"):
        rows = []
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise UserError(f"{path}: line {i}: not a JSON object ({exc.msg})") from None
            if not isinstance(record, dict):
                raise UserError(f"{path}: line {i}: not a JSON object")
            rows.append((f"line {i}", record))
        columns = sorted({k for _, r in rows for k in r})
    else:
        raise UserError(f"{path}: unknown format {path.suffix!r}; write a .csv or a .jsonl file")
    missing = [c for c in REQUIRED if c not in columns]
    if missing:
        raise UserError(f"{path}: missing column(s) {missing}; the columns are {', '.join(REQUIRED)} [, reference]")
    if not rows:
        raise UserError(f"{path}: no answers in the file")
    answers, seen = [], {}
    for where, row in rows:
        for column in ("id", "question"):
            if row.get(column) is None or not str(row[column]).strip():
                raise _row_error(path, where, column, "empty; every row needs one")
        qid = str(row["id"]).strip()
        architecture = str(row.get("architecture") or "").strip() or None  # answers of several systems
        if (qid, architecture) in seen:
            also = f" of architecture {architecture!r}" if architecture else ""
            raise _row_error(
                path, where, "id", f"{qid!r} is also the id{also} of {seen[qid, architecture]}; ids must be unique"
            )
        seen[qid, architecture] = where
        reference = row.get("reference")
        answers.append(
            {
                "qid": qid,
                "question": str(row["question"]),
                "answer": "" if row.get("answer") is None else str(row["answer"]),
                "contexts": _contexts(path, where, row["contexts"]),
                "reference": str(reference).strip() if reference is not None and str(reference).strip() else None,
                "architecture": architecture,
            }
        )
    return answers


def guess_language(texts: list[str]) -> str:
    """'es' or 'en', by which language's commonest words the texts use more."""
    words = re.findall(r"[^\W\d_]+", " ".join(texts).lower())
    return "es" if sum(w in _SPANISH for w in words) > sum(w in _ENGLISH for w in words) else "en"


def standalone_judges() -> list[str]:
    """Registered judges that score an answer from its question, contexts and reference alone: no
    LLM, no run (retrieval metrics need qrels and a ranking; RAGAS and the LLM TRACe judge, an LLM)."""
    return [name for name, judge in JUDGES.items() if judge.stored and not judge.uses_llm]


def samples(answers: list[dict]) -> list[Sample]:
    """read_answers' records as the samples every judge scores."""
    return [
        Sample(
            a["qid"],
            a["question"],
            a["answer"],
            a["contexts"],
            a["reference"],
            architecture=a.get("architecture") or "external",
        )
        for a in answers
    ]


def judge_answers(answers: list[dict], judges: list[str] | None = None, *, language: str | None = None) -> pd.DataFrame:
    """Long scores (LONG_COLUMNS) of `answers` (read_answers' records) by each judge in `judges`
    (default: every standalone judge that can be loaded here), through the path a run takes
    (Judge.score_sample: NaN with the reason for a missing field, ranges checked, failures recorded)."""
    usable = standalone_judges()
    chosen = judges or usable
    unknown = [j for j in chosen if j not in usable]
    if unknown:
        raise UserError(f"judge(s) {unknown} cannot score answers from a file; valid names: {usable}")
    language = language or guess_language([a["question"] for a in answers] + [a["answer"] for a in answers])
    context = JudgeContext(language=language)  # no run: no run config, no qrels, no LLM
    rows = []
    for name in chosen:
        judge = JUDGES[name](context=context)
        try:
            judge.prepare()
        except UserError as exc:
            if judges:  # asked for by name: say why it cannot run
                raise
            print(f"skipped judge {name}: {exc}")
            continue
        for sample in filter(judge.wants, samples(answers)):
            values, _, _ = judge_sample(judge, sample)
            rows += [
                {"id": sample.qid, "architecture": sample.architecture, "judge": name, "metric": m, "value": v}
                | {"reason": r}
                for m, v, r in values
            ]
    # an `architecture` column only where the answers had one (helpers diagnose groups by it)
    grouped = any(a.get("architecture") for a in answers)
    return pd.DataFrame(rows, columns=["id", "architecture", *LONG_COLUMNS[1:]] if grouped else LONG_COLUMNS)


def summarize_scores(scores: pd.DataFrame, *, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Per judge and metric: answers scored, NaN, mean and its bootstrap interval (none under
    helpers.stats.MIN_INTERVAL_N answers)."""
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
            }
        )
    return pd.DataFrame(rows, columns=["judge", "metric", "n", "nan", "mean", "ci_low", "ci_high"])
