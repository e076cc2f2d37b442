"""The book's page of published tables and figures reproduced: for each comparison the notebooks
saved (helpers.reproduce.published), where the published numbers were read, where ours come from,
when and at which commit they were computed, the table (published, ours, difference) and our
figures that redraw the published ones."""

from __future__ import annotations

import base64
import html
from pathlib import Path

import pandas as pd

from helpers import paths
from helpers.book.pages import page
from helpers.reproduce.published import comparison_frame

TITLE = "Published tables and figures, reproduced"
NOTHING_YET = (
    "<p>No comparison has been saved yet: notebooks 03 and 07 save them when they run "
    "(<code>make book</code> runs them).</p>"
)


def _number(value) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    return html.escape(str(value))


def table_html(frame: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = []
    for record in frame.itertuples(index=False):
        cells = []
        for column, value in zip(frame.columns, record):
            text = _number(value)
            if column == "difference" and text != "—":
                text = f"{value:+.3f}"
            # words read left to right, and a sentence (why a number differs) needs room to be read
            kind = "long" if isinstance(value, str) and len(value) > 40 else "text" if isinstance(value, str) else ""
            cells.append(f'<td class="{kind}">{text}</td>' if kind else f"<td>{text}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    table = f'<table class="book-table"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    return f'<div class="book-scroll">{table}</div>'


def _figure_html(path: str) -> str:
    png = Path(path)
    if not png.is_absolute():
        png = paths.PROJECT_ROOT / png
    if not png.exists():
        return f'<p class="book-note">(figure {html.escape(png.name)} is missing: rerun its notebook)</p>'
    data = base64.b64encode(png.read_bytes()).decode()
    return f'<figure><img alt="{html.escape(png.stem)}" src="data:image/png;base64,{data}" style="max-width:100%"></figure>'


def comparison_html(document: dict) -> str:
    frame = comparison_frame(document)
    agree = ""
    if "agreement" in frame.columns:
        counts = frame["agreement"].value_counts()
        agree = "<p>" + html.escape(", ".join(f"{n} {what}" for what, n in counts.items())) + "</p>"
    parts = [
        f'<section id="{html.escape(document["name"])}"><h2>{html.escape(document["title"])}</h2>',
        f"<p><strong>Published:</strong> {html.escape(document['published_source'])}</p>",
        f"<p><strong>Ours:</strong> {html.escape(document['data_source'])}; computed {html.escape(document['computed'])}"
        f" at commit <code>{html.escape(document['commit'][:12])}</code>.</p>",
        f'<p class="book-note">{html.escape(document["notes"])}</p>' if document.get("notes") else "",
        agree,
        table_html(frame),
        *(_figure_html(p) for p in document.get("figures", [])),
        "</section>",
    ]
    return "".join(parts)


def reproduced_page(comparisons: list[dict], *, nav: str, footer: str) -> str:
    intro = (
        f"<h1>{TITLE}</h1><p>Each table: the number as published, ours on the same data where we "
        "have it, and the difference (ours − published). Where ours carry an interval it is a 95% "
        "bootstrap interval over the rows; a difference inside it is sampling noise.</p>"
    )
    body = "".join(comparison_html(c) for c in comparisons) if comparisons else NOTHING_YET
    return page(TITLE, intro + body, nav=nav, footer=footer)
