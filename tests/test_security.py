"""Issue 24's reproductions, kept as regression tests: a shared config, models folder or server
response can neither run code, write outside its folder, send a key where it should not go, nor
get a key stored (serve-llm, Ray, Chroma and the caches: test_security_server.py and
test_security_storage.py). Each test first builds the hostile input that reproduced the finding."""

import json
import pickle
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from helpers.errors import UserError
from runs import TINY, cli, run_env, write_config

SECRET = "sk-echoed-SECRET-4f2a9c1e7b"


class Evil:
    """Unpickling (or rebuilding) this writes a marker file: proof that loading ran code."""

    marker: Path | None = None

    def __reduce__(self):
        return (Path.write_text, (self.marker, "ran"))

    def __setstate__(self, state):
        Path(state["marker"]).write_text("ran")


def _evil_pickle(path: Path, marker: Path) -> Path:
    evil = Evil()
    evil.marker = marker
    path.write_bytes(pickle.dumps(evil))
    return path


# ---- 1. code execution from a config or a models folder
def test_a_pickle_named_in_a_config_is_never_loaded(tmp_path):
    from helpers.retrieval.registry import build_retriever

    marker = tmp_path / "ran"
    for name in ("scorer.joblib", "scorer.skops"):  # the old format, and a pickle renamed .skops
        evil = _evil_pickle(tmp_path / name, marker)
        with pytest.raises(UserError, match=str(evil.name)):
            build_retriever("rerank", options={"rerank": {"scorer": "ltr", "scorer_path": str(evil)}})
    assert not marker.exists()


def test_a_skops_file_with_a_matching_card_but_foreign_types_is_refused(tmp_path):
    import skops.io as sio

    from helpers.artefacts import ArtefactError, read_artefact, sha256_of
    from helpers.judges.models.trace_trees import OfflineJudge

    marker = tmp_path / "ran"
    path = tmp_path / "judge.skops"
    sio.dump({"format_version": 2, "payload": _Holder(str(marker))}, path)
    # an attacker ships the card too, with the right sha256: integrity holds, trust does not
    path.with_suffix(".json").write_text(json.dumps({"sha256": sha256_of(path)}))
    with pytest.raises(ArtefactError, match="types this workbench never writes"):
        read_artefact(path)
    with pytest.raises(ArtefactError):
        OfflineJudge.load(path, evidence=None)
    assert not marker.exists()


class _Holder:
    def __init__(self, marker: str):
        self.marker = marker

    def __setstate__(self, state):
        Path(state["marker"]).write_text("ran")


def test_an_artefact_changed_after_training_is_refused_and_a_good_one_loads(tmp_path):
    from sklearn.linear_model import LogisticRegression

    from helpers.artefacts import ArtefactError, read_artefact, write_artefact

    model = LogisticRegression().fit([[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1])
    path = tmp_path / "model.skops"
    card = write_artefact(model, path, card={"what": "test"})
    assert card["sha256"] and json.loads(path.with_suffix(".json").read_text())["what"] == "test"
    assert read_artefact(path).predict([[3.0]]).tolist() == [1]
    with pytest.raises(ArtefactError, match="pickle"):
        write_artefact(model, tmp_path / "model.joblib")
    data = bytearray(path.read_bytes())
    data[-5] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ArtefactError, match="differs from its card"):
        read_artefact(path)
    path.with_suffix(".json").unlink()
    with pytest.raises(ArtefactError, match="no card model.json"):
        read_artefact(path)


def test_a_checkpoint_from_elsewhere_cannot_run_code(tmp_path):
    import torch

    from helpers.finetune import load_checkpoint

    marker = tmp_path / "ran"
    evil = Evil()
    evil.marker = marker
    path = tmp_path / "checkpoint.pt"
    torch.save({"model": {}, "state": evil}, path)
    with pytest.raises(UserError, match="not a checkpoint this workbench writes"):
        load_checkpoint(path)
    assert not marker.exists()
    torch.save({"model": {"w": torch.ones(2)}, "state": {"stage": 1}, "settings": {"lr": 1e-5}}, path)
    assert load_checkpoint(path)["state"] == {"stage": 1}


# ---- 2. paths that escape their folder
@pytest.mark.parametrize(
    "field,value",
    [
        ("name", "../../../x"),
        ("run_id", "/tmp/absolute"),
        ("run_id", ".."),
        ("name", "a/b"),
        ("run_id", ".hidden"),
    ],
)
def test_names_that_would_leave_results_are_refused(field, value):
    from helpers.experiment.config import ExperimentConfig

    with pytest.raises(ValueError, match=f"{field} '.*' is not a safe name"):
        ExperimentConfig(**{field: value})


def test_safe_names_pass_and_links_out_are_refused(tmp_path):
    from helpers.experiment.analysis import run_dir
    from helpers.experiment.sweep import SweepConfig
    from helpers.inputs import inside

    assert ExperimentConfig_ok("chunking--chunk_size=300--k=5")
    with pytest.raises(ValueError, match="sweep name"):
        SweepConfig(name="..", base={}, axes={"retrieval.k": [3]})
    with pytest.raises(UserError, match="run id"):
        run_dir("../elsewhere", tmp_path)
    (tmp_path / "outside").mkdir()
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "link").symlink_to(tmp_path / "outside")
    with pytest.raises(UserError, match="resolves outside"):
        inside(tmp_path / "results", "link")


def ExperimentConfig_ok(run_id: str) -> bool:  # noqa: N802 - reads as the sentence it checks
    from helpers.experiment.config import ExperimentConfig

    return ExperimentConfig(run_id=run_id).resolved_run_id() == run_id


def test_a_figure_name_cannot_leave_figures(tmp_path):
    from helpers.figures import plt, save_figure

    fig = plt.figure()
    with pytest.raises(UserError, match="figure name"):
        save_figure(fig, "../../escaped", out_dir=tmp_path / "figures")
    plt.close(fig)
    assert not list(tmp_path.rglob("escaped*"))


def test_a_run_named_out_of_results_is_a_one_line_error(tmp_path):
    config = write_config(tmp_path, dict(TINY, name="../../../escaped"))
    result = cli("run", str(config), env=run_env(tmp_path), timeout=300)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "'name': name '../../../escaped' is not a safe name" in result.stderr
    assert not list(tmp_path.parent.rglob("escaped*"))


SHARED_APP = """from pathlib import Path

Path(__file__).with_name("ran.txt").write_text("module-level code of a shared config's module ran")

from langchain_community.retrievers import BM25Retriever


def build(documents):
    return BM25Retriever.from_documents(documents, k=10)
"""


def test_a_shared_config_runs_no_code_unless_the_user_trusts_its_module(tmp_path, monkeypatch):
    """Issue 61: `langchain:MODULE:FACTORY` imports MODULE; a config someone shared, with a .py file
    beside it, runs nothing (a dry run included) until the user names the module; then it runs."""
    import sys

    from runs import cli_in_process

    (tmp_path / "shared_app.py").write_text(SHARED_APP)
    monkeypatch.syspath_prepend(str(tmp_path))  # importable, as a file beside a config in the working folder
    monkeypatch.delenv("HELPERS_TRUST_CODE", raising=False)
    config = dict(TINY, name="shared", generate=False, architectures=["bm25", "langchain:shared_app:build"])
    path = write_config(tmp_path, config)
    env = run_env(tmp_path)
    for args in (("run", path, "--dry-run"), ("run", path)):
        refused = cli_in_process(*args, env=env)
        assert refused.returncode == 2, refused.stderr
        assert "would import and run the Python module 'shared_app'" in refused.stderr
        assert "run with `--trust-code shared_app` (or set HELPERS_TRUST_CODE=shared_app)" in refused.stderr
        assert not (tmp_path / "ran.txt").exists() and "shared_app" not in sys.modules
    trusted = cli_in_process("--trust-code", "shared_app", "run", path, env=env)
    assert trusted.returncode == 0, trusted.stderr
    assert (tmp_path / "ran.txt").exists() and "langchain:shared_app:build" in trusted.stdout
    sys.modules.pop("shared_app", None)


# ---- 3 and 4. keys: which variable, which host, and never stored
class _KeyServer:
    """An OpenAI-compatible stand-in on 127.0.0.1 that records each Authorization header; under
    /echo401/ it answers 401 repeating the header (as some servers do), else a completion."""

    def __init__(self):
        self.authorizations: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                auth = self.headers.get("Authorization", "")
                server.authorizations.append(auth)
                if self.path.startswith("/echo401/"):
                    status, body = (
                        401,
                        {"error": {"message": f"Incorrect API key provided: {auth}", "type": "invalid_request_error"}},
                    )
                else:
                    status, body = (
                        200,
                        {
                            "id": "x",
                            "object": "chat.completion",
                            "created": 0,
                            "model": "m",
                            "choices": [
                                {
                                    "index": 0,
                                    "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": "Hola."},
                                }
                            ],
                            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
                        },
                    )
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def key_server():
    server = _KeyServer()
    yield server
    server.httpd.shutdown()


HELLO = [{"role": "user", "content": "Hola"}]


def _llm(tmp_path, **config):
    from helpers.llm import LLM, ResponseCache

    config = {
        "provider": "openai-compatible",
        "model": "m",
        "max_tokens": 8,
        "max_retries": 0,
        "timeout_s": 5,
        "cache": "off",
        **config,
    }
    return LLM(config, cache=None if config["cache"] == "off" else ResponseCache(tmp_path / "llm.sqlite"))


def test_only_key_variables_may_be_named(monkeypatch):
    from pydantic import ValidationError

    from helpers.llm import LLMConfig

    with pytest.raises(ValidationError, match="'AWS_SECRET_ACCESS_KEY' is not an API-key variable"):
        LLMConfig(provider="openai-compatible", api_key_env="AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("HELPERS_KEY_VARIABLES", "MY_VLLM_TOKEN")  # the user's own allow-list
    assert LLMConfig(provider="openai-compatible", api_key_env="MY_VLLM_TOKEN").api_key_env == "MY_VLLM_TOKEN"


def test_a_local_server_never_receives_the_openai_key_unless_named(key_server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    assert _llm(tmp_path, base_url=key_server.url + "/v1").complete(HELLO).text == "Hola."
    assert key_server.authorizations[-1] == "Bearer not-needed"
    monkeypatch.setenv("LOCAL_VLLM_API_KEY", "sk-local-key-123456")
    _llm(tmp_path, base_url=key_server.url + "/v1", api_key_env="LOCAL_VLLM_API_KEY").complete(HELLO)
    assert key_server.authorizations[-1] == "Bearer sk-local-key-123456"


def test_a_providers_key_goes_only_to_its_provider_or_an_allowed_host(tmp_path, monkeypatch):
    from helpers.llm import LLMError
    from helpers.llm.keys import check_destination

    monkeypatch.setenv("GROQ_API_KEY", SECRET)
    with pytest.raises(LLMError, match="refusing to send GROQ_API_KEY to collector.example"):
        _llm(tmp_path, base_url="https://collector.example/v1", api_key_env="GROQ_API_KEY").complete(HELLO)
    check_destination("GROQ_API_KEY", "https://api.groq.com/openai/v1")
    check_destination("GROQ_API_KEY", "http://127.0.0.1:8000/v1")
    with pytest.raises(UserError, match="--allow-key-host llm.uni.example"):
        check_destination("UNI_API_KEY", "https://llm.uni.example/v1")
    monkeypatch.setenv("HELPERS_KEY_HOSTS", "uni.example")  # the user's say-so (or the flag)
    check_destination("UNI_API_KEY", "https://llm.uni.example/v1")


@pytest.mark.timeout(600)
def test_a_key_echoed_by_the_server_is_stored_nowhere(key_server, tmp_path):
    config = dict(
        TINY,
        name="echo",
        architectures=["bm25"],
        dataset=dict(TINY["dataset"], questions=["q2"]),
        judges={"offline": False, "trace_llm": None, "ragas": None, "ragas_evidence": False},
        llms=[
            {
                "name": "hosted",
                "provider": "openai-compatible",
                "model": "m",
                "max_retries": 0,
                "base_url": key_server.url + "/echo401/v1",
                "api_key_env": "ECHO_TEST_API_KEY",
            }
        ],
    )
    result = cli("run", str(write_config(tmp_path, config)), env=run_env(tmp_path, ECHO_TEST_API_KEY=SECRET))
    assert key_server.authorizations[-1] == f"Bearer {SECRET}"  # it was sent, and echoed back
    records = next((tmp_path / "results").glob("echo-*/records.jsonl"))
    assert "Incorrect API key provided: Bearer [REDACTED]" in records.read_text()
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {"records.jsonl", "summary.json"} <= {p.name for p in written}
    assert SECRET not in result.stdout + result.stderr
    leaked = [str(p) for p in written if SECRET.encode() in p.read_bytes()]
    assert not leaked, f"the key is in {leaked}"


# ---- 7. bounded inputs
@pytest.mark.timeout(30)
def test_a_yaml_alias_bomb_is_refused_at_once(tmp_path):
    from helpers.experiment.config import ConfigError, load_config

    # ten levels of nine aliases each under a real option: 9**10 strings once traversed (4.4 GB
    # and a hang in resolved_run_id before the fix)
    levels = ['&a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    levels += [f"&a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    lines = ["dataset:", "  name: obstetrics", "  options:", f"    pages: [{', '.join(levels)}]"]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match="YAML aliases"):
        load_config(path)


def test_dataset_options_are_typed(tmp_path):
    from helpers.experiment.config import ConfigError, load_config

    path = write_config(tmp_path, {"dataset": {"name": "obstetrics", "options": {"chunk_size": [500, 500]}}})
    with pytest.raises(ConfigError, match="option 'chunk_size' must be int, got list"):
        load_config(path)


def test_a_megabyte_question_is_refused_before_retrieval(tmp_path):
    from helpers.data.questions import read_questions
    from helpers.explore.workbench import ExploreError, Workbench
    from helpers.retrieval.registry import build_retriever

    huge = "¿" + "a " * 500_000 + "?"
    bm25 = build_retriever("bm25").index({"d1": {"title": "", "text": "una frase"}})
    with pytest.raises(UserError, match="query 'q1' has 1,000,002 characters; at most 4,000"):
        bm25.retrieve({"q1": huge}, k=1)
    with pytest.raises(ExploreError, match="at most 4,000"):
        Workbench().search(huge, ["bm25"])
    questions = tmp_path / "questions.csv"
    questions.write_text("question\n¿Qué es?\n" + "b" * 5000 + "\n", encoding="utf-8")
    with pytest.raises(UserError, match="questions.csv.*row 3.*5,000 characters"):
        read_questions(questions)


def test_a_folder_as_pdf_path_is_one_clear_error(tmp_path):
    from helpers.data import load_dataset

    with pytest.raises(UserError, match="is a folder, not a PDF file") as caught:
        load_dataset("obstetrics", pdf_path=str(tmp_path))
    assert str(tmp_path) in str(caught.value)
