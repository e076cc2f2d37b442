"""The book: a failing cell names its notebook and cell (exit 1), outputs never publish a key, the
home folder or the project's path, the pages link to each other, and the page of reproduced
figures shows the published number, ours and the difference with their sources.
(The whole book of the smoke notebooks in Chromium: tests/test_notebooks.py.)"""

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from helpers import paths
from helpers.book.build import build_book
from helpers.book.execute import BookError, sanitize, sanitize_outputs, scan, secret_values
from helpers.reproduce.published import load_comparisons, save_comparison
from helpers.reproduce.seed_ragas import SEED_HYBRID, hybrid_comparison


def _notebook(cells: list[str], title: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {title}\n\n**Goals**\n1. {title.lower()}")]
    nb.cells += [nbformat.v4.new_code_cell(source) for source in cells]
    return nb


def test_a_cell_that_raises_exits_1_naming_the_notebook_and_the_cell(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    nbformat.write(_notebook(["print('fine')"], "00 · Fine"), folder / "00-fine.ipynb")
    nbformat.write(_notebook(["x = 2", "y = x / 0", "print('never')"], "01 · Broken"), folder / "01-broken.ipynb")
    out = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "helpers", "book", "--notebooks", str(folder), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 1, done.stderr
    assert (
        "book failed: 01-broken.ipynb: code cell 2 ('y = x / 0') raised ZeroDivisionError: division by zero"
        in done.stderr
    )
    assert not (out / "index.html").exists()  # nothing is published from a failed build


def test_an_empty_folder_is_named():
    with pytest.raises(BookError, match=r"no notebooks \(\*\.ipynb\) in /nonexistent: pass --notebooks DIR"):
        build_book(notebooks_dir=Path("/nonexistent"))


def test_outputs_lose_keys_tokens_home_and_project_paths():
    environ = {"GROQ_API_KEY": "gsk-not-a-real-key-123", "APP_TOKEN": "short", "PATH": "/usr/bin"}
    assert secret_values(environ) == ["gsk-not-a-real-key-123"]  # 'short' is under 8 characters
    project, home = Path("/home/ana/rag"), Path("/home/ana")
    text = (
        "key gsk-not-a-real-key-123 in /home/ana/rag/results/x.json, cache /home/ana/.cache/rag, "
        "open http://127.0.0.1:8866/?token=0123456789abcdef0123 with sk-abcdefghijklmnopqrstuvwx"
    )
    assert sanitize(text, secrets=secret_values(environ), project=project, home=home) == (
        "key [REDACTED] in ./results/x.json, cache ~/.cache/rag, open http://127.0.0.1:8866/[REDACTED] with [REDACTED]"
    )


def test_scan_names_what_a_page_would_publish(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "abcdefgh-secret")
    page = f"<p>{paths.PROJECT_ROOT}/results and {Path.home()}/x and abcdefgh-secret and hf_{'a' * 24}</p>"
    assert scan(page) == [
        "an API key or token from the environment",
        "a string shaped like an API key or a token",
        "the home folder",
        "the project's absolute path",
    ]
    assert scan(f"<p>{paths.PROJECT_ROOT}-other and ./results</p>") == []


def test_sanitize_outputs_rewrites_text_html_and_drops_progress_bars(monkeypatch):
    monkeypatch.setenv("MY_API_KEY", "value-of-the-key")
    nb = _notebook(["pass"], "x")
    nb.cells[1].outputs = [
        nbformat.v4.new_output(
            "stream", name="stderr", text="\ringest:  25%|██▌       | 1/4 [00:02<00:07,  2.41s/file]"
        ),
        nbformat.v4.new_output("stream", name="stdout", text=f"{paths.PROJECT_ROOT}/figures/a.png value-of-the-key"),
        nbformat.v4.new_output("stream", name="stderr", text="\n"),
        nbformat.v4.new_output("stream", name="stderr", text="UserWarning: 3 of 10 scores are NaN\n"),
        nbformat.v4.new_output("display_data", data={"text/html": f"<td>{Path.home()}/data</td>", "image/png": "iVBO"}),
    ]
    sanitize_outputs(nb)
    assert [o.get("text") for o in nb.cells[1].outputs[:2]] == [
        "./figures/a.png [REDACTED]",
        "UserWarning: 3 of 10 scores are NaN\n",
    ]
    assert nb.cells[1].outputs[2]["data"] == {"text/html": "<td>~/data</td>", "image/png": "iVBO"}


def test_a_widget_becomes_a_note_and_nothing_loads_from_unpkg(tmp_path):
    from helpers.book.pages import Chapter, notebook_page

    nb = _notebook(["panel"], "08 · Panels")
    view = {"model_id": "abc", "version_major": 2, "version_minor": 0}
    nb.cells[1].outputs = [
        nbformat.v4.new_output(
            "display_data", data={"application/vnd.jupyter.widget-view+json": view, "text/plain": "Panel()"}
        )
    ]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    page = notebook_page(nb, Chapter("08.ipynb", "08.html", "08 · Panels", ""), nav="", footer="")
    assert "unpkg.com" not in page and "widget-state" not in page
    assert "An interactive panel (ipywidgets) is here in the notebook" in page
    assert (
        "application/vnd.jupyter.widget-view+json" in nb.cells[1].outputs[0]["data"]
    )  # the caller's notebook is left as it was


def test_seed_hybrid_comparison_on_known_scores():
    rows = pd.DataFrame(
        {
            "qid": ["q1", "q2", "q3"] * 4,
            "metric": ["faithfulness"] * 3
            + ["answer_relevancy"] * 3
            + ["context_precision"] * 3
            + ["context_recall"] * 3,
            "value": [1.0, 0.5, None, 0.6, 0.6, 0.6, 0.9, None, None, None, None, None],
        }
    )
    table = hybrid_comparison(rows, n_resamples=200).set_index("metric")
    assert list(table.index) == list(SEED_HYBRID)
    assert table.loc["faithfulness", "ours"] == 0.75 and table.loc["faithfulness", "scored"] == "2 of 3"
    assert table.loc["faithfulness", "difference"] == pytest.approx(0.75 - 0.85)
    assert (table.loc["faithfulness", "ci95_low"], table.loc["faithfulness", "ci95_high"]) == (0.5, 1.0)
    assert table.loc["answer_relevancy", ["ours", "ci95_low", "ci95_high"]].tolist() == [0.6, 0.6, 0.6]
    assert table.loc["context_precision", "scored"] == "1 of 3"
    assert table.loc["context_recall", "scored"] == "0 of 3" and pd.isna(table.loc["context_recall", "ours"])


def test_a_comparison_without_published_numbers_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"lacks the column\(s\) \['difference'\]"):
        save_comparison(
            "x",
            pd.DataFrame({"published": [1.0], "ours": [0.5]}),
            title="t",
            published_source="p",
            data_source="d",
            results_dir=tmp_path,
        )


def test_the_book_links_its_pages_and_shows_published_ours_and_difference(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    executed = {}
    for name, title in (("00-a.ipynb", "00 · First"), ("01-b.ipynb", "01 · Second")):
        nb = _notebook(["1 + 1"], title)
        nb.cells[1].outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "2"}, execution_count=1)]
        nbformat.write(_notebook(["1 + 1"], title), folder / name)
        executed[name] = nb
    save_comparison(
        "toy",
        pd.DataFrame({"metric": ["auroc"], "published": [0.70], "ours": [0.655], "difference": [-0.045]}),
        title="A toy table",
        published_source="Paper, Table 9",
        data_source="our rows",
        results_dir=tmp_path / "results",
    )
    assert [c["name"] for c in load_comparisons(tmp_path / "results")] == ["toy"]
    book = build_book(
        notebooks_dir=folder, out_dir=tmp_path / "site", executed=executed, results_dir=tmp_path / "results"
    )
    assert [p.name for p in book.pages] == ["index.html", "00-a.html", "01-b.html", "reproduced.html"]
    index = (tmp_path / "site" / "index.html").read_text()
    assert re.findall(r'<a href="([^"]+)"><strong>', index) == ["00-a.html", "01-b.html", "reproduced.html"]
    first = (tmp_path / "site" / "00-a.html").read_text()
    assert '<a rel="next" href="01-b.html">01 · Second →</a>' in first and 'rel="prev"' not in first
    second = (tmp_path / "site" / "01-b.html").read_text()
    assert '<a rel="prev" href="00-a.html">← 00 · First</a>' in second
    assert '<a rel="next" href="reproduced.html">' in second
    assert "https://cdnjs" not in first and "<title>00 · First</title>" in first
    reproduced = (tmp_path / "site" / "reproduced.html").read_text()
    assert '<td class="text">auroc</td><td>0.700</td><td>0.655</td><td>-0.045</td>' in reproduced
    assert (
        "<strong>Published:</strong> Paper, Table 9" in reproduced and "<strong>Ours:</strong> our rows" in reproduced
    )
