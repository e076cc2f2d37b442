"""A finished run as documents people open: `python -m helpers report RUN_ID --format
md|csv|html|json [--out PATH]` (without --format: the text report of helpers.experiment.analysis).

Every format holds the per-question details (question, answer, contexts, every score with its
reason), the means with their bootstrap intervals, the paired comparisons with the baseline,
the seed benchmark's RAGAS table and the seed guide's TRACe JSON:
  md    one Markdown document
  csv   the per-question table (one row per architecture x llm x question, a column per
        judge/metric and its reason) and, beside it, <name>.summary.csv (the means and intervals)
  html  one self-contained file: inline CSS, figures embedded as base64 PNG, no external
        links or scripts, each answer's details folded in a <details> element
  json  one JSON object (NaN written as null)
"""

from __future__ import annotations

import ast
import base64
import html
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from helpers.errors import UserError
from helpers.experiment import analysis
from helpers.experiment.config import ExperimentConfig
from helpers.experiment.exports import trace_json
from helpers.interpretation import bands_legend, detect, mean_with_band

FORMATS = ("md", "csv", "html", "json")
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


def parse_contexts(value) -> list | str:
    """records.parquet keeps the contexts as the str() of a list of dicts; read it back
    (or keep the text where it is not one)."""
    if not isinstance(value, str):
        return list(value) if value is not None else []
    try:
        parsed = ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value
    return parsed if isinstance(parsed, list) else value


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
    records["contexts"] = records["contexts"].map(parse_contexts) if len(records) else []
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
        confidence=analysis.statistics_settings(config).confidence,
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
    return _natural_rows(table)[KEY + TEXT_COLUMNS + ["contexts"] + columns]


def summary_table(report: RunReport) -> pd.DataFrame:
    """Mean and interval per architecture and metric, long (the CSV's second file)."""
    return report.summary.assign(confidence=report.confidence)


def intervals_wide(report: RunReport) -> pd.DataFrame:
    """metric x architecture cells 'mean [low, high] Band' (metrics down: there are more of them);
    a mean over fewer than MIN_INTERVAL_N samples shows its n instead of an interval."""
    if report.summary.empty:
        return pd.DataFrame()
    cells = report.summary.assign(
        cell=[
            mean_with_band(r["metric"], r["mean"], r["ci_low"], r["ci_high"], r["n"], r.get("validity"))
            for r in report.summary.to_dict("records")
        ]
    )
    return cells.pivot(index="metric", columns="architecture", values="cell")


def patterns_table(report: RunReport) -> pd.DataFrame:
    """The reference documents' diagnostic patterns found per architecture (helpers.interpretation)."""
    found = detect(report.summary)
    return found[["architecture", "pattern", "status", "evidence", "problem", "fix"]] if len(found) else found


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


def _headline(report: RunReport) -> str:
    s, config = report.run_summary, report.config
    parts = [
        f"{s.get('answers', len(report.records))} answers",
        f"dataset {config.dataset.name if config else '?'}",
        f"architectures {', '.join(sorted(set(report.records['architecture'].dropna())))}",
        f"failures {s.get('answer_failures', {})}",
        f"NaN scores {s.get('nan_scores', {})}",
    ]
    return "; ".join(parts)


# ---- the formats


def to_json(report: RunReport) -> str:
    scores = report.scores[["judge", "metric", "value", "reason"] + KEY].copy()
    grouped = {key: part.drop(columns=KEY).to_dict("records") for key, part in scores.groupby(KEY, sort=False)}
    records = [
        {**row, "scores": grouped.get(tuple(row[k] for k in KEY), [])} for row in report.records.to_dict("records")
    ]
    document = {
        "run_id": report.run_id,
        "config": report.config.model_dump(mode="json") if report.config else {},
        "run_summary": report.run_summary,
        "confidence": report.confidence,
        "summary": report.summary.to_dict("records"),
        "difference_intervals": report.differences.to_dict("records"),
        "comparisons": report.comparisons.to_dict("records"),
        "records": records,
        "seed_table": report.seed.reset_index().to_dict("records") if len(report.seed) else [],
        "trace": report.trace,
    }
    return json.dumps(plain(document), indent=2, ensure_ascii=False)


def _md_table(frame: pd.DataFrame, *, index: bool = True) -> str:
    """A table in Markdown, pipes and line breaks inside cells escaped so rows stay rows."""
    if frame.empty:
        return "(none)"
    clean = frame.map(lambda v: str(v).replace("|", "\\|").replace("\n", "<br>") if isinstance(v, str) else v)
    return clean.to_markdown(index=index)


def _score_rows(report: RunReport, key: tuple) -> pd.DataFrame:
    scores = report.scores
    part = scores[(scores["architecture"] == key[0]) & (scores["llm"] == key[1]) & (scores["qid"] == key[2])]
    part = part.assign(score=part["judge"] + "/" + part["metric"], reason=part["reason"].fillna(""))
    order = {pair: i for i, pair in enumerate(_score_columns(scores))}
    part = part.assign(order=[order[(j, m)] for j, m in zip(part["judge"], part["metric"])]).sort_values("order")
    return part[["score", "value", "reason"]].round({"value": 4})


def to_markdown(report: RunReport) -> str:
    level, patterns = analysis._percent(report.confidence), patterns_table(report)
    out = [
        f"# Run {report.run_id}",
        "",
        _headline(report),
        "",
        f"## Means with {level} bootstrap intervals",
        "",
        _md_table(intervals_wide(report)),
        "",
        bands_legend(report.summary["metric"]) if len(report.summary) else "",
        "",
        "## Diagnostic patterns (named when the intervals support every condition; possible when one straddles)",
        "",
        _md_table(patterns, index=False) if len(patterns) else "(none found)",
        "",
        "## Paired comparisons with the baseline (permutation tests, Holm-corrected; "
        f"{level} bootstrap interval of the mean difference)",
        "",
        _md_table(comparison_table(report), index=False),
        "",
        "## RAGAS (seed benchmark form)",
        "",
        _md_table(report.seed) if len(report.seed) else "(RAGAS not run)",
        "",
        "## TRACe (seed guide JSON)",
        "",
        "```json",
        json.dumps(plain(report.trace), indent=2, ensure_ascii=False),
        "```",
        "",
        "## Per question",
    ]
    for qid, answers in _by_question(report):
        out += ["", f"### {qid}: {answers['question'].dropna().iloc[0] if answers['question'].notna().any() else ''}"]
        for row in answers.to_dict("records"):
            out += ["", f"#### {row['architecture']} / {row['llm']}", "", f"**Answer:** {_text(row.get('answer'))}"]
            if isinstance(row.get("error"), str) and row["error"]:
                out += ["", f"**Error:** {row['error']}"]
            out += ["", "**Contexts:**", ""] + [
                f"{i}. {line}" for i, line in enumerate(_context_lines(row["contexts"]), 1)
            ]
            out += ["", _md_table(_score_rows(report, (row["architecture"], row["llm"], qid)), index=False)]
    return "\n".join(out) + "\n"


def _by_question(report: RunReport):
    """(qid, its answers) in natural question order."""
    records = report.records
    for qid in analysis.natural_sorted(records["qid"].dropna().unique()):
        yield qid, records[records["qid"] == qid]


def _text(value) -> str:
    return value if isinstance(value, str) and value else "(no answer)"


def _context_lines(contexts) -> list[str]:
    if isinstance(contexts, str):
        return [contexts]
    return [
        f"`{c.get('doc_id', '')}` (rank {c.get('rank', '?')}, score {_number(c.get('score'))}): "
        f"{str(c.get('text', '')).replace(chr(10), ' ')}"
        for c in contexts
    ]


HTML_STYLE = """body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:80rem;padding:0 1rem;color:#222}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}th,td{border:1px solid #ccc;padding:.25rem .5rem;
vertical-align:top;text-align:left}th{background:#f2f4f8}details{margin:.3rem 0 .3rem 1rem}summary{cursor:pointer}
figure{display:inline-block;margin:.5rem}img{max-width:100%;border:1px solid #eee}pre{background:#f7f7f7;
padding:.5rem;overflow:auto;font-size:.8rem}.muted{color:#666}.scroll{overflow-x:auto}"""


def _html_table(frame: pd.DataFrame, *, index: bool = True) -> str:
    if frame.empty:
        return "<p class='muted'>(none)</p>"
    table = frame.to_html(index=index, na_rep="NaN", border=0, float_format=lambda v: f"{v:.4g}")
    return f"<div class='scroll'>{table}</div>"


def to_html(report: RunReport, *, figures: bool = True) -> str:
    """One self-contained page; `figures` (default True) embeds every figure of the run."""
    esc, level, patterns = html.escape, analysis._percent(report.confidence), patterns_table(report)
    out = [
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Run {esc(report.run_id)}</title>"
        f"<style>{HTML_STYLE}</style></head><body>",
        f"<h1>Run {esc(report.run_id)}</h1>",
        f"<p>{esc(_headline(report))}</p>",
        f"<h2>Means with {level} bootstrap intervals</h2>",
        _html_table(intervals_wide(report)),
        f"<p class='muted'>{esc(bands_legend(report.summary['metric']) if len(report.summary) else '')}</p>",
        "<h2>Diagnostic patterns</h2>",
        "<p class='muted'>Named when the intervals support every condition; possible when one straddles.</p>",
        _html_table(patterns, index=False) if len(patterns) else "<p>(none found)</p>",
        "<h2>Paired comparisons with the baseline</h2>",
        f"<p class='muted'>Permutation tests, Holm-corrected; {level} bootstrap interval of the mean difference.</p>",
        _html_table(comparison_table(report), index=False),
    ]
    if figures:
        # matplotlib, seaborn: loaded only when this runs
        from helpers.experiment.figures_run import run_figure_pngs

        out.append("<h2>Figures</h2>")
        for name, png in run_figure_pngs(report.scores, report.config).items():
            out.append(
                f"<figure><img alt='{esc(name)}' src='data:image/png;base64,{base64.b64encode(png).decode()}'>"
                f"<figcaption>{esc(name)}</figcaption></figure>"
            )
    out += [
        "<h2>RAGAS (seed benchmark form)</h2>",
        _html_table(report.seed) if len(report.seed) else "<p>(RAGAS not run)</p>",
        "<h2>TRACe (seed guide JSON)</h2>",
        "<details><summary>trace.json</summary><pre>"
        + esc(json.dumps(plain(report.trace), indent=2, ensure_ascii=False))
        + "</pre></details>",
        "<h2>Per question</h2>",
    ]
    for qid, answers in _by_question(report):
        question = answers["question"].dropna().iloc[0] if answers["question"].notna().any() else ""
        out.append(f"<h3>{esc(str(qid))}: {esc(question)}</h3>")
        for row in answers.to_dict("records"):
            out.append(_html_answer(report, row))
    return "\n".join(out + ["</body></html>"])


def _html_answer(report: RunReport, row: dict) -> str:
    esc = html.escape
    error = f"<p><b>Error:</b> {esc(row['error'])}</p>" if isinstance(row.get("error"), str) and row["error"] else ""
    contexts = "".join(f"<li>{esc(line)}</li>" for line in _context_lines(row["contexts"]))
    scores = _score_rows(report, (row["architecture"], row["llm"], row["qid"]))
    return (
        f"<details><summary>{esc(row['architecture'])} / {esc(str(row['llm']))}: {esc(_text(row.get('answer'))[:120])}"
        f"</summary><p><b>Answer:</b> {esc(_text(row.get('answer')))}</p>{error}<p><b>Contexts:</b></p>"
        f"<ol>{contexts}</ol>{_html_table(scores, index=False)}</details>"
    )


# ---- writing


def default_path(run_id: str, fmt: str, results_dir: Path | None = None) -> Path:
    """results/<run_id>/report.<format>, where --out is not given."""
    return analysis.run_dir(run_id, results_dir) / f"report.{fmt}"


def write_report(
    run_id: str, fmt: str, *, out: str | Path | None = None, results_dir: Path | None = None
) -> list[Path]:
    """Write the run's report in `fmt` to `out` (default: results/<run_id>/report.<fmt>; a
    folder: report.<fmt> in it); csv writes <name>.summary.csv beside it too. Returns the paths."""
    if fmt not in FORMATS:
        raise UserError(
            f"unknown report format {fmt!r}: use --format {', '.join(FORMATS)} "
            "(or leave --format out for the text report)"
        )
    report = collect(run_id, results_dir)
    path = Path(out) if out else default_path(run_id, fmt, results_dir)
    if path.is_dir():
        path = path / f"report.{fmt}"
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        second = path.with_name(f"{path.stem}.summary.csv")
        answers_table(report).to_csv(path, index=False)
        summary_table(report).to_csv(second, index=False)
        return [path, second]
    text = {"md": to_markdown, "html": to_html, "json": to_json}[fmt](report)
    path.write_text(text, encoding="utf-8")
    return [path]
