"""The search's answer stage (issue 62): the arms the retrieval stage kept answer questions, each
answer scored by an answer metric (default correctness against the reference, the judge people's
"correct" labels validate: docs/judges.md), and arms are eliminated as in the retrieval stage.

Each distinct arm is one ordinary run (its own folder under results/, named after the search and its
axes, with only the metric's judge on), answering a batch of questions at a time: answers are stored
as they finish, so a killed search resumes with nothing answered twice, and `helpers report RUN`
reads a search's run like any other. Arms whose answers are the same work (the same retrieval, k,
generation settings and LLM) answer once and share the result; an LLM that answers several
questions at once (a hosted one's `concurrency`) answers a batch side by side (Experiment.answers).

With `--executor ray` (the sweep's engine: helpers.ray_cluster), each look's answers are Ray tasks,
one per racing arm and look, run side by side on the cluster's workers (`answer_questions`, each
appending to its arm's run as a plain run does, so a worker that dies is retried and resumes); this
process then scores them. Every worker must see the same checkout and `results/`, as in a sweep.

With `--label-rate`, the judge's scores are corrected by people's labels on drawn questions
(helpers.experiment.search_labels); without it, the estimates are the judge's, whose agreement
with people is measured (judge-eval) but not corrected for. `helpers compare` evaluates a config
side with this class too (helpers.experiment.compare).
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers.errors import UserError
from helpers.ray_cluster import MAX_RETRIES, ray_init

DEFAULT_METRIC = "correctness/correctness"
# the judges a run turns on unless told not to: off here, so that only the metric's judge scores
OFF = {"offline": False, "ragas": False, "ragas_evidence": False}


def label_column(metric: str) -> str:
    """The labels column people's labels of `metric` are in (the metric's `validated_by`); a metric
    no label validates fails, naming those that one does."""
    from helpers.judges import JUDGES

    judge, _, name = metric.partition("/")
    column = next((m.validated_by for m in JUDGES[judge].metrics_for(None) if m.name == name), None)
    if not column:
        backed = [f"{j}/{m.name}" for j, cls in JUDGES.items() for m in cls.metrics_for(None) if m.validated_by]
        raise UserError(f"search: --label-rate needs a metric people label; {metric} is not; these are: {backed}")
    return column


def check_metric(metric: str, flag: str = "search: --answer-metric") -> str:
    """The metric's judge; a metric no judge produces fails with the valid names (after `flag`)."""
    from helpers.judges import JUDGES, metric_names  # the judges: loaded only when a search answers

    judge, _, name = metric.partition("/")
    valid = [f"{j}/{m}" for j in JUDGES if j not in ("retrieval", "system") for m in metric_names(j)]
    if judge not in JUDGES or name not in metric_names(judge) or judge == "retrieval":
        raise UserError(
            f"{flag} {metric!r} is not an answer metric a judge produces; valid: "
            f"{', '.join(valid)} ({DEFAULT_METRIC} is checked against people's labels)"
        )
    return judge


def answer_work(arm: dict, retrieval_key: str) -> str:
    """What an arm's answers depend on: its retrieval work and every setting past it (arms with the
    same key give the same answers: one run)."""
    return json.dumps([retrieval_key, answer_settings(arm["config"])], sort_keys=True, default=str)


def answer_settings(config) -> dict:
    """What an answer depends on past the retrieval: k, the generation settings, the generating LLM."""
    llm = config.llm(config.generation_llm or config.llms[0].name).model_dump(mode="json", exclude={"name"})
    return {"k": config.retrieval.k, "generation": config.generation.model_dump(mode="json"), "llm": llm}


def answer_questions(config: dict, qids: list[str], results_dir: str | None = None) -> int:
    """Answer `qids` with one arm's run (a config as a dict), in this process: what a Ray task of the
    answer stage calls. The answers are appended to the run's records.jsonl; returns how many are
    stored."""
    from helpers.experiment.config import ExperimentConfig
    from helpers.experiment.runner import Experiment  # the runner: loaded only where answers are written

    experiment = Experiment(ExperimentConfig(**config), Path(results_dir) if results_dir else None)
    data, _ = experiment.start(table=False)
    experiment.answers(data, {q: data.queries[q] for q in qids})
    return len(experiment.answered(qids))


class AnswerArms:
    """Evaluate arms on questions by an answer metric, each distinct arm one run (module docstring).
    `retrieval_keys`: each arm's retrieval work (helpers.experiment.search_retrieval.same_work)."""

    def __init__(
        self,
        arms: list[dict],
        retrieval_keys: dict[str, str],
        metric: str,
        *,
        results_dir=None,
        labels=None,
        flag: str = "search: --answer-metric",
        executor: str = "local",
        address: str | None = None,
    ):
        """labels: a helpers.experiment.search_labels.SearchLabels (the judge corrected by people's
        labels on the questions it draws), or None (the judge alone); flag: what a bad metric's
        error names; executor 'ray' (address: the cluster's, else RAY_ADDRESS or a local instance):
        each look's answers as Ray tasks (answer_all)."""
        self.metric, self.judge = metric, check_metric(metric, flag)
        self.labels = labels
        self.arms = {a["name"]: a for a in arms}
        self.keys = {n: answer_work(a, retrieval_keys[n]) for n, a in self.arms.items()}
        self.results_dir = results_dir
        self._runs: dict[str, tuple] = {}  # arm name -> (experiment, data)
        self._shared: dict[str, dict] = {}  # dataset key -> built indexes, shared by the runs on it
        self.calls: dict[str, dict[str, int]] = {}  # arm name -> {qid: LLM calls its answer took}
        if executor not in ("local", "ray"):
            raise UserError(f"search: --executor {executor!r} is not one of: local, ray")
        self.executor, self.address = executor, address  # where answers are written: here, or Ray tasks
        self._remote_errors: dict[str, str] = {}

    def answer_all(self, names: list[str], qids: list[str]) -> None:
        """Before a look's evaluations: with `executor='ray'`, answer `qids` for every arm of `names`
        at once, one Ray task each; an arm whose task fails (its retries spent) fails at evaluate.
        Locally, nothing: evaluate answers."""
        if self.executor != "ray":
            return
        ray = ray_init(self.address)
        task = ray.remote(num_cpus=1, max_retries=MAX_RETRIES)(answer_questions)
        where = str(self.results_dir) if self.results_dir else None
        pending = {task.remote(self.config(n).model_dump(mode="json"), list(qids), where): n for n in names}
        for ref, name in pending.items():
            try:
                ray.get(ref)
            except Exception as exc:  # noqa: BLE001 - the arm's failure: raised at its evaluate, recorded by the race
                self._remote_errors[name] = f"{type(exc).__name__}: {exc}"[:500]
            self.run(name)[0].store.reload()  # what the worker appended

    def config(self, name: str):
        """The arm's run: its cell's config, one architecture, only the metric's judge."""
        from helpers.experiment.config import ExperimentConfig

        arm = self.arms[name]
        raw = arm["config"].model_dump(mode="json")
        judges = OFF | {self.judge: raw["judges"].get(self.judge) or {}}
        raw.update(
            name=arm["cell"],  # the sweep's run id of the cell, and the architecture
            run_id=None,
            architectures=[arm["architecture"]],
            generate=True,
            figures=False,
            judges=judges,
        )
        return ExperimentConfig(**raw)

    def run(self, name: str) -> tuple:
        if name not in self._runs:
            from helpers.experiment.runner import Experiment  # the runner: loaded only when a search answers

            experiment = Experiment(self.config(name), results_dir=self.results_dir)
            data, _ = experiment.start(table=False)
            config = experiment.config.dataset
            key = json.dumps([config.name, config.options], sort_keys=True, default=str)
            experiment.shared = self._shared.setdefault(key, {})
            self._runs[name] = (experiment, data)
        return self._runs[name]

    def questions(self, name: str) -> list[str]:
        """The questions the arm's run can be scored on: those with a reference."""
        experiment, data = self.run(name)
        return [q for q in experiment.questions(data) if data.answers.get(q)]

    def evaluate(self, name: str, qids: list[str]) -> dict[str, float]:
        from helpers.experiment.until_decided import metric_values
        from helpers.judges import judge_class

        if name in self._remote_errors:
            raise RuntimeError(f"its Ray task failed: {self._remote_errors.pop(name)}")
        experiment, data = self.run(name)
        chunk = {q: data.queries[q] for q in qids}
        if self.executor != "ray":  # on Ray, answer_all has answered (a failed answer stays failed)
            experiment.answers(data, chunk)
        answered = experiment.answered(chunk)
        failed = [a for a in answered if a.get("error")]
        if answered and len(failed) == len(answered):  # a batch with no answer at all: the arm fails
            raise RuntimeError(f"every answer of {len(answered)} failed, e.g. {failed[0]['error']}")
        experiment.score(judge_class(self.judge), answered, data)
        self.calls.setdefault(name, {}).update({a["qid"]: a.get("llm_calls") or 0 for a in answered})
        scores, _, _ = experiment.score_table(data, answered)
        architecture = self.arms[name]["architecture"]
        judged = metric_values(scores, self.metric, [architecture])[architecture]
        if self.labels is None:
            return judged
        return self.labels.values(experiment.store.directory, answered, judged)

    def answered(self) -> list[dict]:
        """Every answer record the search's runs hold (a budget counts what they spent)."""
        return [a for experiment, data in self._runs.values() for a in experiment.answered(experiment.questions(data))]

    def finish(self, seconds: float) -> None:
        """Each run's scores and summary over the questions it answered, as a plain run writes
        them: `helpers report RUN` and `helpers compare RUN RUN` read a search's runs."""
        for experiment, data in self._runs.values():
            experiment.finish(data, experiment.answered(experiment.questions(data)), seconds)

    def run_ids(self) -> dict[str, str]:
        return {name: experiment.run_id for name, (experiment, _) in self._runs.items()}

    def chosen_config(self, name: str) -> dict:
        """The chosen arm's run as a config: `helpers run` it to answer the rest of the questions
        (the run id is the search's, so its answers are reused)."""
        return self.config(name).model_dump(mode="json")
