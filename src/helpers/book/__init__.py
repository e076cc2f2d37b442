"""The book: every notebook executed into a browsable static site (`make book`), with a page of
the published tables and figures reproduced beside ours. `build.py` orchestrates (`build_book`),
`execute.py` runs a notebook and keeps secrets and paths out of its outputs (`BookError`),
`pages.py` and `reproduced.py` write the HTML. Nothing is imported here, so that the command line
can list `book` without loading nbclient and nbconvert."""
