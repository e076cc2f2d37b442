"""The book's HTML: one page per executed notebook (nbconvert's HTMLExporter, JupyterLab's look,
figures inlined as data URIs) with a bar linking the previous page, the contents and the next, and
the start page.

Why nbconvert and not Jupyter Book 2: Jupyter Book 2 fetches its theme from api.mystmd.org at
build time and cannot build offline; nbconvert renders a notebook in under a second with nothing
from the network once its CDN URLs are switched off (docs/measurements/book-builders.md). With
MathJax off, TeX in the notebooks' text shows as written ($k$), which these notebooks barely use.
"""

from __future__ import annotations

import copy
import html
import re
from dataclasses import dataclass

import nbformat

# nbconvert's pages load require.js, MathJax and Mermaid from cdnjs unless told not to: a book read
# offline (or on a train) must not wait for them, and must not tell a CDN who reads it
EXPORTER_OPTIONS = {
    "template_name": "lab",
    "embed_images": True,
    "exclude_input_prompt": True,
    "exclude_output_prompt": True,
    "mathjax_url": "",
    "require_js_url": "",
    "mermaid_js_url": "",
}

STYLE = """
body.book { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 72rem;
  margin: 2rem auto; padding: 0 1rem; line-height: 1.5; color: #222; }
.book-nav { display: flex; gap: 1.5rem; justify-content: space-between; padding: .6rem 1rem;
  margin-bottom: 1rem; border-bottom: 1px solid #ddd; font: 14px system-ui, sans-serif; }
.book-nav a { text-decoration: none; color: #0550ae; }
.book-footer { margin-top: 2rem; padding: .6rem 1rem; border-top: 1px solid #ddd; color: #666;
  font: 13px system-ui, sans-serif; }
table.book-table { border-collapse: collapse; font-size: 14px; margin: 1rem 0; }
table.book-table th, table.book-table td { border: 1px solid #ccc; padding: .25rem .5rem; text-align: right; }
table.book-table th:first-child, table.book-table td:first-child { text-align: left; }
table.book-table td { vertical-align: top; }
table.book-table td.text { text-align: left; }
table.book-table td.long { text-align: left; min-width: 24rem; font-size: 13px; }
.book-scroll { overflow-x: auto; }
.book-chapters li { margin: .6rem 0; }
.book-note { color: #555; font-size: 14px; }
"""


@dataclass
class Chapter:
    """One notebook's page: its file, its page's file name, its title and its goals."""

    notebook: str  # e.g. 03-generation-and-ragas.ipynb
    page: str  # e.g. 03-generation-and-ragas.html
    title: str
    goals: str  # the first cell's goals, as text
    seconds: float | None = None  # how long it took to execute


def title_and_goals(notebook: nbformat.NotebookNode, fallback: str) -> tuple[str, str]:
    """The first markdown heading (the notebook's title) and the goals listed in its first cell."""
    first = notebook.cells[0].source if notebook.cells and notebook.cells[0].cell_type == "markdown" else ""
    heading = re.search(r"^#\s+(.+)$", first, flags=re.M)
    title = heading.group(1).strip() if heading else fallback
    goals = re.sub(r"^#.*$", "", first, flags=re.M).strip()
    return title, goals


def nav_html(previous: Chapter | None, following: Chapter | None, contents: str = "index.html") -> str:
    left = f'<a rel="prev" href="{previous.page}">← {html.escape(previous.title)}</a>' if previous else "<span></span>"
    right = (
        f'<a rel="next" href="{following.page}">{html.escape(following.title)} →</a>' if following else "<span></span>"
    )
    return f'<nav class="book-nav">{left}<a rel="contents" href="{contents}">Contents</a>{right}</nav>'


def footer_html(stamp: dict) -> str:
    parts = [f"built {stamp['built']}", f"commit {stamp['commit'][:12]}"]
    if stamp.get("seconds") is not None:
        parts.append(f"executed in {stamp['seconds']:.0f} s")
    if stamp.get("config"):
        parts.append(f"config {stamp['config']}")
    return f'<footer class="book-footer">{html.escape(" · ".join(parts))}</footer>'


# What the lab template still carries with its URLs emptied: script tags with src="", MathJax's
# configuration, and the Mermaid loader (it names the elk layout's CDN URL, fetched only for a
# Mermaid diagram, which these notebooks never hold). Removed, so a page names no network address.
UNUSED_SCRIPTS = (
    re.compile(r'<script src="">\s*</script>'),
    re.compile(r'<script type="text/x-mathjax-config">.*?</script>', flags=re.S),
    re.compile(r'<script type="module">(?:(?!</script>).)*?mermaid.*?</script>', flags=re.S),
)


def strip_unused_scripts(page_html: str) -> str:
    for pattern in UNUSED_SCRIPTS:
        page_html = pattern.sub("", page_html)
    return page_html


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTE = (
    '<p class="book-note">An interactive panel (ipywidgets) is here in the notebook: it needs a running '
    "kernel, so open the notebook with <code>make lab</code>, or the panels with <code>make app</code>.</p>"
)


def static_widgets(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of `notebook` whose widget outputs are a note saying where they work: a static page
    has no kernel to drive them, and nbconvert would load their renderer from unpkg.com."""
    notebook = copy.deepcopy(notebook)
    notebook.metadata.pop("widgets", None)  # the saved widget state: nbconvert embeds it with the unpkg loader
    for cell in notebook.cells:
        for i, output in enumerate(cell.get("outputs", [])):
            if WIDGET_VIEW in output.get("data", {}):
                cell.outputs[i] = nbformat.v4.new_output("display_data", data={"text/html": WIDGET_NOTE})
    return notebook


def notebook_page(notebook: nbformat.NotebookNode, chapter: Chapter, *, nav: str, footer: str) -> str:
    """The notebook as one self-contained page: its outputs and figures, the bar above, the stamp below."""
    from nbconvert import HTMLExporter  # nbconvert loads its templates: only when a book is built

    body, _ = HTMLExporter(**EXPORTER_OPTIONS).from_notebook_node(
        static_widgets(notebook), resources={"metadata": {"name": chapter.title}}
    )
    body = strip_unused_scripts(body)
    style = f"<style>{STYLE}</style>"
    body = body.replace("</head>", style + "</head>", 1)
    body = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + nav, body, count=1)
    return body.replace("</body>", nav + footer + "</body>", 1)


def page(title: str, content: str, *, nav: str = "", footer: str = "") -> str:
    """A page of the book that is not a notebook (the start page, the reproduced figures)."""
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{html.escape(title)}</title>'
        f'<style>{STYLE}</style></head><body class="book">{nav}{content}{footer}</body></html>'
    )


INTRO = """
<h1>RAG workbench: the notebooks, executed</h1>
<p>Which retrieval-augmented generation architecture works best on a set of documents, how sure can
we be, and why do the others fail? These pages are the workbench's notebooks run top to bottom on
its default benchmark (a Spanish clinical guideline on pregnancy and birth, and 10 questions), with
every table, figure and exercise as they came out. Read them in order: the data, the six
architectures, retrieval alone, then answers and their judges, the judges judged, the comparison
with its intervals and why answers fail, and the published figures reproduced beside ours.</p>
<p class="book-note">To run them yourself: <code>make lab</code> opens them in JupyterLab;
<code>make book</code> rebuilds these pages. The exercises show their questions unanswered: write
your answer in the notebook and run its <code>check</code>.</p>
"""


def start_page(chapters: list[Chapter], *, extra: list[tuple[str, str, str]], stamp: dict) -> str:
    """The start page: what the workbench is for, the chapters in reading order, the other pages
    (`extra`: file, title, what it shows)."""
    import mistune  # nbconvert's markdown renderer: the goals are markdown

    items = []
    for chapter in chapters:
        goals = mistune.html(chapter.goals)  # the notebooks' own text, trusted as the notebooks are
        items.append(
            f'<li><a href="{chapter.page}"><strong>{html.escape(chapter.title)}</strong></a>'
            f'<div class="book-note">{goals}</div></li>'
        )
    for file, title, what in extra:
        items.append(
            f'<li><a href="{file}"><strong>{html.escape(title)}</strong></a>'
            f'<div class="book-note">{html.escape(what)}</div></li>'
        )
    content = INTRO + '<ol class="book-chapters">' + "".join(items) + "</ol>"
    return page("RAG workbench: the notebooks, executed", content, footer=footer_html(stamp))
