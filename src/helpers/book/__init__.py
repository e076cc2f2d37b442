"""The book: every notebook executed into a browsable static site (`make book`), with a page of
the published tables and figures reproduced beside ours. `build.py` orchestrates, `execute.py`
runs a notebook and keeps secrets and paths out of its outputs, `pages.py` and `reproduced.py`
write the HTML."""

from helpers.book.build import Book, build_book
from helpers.book.execute import BookError

__all__ = ["Book", "BookError", "build_book"]
