"""`python -m helpers run CONFIG.yaml`: dataset x architectures x LLMs x judges, resumable.

Stages, each per sample and keyed in the run store so a rerun skips finished work:
retrieval + generation (one `answer` record per architecture, LLM and question), then one
`score` record per judge and answer. A failure is recorded with the sample (its kind and
message) and the run goes on; a rerun redoes the failed samples only. `summary.json` says
whether the run failed as a whole (`ok`: every sample of an architecture failed, or more than
`max_failure_rate` of all samples), and `python -m helpers run` then exits non-zero.
"""

from __future__ import annotations

import json
import logging
import math
import resource
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import datetime, timezone
from typing import Any, cast

import pandas as pd
import yaml
from tqdm import tqdm

from helpers import paths
from helpers.data import load_dataset
from helpers.data.contracts import Dataset, Sample
from helpers.data.documents import cite
from helpers.experiment.analysis import DECISIONS_FILE
from helpers.experiment.config import ExperimentConfig
from helpers.experiment.exports import TRACE_FILES, trace_json
from helpers.experiment.relevance import passage_qrels, relevance_line
from helpers.experiment.retrieval_first import format_table, retrieval_table
from helpers.experiment.run_accounting import at_max_tokens, failure_summary, show_failures, system_rows, versions
from helpers.experiment.store import AnswerRow, RunStore, answer_key, score_key
from helpers.experiment.timeline import Timeline, embedded_so_far
from helpers.figures import git_commit
from helpers.generation.answering import generate_answer, select_contexts
from helpers.inputs import inside
from helpers.judges import JUDGES, SCORE_COLUMNS, active_judges, score_row
from helpers.judges.judge_base import JudgeContext, judge_sample
from helpers.languages import corpus_language
from helpers.llm import LLM
from helpers.retrieval.registry import build_retriever, needs_llm

log = logging.getLogger(__name__)


def _score_rows(answer: Mapping[str, Any], judge: str, values: dict, reasons: dict | None = None) -> list[dict]:
    reasons = reasons or {}
    return [
        score_row(
            architecture=answer["architecture"],
            llm=answer["llm"],
            judge=judge,
            qid=answer["qid"],
            metric=metric,
            value=None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value),
            reason=reasons.get(metric, ""),
        )
        for metric, value in values.items()
    ]


class Experiment:
    def __init__(self, config: ExperimentConfig, results_dir=None, progress=None):
        """progress: called as progress(step, done, total) after each sample of each step (the
        explore panel's progress bar); None: tqdm bars only."""
        self.config = config
        self.run_id = config.resolved_run_id()
        self.store = RunStore(inside(results_dir or paths.RESULTS_DIR, self.run_id, what="run id"))
        self._llms: dict = {}
        self._llm_copies: dict[str, list] = {}  # more clients of one LLM entry (judges scoring side by side)
        self._progress = progress or (lambda step, done, total: None)
        self.timeline = Timeline()
        # settings -> client; helpers.experiment.dry_run puts a stand-in here
        self.make_llm: Callable[[dict], LLM] = LLM
        self.shared: dict = {}  # built indexes, reused by every architecture (and the retrieval table)
        # indexed retrievers and prepared judges, kept for the next batch of questions (--until-decided)
        self._retrievers: dict = {}
        self._judges_built: dict = {}
        self._data: Dataset | None = None  # the dataset, once `start` has loaded it
        self.relevance: dict = {}  # helpers.experiment.relevance's report, once `start` has run

    def llm(self, name: str | None):
        name = name or self.config.llms[0].name
        if name not in self._llms:
            settings = self.config.llm(name).model_dump(exclude={"name"})
            self._llms[name] = self.make_llm(settings)
        return self._llms[name]

    def llm_copy(self, name: str):
        """Another client of the LLM entry `name`: the same engine (and local model pool), its
        own call list, so that samples scored at once each account their own calls."""
        copy = self.make_llm(self.config.llm(name).model_dump(exclude={"name"}))
        self._llm_copies.setdefault(name, []).append(copy)
        return copy

    def _llm_totals(self) -> dict:
        out = {}
        for name, llm in self._llms.items():
            calls = llm.calls + [c for copy in self._llm_copies.get(name, []) for c in copy.calls]
            out[name] = llm.usage(calls)
        return out

    # ------------------------------------------------------------------ stages
    def answers(self, data, queries) -> None:
        cfg = self.config
        gen_name = cfg.generation_llm or cfg.llms[0].name
        llm = self.llm(gen_name)
        for architecture in cfg.architectures:
            todo = [q for q in queries if not self.store.finished(answer_key(architecture, gen_name, q))]
            if not todo:
                continue
            retriever = self._retriever(architecture, data, llm)
            # the provider's own parallelism (the local model: one call at a time); each record is
            # stored as soon as it is done, so a kill loses only the samples in flight
            with (
                self.timeline.step(f"answer {architecture}") as step,
                ThreadPoolExecutor(max_workers=llm.workers) as pool,
            ):
                futures = [
                    pool.submit(self._answer_one, retriever, llm, architecture, gen_name, data, qid, queries[qid])
                    for qid in todo
                ]
                desc = f"{architecture}: retrieve + answer"
                records = []
                bar = tqdm(as_completed(futures), total=len(futures), desc=desc, unit="q")
                for done, future in enumerate(bar, 1):
                    records.append(future.result())
                    self.store.add(answer_key(architecture, gen_name, records[-1]["qid"]), records[-1])
                    show_failures(bar, records, llm)
                    self._progress(desc, done, len(futures))
                step.update(
                    samples=len(records),
                    llm_calls=sum(r.get("llm_calls") or 0 for r in records),
                    cache_hits=sum(r.get("cache_hits") or 0 for r in records),
                )

    def _retriever(self, architecture: str, data, llm):
        """The architecture's retriever, indexed once and kept for later questions."""
        if architecture in self._retrievers:
            return self._retrievers[architecture]
        shared = self.shared
        retriever = build_retriever(
            architecture, language=data.language, llm=llm, options=self.config.retrieval.options, shared=shared
        )
        with self.timeline.step(f"index {architecture}") as step:
            before = embedded_so_far(shared)
            retriever.index(data.corpus)
            step.update(documents=len(data.corpus), embedded=embedded_so_far(shared) - before)
        log.info(
            "%s indexed in %.1fs (%s)",
            architecture,
            step["seconds"],
            ", ".join(f"{k}: {v}" for k, v in retriever.describe().items()) or "no options",
        )
        self._retrievers[architecture] = retriever
        return retriever

    def _answer_one(self, retriever, llm, architecture, gen_name, data, qid, question) -> AnswerRow:
        """One sample: retrieval and generation, with every LLM call it needed accounted (HyDE's
        passage and multi-query's rewrites as well as the answer). Never raises."""
        k = self.config.retrieval.k
        record: AnswerRow = {"kind": "answer", "architecture": architecture, "llm": gen_name, "qid": qid}
        start = time.perf_counter()
        with llm.track() as calls:
            try:
                run = retriever.retrieve({qid: question}, k)
                retrieval_s = round(time.perf_counter() - start, 4)
                ranking = run.get(qid, {})
                record["retrieved"] = sorted(ranking, key=lambda d: -ranking[d])[:k]  # before any context budget
                if not self.config.generate:  # retrieval only: the top k as contexts, no LLM call
                    contexts = [
                        {"rank": i, "doc_id": d, "score": float(ranking[d]), "text": data.corpus[d]["text"]}
                        for i, d in enumerate(record["retrieved"], 1)
                    ]
                    record.update(
                        {"question": question, "answer": None, "contexts": contexts, "retrieval_s": retrieval_s}
                    )
                else:
                    contexts, dropped = select_contexts(ranking, data.corpus, k=k, language=data.language)
                    answer = generate_answer(
                        llm,
                        qid,
                        question,
                        contexts,
                        language=self.config.generation.language or data.language,
                        dropped=dropped,
                        prompt=self.config.generation.prompt,
                    )
                    # AnswerRecord's fields, each an AnswerRow key of the same type
                    record.update(cast(AnswerRow, answer.to_dict()))
                    record["retrieval_s"] = retrieval_s
                    record["pages"] = [data.corpus[c["doc_id"]].get("page") for c in contexts]
                    if any(data.corpus[c["doc_id"]].get("source") for c in contexts):  # a user's own files
                        record["sources"] = [cite(data.corpus[c["doc_id"]]) for c in contexts]
                    record["generation_s"] = record.pop("latency_s")
            except Exception as exc:  # one sample's failure is recorded; the run goes on
                kind = type(exc).__name__
                record.update({"question": question, "answer": None, "contexts": [], "error": f"{kind}: {exc}"})
                record["error_kind"] = kind
        fallback = getattr(retriever, "fallbacks", {}).get(qid)
        if fallback:  # HyDE / multi-query fell back to the plain query: say so next to the answer
            record["retrieval_fallback"] = fallback
        usage = llm.usage(calls)
        record.update(
            {
                "latency_s": round(time.perf_counter() - start, 4),
                "llm_calls": usage["calls"],
                "llm_requests": usage["requests"],
                "cache_hits": usage["cache_hits"],
                "input_tokens": usage["input_tokens"],
                "output_tokens": usage["output_tokens"],
                "max_output_tokens": usage["max_output_tokens"],
                "cost_usd": usage["cost_usd"],
            }
        )
        return record

    def judge_context(self, data) -> JudgeContext:
        return JudgeContext(language=data.language, config=self.config, qrels=data.qrels, llms=self)

    def samples(self, answers: Sequence[Mapping[str, Any]], data) -> list[Sample]:
        """The judges' samples of `answers` (answer records), with the dataset's references."""
        unanswerable, references = set(data.unanswerable or ()), data.answers or {}
        return [
            # every record is a dict at run time (from_record only reads it)
            Sample.from_record(cast(dict, a), reference=references.get(a["qid"]), unanswerable=a["qid"] in unanswerable)
            for a in answers
        ]

    def score(self, judge_cls, answers: Sequence[Mapping[str, Any]], data) -> None:
        """Score with one registered judge every answer it wants and has not scored yet; each
        answer's scores are stored as they finish, so a kill loses only those in flight."""
        judge = self._judges_built.get(judge_cls.name) or judge_cls(
            self.config.judges.options(judge_cls.name), context=self.judge_context(data)
        )
        todo = [
            (a, sample)
            for a, sample in zip(answers, self.samples(answers, data))
            if judge.wants(sample) and not self.store.finished(score_key(judge.name, a))
        ]
        if not todo:
            return
        if judge_cls.name not in self._judges_built:  # prepared once, kept for the next batch of questions
            judge.prepare()
            self._judges_built[judge_cls.name] = judge

        def one(answer, sample) -> dict:
            record = {"kind": "score", "judge": judge.name, "answer_key": answer["key"]}
            if judge.artefact:  # which trained model judged
                record["artefact"] = judge.artefact
            rows, record["usage"], exc = judge_sample(judge, sample)
            if exc is not None:  # recorded; a rerun retries this answer
                record.update(error=f"{type(exc).__name__}: {exc}", error_kind=f"judge:{type(exc).__name__}")
            record["rows"] = _score_rows(answer, judge.name, {m: v for m, v, _ in rows}, {m: r for m, _, r in rows})
            return record

        with self.timeline.step(f"judge {judge.name}") as step, ThreadPoolExecutor(max(1, judge.workers)) as pool:
            step["samples"] = len(todo)
            futures = {pool.submit(one, answer, sample): answer for answer, sample in todo}
            bar, records = tqdm(as_completed(futures), total=len(futures), desc=judge.label, unit="answer"), []
            for done, future in enumerate(bar, 1):  # stored here, in this thread, as each finishes
                records.append(self.store.add(score_key(judge.name, futures[future]), future.result()))
                show_failures(bar, records)
                self._progress(judge.label, done, len(todo))

    # ------------------------------------------------------------------ driver
    def run(self) -> dict:
        started = time.perf_counter()
        data, queries = self.start()
        # every question answered: an earlier --until-decided's stopping point no longer describes the run
        (self.store.directory / DECISIONS_FILE).unlink(missing_ok=True)
        self.answers(data, queries)
        answers = self.answered(queries)
        if self.config.generate:
            for judge in active_judges(self.config, data):
                if judge.stored:
                    self.score(judge, answers, data)
        return self.finish(data, answers, time.perf_counter() - started)

    def start(self, table: bool = True) -> tuple:
        """The run folder's config.yaml and meta.json, the dataset and the questions; the retrieval
        table when answers remain to be written (and `table`: a search, which has measured
        retrieval itself, says not). Returns (data, {qid: question})."""
        cfg = self.config
        (self.store.directory / "config.yaml").write_text(
            yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False, allow_unicode=True)
        )
        self.store.write_json({"run_id": self.run_id, "git_commit": git_commit(), "versions": versions()}, "meta.json")
        with self.timeline.step("load dataset") as step:
            data = load_dataset(cfg.dataset.name, **cfg.dataset.options)
            step["documents"] = len(data.corpus)
        self._data = data  # which judges run depends on it (the refusal judge: unanswerable questions)
        self.relevance = passage_qrels(data)  # a `relevant` file narrowed to the chunks holding the reference
        if line := relevance_line(self.relevance):
            tqdm.write(line)
        if "ingest_report" in data.notes:  # a user's own documents: what was taken from each file, or why not
            self.store.write_json(data.notes["ingest_report"], "ingest_report.json")
        queries = self.questions(data)
        if table and cfg.generate and not all(self.store.finished(key) for key in self._answer_keys(queries)):
            self.print_retrieval_table(data, queries)
        return data, queries

    def _answer_keys(self, queries) -> list[str]:
        gen_name = self.config.generation_llm or self.config.llms[0].name
        return [answer_key(a, gen_name, q) for a in self.config.architectures for q in queries]

    def answered(self, queries) -> list[AnswerRow]:
        """The stored answer records of `queries` (each an AnswerRow's JSON), architecture by architecture."""
        return [cast(AnswerRow, self.store.records[key]) for key in self._answer_keys(queries) if self.store.has(key)]

    def print_retrieval_table(self, data, queries) -> None:
        """Retrieval against the qrels before the first answer (helpers.experiment.retrieval_first)."""
        with self.timeline.step("retrieval table"):
            table = retrieval_table(self.config, data, queries, self.shared)
        skipped = [a for a in self.config.architectures if needs_llm(a, self.config.retrieval.options)]
        tqdm.write("\n" + format_table(table, skipped) + "\n")

    def questions(self, data) -> dict[str, str]:
        """{qid: question} of this run (ExperimentConfig.questions_of)."""
        return self.config.questions_of(data)

    def _judges(self) -> list[str]:
        """The stored judges this config runs on its data (registry order; before `start`, the
        config's alone)."""
        return [judge.name for judge in active_judges(self.config, self._data) if judge.stored]

    def score_table(self, data, answers) -> tuple[pd.DataFrame, list[dict], list[dict]]:
        """The long scores of `answers` (SCORE_COLUMNS), their score records and the rows: stored
        judges' scores, the judges that cost nothing recomputed, and cost and speed as metrics."""
        # only the scores of the answers as they are now (a redone answer has new score keys)
        score_records = [
            self.store.records[key]
            for a in answers
            for judge in self._judges()
            if (key := score_key(judge, a)) in self.store.records
        ]
        rows = [
            dict(row, run_id=self.run_id, dataset=self.config.dataset.name)
            for rec in score_records
            for row in rec["rows"]
        ]
        for judge in JUDGES.values():  # judges that cost nothing (retrieval against qrels): recomputed
            if not judge.stored and judge.enabled(self.config):
                rows += [
                    dict(row, run_id=self.run_id, dataset=self.config.dataset.name)
                    for row in judge(context=self.judge_context(data)).score(self.samples(answers, data))
                ]
        rows += system_rows(answers, run_id=self.run_id, dataset=self.config.dataset.name)  # for the Pareto view
        scores = pd.DataFrame(rows, columns=SCORE_COLUMNS).drop_duplicates(
            ["architecture", "llm", "judge", "qid", "metric"], keep="last"
        )
        return scores, score_records, rows

    def finish(self, data, answers, seconds: float) -> dict:
        scores, score_records, rows = self.score_table(data, answers)
        self.store.write_table(scores, "scores.parquet")
        for judge, name in TRACE_FILES.items():  # the seed guide's TRACe JSON per TRACe judge that ran
            if judge in self._judges():
                self.store.write_json(trace_json(scores, judge), name)
        records = pd.DataFrame([{k: v for k, v in a.items() if k != "key"} for a in answers])
        if len(records):  # contexts as JSON: a list of texts (helpers.evaluate reads it as it is) and their ids
            contexts = records["contexts"].map(lambda cs: cs or [])
            records["contexts"] = contexts.map(lambda cs: json.dumps([c.get("text") for c in cs], ensure_ascii=False))
            records["context_details"] = contexts.map(
                lambda cs: json.dumps([{k: c.get(k) for k in ("doc_id", "rank", "score")} for c in cs])
            )
            self.store.write_table(records, "records.parquet")
        nan_reasons = Counter((r["judge"], r["metric"]) for r in rows if r["value"] is None)
        judge_usage: dict[str, Counter] = {}  # tokens, calls, cost and time of each LLM judge
        for rec in score_records:
            if rec.get("usage"):
                judge_usage.setdefault(rec["judge"], Counter()).update(rec["usage"] | {"samples": 1})
        summary = {
            "run_id": self.run_id,
            "directory": str(self.store.directory),
            "answers": len(answers),
            "answer_failures": dict(Counter(a.get("error_kind") for a in answers if a.get("error"))),
            "answers_at_max_tokens": at_max_tokens(answers),
            **failure_summary(answers, score_records, self.config.max_failure_rate),
            "nan_scores": {f"{j}/{m}": n for (j, m), n in nan_reasons.items()},
            "judge_usage": {j: {k: round(v, 6) for k, v in u.items()} for j, u in judge_usage.items()},
            "judge_artefacts": {
                j: sorted({r["artefact"] for r in score_records if r["judge"] == j and r.get("artefact")})
                for j in self._judges()
                if any(r.get("artefact") for r in score_records if r["judge"] == j)
            },
            "relevance": self.relevance,  # which qrels were narrowed to passages, which stayed per file
            "prompt_fallback": corpus_language(self.config.generation.language or data.language).fallback
            if self.config.generate
            else None,
            "llm_usage": self._llm_totals(),  # this process's calls
            "seconds": round(seconds, 1),
            "timeline": self.timeline.steps,
            "score_rows": len(scores),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "finished_at": datetime.now(timezone.utc).isoformat(timespec="microseconds"),  # the trends view's date
        }  # this process
        self.store.write_json(summary, "summary.json")
        return summary
