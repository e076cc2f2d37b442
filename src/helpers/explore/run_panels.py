"""The run, results and trends panels of notebooks/08-explore.ipynb, as ipywidgets on top of
helpers.explore.runs and helpers.experiment.trends (the logic, unit tested): a run from a config
with the panel's choices, a key field for hosted LLMs, the saved runs and sweeps, and every run
over time."""

from __future__ import annotations

import io
from pathlib import Path

import ipywidgets as w

from helpers.data import DATASETS
from helpers.experiment.analysis import load_scores, summary
from helpers.experiment.estimates_figure import estimates_figure
from helpers.experiment.run_labels import run_estimates
from helpers.experiment.run_summary import as_html, run_sections
from helpers.experiment.trends import config_diff, run_index, trend, trend_figure
from helpers.explore.cards import summary_cards_html
from helpers.explore.panels import KEEP, Panel, guarded
from helpers.explore.runs import (
    config_choices,
    download_links,
    judge_choices,
    judges_and_metrics,
    key_variables,
    panel_config,
    ragbench_choices,
    results_view,
    run_experiment,
    sample_table,
    saved_runs,
    saved_sweeps,
)
from helpers.explore.views import STYLE, message_html, table_html
from helpers.explore.workbench import ExploreError, known_llms
from helpers.figures import plt
from helpers.inference.classical import mean_text
from helpers.llm.keys import session_key_variables, set_session_key


class RunPanel(Panel):
    """A run from a config with the panel's choices, by the runner of `python -m helpers run`."""

    def __init__(self, *, config: str = "smoke", results_dir=None):
        self.results_dir = results_dir
        self.config = w.Dropdown(options=config_choices(), value=config, description="config")
        self.dataset = w.Dropdown(options=[KEEP, *sorted(DATASETS)], value=KEEP, description="dataset")
        self.ragbench = ragbench_choices()  # RAGBench subsets and splits: the files present
        self.subset = w.Dropdown(options=[KEEP, *sorted(self.ragbench)], value=KEEP, description="subset")
        self.subset.add_class("hx-subset")
        self.split = w.Dropdown(options=[KEEP], value=KEEP, description="split")
        self.split.add_class("hx-split")
        self.subset.observe(lambda _: self._splits(), names="value")
        self.samples = w.BoundedIntText(
            value=0, min=0, max=100_000, description="samples", tooltip="0: the config's questions"
        )
        self.samples.add_class("hx-samples")
        self.llm = w.Dropdown(options=[KEEP, *known_llms()], value=KEEP, description="answers by")
        self.judge = w.Dropdown(
            options=[(label, key) for key, label in judge_choices().items()], value="config", description="judge"
        )
        self.judge.add_class("hx-run-judge")
        self.judge_llm = w.Dropdown(
            options=[("the answering LLM", KEEP), *[(n, n) for n in known_llms()]], value=KEEP, description="judged by"
        )
        self.judge_llm.add_class("hx-judge-llm")
        # an API key for a hosted LLM: kept in this kernel's memory only (helpers.llm.keys), the
        # field emptied at once so no widget state or saved notebook holds it
        self.key_variable = w.Dropdown(options=key_variables(), description="API key for")
        self.key = w.Password(placeholder="paste a key: kept in memory for this session only")
        self.key.add_class("hx-key")
        self.key_button = w.Button(description="Use key")
        self.key_button.add_class("hx-use-key")
        self.key_status = w.HTML()
        self.key_button.on_click(lambda _: self.use_key())
        self.button = w.Button(description="Run", button_style="primary")
        self.button.add_class("hx-run")
        self.progress = w.IntProgress(value=0, min=0, max=1, layout=w.Layout(width="300px"))
        self.step = w.Label()
        self.log = w.Textarea(layout=w.Layout(width="95%", height="160px"), disabled=True)
        self.log.add_class("hx-log")
        self.status = w.HTML()
        self.cards = w.HTML()
        self.cards.add_class("hx-run-cards")
        self.samples_table = w.HTML()
        self.details = w.Accordion(children=[self.samples_table], titles=("per-sample scores",), selected_index=None)
        self.downloads = w.HTML()
        self.downloads.add_class("hx-downloads")
        self.button.on_click(lambda _: self.run())
        self.widget = w.VBox(
            [
                w.HBox([self.config, self.dataset, self.subset, self.split]),
                w.HBox([self.samples, self.llm, self.judge, self.judge_llm]),
                w.HBox([self.key_variable, self.key, self.key_button, self.key_status]),
                w.HBox([self.button, self.progress, self.step]),
                self.log,
                self.status,
                self.cards,
                self.details,
                self.downloads,
            ]
        )

    def _write(self, line: str):
        self.log.value = (self.log.value + "\n" + line).lstrip("\n")

    def _splits(self):
        splits = self.ragbench.get(self.subset.value, [])
        self.split.options = [KEEP, *splits]
        self.split.value = "test" if "test" in splits else KEEP

    @guarded
    def use_key(self):
        typed, self.key.value = self.key.value, ""  # the widget never keeps it
        set_session_key(self.key_variable.value, typed)
        held = session_key_variables()
        self.key_status.value = message_html(
            f"{self.key_variable.value} {'set' if self.key_variable.value in held else 'cleared'} for this "
            "session (memory only: not written to disk, logs or results)",
            "info",
        )

    def _tick(self, step: str, done: int, total: int):
        self.progress.max, self.progress.value = max(total, 1), done
        self.step.value = f"{step}: {done}/{total}"

    @guarded
    def run(self):
        self.log.value, self.cards.value, self.downloads.value, self.samples_table.value = "", "", "", ""
        self.progress.bar_style = "info"
        config = panel_config(
            self.config.value,
            dataset=None if self.dataset.value == KEEP else self.dataset.value,
            subset=None if self.subset.value == KEEP else self.subset.value,
            split=None if self.split.value == KEEP else self.split.value,
            n_questions=self.samples.value or None,
            llm=None if self.llm.value == KEEP else self.llm.value,
            judge=self.judge.value,
            judge_llm=None if self.judge_llm.value == KEEP else self.judge_llm.value,
        )
        self.status.value = message_html(f"running {config.resolved_run_id()} …", "info")
        result = run_experiment(config, log=self._write, progress=self._tick, results_dir=self.results_dir)
        run_id = result["run_id"]
        self.progress.bar_style = "success" if result["ok"] else "warning"
        verdict = "finished" if result["ok"] else "finished with failures (see the log and the table)"
        self.status.value = message_html(
            f"run {run_id} {verdict}: {result['answers']} answers in {result['seconds']} s",
            "info" if result["ok"] else "error",
        )

        table = summary(load_scores(run_id, self.results_dir))
        self.cards.value = (
            STYLE + summary_cards_html(table) if len(table) else message_html("no quality scores", "info")
        )
        self.samples_table.value = table_html(sample_table(run_id, self.results_dir))
        self.downloads.value = download_links(run_id, self.results_dir)
        return result


class ResultsPanel(Panel):
    """A saved run or sweep, a judge and a metric: the run's summary (the sections every report
    format shows: helpers.experiment.run_summary), the comparison figure and intervals table."""

    def __init__(self, *, results_dir=None):
        self.results_dir, self._quiet = results_dir, False
        self.run = w.Dropdown(description="run")
        self.sweep = w.Dropdown(description="or sweep")
        self.judge = w.Dropdown(description="judge")
        self.metric = w.Dropdown(description="metric")
        self.refresh = w.Button(description="Refresh", tooltip="list the saved runs and sweeps again")
        self.status = w.HTML()
        self.figure = w.Image(format="png", layout=hidden_until_drawn())
        self.figure.add_class("hx-figure")
        self.estimates = w.Image(format="png", layout=hidden_until_drawn())  # with labels: the three intervals
        self.estimates.add_class("hx-estimates")
        self.table = w.HTML()
        self.table.add_class("hx-intervals")
        self.summary = w.HTML()  # the run's summary, as the terminal and every report format show it
        self.summary.add_class("hx-summary")
        self.refresh.on_click(lambda _: self.list_saved())
        self.run.observe(lambda _: self._choices(), "value")
        for control in (self.sweep, self.judge, self.metric):
            control.observe(lambda _: self.show(), "value")
        self.widget = w.VBox(
            [
                w.HBox([self.run, self.sweep, self.refresh]),
                w.HBox([self.judge, self.metric]),
                self.status,
                self.summary,
                self.figure,
                self.estimates,
                self.table,
            ]
        )
        self.list_saved()

    @guarded
    def list_saved(self):
        runs = saved_runs(self.results_dir)
        self.run.options = runs
        self.sweep.options = ["", *saved_sweeps(self.results_dir)]
        if runs:
            self.run.value = runs[0]
        else:
            self.status.value = message_html(
                "no saved run yet: press Run in the run panel, or "
                "`python -m helpers run configs/smoke.yaml`, then Refresh",
                "info",
            )

    @guarded
    def _choices(self):
        if not self.run.value:
            return
        found = judges_and_metrics(self.run.value, self.results_dir)
        self.summary.value = STYLE + as_html(run_sections(self.run.value, self.results_dir))
        self._quiet = True  # one redraw after the choices change, not one per choice
        try:
            self.judge.options = list(found)
            self.judge.value = "offline" if "offline" in found else next(iter(found), None)
            self.metric.options = ["", *sorted({m for metrics in found.values() for m in metrics})]
            self.metric.value = ""
        finally:
            self._quiet = False
        self.show()

    @guarded
    def show(self):
        import matplotlib.pyplot as plt

        if self._quiet or not (self.run.value or self.sweep.value):
            return
        figure, table = results_view(
            self.run.value,
            sweep=self.sweep.value or None,
            judge=self.judge.value or None,
            metric=self.metric.value or None,
            results_dir=self.results_dir,
        )
        if hasattr(figure, "savefig"):  # a run's figure, drawn here (the figures module's backend is Agg)
            buffer = io.BytesIO()
            figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
            plt.close(figure)
            self.figure.value = buffer.getvalue()
            self.figure.layout.display = ""
        else:  # a sweep's figure, saved as PNG (none: no cell to draw)
            self.figure.value = Path(figure).read_bytes() if figure is not None else b""
            self.figure.layout.display = "" if figure is not None else "none"
        self.table.value = table_html(table.round(3))
        self.status.value = ""
        self.show_estimates()

    def show_estimates(self) -> None:
        """With a person's labels of the run (its labels.csv): labels only, judge only and
        prediction-powered intervals as one figure below the comparison."""
        estimates = None if self.sweep.value or not self.run.value else run_estimates(self.run.value, self.results_dir)
        if estimates is None:
            self.estimates.value, self.estimates.layout.display = b"", "none"
            return
        figure = estimates_figure(*estimates)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
        plt.close(figure)
        self.estimates.value, self.estimates.layout.display = buffer.getvalue(), ""


EVERY_DATASET = "(every dataset)"


def hidden_until_drawn():
    """An empty Image is drawn by the browser as a broken picture: hidden until it holds a figure."""
    return w.Layout(max_width="100%", display="none")


class TrendsPanel(Panel):
    """Every saved run over time: a judge's metric per architecture against run date and commit
    (helpers.experiment.trends), and the config differences between two chosen runs."""

    def __init__(self, *, results_dir=None) -> None:
        self.results_dir = results_dir
        self.judge = w.Dropdown(description="judge")
        self.judge.add_class("hx-trend-judge")
        self.metric = w.Dropdown(description="metric")
        self.metric.add_class("hx-trend-metric")
        self.dataset = w.Dropdown(description="dataset")
        self.show_button = w.Button(description="Show trend", button_style="primary")
        self.show_button.add_class("hx-trend")
        self.run_a = w.Dropdown(description="compare")
        self.run_a.add_class("hx-trend-run-a")
        self.run_b = w.Dropdown(description="with")
        self.compare = w.Button(description="Config differences")
        self.compare.add_class("hx-config-diff")
        self.refresh = w.Button(description="Refresh", tooltip="list the saved runs again")
        self.refresh.add_class("hx-trends-refresh")
        self.status = w.HTML()
        self.figure = w.Image(format="png", layout=hidden_until_drawn())
        self.figure.add_class("hx-trend-figure")
        self.table = w.HTML()
        self.table.add_class("hx-trend-table")
        self.diff = w.HTML()
        self.diff.add_class("hx-diff")
        self.refresh.on_click(lambda _: self.list_saved())
        self.show_button.on_click(lambda _: self.show())
        self.compare.on_click(lambda _: self.differences())
        self.judge.observe(lambda _: self._metrics(), "value")
        self.widget = w.VBox(
            [
                w.HBox([self.judge, self.metric, self.dataset, self.show_button, self.refresh]),
                self.status,
                self.figure,
                self.table,
                w.HBox([self.run_a, self.run_b, self.compare]),
                self.diff,
            ]
        )
        self.found: dict[str, list[str]] = {}
        self.list_saved()

    @guarded
    def list_saved(self):
        index = run_index(self.results_dir)
        runs = list(index["run_id"])[::-1]  # newest first
        self.found = {}
        for run_id in runs:
            for judge, metrics in judges_and_metrics(run_id, self.results_dir).items():
                self.found.setdefault(judge, [])
                self.found[judge] += [m for m in metrics if m not in self.found[judge]]
        self.dataset.options = [EVERY_DATASET, *sorted(set(index["dataset"]) - {""})]
        self.dataset.value = EVERY_DATASET  # set, not left to the widget (see the judge below)
        self.run_a.options = self.run_b.options = runs
        if len(runs) >= 2:
            self.run_a.value, self.run_b.value = runs[1], runs[0]  # the newest against the one before
        self.judge.options = list(self.found)  # (ipywidgets 8 leaves the value unset: choose one)
        self.judge.value = "offline" if "offline" in self.found else next(iter(self.found), None)
        self._metrics()
        if not runs:
            self.status.value = message_html("no saved run yet: runs appear here once they have scores", "info")

    def _metrics(self):
        metrics = sorted(self.found.get(self.judge.value, []))
        self.metric.options = metrics
        self.metric.value = metrics[0] if metrics else None

    @guarded
    def show(self):
        if not (self.judge.value and self.metric.value):
            raise ExploreError("choose a judge and a metric (Refresh after new runs)")
        dataset = None if self.dataset.value == EVERY_DATASET else self.dataset.value
        table = trend(self.judge.value, self.metric.value, dataset=dataset, results_dir=self.results_dir)
        if table.empty:
            raise ExploreError(f"no saved run scored {self.judge.value}/{self.metric.value}")
        figure = trend_figure(table, f"{self.judge.value}/{self.metric.value} over {table['run_id'].nunique()} runs")
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
        plt.close(figure)
        self.figure.value = buffer.getvalue()
        self.figure.layout.display = ""
        shown = table.assign(
            finished=table["finished"].map(lambda t: f"{t:%Y-%m-%d %H:%M}"),
            value=[mean_text(r["mean"], r["ci_low"], r["ci_high"], r["n"]) for r in table.to_dict("records")],
        )
        self.table.value = table_html(shown[["finished", "commit", "run_id", "architecture", "value", "n"]])
        self.status.value = ""

    @guarded
    def differences(self):
        if not (self.run_a.value and self.run_b.value):
            raise ExploreError("choose two runs to compare")
        diff = config_diff(self.run_a.value, self.run_b.value, self.results_dir)
        self.diff.value = (
            table_html(diff.astype(str)) if len(diff) else message_html("the two configs are the same", "info")
        )
