"""A tiny experiment config shared by the run tests: 3 questions on 12 guideline pages, two
architectures without an LLM in retrieval, the local model with short answers."""

import os
import subprocess
import sys
from pathlib import Path

import yaml

TINY = {
    "name": "tiny",
    "dataset": {"name": "obstetrics", "options": {"pages": "124-135"}, "questions": ["q2", "q4", "q3"]},
    "architectures": ["bm25", "hybrid"],
    "retrieval": {"k": 3},
    "llms": [{"name": "local", "provider": "local", "max_tokens": 24}],
    "judges": {"offline": True, "trace_llm": None, "ragas": None, "ragas_evidence": False},
    "statistics": {"baseline": "bm25", "n_resamples": 200},
    "figures": False,
}


def retrieval_runs(results: Path, n_questions=(4, 5, 6)) -> list[str]:
    """Runs that differ in one setting (how many of obstetrics-es's test questions), retrieval only:
    a few seconds each; their run ids, oldest first."""
    from helpers.experiment.config import ExperimentConfig
    from helpers.experiment.runner import Experiment

    run_ids = []
    for n in n_questions:
        dataset = {"name": "obstetrics-es", "options": {"query_split": "test"}, "n_questions": n}
        config = ExperimentConfig(**dict(TINY, name="trend", generate=False, dataset=dataset))
        run_ids.append(Experiment(config, results_dir=results).run()["run_id"])
    return run_ids


def write_config(tmp_path: Path, config: dict, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config))
    return path


def run_env(tmp_path: Path, **extra) -> dict:
    """A run of its own: its own results, figures and LLM cache (so every call is real)."""
    return {
        **os.environ,
        "HELPERS_RESULTS_DIR": str(tmp_path / "results"),
        "HELPERS_FIGURES_DIR": str(tmp_path / "figures"),
        "HELPERS_CACHE_DIR": str(tmp_path / "cache"),
        "HELPERS_INDEX_DIR": str(tmp_path / "cache" / "indexes"),
        **extra,
    }


def cli_in_process(*args, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m helpers ARGS` called as `helpers.__main__.main(ARGS)` in this process: the same
    exit code, standard output and error (a traceback, as the interpreter prints it, for an exception
    that escapes), without a new interpreter importing torch and the models (seconds each). For the
    tests of exit codes and messages; a subprocess (`cli`) stays where the process boundary is what
    is tested. `env`: the variables to set for the call; `helpers.paths` is re-read from them and
    restored afterwards."""
    import contextlib
    import importlib
    import io
    import traceback

    from helpers import __main__ as entry
    from helpers import paths

    saved = dict(os.environ)
    out, err = io.StringIO(), io.StringIO()
    try:
        os.environ.update({k: v for k, v in (env or {}).items() if os.environ.get(k) != v})
        importlib.reload(paths)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = entry.main([str(a) for a in args])
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 1
            except Exception:
                traceback.print_exc(file=err)  # what the interpreter prints before exiting with 1
                code = 1
    finally:
        os.environ.clear()
        os.environ.update(saved)
        importlib.reload(paths)
    return subprocess.CompletedProcess(["helpers", *args], code, out.getvalue(), err.getvalue())


def cli(*args, env=None, timeout=900):
    """`python -m helpers ARGS` in a subprocess, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "helpers", *args],
        env=env or os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def scripted_llms(monkeypatch, references: dict[str, str]) -> dict[str, list]:
    """The runs' LLMs: "good" answers each question with its reference, "bad" says it does not
    know; {llm name: its backend's calls}."""
    import helpers.experiment.runner as runner
    from helpers.llm import LLM
    from helpers.llm.scripted import ScriptedBackend

    def good(call):
        return next((ref for question, ref in references.items() if question in call.prompt), "No lo sé.")

    backends = {"good": ScriptedBackend(good), "bad": ScriptedBackend("No lo sé.")}
    monkeypatch.setattr(runner, "LLM", lambda settings: LLM(settings, backend=backends[settings["model"]]))
    return {name: backend.calls for name, backend in backends.items()}
