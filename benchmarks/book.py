"""How long `make book` takes: the book built as `make book` builds it (a subprocess, `python -m
helpers book`), timed, with each notebook's seconds from the book's manifest (book/_build/book.json)
and the peak resident memory of the build (its largest process: a notebook's kernel).

  python benchmarks/book.py [--fresh] [--out results/benchmarks/book.json]

The target (issue 50): at most 5 minutes on 2 cores after `make run`.
- default: the book built with this project's results/ and the machine's caches as they are (a
  rebuild: every LLM reply the notebooks ask for is cached once they have run);
- `--fresh`: as on a new machine that has just run `make run`: an empty LLM response cache and an
  empty results/, figures/ and book folder (temporary; only the embeddings are copied from the
  machine's cache), then the default run (`python -m helpers run configs/default.yaml`, timed as
  the step `make run` ends with) and then the book, timed on its own: notebook 03's RAGAS judge
  and notebook 09's run over the example folder make their LLM calls here.
Run from the project root after `make run`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
TARGET_S = 300


def main(argv=None) -> int:
    from helpers import paths
    from helpers.figures import git_commit

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fresh", action="store_true", help="empty LLM cache and results, the default run first")
    parser.add_argument("--out", type=Path, default=paths.benchmark_output("book"))
    args = parser.parse_args(argv)

    env, book_dir, scratch = dict(os.environ), paths.BOOK_DIR, None
    result = {"mode": "fresh" if args.fresh else "rebuild", "commit": git_commit(), "cores": os.cpu_count()}
    if args.fresh:
        scratch = Path(tempfile.mkdtemp(prefix="book-fresh-"))
        for name in ("cache", "results", "figures"):
            (scratch / name).mkdir()
        embeddings = paths.CACHE_DIR / "embeddings.sqlite"
        if embeddings.exists():  # the machine's embeddings stay: the LLM's replies do not
            shutil.copyfile(embeddings, scratch / "cache" / embeddings.name)
        book_dir = scratch / "book"
        env.update(
            HELPERS_CACHE_DIR=str(scratch / "cache"),
            HELPERS_RESULTS_DIR=str(scratch / "results"),
            HELPERS_FIGURES_DIR=str(scratch / "figures"),
            HELPERS_BOOK_DIR=str(book_dir),
        )
        run = timed([sys.executable, "-m", "helpers", "run", "configs/default.yaml"], env)
        if run["returncode"]:
            return run["returncode"]
        result["default_run"] = run
    book = timed([sys.executable, "-m", "helpers", "book"], env)
    if book["returncode"]:
        return book["returncode"]
    manifest = json.loads((book_dir / "book.json").read_text())
    result |= {
        "command": "python -m helpers book",
        "wall_s": book["wall_s"],
        "target_s": TARGET_S,
        "within_target": book["wall_s"] <= TARGET_S,
        "peak_rss_mb": book["peak_rss_mb"],
        "notebooks_s": manifest["notebooks"],
        "page_kb": {p: round((book_dir / p).stat().st_size / 1024) for p in manifest["pages"]},
    }
    if scratch:
        shutil.rmtree(scratch, ignore_errors=True)
    paths.write_json(args.out, result)
    for name, seconds in manifest["notebooks"].items():
        print(f"{name:40s} {seconds:7.1f} s")
    if "default_run" in result:
        print(f"default run first: {result['default_run']['wall_s']:.0f} s")
    print(
        f"book: {book['wall_s']:.0f} s (target {TARGET_S} s: {'met' if result['within_target'] else 'missed'}), "
        f"{result['mode']}, peak {book['peak_rss_mb']} MB; written to {args.out}"
    )
    return 0


def timed(command: list[str], env: dict) -> dict:
    """Run `command` in the project root: its exit status, wall seconds and peak RSS (MB, its
    largest process, by /usr/bin/time where there is one)."""
    timer = shutil.which("time") or ("/usr/bin/time" if Path("/usr/bin/time").exists() else None)
    stats = Path(tempfile.mkstemp(prefix="book-time-")[1])
    if timer:
        command = [timer, "-f", "%e %M", "-o", str(stats), *command]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        print(done.stdout[-3000:], done.stderr[-3000:], sep="\n", file=sys.stderr)
        print(f"{' '.join(command[-3:])} failed (exit {done.returncode}) after {wall:.0f} s", file=sys.stderr)
    text = stats.read_text().strip() if timer else ""
    stats.unlink(missing_ok=True)
    peak = round(int(text.split()[-1]) / 1024) if text else None
    return {"returncode": done.returncode, "wall_s": round(wall, 1), "peak_rss_mb": peak}


if __name__ == "__main__":
    sys.exit(main())
