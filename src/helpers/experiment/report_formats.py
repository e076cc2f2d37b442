"""A finished run as documents people open: `python -m helpers report RUN_ID --format
md|csv|html|json [--out PATH]` (without --format: the text report of helpers.experiment.analysis).

Every format starts with the same summary as the terminal and the results panel
(helpers.experiment.run_summary: the validated headline, each judge's agreement with people, the
decisions, why answers fail, and the judges people do not back), and holds the per-question details (question, answer, contexts, every score with its
reason, and where the question has a reference the answer's verdict: correct, or lost by retrieval
or by generation, helpers.experiment.diagnosis), the means with their bootstrap intervals, the
paired comparisons with the baseline, why answers fail per architecture, the seed benchmark's
RAGAS table and the seed guide's TRACe JSON:
  md    one Markdown document
  csv   the per-question table (one row per architecture x llm x question, a column per
        judge/metric and its reason) and, beside it, <name>.summary.csv (the means and intervals)
        and <name>.sections.csv (the summary's sections, one row per line or table row)
  html  one self-contained file: inline CSS, figures embedded as base64 PNG, no external
        links or scripts, each answer's details folded in a <details> element
  json  one JSON object (NaN written as null)

What they show, read once from the run's folder: helpers.experiment.report_tables.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

import pandas as pd

from helpers.errors import UserError
from helpers.experiment import analysis
from helpers.experiment.report_tables import (
    COMPARISON_NOTE,
    KEY,
    RunReport,
    answer_text,
    answers_table,
    by_question,
    collect,
    comparison_table,
    context_lines,
    headline,
    patterns_table,
    plain,
    score_rows,
    summary_table,
    verdict_of,
)
from helpers.experiment.run_summary import as_html, as_json, as_markdown, as_rows

FORMATS = ("md", "csv", "html", "json")


# ---- the formats


def to_json(report: RunReport) -> str:
    scores = report.scores[["judge", "metric", "value", "reason"] + KEY].copy()
    grouped = {key: part.drop(columns=KEY).to_dict("records") for key, part in scores.groupby(KEY, sort=False)}
    records = [
        {**row, "scores": grouped.get(tuple(row[k] for k in KEY), [])}
        | dict(zip(("verdict", "verdict_evidence"), verdict_of(report, tuple(row[k] for k in KEY))))
        for row in report.records.to_dict("records")
    ]
    document = {
        "run_id": report.run_id,
        "config": report.config.model_dump(mode="json") if report.config else {},
        "run_summary": report.run_summary,
        "sections": as_json(report.sections),
        "confidence": report.confidence,
        "summary": report.summary.to_dict("records"),
        "difference_intervals": report.differences.to_dict("records"),
        "comparisons": report.comparisons.to_dict("records"),
        "records": records,
        "seed_table": report.seed.reset_index().to_dict("records") if len(report.seed) else [],
        "trace": report.trace,
        "diagnosis": _diagnosis_json(report),
    }
    return json.dumps(plain(document), indent=2, ensure_ascii=False)


def _diagnosis_json(report: RunReport) -> dict | None:
    """`helpers diagnose --json`'s object and the cuts it read with (None: nothing to diagnose)."""
    from helpers.experiment.diagnosis import bands_json, to_json

    if report.diagnosis is None:
        return None
    table, answers, bands = report.diagnosis
    return to_json(table, answers) | {"cuts": bands_json(bands)}


def _md_table(frame: pd.DataFrame, *, index: bool = True) -> str:
    """A table in Markdown, pipes and line breaks inside cells escaped so rows stay rows."""
    if frame.empty:
        return "(none)"
    clean = frame.map(lambda v: str(v).replace("|", "\\|").replace("\n", "<br>") if isinstance(v, str) else v)
    return clean.to_markdown(index=index)


def to_markdown(report: RunReport) -> str:
    level, patterns = analysis._percent(report.confidence), patterns_table(report)
    out = [
        f"# Run {report.run_id}",
        "",
        headline(report),
        "",
        as_markdown(report.sections),
        "## Diagnostic patterns (named when the intervals support every condition; possible when one straddles)",
        "",
        _md_table(patterns, index=False) if len(patterns) else "(none found)",
        "",
        "## Paired comparisons with the baseline (permutation tests, Holm-corrected; "
        f"{level} bootstrap interval of the mean difference)",
        "",
        _md_table(comparison_table(report), index=False),
        "",
        COMPARISON_NOTE,
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
    for qid, answers in by_question(report):
        out += ["", f"### {qid}: {answers['question'].dropna().iloc[0] if answers['question'].notna().any() else ''}"]
        for row in answers.to_dict("records"):
            out += [
                "",
                f"#### {row['architecture']} / {row['llm']}",
                "",
                f"**Answer:** {answer_text(row.get('answer'))}",
            ]
            verdict, evidence = verdict_of(report, (row["architecture"], row["llm"], qid))
            if verdict:
                out += ["", f"**Verdict:** {verdict}: {evidence}"]
            if isinstance(row.get("error"), str) and row["error"]:
                out += ["", f"**Error:** {row['error']}"]
            out += ["", "**Contexts:**", ""] + [
                f"{i}. {line}" for i, line in enumerate(context_lines(row["contexts"]), 1)
            ]
            out += ["", _md_table(score_rows(report, (row["architecture"], row["llm"], qid)), index=False)]
    return "\n".join(out) + "\n"


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
        f"<p>{esc(headline(report))}</p>",
        as_html(report.sections),
        "<h2>Diagnostic patterns</h2>",
        "<p class='muted'>Named when the intervals support every condition; possible when one straddles.</p>",
        _html_table(patterns, index=False) if len(patterns) else "<p>(none found)</p>",
        "<h2>Paired comparisons with the baseline</h2>",
        f"<p class='muted'>Permutation tests, Holm-corrected; {level} bootstrap interval of the mean difference.</p>",
        _html_table(comparison_table(report), index=False),
        f"<p class='muted'>{esc(COMPARISON_NOTE)}</p>",
    ]
    if figures and report.diagnosis is not None:
        out.append(_verdict_figure_html(report))
    if figures:
        # matplotlib, seaborn: loaded only when this runs
        from helpers.experiment.figures_run import run_figure_pngs

        out.append("<h2>Figures</h2>")
        out += [_figure_html(name, png) for name, png in run_figure_pngs(report.scores, report.config).items()]
    out += [
        "<h2>RAGAS (seed benchmark form)</h2>",
        _html_table(report.seed) if len(report.seed) else "<p>(RAGAS not run)</p>",
        "<h2>TRACe (seed guide JSON)</h2>",
        "<details><summary>trace.json</summary><pre>"
        + esc(json.dumps(plain(report.trace), indent=2, ensure_ascii=False))
        + "</pre></details>",
        "<h2>Per question</h2>",
    ]
    for qid, answers in by_question(report):
        question = answers["question"].dropna().iloc[0] if answers["question"].notna().any() else ""
        out.append(f"<h3>{esc(str(qid))}: {esc(question)}</h3>")
        for row in answers.to_dict("records"):
            out.append(_html_answer(report, row))
    return "\n".join(out + ["</body></html>"])


def _verdict_figure_html(report: RunReport) -> str:
    import matplotlib.pyplot as plt  # matplotlib: loaded only when this runs

    from helpers.experiment.diagnosis_figure import verdict_figure
    from helpers.figures import png_bytes

    diagnosis = report.diagnosis
    assert diagnosis is not None  # drawn only for a diagnosed run (the caller checks)
    fig = verdict_figure(diagnosis.table, confidence=report.confidence, bands=diagnosis.bands)
    png = png_bytes(fig, dpi=110)
    plt.close(fig)
    return _figure_html("verdicts", png)


def _figure_html(name: str, png: bytes) -> str:
    """One figure embedded in the page as base64 PNG, with its name as caption."""
    return (
        f"<figure><img alt='{html.escape(name)}' src='data:image/png;base64,{base64.b64encode(png).decode()}'>"
        f"<figcaption>{html.escape(name)}</figcaption></figure>"
    )


def _html_answer(report: RunReport, row: dict) -> str:
    esc = html.escape
    verdict, evidence = verdict_of(report, (row["architecture"], row["llm"], row["qid"]))
    verdict = f"<p class='verdict'><b>Verdict:</b> {esc(verdict)}: {esc(evidence)}</p>" if verdict else ""
    error = f"<p><b>Error:</b> {esc(row['error'])}</p>" if isinstance(row.get("error"), str) and row["error"] else ""
    contexts = "".join(f"<li>{esc(line)}</li>" for line in context_lines(row["contexts"]))
    scores = score_rows(report, (row["architecture"], row["llm"], row["qid"]))
    return (
        f"<details><summary>{esc(row['architecture'])} / {esc(str(row['llm']))}: {esc(answer_text(row.get('answer'))[:120])}"
        f"</summary><p><b>Answer:</b> {esc(answer_text(row.get('answer')))}</p>{verdict}{error}<p><b>Contexts:</b></p>"
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
        second, third = path.with_name(f"{path.stem}.summary.csv"), path.with_name(f"{path.stem}.sections.csv")
        answers_table(report).to_csv(path, index=False)
        summary_table(report).to_csv(second, index=False)
        as_rows(report.sections).to_csv(third, index=False)
        return [path, second, third]
    text = {"md": to_markdown, "html": to_html, "json": to_json}[fmt](report)
    path.write_text(text, encoding="utf-8")
    return [path]
