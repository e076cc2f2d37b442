"""The search's retrieval stage (issue 62): arms evaluated by retrieval against qrels, with no LLM
call, each distinct retrieval done once (helpers.experiment.search races them; `helpers compare`
evaluates a config side with it too).

Arms whose retrieval is the same work (`same_work`: the dataset, the architecture and the option
sections it reads) share one evaluation: bm25 in cells that differ only in the embedder, or in k
(how many contexts the generator gets, no retrieval axis: the metric is taken at one depth for
every cell).
"""

from __future__ import annotations

import json

from helpers.errors import UserError
from helpers.retrieval.architectures.retriever_base import Retriever
from helpers.retrieval.evaluation.metrics import per_query
from helpers.retrieval.registry import architecture as registry_entry
from helpers.retrieval.registry import build_retriever


def sections(name: str, options) -> list[str]:
    """The retrieval option sections architecture `name` reads: its own and its parts' (a
    rerank over hybrid reads rerank, hybrid, dense and bm25)."""
    entry, found = registry_entry(name), [name]
    parts = list(entry.parts) + ([getattr(options, entry.first_stage).base] if entry.first_stage else [])
    for part in parts:
        found += [s for s in sections(part, options) if s not in found]
    return found


def same_work(arm: dict) -> str:
    """What an arm's retrieval depends on: the dataset, the architecture and the option sections it
    reads. Arms with the same key (bm25 in cells that differ only in the embedder, or in k) are one
    evaluation, done once and shared."""
    config = arm["config"]
    options = config.retrieval.options
    used = {
        s: getattr(options, s).model_dump(mode="json")
        for s in sections(arm["architecture"], options)
        if hasattr(options, s)
    }
    key = [config.dataset.name, config.dataset.options, arm["architecture"], used]
    return json.dumps(key, sort_keys=True, default=str)


class RetrievalArms:
    """Evaluate arms on questions by retrieval against qrels; each cell's dataset and each arm's
    index built once, on first use (indexes shared between arms of one cell)."""

    def __init__(self, arms: list[dict], kind: str, at: int = 10):
        self.arms, self.kind, self.at = {a["name"]: a for a in arms}, kind, at
        self._data: dict[str, object] = {}
        self._shared: dict[str, dict] = {}
        self._retrievers: dict[str, Retriever] = {}
        self._done: dict[tuple[str, str], float] = {}  # (same_work key, qid) -> value: each evaluated once
        self.keys = {name: same_work(arm) for name, arm in self.arms.items()}

    @property
    def evaluations(self) -> int:
        """Distinct retrievals scored (arms doing the same work count once)."""
        return len(self._done)

    def data(self, config):
        from helpers.data import load_dataset  # the loaders: loaded only when a search runs

        key = json.dumps([config.dataset.name, config.dataset.options], sort_keys=True, default=str)
        if key not in self._data:
            self._data[key] = load_dataset(config.dataset.name, **config.dataset.options)
            self._shared[key] = {}
        return self._data[key], self._shared[key]

    def questions(self) -> list[str]:
        """The question ids every arm can be scored on: in the config's questions and with qrels,
        the same for every cell (a grid over datasets is not one search)."""
        found = None
        for arm in self.arms.values():
            data, _ = self.data(arm["config"])
            qids = [q for q in arm["config"].questions_of(data) if data.qrels.get(q)]
            if found is not None and set(qids) != set(found):
                raise UserError(
                    "search: the cells do not share their questions (a grid over datasets or questions): "
                    "search one dataset at a time"
                )
            found = qids
        return found or []

    def evaluate(self, name: str, qids: list[str]) -> dict[str, float]:
        arm, key = self.arms[name], self.keys[name]
        todo = [q for q in qids if (key, q) not in self._done]
        if todo:
            config = arm["config"]
            data, shared = self.data(config)
            if key not in self._retrievers:
                retriever = build_retriever(
                    arm["architecture"], language=data.language, options=config.retrieval.options, shared=shared
                )
                self._retrievers[key] = retriever.index(data.corpus)
            metric = f"{self.kind}@{self.at}"
            run = self._retrievers[key].retrieve({q: data.queries[q] for q in todo}, self.at)
            scores = per_query({q: data.qrels[q] for q in todo}, run, [metric])
            self._done.update({(key, q): scores.get(q, {}).get(metric, 0.0) for q in todo})
        return {q: self._done[(key, q)] for q in qids}
