"""The `book` command, registered on the package CLI by `add_cli` (helpers.__main__):

    python -m helpers book [--notebooks notebooks/] [--out book/_build/] [--timeout 1800]

Executes every notebook in order (fresh kernels) and writes the static site; prints the start
page's path. A failing cell exits 1 naming the notebook and the cell.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _book(args: argparse.Namespace) -> int:
    from helpers.book.build import build_book  # nbclient, nbconvert: loaded only when this runs
    from helpers.book.execute import BookError

    try:
        book = build_book(notebooks_dir=args.notebooks, out_dir=args.out, timeout_s=args.timeout)
    except BookError as error:
        print(f"book failed: {error}", file=sys.stderr)
        return 1
    print(f"book: {len(book.pages)} pages in {book.seconds:.0f} s; open {book.index}")
    return 0


def add_cli(subparsers) -> None:
    book = subparsers.add_parser("book", help="execute the notebooks into a static site (book/_build/index.html)")
    book.add_argument("--notebooks", type=Path, default=None, help="folder of notebooks (default notebooks/)")
    book.add_argument("--out", type=Path, default=None, help="where the pages go (default book/_build/)")
    book.add_argument("--timeout", type=int, default=1800, help="seconds a cell may run (default 1800)")
    book.set_defaults(func=_book)
