"""Where things live. Every path can be moved with an environment variable."""

from __future__ import annotations

import os
from pathlib import Path

# A checkout: src/helpers/paths.py, the project root two levels above src/. An installed wheel
# (site-packages/helpers/paths.py) has no project around it: data/, results/ and figures/ go under
# the folder it is run from (HELPERS_PROJECT_ROOT to choose another), not into site-packages.
_CHECKOUT = Path(__file__).resolve().parents[2]
PROJECT_ROOT = (
    Path(os.environ["HELPERS_PROJECT_ROOT"]).expanduser().resolve()
    if os.environ.get("HELPERS_PROJECT_ROOT")
    else _CHECKOUT
    if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "src" / "helpers").is_dir()
    else Path.cwd().resolve()
)


def _dir(env: str, default: Path) -> Path:
    return Path(os.environ.get(env, default)).expanduser().resolve()


DATA_DIR = _dir("HELPERS_DATA_DIR", PROJECT_ROOT / "data")
RAW_DIR = DATA_DIR / "raw"
PROCESSED_DIR = _dir("HELPERS_PROCESSED_DIR", DATA_DIR / "processed")
# Caches that every clone on this machine can share, outside the repository (overridable):
# a new clone or a `make clean` keeps what was embedded, answered or converted before.
SHARED_CACHE_DIR = _dir(
    "HELPERS_SHARED_CACHE", Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "rag-workbench"
)
# content-addressed SQLite stores (embeddings by model and text hash, LLM replies by request
# hash): safe to share between processes and clones
CACHE_DIR = _dir("HELPERS_CACHE_DIR", SHARED_CACHE_DIR)
# vector indexes (Chroma folders) stay in the project: one writer per folder
INDEX_DIR = _dir("HELPERS_INDEX_DIR", DATA_DIR / "cache" / "indexes")
# models converted from package files (the e5 rebuilt for torch, the bundled GGUF as Q8_0):
# each carries the sha256 of its source, so a stale one is rebuilt, never used
DERIVED_MODELS_DIR = _dir("HELPERS_DERIVED_MODELS_DIR", SHARED_CACHE_DIR / "models")
# trained artefacts (reranker, TRACe judge, evidence model): movable, e.g. to share them between clones
MODELS_DIR = _dir("HELPERS_MODELS_DIR", DATA_DIR / "models")
# ../shared/data beside the project root: the offline copy of every public source.
SHARED_DATA_DIR = _dir("HELPERS_SHARED_DATA", PROJECT_ROOT.parent / "shared" / "data")
FIGURES_DIR = _dir("HELPERS_FIGURES_DIR", PROJECT_ROOT / "figures")
RESULTS_DIR = _dir("HELPERS_RESULTS_DIR", PROJECT_ROOT / "results")
# the experiment configs the CLI finds by name and the panels list (and read LLMs from)
CONFIGS_DIR = _dir("HELPERS_CONFIGS_DIR", PROJECT_ROOT / "configs")
# the executed notebooks as a static site (`make book`), gitignored
BOOK_DIR = _dir("HELPERS_BOOK_DIR", PROJECT_ROOT / "book" / "_build")
# the gitignored file API keys may come from (after the environment)
ENV_FILE = _dir("HELPERS_ENV_FILE", PROJECT_ROOT / ".env")


# The caches hold prompts, answers and the texts' embeddings: readable by their owner only.
PRIVATE_DIR_MODE, PRIVATE_FILE_MODE = 0o700, 0o600
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def _drop_group_and_other(path: Path) -> None:
    """chmod away group and other bits, on what this user owns only; a sticky folder (such as
    /tmp) and the home folder are shared or personal by design and left as they are."""
    info = path.stat()
    if info.st_uid != os.geteuid() or (path.is_dir() and (info.st_mode & 0o1000 or path == Path.home())):
        return
    if info.st_mode & 0o077:
        path.chmod(info.st_mode & 0o7700)


def private_dir(path: str | Path, *, tighten: bool = True) -> Path:
    """`path` as a folder only its owner can enter: created 0700 (parents as usual), and an existing
    one tightened to owner-only when `tighten` (off for a folder the caller merely chose)."""
    path = Path(path)
    if not path.exists():
        path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
        path.chmod(PRIVATE_DIR_MODE)  # mkdir's mode passes through the umask
    elif tighten:
        _drop_group_and_other(path)
    return path


def private_file(path: str | Path, *, side_files: tuple[str, ...] = ()) -> Path:
    """`path` readable by its owner only: created empty with 0600 if absent (an empty file is an
    empty SQLite database), else tightened, with the `side_files` (suffixes) that exist. SQLite
    creates its -wal, -shm and -journal files with the database file's mode, so they follow it."""
    path = Path(path)
    try:  # created by this call with its mode, never opened for writing if it exists
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, PRIVATE_FILE_MODE))
    except FileExistsError:
        pass
    for file in (path, *(path.with_name(path.name + suffix) for suffix in side_files)):
        if file.exists():
            _drop_group_and_other(file)
    return path


def cache_dir(path: str | Path) -> Path:
    """`path` created as a folder; the shared cache folder first, private, when `path` is inside it
    (a derived model written first must not leave ~/.cache/rag-workbench world-readable)."""
    path = Path(path)
    if path.resolve().is_relative_to(SHARED_CACHE_DIR):
        private_dir(SHARED_CACHE_DIR)
    path.mkdir(parents=True, exist_ok=True)
    return path


def private_sqlite(path: str | Path) -> Path:
    """A cache database made private before SQLite opens it: the file and its side files 0600, its
    folder 0700 if created here (an existing folder is tightened when it is a shared cache folder)."""
    path = Path(path)
    private_dir(path.parent, tighten=path.parent.resolve() in {CACHE_DIR, SHARED_CACHE_DIR})
    return private_file(path, side_files=SQLITE_SIDE_FILES)


def benchmark_output(name: str) -> Path:
    """Where benchmarks/NAME.py writes its measurements by default: results/benchmarks/NAME.json."""
    return RESULTS_DIR / "benchmarks" / f"{name}.json"


def write_json(path: str | Path, obj, *, echo: bool = False) -> Path:
    """Write `obj` as indented UTF-8 JSON (parents created); print it too when `echo`."""
    import json

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(obj, indent=2, default=str, ensure_ascii=False)
    path.write_text(text, encoding="utf-8")
    if echo:
        print(text)
    return path
