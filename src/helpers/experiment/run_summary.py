"""A finished run's summary, one list of sections whatever shows it (issue 60): the terminal after
`helpers run`, `helpers report RUN_ID` (text, md, html, json, csv) and the explore results panel.

    headline    the metrics people's labels back: mean [interval] and band, per architecture
    agreement   how far people agree with each metric's judge, or that nobody checked
    decisions   the decision on the decision metric: best, tied or not decided (analysis)
    diagnosis   why answers fail: the verdicts per architecture and the advice (diagnosis)
    unbacked    the judges people do not back: means and intervals, no band, no pattern
    seed_ragas  where RAGAS ran: the RAGAS framework's own reading (its bands, its four diagnostic
                patterns with their thresholds), each line saying how far people agree with the judge

Every term printed is explained once in docs/glossary.md, which each form links to.

    for section in run_sections("obstetrics-default-8eb4bca9"):
        print(section.title)
    print(report("obstetrics-default-8eb4bca9"))   # the text report: the sections and the details
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from helpers.experiment import analysis
from helpers.experiment.relevance import relevance_line
from helpers.inference.classical import MIN_INTERVAL_N
from helpers.interpretation import PATTERNS, TRUSTED, bands_legend, detect, mean_with_band
from helpers.judges import validity

SECTION_KEYS = ("headline", "agreement", "decisions", "diagnosis", "unbacked")  # every run's
OPTIONAL_KEYS = ("seed_ragas",)  # where RAGAS ran: the seed's reading of it
GLOSSARY = "docs/glossary.md"  # every term the sections print, explained once


@dataclass
class Section:
    key: str  # one of SECTION_KEYS
    title: str
    lines: list[str] = field(default_factory=list)
    table: pd.DataFrame | None = None  # architectures x metrics, where the section has one


def run_sections(run_id: str, results_dir: Path | None = None, *, diagnosis=None) -> list[Section]:
    """The five sections of a run (SECTION_KEYS, in order), and the seed's reading of RAGAS where it
    ran (OPTIONAL_KEYS). `diagnosis`: run_diagnosis's result when already computed (False: the run
    has none)."""
    from helpers.experiment.diagnosis import format_table, run_diagnosis  # scipy: loaded only when this runs

    scores = analysis.load_scores(run_id, results_dir)
    config = analysis.run_config(run_id, results_dir)
    table = analysis.summary(scores, config)
    level = analysis._percent(analysis.statistics_settings(config).confidence)
    column = f"mean [{level} CI]"
    if len(table):
        table[column] = [
            mean_with_band(r["metric"], r["mean"], r["ci_low"], r["ci_high"], r["n"], r["validity"])
            for r in table.to_dict("records")
        ]
    trusted = table["validity"].isin(TRUSTED) if len(table) else pd.Series(dtype=bool)

    def wide(rows) -> pd.DataFrame | None:
        return rows.pivot(index="architecture", columns="metric", values=column) if len(rows) else None

    headline = Section(
        "headline",
        f"Headline: the metrics people's labels back, {column} and band (fewer than {MIN_INTERVAL_N} scores: n shown)",
        [bands_legend(table.loc[trusted, "metric"])]
        if trusted.any()
        else ["no metric of this run is backed by people's labels"],
        wide(table[trusted]) if len(table) else None,
    )
    metrics = list(dict.fromkeys(table["metric"])) if len(table) else []
    summary_path = analysis.run_dir(run_id, results_dir) / "summary.json"
    relevance = json.loads(summary_path.read_text()).get("relevance") if summary_path.exists() else None
    agreement = Section(
        "agreement",
        f"How far people agree with each judge ({validity.source()})",
        [f"{m}: {validity.note(m)}" for m in metrics] or ["no quality scores"],
    )
    if (line := relevance_line(relevance)) and any(m.startswith("retrieval/") for m in metrics):
        agreement.lines.append(line)  # what "people's relevance labels" are on this run
    decisions = Section("decisions", "Decisions", analysis.decision_text(run_id, scores, config, results_dir))
    if diagnosis is None:
        diagnosis = run_diagnosis(
            run_id, results_dir, confidence=analysis.statistics_settings(config).confidence, scores=scores
        )
    why = Section(
        "diagnosis",
        "Why answers fail",
        format_table(diagnosis.table, diagnosis.bands).splitlines()[1:]
        if diagnosis
        else ["no answer with a reference"],
    )
    unbacked = Section(
        "unbacked",
        "Judges people do not back: no band, no pattern, not in the headline",
        [] if (~trusted).any() else ["none: every metric of this run is backed"],
        wide(table[~trusted]) if len(table) and (~trusted).any() else None,
    )
    seed = seed_reading(table, level)
    return [headline, agreement, decisions, why, unbacked] + ([seed] if seed else [])


def seed_reading(table: pd.DataFrame, level: str) -> Section | None:
    """The RAGAS framework's own reading of a run's RAGAS scores (issue 61), when RAGAS ran: the four
    metrics per architecture with the seed's bands, and its four diagnostic patterns with their
    thresholds, per architecture, each line with how far people agree with the judge. Shown as the
    seed reads it whether or not people back the judge: the lines say which it is."""
    ragas = table[table["metric"].str.startswith("ragas/")] if len(table) else table
    if not len(ragas):
        return None
    ragas = ragas.assign(cell=[mean_with_band(r.metric, r.mean, r.ci_low, r.ci_high, r.n) for r in ragas.itertuples()])
    found = detect(ragas.drop(columns="validity"))
    lines = [bands_legend(ragas["metric"])]
    for pattern in (p for p in PATTERNS if p.family == "RAGAS"):
        hits = found[found["pattern"] == pattern.name]
        where = ", ".join(f"{r.architecture} ({r.status})" for r in hits.itertuples()) or "no architecture"
        lines.append(f"{pattern.name} ({' and '.join(map(str, pattern.conditions))}): {where}")
    lines += [f"{m}: {validity.note(m)}" for m in dict.fromkeys(ragas["metric"])]
    return Section(
        "seed_ragas",
        f"The RAGAS framework's reading (its bands and diagnostic patterns, mean [{level} CI]), evidence only "
        "where people back the judge",
        lines,
        ragas.pivot(index="architecture", columns="metric", values="cell"),
    )


def as_text(sections: list[Section]) -> str:
    out = []
    for s in sections:
        out += ["", s.title + ":"]
        if s.table is not None:
            out.append(s.table.to_string())
        out += [("- " if s.key == "agreement" else "") + line for line in s.lines]
    return "\n".join(out[1:] + ["", f"Every term above: {GLOSSARY}"])


def as_markdown(sections: list[Section]) -> str:
    out = []
    for s in sections:
        out += [f"## {s.title}", ""]
        if s.table is not None:
            out += [s.table.to_markdown(), ""]
        if s.key == "agreement":
            out += [f"- {line}" for line in s.lines] + [""]
        elif s.lines:
            out += ["```", *s.lines, "```", ""]
    return "\n".join(out + [f"Every term above: [{GLOSSARY}]({GLOSSARY})", ""])


def as_html(sections: list[Section]) -> str:
    esc, out = html.escape, []
    for s in sections:
        out.append(f"<section class='summary' id='{s.key}'><h2>{esc(s.title)}</h2>")
        if s.table is not None:
            out.append(f"<div class='scroll'>{s.table.to_html(border=0, na_rep='')}</div>")
        if s.key == "agreement":
            out.append("<ul>" + "".join(f"<li>{esc(line)}</li>" for line in s.lines) + "</ul>")
        elif s.lines:
            out.append(f"<pre>{esc(chr(10).join(s.lines))}</pre>")
        out.append("</section>")
    return "\n".join(out + [f"<p class='muted'>Every term above: {esc(GLOSSARY)}</p>"])


def as_rows(sections: list[Section]) -> pd.DataFrame:
    """One row per line, or per table row ('architecture: metric cell; ...'): the CSV report's form."""
    rows = []
    for s in sections:
        if s.table is not None:
            rows += [
                {
                    "section": s.key,
                    "title": s.title,
                    "text": f"{arch}: " + "; ".join(f"{m} {v}" for m, v in cells.items()),
                }
                for arch, cells in s.table.iterrows()
            ]
        rows += [{"section": s.key, "title": s.title, "text": line} for line in s.lines]
    return pd.DataFrame(rows + [{"section": "terms", "title": "glossary", "text": GLOSSARY}])


def as_json(sections: list[Section]) -> list[dict]:
    return [
        {
            "key": s.key,
            "title": s.title,
            "lines": s.lines,
            "table": s.table.reset_index().to_dict("records") if s.table is not None else None,
        }
        for s in sections
    ]


def report(run_id: str, results_dir: Path | None = None) -> str:
    """The text report (`helpers report RUN_ID`): the summary's sections, then the diagnostic
    patterns, the paired comparisons and the seed-form RAGAS table."""
    directory = analysis.run_dir(run_id, results_dir)
    scores = analysis.load_scores(run_id, results_dir)
    config = analysis.run_config(run_id, results_dir)
    summary_json = json.loads((directory / "summary.json").read_text()) if (directory / "summary.json").exists() else {}
    parts = [
        f"run {run_id}: {summary_json.get('answers', '?')} answers, failures {summary_json.get('answer_failures', {})}, "
        f"NaN scores {summary_json.get('nan_scores', {})}"
    ]
    if summary_json.get("prompt_fallback"):  # the corpus's language has no prompts of its own
        parts.append(summary_json["prompt_fallback"])
    parts += ["", as_text(run_sections(run_id, results_dir))]
    table = analysis.summary(scores, config)
    found = detect(table) if len(table) else None
    if found is not None and len(found):
        parts += ["", "Diagnostic patterns (named: the intervals support every condition; possible: one straddles):"]
        parts += [
            f"- {r['architecture']}: {r['pattern']} ({r['status']}; {r['evidence']}): {r['problem']}"
            + (f"; try: {r['fix']}" if r["fix"] else "")
            for r in found.to_dict("records")
        ]
    else:
        parts += [
            "",
            "Diagnostic patterns: none named (a pattern is read only from metrics people's labels back, "
            f"each over at least {MIN_INTERVAL_N} samples)",
        ]
    comp = analysis.comparisons(scores, config)
    if len(comp):
        parts += [
            "",
            f"Paired permutation tests vs {comp['baseline'].iloc[0]} (Holm-corrected):",
            comp.round(4).to_string(index=False),
        ]
    seed = analysis.seed_table(scores)
    if len(seed):
        parts += ["", "RAGAS (seed benchmark form):", seed.to_string()]
    return "\n".join(parts)
