"""What a run's report shows, in every format (helpers.experiment.report_formats writes them):
`collect` reads results/<run_id>/ once into a RunReport, and the tables and lines built from it
(the per-question table, means with intervals, diagnostic patterns, paired comparisons, each
answer's scores and contexts)."""

from __future__ import annotations

import ast
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from helpers.experiment import analysis
from helpers.experiment.config import ExperimentConfig
from helpers.experiment.diagnosis import RunDiagnosis, answer_ids, run_diagnosis
from helpers.experiment.exports import trace_json
from helpers.experiment.run_summary import run_sections
from helpers.interpretation import detect

KEY = ["architecture", "llm", "qid"]  # one answer
TEXT_COLUMNS = ["question", "answer", "error"]  # what the per-question table shows of a record


@dataclass
class RunReport:
    """What every format shows of one run, read once from results/<run_id>/."""

    run_id: str
    config: ExperimentConfig | None  # the run's resolved config, typed (None: a folder without one)
    run_summary: dict  # summary.json
    scores: pd.DataFrame  # scores.parquet (long)
    records: pd.DataFrame  # records.parquet, contexts parsed back to lists
    summary: pd.DataFrame  # mean and interval per architecture x judge/metric
    comparisons: pd.DataFrame  # paired permutation tests against the baseline (Holm)
    differences: pd.DataFrame  # mean paired difference against the baseline and its interval
    seed: pd.DataFrame  # the seed benchmark's RAGAS table
    trace: dict  # the seed guide's TRACe JSON
    confidence: float
    # why each wrong answer failed (helpers.experiment.diagnosis.run_diagnosis: verdict table, answers,
    # cuts); None where no answer has a reference
    diagnosis: RunDiagnosis | None = None
    verdicts: dict = field(default_factory=dict)  # (architecture, llm, qid) -> (verdict, evidence)
    sections: list = field(default_factory=list)  # the summary every format shows (run_summary.run_sections)


def parse_contexts(value, details=None) -> list | str:
    """A records.parquet row's contexts as dicts (doc_id, rank, score, text): the JSON list of texts
    with the JSON list of their `context_details` beside it; a run written before both were JSON
    keeps the str() of a list of dicts, read back safely (ast.literal_eval); text that is neither stays."""
    if not isinstance(value, str):
        return list(value) if value is not None else []
    try:
        texts = json.loads(value)
    except json.JSONDecodeError:
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return value
        return parsed if isinstance(parsed, list) else value
    extra = json.loads(details) if isinstance(details, str) and details else [{} for _ in texts]
    return [dict(about, text=text) for about, text in zip(extra, texts)]


def _natural_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows by architecture, llm and question in natural order (q1, q2, ..., q10)."""
    if frame.empty:
        return frame
    return frame.sort_values(
        KEY, key=lambda col: col.map(analysis.natural_key) if col.name == "qid" else col, kind="stable"
    ).reset_index(drop=True)


def _records(directory: Path, scores: pd.DataFrame) -> pd.DataFrame:
    path = directory / "records.parquet"
    records = pd.read_parquet(path) if path.exists() else pd.DataFrame(columns=KEY + TEXT_COLUMNS + ["contexts"])
    records = records.drop(columns=["kind"], errors="ignore")
    if len(records):
        details = records["context_details"] if "context_details" in records else [None] * len(records)
        records["contexts"] = [parse_contexts(value, about) for value, about in zip(records["contexts"], details)]
        records = records.drop(columns=["context_details"], errors="ignore")
    else:
        records["contexts"] = []
    # answers scored but not in the records (an older run) still get their row
    missing = scores[KEY].drop_duplicates().merge(records[KEY], how="left", indicator=True)
    missing = missing[missing["_merge"] == "left_only"].drop(columns="_merge")
    if len(missing):  # (concatenating an empty frame would turn the integer columns to floats)
        records = pd.concat([records, missing.assign(contexts=[[] for _ in range(len(missing))])], ignore_index=True)
    return _natural_rows(records)


def _trace(directory: Path, scores: pd.DataFrame) -> dict:
    """The run's trace.json, else computed from its offline scores ({} without them)."""
    path = directory / "trace.json"
    trace = json.loads(path.read_text(encoding="utf-8")) if path.exists() else trace_json(scores)
    for entry in trace.values():
        entry["individual_scores"] = sorted(
            entry.get("individual_scores", []), key=lambda s: analysis.natural_key(s.get("qid"))
        )
    return trace


def collect(run_id: str, results_dir: Path | None = None) -> RunReport:
    directory = analysis.run_dir(run_id, results_dir)
    scores = analysis.load_scores(run_id, results_dir)  # names the runs there are when it has none
    if "llm" not in scores:
        scores = scores.assign(llm="")
    config = analysis.run_config(run_id, results_dir)
    summary_path = directory / "summary.json"
    confidence = analysis.statistics_settings(config).confidence
    diagnosis = run_diagnosis(run_id, results_dir, confidence=confidence, scores=scores)
    return RunReport(
        run_id=run_id,
        config=config,
        scores=scores,
        records=_records(directory, scores),
        run_summary=json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.exists() else {},
        summary=analysis.summary(scores, config),
        comparisons=analysis.comparisons(scores, config),
        differences=analysis.difference_intervals(scores, config),
        seed=analysis.seed_table(scores),
        trace=_trace(directory, scores),
        confidence=confidence,
        diagnosis=diagnosis,
        verdicts=_verdicts(diagnosis, scores),
        sections=run_sections(run_id, results_dir, diagnosis=diagnosis or False),
    )


# ---- tables every format shares


def _score_columns(scores: pd.DataFrame) -> list[tuple[str, str]]:
    """(judge, metric) pairs: quality judges first, the system's costs (latency, tokens) last."""
    pairs = scores[["judge", "metric"]].drop_duplicates()
    return sorted(map(tuple, pairs.to_numpy()), key=lambda p: (p[0] == "system", p[0], analysis.natural_key(p[1])))


def contexts_text(contexts) -> str:
    if isinstance(contexts, str):
        return contexts
    return "\n\n".join(
        f"[{c.get('rank', i)}] {c.get('doc_id', '')} (score {_number(c.get('score'))}): {c.get('text', '')}"
        for i, c in enumerate(contexts, 1)
    )


def answers_table(report: RunReport) -> pd.DataFrame:
    """One row per answer: question, answer, error, contexts, then a column per judge/metric and,
    where that judge gave any, `judge/metric reason`."""
    table = report.records.reindex(columns=KEY + TEXT_COLUMNS).copy()
    table["contexts"] = report.records["contexts"].map(contexts_text)
    scores = report.scores.assign(name=report.scores["judge"] + "/" + report.scores["metric"])
    values = scores.pivot_table(index=KEY, columns="name", values="value", aggfunc="last", dropna=False)
    reasons = scores.assign(reason=scores["reason"].fillna("").astype(str)).pivot_table(
        index=KEY, columns="name", values="reason", aggfunc="last"
    )
    columns = []
    for judge, metric in _score_columns(scores):
        name = f"{judge}/{metric}"
        table = table.merge(values[[name]].reset_index(), on=KEY, how="left")
        columns.append(name)
        if name in reasons and reasons[name].fillna("").str.strip().any():
            table = table.merge(
                reasons[[name]].rename(columns={name: f"{name} reason"}).reset_index(), on=KEY, how="left"
            )
            columns.append(f"{name} reason")
    verdict = ["verdict", "verdict evidence"] if report.diagnosis is not None else []
    if verdict:
        table[verdict] = [list(verdict_of(report, key)) for key in zip(*(table[k] for k in KEY))]
    return _natural_rows(table)[KEY + TEXT_COLUMNS + ["contexts"] + verdict + columns]


def verdict_of(report: RunReport, key: tuple) -> tuple[str, str]:
    """(verdict, evidence) of one answer (key: architecture, llm, qid); empty where it has none (no
    reference, or a run without diagnosis)."""
    return report.verdicts.get(tuple(key), ("", ""))


def _verdicts(diagnosis: RunDiagnosis | None, scores: pd.DataFrame) -> dict:
    """{(architecture, llm, qid): (verdict, evidence)} of a run's diagnosed answers."""
    if diagnosis is None:
        return {}
    answers = diagnosis.answers
    by_id = dict(zip(zip(answers["architecture"], answers["id"]), zip(answers["verdict"], answers["evidence"])))
    keys = scores[KEY].drop_duplicates()
    ids = answer_ids(keys["qid"], keys["llm"], scores["llm"].nunique() > 1)
    return {
        (a, llm, q): by_id[(a, name)]
        for a, llm, q, name in zip(keys["architecture"], keys["llm"], keys["qid"], ids)
        if (a, name) in by_id
    }


def summary_table(report: RunReport) -> pd.DataFrame:
    """Mean and interval per architecture and metric, long (the CSV's second file)."""
    return report.summary.assign(confidence=report.confidence)


def patterns_table(report: RunReport) -> pd.DataFrame:
    """The reference documents' diagnostic patterns found per architecture (helpers.interpretation)."""
    found = detect(report.summary)
    return found[["architecture", "pattern", "status", "evidence", "problem", "fix"]] if len(found) else found


# the paired table's interval and test are two procedures (issue 60: an interval excluding 0 beside
# "significant: False"): said beside the table in every format
COMPARISON_NOTE = (
    "The interval is a bootstrap interval of the mean paired difference, not corrected for the other pairs; "
    "'significant' is the sign-flip permutation test after Holm's correction over every row. On few "
    "questions an interval may exclude 0 where the test is not significant: read the test."
)


def comparison_table(report: RunReport) -> pd.DataFrame:
    """The permutation tests with the bootstrap interval of each mean difference."""
    if report.comparisons.empty:
        return pd.DataFrame()
    keys = ["metric", "architecture", "baseline"]
    table = report.comparisons.merge(report.differences[keys + ["ci_low", "ci_high"]], on=keys, how="left")
    first = keys + ["mean_diff", "ci_low", "ci_high"]
    return table[first + [c for c in table.columns if c not in first]].round(4)


def _number(value, digits: int = 3) -> str:
    return (
        "NaN"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else f"{value:.{digits}f}"
        if isinstance(value, (float, np.floating))
        else str(value)
    )


def plain(value):
    """JSON-ready: numpy scalars and arrays to Python, NaN and infinities to None."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [plain(v) for v in value]
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if value is pd.NA or value is pd.NaT:
        return None
    return value


def headline(report: RunReport) -> str:
    s, config = report.run_summary, report.config
    parts = [
        f"{s.get('answers', len(report.records))} answers",
        f"dataset {config.dataset.name if config else '?'}",
        f"architectures {', '.join(sorted(set(report.records['architecture'].dropna())))}",
        f"failures {s.get('answer_failures', {})}",
        f"NaN scores {s.get('nan_scores', {})}",
    ]
    if s.get("answers_at_max_tokens"):  # cut answers: a judge reads less than the model meant to say
        parts.append(f"cut at max_tokens {len(s['answers_at_max_tokens'])}: {', '.join(s['answers_at_max_tokens'])}")
    return "; ".join(parts)


# ---- one answer, as the md and html formats show it


def score_rows(report: RunReport, key: tuple) -> pd.DataFrame:
    """One answer's scores (key: architecture, llm, qid), in the per-question table's column order."""
    scores = report.scores
    part = scores[(scores["architecture"] == key[0]) & (scores["llm"] == key[1]) & (scores["qid"] == key[2])]
    part = part.assign(score=part["judge"] + "/" + part["metric"], reason=part["reason"].fillna(""))
    order = {pair: i for i, pair in enumerate(_score_columns(scores))}
    part = part.assign(order=[order[(j, m)] for j, m in zip(part["judge"], part["metric"])]).sort_values("order")
    return part[["score", "value", "reason"]].round({"value": 4})


def by_question(report: RunReport):
    """(qid, its answers) in natural question order."""
    records = report.records
    for qid in analysis.natural_sorted(records["qid"].dropna().unique()):
        yield qid, records[records["qid"] == qid]


def answer_text(value) -> str:
    """The answer, or a stand-in where there is none."""
    return value if isinstance(value, str) and value else "(no answer)"


def context_lines(contexts) -> list[str]:
    """One line per retrieved context: doc_id, rank, score, text."""
    if isinstance(contexts, str):
        return [contexts]
    return [
        f"`{c.get('doc_id', '')}` (rank {c.get('rank', '?')}, score {_number(c.get('score'))}): "
        f"{str(c.get('text', '')).replace(chr(10), ' ')}"
        for c in contexts
    ]
