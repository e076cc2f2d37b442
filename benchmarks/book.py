"""How long `make book` takes: the book built as `make book` builds it (a subprocess, `python -m
helpers book`), timed, with each notebook's seconds from the book's manifest (book/_build/book.json)
and the peak resident memory of the build (its largest process: a notebook's kernel).

  python benchmarks/book.py [--llm-cache warm|cold] [--out results/benchmarks/book.json]

The target (issue 50): at most 5 minutes on 2 cores after `make run`. `--llm-cache cold` gives the
build an empty LLM response cache (a temporary HELPERS_CACHE_DIR holding a copy of the embeddings
only), as on a machine whose notebooks never answered before: notebook 03 then generates and
judges its answers, and 01 writes its HyDE passages and rewrites; `warm` (the default) uses the
machine's caches as they are (a second build, or answers already made). Run from the project
root after `make run`.
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
    parser.add_argument("--llm-cache", choices=["warm", "cold"], default="warm")
    parser.add_argument("--out", type=Path, default=paths.benchmark_output("book"))
    args = parser.parse_args(argv)

    env = dict(os.environ)
    scratch = None
    if args.llm_cache == "cold":
        scratch = Path(tempfile.mkdtemp(prefix="book-cold-cache-"))
        embeddings = paths.CACHE_DIR / "embeddings.sqlite"
        if embeddings.exists():  # embeddings stay warm: `make run` made them; the LLM's replies do not
            shutil.copyfile(embeddings, scratch / embeddings.name)
        env["HELPERS_CACHE_DIR"] = str(scratch)
    command = [sys.executable, "-m", "helpers", "book"]
    timer = shutil.which("time") or ("/usr/bin/time" if Path("/usr/bin/time").exists() else None)
    stats = Path(tempfile.mkstemp(prefix="book-time-")[1])
    if timer:
        command = [timer, "-f", "%e %M", "-o", str(stats), *command]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if scratch:
        shutil.rmtree(scratch, ignore_errors=True)
    if done.returncode != 0:
        print(done.stdout[-3000:], done.stderr[-3000:], sep="\n", file=sys.stderr)
        print(f"make book failed (exit {done.returncode}) after {wall:.0f} s", file=sys.stderr)
        return done.returncode
    peak_mb = None
    if timer and stats.read_text().strip():
        peak_mb = round(int(stats.read_text().split()[-1]) / 1024)
    manifest = json.loads((paths.BOOK_DIR / "book.json").read_text())
    result = {
        "command": "python -m helpers book",
        "llm_cache": args.llm_cache,
        "commit": git_commit(),
        "cores": os.cpu_count(),
        "wall_s": round(wall, 1),
        "target_s": TARGET_S,
        "within_target": wall <= TARGET_S,
        "peak_rss_mb": peak_mb,
        "notebooks_s": manifest["notebooks"],
        "pages": manifest["pages"],
        "page_kb": {p: round((paths.BOOK_DIR / p).stat().st_size / 1024) for p in manifest["pages"]},
    }
    paths.write_json(args.out, result)
    for name, seconds in manifest["notebooks"].items():
        print(f"{name:40s} {seconds:7.1f} s")
    print(
        f"book: {wall:.0f} s in all (target {TARGET_S} s: {'met' if wall <= TARGET_S else 'missed'}), "
        f"LLM cache {args.llm_cache}, peak {peak_mb} MB; written to {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
