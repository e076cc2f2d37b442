"""`make book`: every notebook executed in order, each in a fresh kernel, into a static site.

    python -m helpers book [--notebooks notebooks/] [--out book/_build/]

The pages: index.html (what the workbench is for, the chapters in reading order), one page per
notebook with its outputs and figures, reproduced.html (the published tables and figures beside
ours, helpers.book.reproduced). The notebooks run on the default configuration and reuse what
`make run` left in results/ (notebook 06 resumes the default run, so its answers are not made
twice); a cell that raises stops the build with the notebook and the cell named. Every page is
scanned before it is written: a key, a token, the home folder or the project's absolute path in
it stops the build too (helpers.book.execute).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import nbformat

from helpers import paths
from helpers.book.execute import BookError, execute_notebook, sanitize_outputs, scan
from helpers.book.pages import Chapter, footer_html, nav_html, notebook_page, start_page, title_and_goals
from helpers.book.reproduced import TITLE as REPRODUCED_TITLE
from helpers.book.reproduced import reproduced_page
from helpers.figures import git_commit
from helpers.reproduce.published import load_comparisons

REPRODUCED_PAGE = "reproduced.html"


@dataclass
class Book:
    """What a build wrote: the folder, its start page, the chapters and seconds per notebook."""

    out_dir: Path
    index: Path
    chapters: list[Chapter]
    pages: list[Path] = field(default_factory=list)
    seconds: float = 0.0


def notebooks_in(folder: Path) -> list[Path]:
    found = sorted(Path(folder).glob("*.ipynb"))
    if not found:
        raise BookError(f"no notebooks (*.ipynb) in {folder}: pass --notebooks DIR")
    return found


def _write(path: Path, text: str) -> Path:
    problems = scan(text)
    if problems:  # never written: a page that would publish a secret is a failed build
        raise BookError(
            f"{path.name} would publish {', '.join(problems)}: find it in the notebook's outputs and remove it "
            "(keys belong in the environment or .env, paths relative to the project)"
        )
    path.write_text(text, encoding="utf-8")
    return path


def build_book(
    *,
    notebooks_dir: Path | None = None,
    out_dir: Path | None = None,
    executed: Mapping[str, nbformat.NotebookNode] | None = None,
    results_dir: Path | None = None,
    timeout_s: int = 1800,
    log: Callable[[str], None] = print,
) -> Book:
    """Execute the notebooks of `notebooks_dir` (default notebooks/) in name order and write the
    site into `out_dir` (default book/_build/). `executed`: notebooks already executed, by file
    name, used as they are once sanitized (the test suite's smoke run hands its own in). `results_dir`: where
    the saved comparisons are read (default results/). Raises BookError on a failing cell."""
    start = time.perf_counter()
    notebooks_dir = Path(notebooks_dir or paths.PROJECT_ROOT / "notebooks")
    out_dir = Path(out_dir or paths.BOOK_DIR)
    sources = notebooks_in(notebooks_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    built = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    commit = git_commit()

    nodes, chapters = [], []
    for source in sources:
        if executed is not None and source.name in executed:
            node, seconds = executed[source.name], None
            sanitize_outputs(node)  # as execute_notebook does with its own
        else:
            log(f"executing {source.name} ...")
            result = execute_notebook(source, timeout_s=timeout_s)
            node, seconds = result.notebook, result.seconds
            log(f"  {source.name}: {seconds:.0f} s")
        title, goals = title_and_goals(node, fallback=source.stem)
        nodes.append(node)
        chapters.append(Chapter(source.name, source.stem + ".html", title, goals, seconds))

    reproduced = Chapter("", REPRODUCED_PAGE, REPRODUCED_TITLE, "")
    sequence = [*chapters, reproduced]
    written = []
    for i, (node, chapter) in enumerate(zip(nodes, chapters)):
        nav = nav_html(sequence[i - 1] if i else None, sequence[i + 1])
        stamp = {"built": built, "commit": commit, "seconds": chapter.seconds}
        written.append(_write(out_dir / chapter.page, notebook_page(node, chapter, nav=nav, footer=footer_html(stamp))))
    written.append(
        _write(
            out_dir / REPRODUCED_PAGE,
            reproduced_page(
                load_comparisons(results_dir),
                nav=nav_html(chapters[-1], None),
                footer=footer_html({"built": built, "commit": commit}),
            ),
        )
    )
    extra = [
        (
            REPRODUCED_PAGE,
            REPRODUCED_TITLE,
            "RAGBench's Table 3 and §3.3, the seed benchmark's RAGAS numbers: "
            "published, ours, the difference, and where each comes from",
        )
    ]
    index = _write(out_dir / "index.html", start_page(chapters, extra=extra, stamp={"built": built, "commit": commit}))
    seconds = time.perf_counter() - start
    manifest = {
        "built": built,
        "commit": commit,
        "seconds": round(seconds, 1),
        "notebooks": {c.notebook: None if c.seconds is None else round(c.seconds, 1) for c in chapters},
        "pages": [p.name for p in [index, *written]],
    }
    (out_dir / "book.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return Book(out_dir, index, chapters, [index, *written], seconds)
