"""Executing the notebooks for the book: each in a fresh kernel, in order, with nbclient, and the
outputs made safe to publish.

A cell that raises stops the book with a `BookError` naming the notebook, the cell (its number
among the code cells, as JupyterLab counts them, and its first line) and the exception. Outputs
never carry an API key, a home folder or a token: every key value the environment holds
(`*_API_KEY`, `*_TOKEN`, HELPERS_KEY_VARIABLES) becomes [REDACTED], the project's folder becomes
`.` and the home folder `~`; `scan` then checks the rendered pages and fails on what is left.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from helpers import paths
from helpers.errors import UserError
from helpers.llm.keys import VARIABLES_SETTING, user_setting

# key formats of the hosted providers (OpenAI, Groq, Hugging Face, Anthropic) and a URL's token
# parameter: whatever their variable's name, such strings are never published
KEY_PATTERNS = (
    re.compile(r"\bsk-[A-Za-z0-9_-]{20,}"),
    re.compile(r"\bgsk_[A-Za-z0-9]{20,}"),
    re.compile(r"\bhf_[A-Za-z0-9]{20,}"),
    re.compile(r"[?&]token=[0-9a-fA-F]{16,}"),
)
# a tqdm progress bar's state ("ingest:  25%|██▌       | 1/4 [00:02<00:07]"): each update is an output
# of its own in the notebook, dozens a loop; on a page they are noise, not results
PROGRESS_BAR = re.compile(r"\d+%\|.*\|")
SECRET_VARIABLE = re.compile(r"[A-Z][A-Z0-9_]*_(API_KEY|TOKEN|SECRET)")
MIN_SECRET_CHARS = 8  # shorter values ("none", "1") are not secrets and would mangle the pages


class BookError(UserError):
    """The book cannot be built: a notebook cell raised, or a page would publish a secret."""


@dataclass
class Executed:
    """One notebook executed: the node with its outputs, and how long it took."""

    path: Path
    notebook: nbformat.NotebookNode
    seconds: float


def secret_values(environ=None) -> list[str]:
    """The values of every key-like variable in the environment, longest first."""
    if environ is None:  # the variables the user listed, from the environment or .env (helpers.llm.keys)
        environ, named = os.environ, set(user_setting(VARIABLES_SETTING))
    else:
        named = {v.strip() for v in environ.get(VARIABLES_SETTING, "").split(",") if v.strip()}
    values = {
        value
        for name, value in environ.items()
        if (SECRET_VARIABLE.fullmatch(name) or name in named) and len(value or "") >= MIN_SECRET_CHARS
    }
    return sorted(values, key=len, reverse=True)


def sanitize(text: str, *, secrets: list[str], project: Path, home: Path) -> str:
    """`text` with every secret value [REDACTED], the project's folder `.` and home `~`."""
    for value in secrets:
        text = text.replace(value, "[REDACTED]")
    for pattern in KEY_PATTERNS:
        text = pattern.sub("[REDACTED]", text)
    text = text.replace(str(project), ".")
    if str(home) not in ("/", ""):
        text = text.replace(str(home), "~")
    return text


def is_progress(output: dict) -> bool:
    """A stderr stream holding nothing but progress-bar states and line ends."""
    if output.get("output_type") != "stream" or output.get("name") != "stderr":
        return False
    parts = [p for p in re.split(r"[\r\n]", output.get("text", "")) if p.strip()]
    return all(PROGRESS_BAR.search(p) for p in parts)


def sanitizer(environ=None):
    """`sanitize` with this process's secrets, project folder and home folder, read once."""
    secrets = secret_values(environ)
    project, home = paths.PROJECT_ROOT.resolve(), Path.home().resolve()
    return lambda text: sanitize(text, secrets=secrets, project=project, home=home)


def sanitize_outputs(notebook: nbformat.NotebookNode, *, environ=None) -> None:
    """Sanitize every text and HTML output of `notebook` in place (images are left as they are),
    and drop its progress bars."""
    clean = sanitizer(environ)
    for cell in notebook.cells:
        if "outputs" in cell:
            cell["outputs"] = [output for output in cell["outputs"] if not is_progress(output)]
        for output in cell.get("outputs", []):
            if "text" in output:
                output["text"] = clean(output["text"])
            for mime, value in output.get("data", {}).items():
                if mime.startswith("text/") or mime.endswith("json"):
                    if isinstance(value, str):
                        output["data"][mime] = clean(value)
            if "traceback" in output:
                output["traceback"] = [clean(line) for line in output["traceback"]]


def _failed_cell(notebook: nbformat.NotebookNode, error: CellExecutionError) -> str:
    """'code cell N (first line)' for the cell that raised: the first one with an error output."""
    code_number = 0
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        code_number += 1
        if any(output.get("output_type") == "error" for output in cell.get("outputs", [])):
            first = next((line for line in cell.source.splitlines() if line.strip()), "")
            return f"code cell {code_number} ({first[:80]!r})"
    return "a code cell"


def execute_notebook(path: Path, *, timeout_s: int = 1800, kernel: str = "python3") -> Executed:
    """Run `path` top to bottom in a fresh kernel, its folder as the working directory. A cell that
    raises: BookError naming the notebook, the cell and the error (ename: evalue)."""
    path = Path(path)
    try:
        notebook = nbformat.read(path, as_version=4)
    except (OSError, ValueError) as error:  # nbformat's NotJSONError is a ValueError
        raise BookError(f"{path}: not a readable notebook ({error})") from error
    client = NotebookClient(
        notebook, timeout=timeout_s, kernel_name=kernel, resources={"metadata": {"path": str(path.parent)}}
    )
    start = time.perf_counter()
    try:
        client.execute()
    except CellExecutionError as error:
        what = sanitizer()(f"{error.ename}: {error.evalue}")
        raise BookError(f"{path.name}: {_failed_cell(notebook, error)} raised {what}") from None
    seconds = time.perf_counter() - start
    sanitize_outputs(notebook)
    return Executed(path, notebook, seconds)


def scan(text: str, *, environ=None) -> list[str]:
    """What `text` would publish that it must not: 'a key value', 'a key pattern', 'the home
    folder', 'the project folder' (each named once; the values themselves are never returned)."""
    found = []
    if any(value in text for value in secret_values(environ)):
        found.append("an API key or token from the environment")
    if any(pattern.search(text) for pattern in KEY_PATTERNS):
        found.append("a string shaped like an API key or a token")
    home = str(Path.home().resolve())
    if home not in ("/", "") and re.search(re.escape(home) + r"(?![\w.-])", text):
        found.append("the home folder")
    project = str(paths.PROJECT_ROOT.resolve())
    if re.search(re.escape(project) + r"(?![\w.-])", text):
        found.append("the project's absolute path")
    return found
