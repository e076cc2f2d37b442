"""Every notebook runs top to bottom on the smoke configuration (HELPERS_SMOKE=1), and is
committed thin: goals first, no function definitions, no outputs. Then the book of those executed
notebooks (helpers.book, what `make book` builds from the full ones) is opened in Chromium: every
page renders its figures, holds no error, links to the next, and nothing is fetched from the network."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from browser import browser_page, missing_browser

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
EXECUTED: dict[str, nbformat.NotebookNode] = {}  # the smoke run's executed notebooks, for the book


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_thin_and_stripped(path):
    nb = nbformat.read(path, as_version=4)
    assert nb.cells[0].cell_type == "markdown" and "Goals" in nb.cells[0].source
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs, f"{path.name} is committed with outputs"
            assert "\ndef " not in "\n" + cell.source and "\nclass " not in "\n" + cell.source, (
                f"{path.name} defines a function or class: move it into the helpers package"
            )


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """One results folder for all notebooks, run in order: 07 redraws what 06 ran."""
    return tmp_path_factory.mktemp("notebook-outputs")


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_on_smoke_config(path, outputs, monkeypatch):
    tmp_path = outputs / path.stem
    monkeypatch.setenv("HELPERS_SMOKE", "1")
    monkeypatch.setenv("HELPERS_FIGURES_DIR", str(tmp_path / "figures"))
    monkeypatch.setenv("HELPERS_RESULTS_DIR", str(outputs / "results"))
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    EXECUTED[path.name] = nb
    if "save_figure(" in path.read_text():
        pngs = list((tmp_path / "figures").glob("*.png"))
        assert pngs and all(p.with_suffix(".json").exists() and p.with_suffix(".pdf").exists() for p in pngs)


def _images(nb: nbformat.NotebookNode) -> int:
    return sum("image/png" in output.get("data", {}) for cell in nb.cells for output in cell.get("outputs", []))


@pytest.mark.slow
def test_the_book_of_the_smoke_notebooks_in_chromium(outputs, monkeypatch):
    """Built from the notebooks the tests above executed (any they did not, when run alone, are
    executed here on the smoke config); each page opened in Chromium from file://."""
    from helpers.book.build import build_book

    reason = missing_browser()
    if reason:
        pytest.skip(reason)
    monkeypatch.setenv("HELPERS_SMOKE", "1")
    monkeypatch.setenv("HELPERS_FIGURES_DIR", str(outputs / "book-figures"))
    monkeypatch.setenv("HELPERS_RESULTS_DIR", str(outputs / "results"))
    book = build_book(out_dir=outputs / "book", executed=EXECUTED, results_dir=outputs / "results", log=lambda _: None)
    images = {p.stem + ".html": _images(EXECUTED[p.name]) for p in NOTEBOOKS if p.name in EXECUTED}
    drawn = [p.stem for p in NOTEBOOKS if "save_figure(" in p.read_text() or "display(Image(" in p.read_text()]
    assert all(images.get(f"{stem}.html", 0) > 0 for stem in drawn), f"a notebook lost its figures: {images}"
    # every teaching notebook (00-07) draws a figure of its own result (issue 61)
    teaching = [p.stem for p in NOTEBOOKS if p.name[:2] <= "07"]
    assert all(images.get(f"{stem}.html", 0) > 0 for stem in teaching if f"{stem}.html" in images), images

    fetched = []
    with browser_page(1200, 900) as page:
        page.on("request", lambda r: fetched.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
        page.goto(book.index.as_uri())
        links = page.locator("ol.book-chapters a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
        assert links == [p.stem + ".html" for p in NOTEBOOKS] + ["reproduced.html"]
        for link in links:
            page.goto((book.out_dir / link).as_uri())
            shown = page.eval_on_selector_all("img", "els => els.map(e => e.complete && e.naturalWidth > 0)")
            if link in images:
                assert len(shown) == images[link] and all(shown), (
                    f"{link}: {shown.count(True)} of {images[link]} figures"
                )
            text = page.inner_text("body")
            assert "Traceback" not in text and "Error" not in "".join(
                page.locator('[data-mime-type="application/vnd.jupyter.stderr"]').all_inner_texts()
            ), link
        reproduced = page.locator("section").evaluate_all("s => s.map(e => e.id)")
        assert reproduced == [
            "ragbench-hallucination-shares",
            "ragbench-table3",
            "seed-ragas-hybrid",
            "seed-ragas-worked-examples",
        ]
        assert page.locator("section#ragbench-hallucination-shares img").count() == 2
        # the bar's links: from the first chapter, next after next, to the reproduced figures
        page.goto((book.out_dir / links[0]).as_uri())
        visited = [links[0]]
        while page.locator('a[rel="next"]').count():
            page.locator('a[rel="next"]').first.click()
            visited.append(page.url.rsplit("/", 1)[-1])
        assert visited == links
        page.locator('a[rel="contents"]').first.click()
        assert page.url.endswith("/index.html")
    assert fetched == [], f"the book fetched from the network: {fetched[:5]}"
