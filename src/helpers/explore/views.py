"""HTML of the panels' results (plain strings, so they are tested without a browser): the
architectures side by side, a per-sample table, messages."""

from __future__ import annotations

import html
import math

import pandas as pd

from helpers.explore.workbench import Comparison, Hit

STYLE = """<style>
.hx-grid{display:grid;gap:8px;overflow-x:auto;font-family:sans-serif;font-size:12px;line-height:1.35}
.hx-column{border:1px solid #ddd;border-radius:6px;padding:6px;min-width:200px;background:#fff}
.hx-column ol{margin:2px 0;padding-left:18px}
.hx-column h4{margin:0 0 4px 0;font-size:13px}
.hx-meta{color:#555;font-size:11px}
.hx-hit{border-top:1px solid #eee;padding:4px 0}
.hx-hit mark{background:#ffe066;padding:0 1px}
.hx-badge{display:inline-block;border-radius:4px;padding:0 4px;margin-right:3px;font-size:10px}
.hx-shared{background:#dbe4ff}
.hx-up{background:#d3f9d8}
.hx-down{background:#ffe3e3}
.hx-relevant{background:#2b8a3e;color:#fff}
.hx-rewrites{background:#f8f9fa;border-left:3px solid #adb5bd;padding:3px 6px;margin:4px 0;font-size:11px}
.hx-error{color:#c92a2a;background:#fff5f5;border:1px solid #ffc9c9;border-radius:4px;padding:6px;font-family:sans-serif}
.hx-download{color:#1864ab;text-decoration:underline}
.hx-info{color:#1864ab;font-family:sans-serif;font-size:12px}
.hx-table{border-collapse:collapse;font-size:11px;font-family:sans-serif}
.hx-table td,.hx-table th{border:1px solid #ddd;padding:2px 5px;vertical-align:top;max-width:420px}
</style>"""


def message_html(text: str, kind: str = "error") -> str:
    """A message in a panel: 'error' (what went wrong and what to do) or 'info'."""
    return f"<div class='hx-{kind}'>{html.escape(text)}</div>"


def _badges(hit: Hit, n_columns: int) -> str:
    out = []
    if hit.relevant:
        out.append("<span class='hx-badge hx-relevant' title='relevant in the qrels'>relevant</span>")
    if n_columns > 1 and len(hit.found_by) > 1:
        out.append(
            f"<span class='hx-badge hx-shared' title='also found by {html.escape(', '.join(hit.found_by))}'>"
            f"found by {len(hit.found_by)}</span>"
        )
    if hit.rank_change is not None:
        change = hit.rank_change
        kind, arrow = ("hx-up", "↑") if change > 0 else ("hx-down", "↓") if change < 0 else ("hx-shared", "=")
        out.append(
            f"<span class='hx-badge hx-rank-change {kind}' title='rank {hit.first_stage_rank} in the first stage'>"
            f"{arrow}{abs(change) if change else ''} from {hit.first_stage_rank}</span>"
        )
    return "".join(out)


def _page(hit: Hit) -> str:
    if hit.page is None or (isinstance(hit.page, float) and math.isnan(hit.page)):
        return ""
    return f" · p. {html.escape(str(hit.page))}"


def comparison_html(comparison: Comparison) -> str:
    """One column per architecture: rank, score, doc id with page and section, the snippet with
    the query's terms marked; badges for relevance, overlap and the reranker's moves."""
    columns = list(comparison.columns.values())
    parts = [STYLE, f"<div class='hx-grid' style='grid-template-columns:repeat({len(columns)},minmax(210px,1fr))'>"]
    for column in columns:
        parts.append(
            f"<div class='hx-column' data-architecture='{html.escape(column.architecture)}'>"
            f"<h4>{html.escape(column.architecture)}</h4>"
        )
        if column.error:
            parts.append(message_html(column.error) + "</div>")
            continue
        meta = [f"{column.seconds * 1000:.0f} ms"] + [f"{name} {value:.3f}" for name, value in column.metrics.items()]
        parts.append(f"<div class='hx-meta'>{html.escape(' · '.join(meta))}</div>")
        if column.passage:
            parts.append(f"<div class='hx-rewrites'><b>HyDE passage:</b> {html.escape(column.passage)}</div>")
        if column.rewrites:
            items = "".join(f"<li>{html.escape(r)}</li>" for r in column.rewrites)
            parts.append(f"<div class='hx-rewrites'><b>rewrites:</b><ol>{items}</ol></div>")
        if column.note:
            parts.append(f"<div class='hx-meta'>fallback: {html.escape(column.note)}</div>")
        for hit in column.hits:
            section = (
                (
                    f" · <span class='hx-meta' title='{html.escape(hit.section)}'>{html.escape(hit.section[:40])}"
                    f"{'…' if len(hit.section) > 40 else ''}</span>"
                )
                if hit.section
                else ""
            )
            parts.append(
                f"<div class='hx-hit' data-doc-id='{html.escape(hit.doc_id)}'>"
                f"<b>{hit.rank}.</b> <code>{html.escape(hit.doc_id)}</code>{_page(hit)}{section}"
                f" <span class='hx-meta'>score {hit.score:.3f}</span><br>"
                f"{_badges(hit, len(columns))}<div>{hit.snippet}</div></div>"
            )
        if not column.hits:
            parts.append(message_html("no document retrieved", "info"))
        parts.append("</div>")
    parts.append("</div>")
    return "".join(parts)


def table_html(frame: pd.DataFrame, max_chars: int = 400) -> str:
    """A per-sample table, long texts cut, numbers to 3 decimals."""

    def cell(value):
        if isinstance(value, float):
            return "" if math.isnan(value) else f"{value:.3f}"
        text = "" if value is None else str(value)
        return html.escape(text if len(text) <= max_chars else text[:max_chars] + " …")

    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>" for row in frame.itertuples(index=False)
    )
    return f"{STYLE}<table class='hx-table'><tr>{head}</tr>{body}</table>"
