"""The logic behind the run and results panels: a config with the panel's choices, run by the
same runner as `python -m helpers run` (so either side resumes the other's run), its per-sample
table and download links; saved runs and sweeps, their figure and intervals table."""

from __future__ import annotations

import base64
import contextlib
import html
import io
import json
import logging
from pathlib import Path

import pandas as pd

from helpers import paths
from helpers.data import list_splits
from helpers.errors import UserError
from helpers.experiment.analysis import (
    load_scores,
    natural_key,
    quality_scores,
    run_config,
    run_dir,
    statistics_settings,
    summary,
)
from helpers.experiment.config import ExperimentConfig, load_config
from helpers.experiment.exports import TRACE_FILES
from helpers.experiment.sweep_report import cell_table, sweep_figures, sweep_scores
from helpers.explore.views import STYLE
from helpers.explore.workbench import ExploreError, known_llms
from helpers.judges import JUDGES, active_judges
from helpers.offline_defaults import quiet_noisy_loggers


def judge_choices() -> dict[str, str]:
    """The run panel's judge choices: the config's own, or one stored judge of the registry alone."""
    return {"config": "as in the config"} | {name: judge.label for name, judge in JUDGES.items() if judge.stored}


def config_choices(configs_dir: str | Path | None = None) -> list[str]:
    """The experiment configs (configs/*.yaml), smoke first: the quick one to try."""
    names = sorted(p.stem for p in Path(configs_dir or paths.CONFIGS_DIR).glob("*.yaml"))
    return sorted(names, key=lambda n: (n != "smoke", n != "default", n))


def panel_config(
    config: str,
    *,
    dataset: str | None = None,
    subset: str | None = None,
    split: str | None = None,
    n_questions: int | None = None,
    llm: str | None = None,
    judge: str = "config",
    judge_llm: str | None = None,
):
    """The experiment config the run panel runs: `config` (a name in configs/ or a path) with the
    panel's choices on top. Same choices, same run id: pressing Run again resumes.

    RAGBench: `subset` and `split` are checked against the files present; `n_questions` is the
    number of examples the loader samples (its `n`), so any number is honoured and the corpus is
    always the documents of the sampled examples (each question's distractors are the other
    examples' documents, drawn the same way for 10 or 500). `judge_llm`: the LLM the chosen judge
    judges with (default: the answering LLM)."""
    path = Path(config) if str(config).endswith(".yaml") else paths.CONFIGS_DIR / f"{config}.yaml"
    raw = load_config(path).model_dump(mode="json")
    if dataset and dataset != raw["dataset"]["name"]:
        raw["dataset"] = {"name": dataset, "options": {}, "questions": None, "n_questions": None}
    ragbench = raw["dataset"]["name"] == "ragbench"
    if (subset or split) and not ragbench:
        raise ExploreError(f"subset and split are RAGBench options; the dataset is {raw['dataset']['name']!r}")
    if ragbench and (subset or split):
        present = list_splits()
        subset = subset or raw["dataset"]["options"].get("subset", "covidqa")
        if subset not in present:
            raise ExploreError(f"no RAGBench subset {subset!r} in data/raw/ragbench; present: {sorted(present)}")
        split = split or raw["dataset"]["options"].get("split", "test")
        if split not in present[subset]:
            raise ExploreError(f"RAGBench {subset} has no split {split!r}; present: {present[subset]}")
        raw["dataset"]["options"].update(subset=subset, split=split)
    if n_questions and ragbench:
        raw["dataset"]["options"]["n"], raw["dataset"]["n_questions"] = int(n_questions), None
    elif n_questions:
        raw["dataset"]["n_questions"] = int(n_questions)
    for name in (llm, judge_llm):
        if name:
            _add_llm(raw, name)
    if llm:
        raw["generation_llm"] = llm
    if judge not in judge_choices():
        raise ExploreError(f"judge must be one of {sorted(judge_choices())}, got {judge!r}")
    if judge != "config":
        judging = judge_llm or raw.get("generation_llm") or raw["llms"][0]["name"]
        for name, judge_cls in JUDGES.items():  # the chosen one alone, judging with `judging`
            judge_cls.switch(raw["judges"], name == judge, judging)
    if raw["run_id"] is None:
        raw.pop("run_id")
    return ExperimentConfig(**raw)


def _add_llm(raw: dict, name: str) -> None:
    """Add the LLM `name` (defined in some configs/*.yaml) to a raw config's llms."""
    llms = known_llms()
    if name not in llms:
        raise ExploreError(f"no LLM named {name!r} in configs/*.yaml; names: {sorted(llms)}")
    if name not in [item["name"] for item in raw["llms"]]:
        raw["llms"].append({"name": name, **llms[name]})


def key_variables() -> list[str]:
    """The key variables the configs' hosted LLMs read (GROQ_API_KEY and OPENAI_API_KEY first)."""
    named = {env for settings in known_llms().values() if (env := settings.get("api_key_env")) is not None}
    return ["GROQ_API_KEY", "OPENAI_API_KEY", *sorted(named - {"GROQ_API_KEY", "OPENAI_API_KEY"})]


def ragbench_choices() -> dict[str, list[str]]:
    """{subset: its splits} of the RAGBench files present ({} without them): the run panel's lists."""
    try:
        return list_splits()
    except UserError:
        return {}


class _ToLog(logging.Handler):
    def __init__(self, write):
        super().__init__(logging.INFO)
        self.write = write
        self.setFormatter(logging.Formatter("%(asctime)s %(name)s: %(message)s", "%H:%M:%S"))

    def emit(self, record):
        self.write(self.format(record))


def describe_setup(config) -> list[str]:
    """The lines the live log starts with: answering model, judges, vector store and embedder."""
    gen = config.llm(config.generation_llm or config.llms[0].name)
    dense = config.retrieval.dense
    store = (
        f"Chroma server {dense.chroma.host}:{dense.chroma.port}"
        if dense.chroma
        else f"embedded Chroma under {paths.INDEX_DIR}"
    )
    judges = [
        judge.name + (f" (judged by {judge.llm_name(config)})" if judge.llm_name(config) else "")
        for judge in active_judges(config)
        if judge.stored
    ]
    return [
        f"run {config.resolved_run_id()}: dataset {config.dataset.name} {config.dataset.options or ''}",
        f"model: {gen.name} ({gen.provider}, {gen.model})",
        f"vector store: {store}",
        f"embedder: {dense.embedder or 'by language (English: MiniLM, else multilingual e5)'}",
        f"architectures: {', '.join(config.architectures)}; k = {config.retrieval.k}",
        f"judges: {', '.join(judges) or 'none'}",
    ]


def run_experiment(config, *, log=print, progress=None, results_dir: Path | None = None) -> dict:
    """Run (or resume) `config` as `python -m helpers run` does, its log lines and prints going
    to `log`, `progress(step, done, total)` after each sample; then its figures."""
    from helpers.experiment.figures_run import build_figures  # matplotlib, seaborn: only when a run is started
    from helpers.experiment.runner import Experiment  # the judges (torch, ragas): only when a run is started

    handler = _ToLog(log)
    logger = logging.getLogger("helpers")
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    quiet_noisy_loggers()
    for line in describe_setup(config):
        log(line)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            summary = Experiment(config, results_dir=results_dir, progress=progress).run()
            if config.figures and summary["answers"]:
                build_figures(summary["run_id"], results_dir)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
        for line in printed.getvalue().splitlines():
            log(line)
    log(
        f"finished in {summary['seconds']} s: {summary['answers']} answers, "
        f"{summary['failed_samples']} failed; resume or redo from the command line with "
        f"`python -m helpers run {Path(summary['directory']) / 'config.yaml'}`"
    )
    return summary


def saved_runs(results_dir: Path | None = None) -> list[str]:
    """Run ids with scores, newest first."""
    root = Path(results_dir or paths.RESULTS_DIR)
    found = [p.parent for p in root.glob("*/scores.parquet")]
    return [p.name for p in sorted(found, key=lambda p: -p.stat().st_mtime)]


def saved_sweeps(results_dir: Path | None = None) -> list[str]:
    root = Path(results_dir or paths.RESULTS_DIR) / "sweeps"
    return sorted(p.parent.name for p in root.glob("*/sweep.json"))


def sample_table(run_id: str, results_dir: Path | None = None) -> pd.DataFrame:
    """One row per answer: architecture, qid, question, answer, error, and every quality score
    as judge/metric."""
    directory = run_dir(run_id, results_dir)
    records = (
        pd.read_parquet(directory / "records.parquet") if (directory / "records.parquet").exists() else pd.DataFrame()
    )
    wide = (
        quality_scores(load_scores(run_id, results_dir))
        .pivot_table(index=["architecture", "qid"], columns="metric", values="value", aggfunc="mean")
        .reset_index()
    )
    if records.empty:
        return wide
    keep = [c for c in ("architecture", "qid", "question", "answer", "error") if c in records]
    table = records[keep].merge(wide, on=["architecture", "qid"], how="left")
    return table.sort_values(["architecture", "qid"], key=lambda column: column.map(natural_key)).reset_index(drop=True)


def download_links(run_id: str, results_dir: Path | None = None) -> str:
    """HTML links that download the run's summary (JSON), scores (CSV), answers (JSON) and the seed
    guide's TRACe JSON of each TRACe judge that scored, from the page itself (data URIs: they work
    in JupyterLab and Voila alike)."""
    directory = run_dir(run_id, results_dir)
    if not (directory / "summary.json").exists():
        raise UserError(f"{directory}: no summary.json; the run has not finished")
    files = {
        f"{run_id}-summary.json": ("application/json", (directory / "summary.json").read_bytes()),
        f"{run_id}-scores.csv": ("text/csv", load_scores(run_id, results_dir).to_csv(index=False).encode()),
    }
    if (directory / "records.parquet").exists():
        answers = pd.read_parquet(directory / "records.parquet").to_json(orient="records", force_ascii=False)
        files[f"{run_id}-answers.json"] = ("application/json", answers.encode())
    for name in TRACE_FILES.values():
        if (directory / name).exists():
            files[f"{run_id}-{name}"] = ("application/json", (directory / name).read_bytes())
    links = [
        f"<a class='hx-download' download='{html.escape(name)}' "
        f"href='data:{mime};base64,{base64.b64encode(body).decode()}'>{html.escape(name)}</a>"
        for name, (mime, body) in files.items()
    ]

    return STYLE + "Download: " + " · ".join(links)


def results_view(
    run_id: str | None = None,
    *,
    sweep: str | None = None,
    judge: str | None = None,
    metric: str | None = None,
    results_dir: Path | None = None,
):
    """(figure, intervals table) of a saved run, or of a sweep's cells, for one judge and metric
    (None: all of them)."""
    from helpers.experiment.figures_run import metric_bars  # matplotlib, seaborn: only when a result is shown

    if sweep:
        scores, axes, _ = sweep_scores(sweep, results_dir)
        scores = _pick(scores, judge, metric)
        table = cell_table(scores, axes, n_resamples=2000)
        figures = sweep_figures(table, axes, sweep, sorted(set(scores["run_id"])), out_dir=None) if len(table) else {}
        return next(iter(figures.values()), None), table
    if not run_id:
        raise ExploreError("no saved run: run one in the run panel (or `python -m helpers run CONFIG`)")
    config = run_config(run_id, results_dir)
    table = summary(_pick(load_scores(run_id, results_dir), judge, metric), config)
    if table.empty:
        raise ExploreError(f"run {run_id} has no scores for judge {judge!r} and metric {metric!r}")
    return metric_bars(table, confidence=statistics_settings(config).confidence), table


def _pick(scores: pd.DataFrame, judge: str | None, metric: str | None) -> pd.DataFrame:
    if judge:
        scores = scores[scores["judge"] == judge]
    if metric:  # raw scores name it `faithfulness`, quality tables `ragas/faithfulness`
        scores = scores[scores["metric"].str.split("/", n=1).str[-1] == metric]
    return scores


def judges_and_metrics(run_id: str, results_dir: Path | None = None) -> dict[str, list[str]]:
    """judge -> its quality metrics, in a saved run."""
    quality = quality_scores(load_scores(run_id, results_dir))
    out: dict[str, list[str]] = {}
    for name in quality["metric"].unique():
        judge, metric = name.split("/", 1)
        out.setdefault(judge, []).append(metric)
    return out


def summary_json(run_id: str, results_dir: Path | None = None) -> dict:
    return json.loads((run_dir(run_id, results_dir) / "summary.json").read_text())
