"""Test-session set-up. The tests never write into the project's own data/cache,
data/processed, results/ or figures/: before anything imports `helpers` (whose paths are read
at import), those folders are pointed at one temporary directory for the session, which
subprocesses and notebook kernels inherit. The machine's shared embedding cache, if any, is copied
in first (read, never written) so that slow tests on whole datasets do not re-embed them."""

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
SESSION_DIR = Path(tempfile.mkdtemp(prefix="helpers-tests-"))
# the machine's shared cache (helpers.paths.CACHE_DIR before the tests move it), read only
SHARED_CACHE = Path(
    os.environ.get("HELPERS_CACHE_DIR")
    or Path(
        os.environ.get("HELPERS_SHARED_CACHE")
        or (Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "rag-workbench")
    )
).expanduser()
ISOLATED = {
    "HELPERS_CACHE_DIR": "cache",
    "HELPERS_INDEX_DIR": "cache/indexes",
    "HELPERS_PROCESSED_DIR": "processed",
    "HELPERS_RESULTS_DIR": "results",
    "HELPERS_FIGURES_DIR": "figures",
}


def _offline() -> None:
    """The offline defaults the command line applies (helpers.offline_defaults): the suite runs offline, and
    its subprocesses and notebook kernels inherit them. `import helpers` no longer sets them."""
    from helpers.offline_defaults import apply_offline_defaults

    apply_offline_defaults()


def _isolate() -> None:
    for variable, name in ISOLATED.items():
        os.environ[variable] = str(SESSION_DIR / name)
        (SESSION_DIR / name).mkdir(parents=True, exist_ok=True)
    project_cache = SHARED_CACHE / "embeddings.sqlite"
    # copied as files, database and write-ahead log: even a read-only sqlite connection would
    # create -shm/-wal files beside the project's database
    for suffix in ("", "-wal"):
        source = project_cache.with_name(project_cache.name + suffix)
        if source.exists():
            shutil.copyfile(source, SESSION_DIR / "cache" / source.name)
    atexit.register(shutil.rmtree, SESSION_DIR, ignore_errors=True)


_isolate()
_offline()

# Parallel workers (pytest-xdist, `make test` runs two): each worker is a process that imported this
# file, so it has a session folder of its own (above); ports are free ports everywhere. Each worker
# gets one thread per numeric library, so the two do not fight over 2 cores (the local LLM keeps its
# own layout: its thread count is part of its cache key and of the answers the tests pin).
WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if WORKER:
    for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ.setdefault(variable, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


# Seconds each group of tests kept a worker busy (a fresh clone, 2026-12-06, 85b923f; groups of over
# 25 s): handed to the workers longest first (`--no-loadscope-reorder` in pyproject.toml keeps this
# order; xdist would order groups by their number of tests), so that the short ones fill the end
# instead of one worker running the browser's two long tests alone for 2 minutes while the other
# idles (docs/measurements/test-suite.md).
GROUP_SECONDS = {  # + the groups issue 60-62 added, measured on a fresh clone 2026-12-07 (9467933)
    "test_notebooks": 195,  # + 10-search
    "test_runs": 125,  # the killed run's straight run shared with the run log's (issue 62's stop)
    "test_explore_browser": 115,
    "ray": 137,  # + the search answering on Ray workers (2026-12-07)
    "test_evidence": 45,  # the stacking weight on 100 held-out examples
    "test_ragas": 76,
    "test_llm": 57,
    "test_distribution": 50,
    "test_testset": 51,
    "test_reranker_reproducible": 39,
    "test_sweep": 34,
    "test_rerank": 31,
    "test_cross_encoder_train": 29,
    "test_hosted_runs": 26,
    "test_refusals": 35,
    "test_groq_config": 30,
    "test_search": 60,  # + compare's answering configs and the active labels (2026-12-07)
    "test_compare": 15,
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under `--dist loadgroup`, a module's tests stay on one worker (its module-scoped models,
    servers and runs are built once), and tests marked `xdist_group("ray")` (Ray heads, which take
    every core they are given) run one after another on one worker.

    xdist 3.8 puts the group into a test's id by setting `item._nodeid`, which pytest 9.2 no longer
    reads (the id is `item._id`, a NodeId): its groups were ignored and a module's tests spread
    over both workers, each building the module's fixtures (measured: the trends module's three
    runs built twice, 2 x 18 s). The id is suffixed here, as xdist means to, where it lacks one."""
    from _pytest.nodeid import NodeId

    grouped = config.getvalue("dist") == "loadgroup" or getattr(config.option, "loadgroup", False)
    for item in items:
        if not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
        if grouped and item.nodeid.rfind("@") <= item.nodeid.rfind("]"):
            group = "_".join(
                sorted(
                    {
                        str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")
                    }
                )
            )
            item._id = NodeId.parse(f"{item.nodeid}@{group}")

    def seconds(item) -> int:
        return GROUP_SECONDS.get(item.nodeid.rsplit("@", 1)[-1] if grouped else item.module.__name__, 0)

    items.sort(key=lambda item: -seconds(item))  # stable: a group's tests, and the rest, as collected


# the shared cache's SQLite stores too (its derived models, checked by sha256, may be built by a test)
GUARDED = [
    PROJECT / "data" / "cache",
    PROJECT / "data" / "processed",
    PROJECT / "results",
    PROJECT / "figures",
    *[SHARED_CACHE / name for name in ("embeddings.sqlite", "llm.sqlite")],
]


def _snapshot() -> dict:
    """Every file under the project's own output folders, with its size and modification time."""
    files = [f for entry in GUARDED if entry.exists() for f in ([entry] if entry.is_file() else entry.rglob("*"))]
    return {str(f): (f.stat().st_size, f.stat().st_mtime_ns) for f in files if f.is_file()}


BEFORE = _snapshot()


def pytest_sessionfinish(session, exitstatus):
    """Fail the session if any test wrote into the project's cache, processed data, results or figures."""
    after = _snapshot()
    changed = sorted(set(after) ^ set(BEFORE) | {f for f in after if f in BEFORE and after[f] != BEFORE[f]})
    if changed:
        print(f"\ntests wrote into the project's own folders (use the session's temporary ones): {changed[:10]}")
        session.exitstatus = 1


@pytest.fixture(scope="session")
def raw_ready():
    """The raw data, prepared once per session (copied from ../shared/data)."""
    from helpers.data import prepare_data

    return prepare_data()


@pytest.fixture(scope="session")
def session_dir() -> Path:
    """The temporary folder that stands in for the project's cache, results and figures."""
    return SESSION_DIR
