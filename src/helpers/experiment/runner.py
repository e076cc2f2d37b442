"""`python -m helpers run CONFIG.yaml`: dataset x architectures x LLMs x judges, resumable.

Stages, each per sample and keyed in the run store so a rerun skips finished work:
retrieval + generation (one `answer` record per architecture, LLM and question), then one
`score` record per judge and answer. Failures are recorded per sample and listed at the end.
"""
from __future__ import annotations

import logging
import math
import platform
import time
from collections import Counter
from importlib import metadata

import pandas as pd
import yaml
from tqdm import tqdm

from helpers import paths
from helpers.experiment.config import ExperimentConfig
from helpers.experiment.store import RunStore
from helpers.figures import git_commit

log = logging.getLogger(__name__)
TRACE_METRICS = ("relevance", "utilization", "completeness", "adherence")
VERSIONS = ("ragas", "langchain", "chromadb", "bm25s", "sentence-transformers", "llama-cpp-python",
            "torch", "transformers", "pandas", "scikit-learn", "scipy", "ranx")


def _versions() -> dict:
    out = {"python": platform.python_version()}
    for name in VERSIONS:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _score_rows(answer: dict, judge: str, values: dict, reasons: dict | None = None) -> list[dict]:
    reasons = reasons or {}
    return [{"architecture": answer["architecture"], "llm": answer["llm"], "judge": judge, "qid": answer["qid"],
             "metric": metric, "value": None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value),
             "reason": reasons.get(metric, "")} for metric, value in values.items()]


class Experiment:
    def __init__(self, config: ExperimentConfig, results_dir=None):
        self.config = config
        self.run_id = config.resolved_run_id()
        self.store = RunStore((results_dir or paths.RESULTS_DIR) / self.run_id)
        self._llms: dict = {}

    def llm(self, name: str | None):
        from helpers.llm import LLM

        name = name or self.config.llms[0].name
        if name not in self._llms:
            settings = self.config.llm(name).model_dump(exclude={"name"})
            self._llms[name] = LLM(settings)
        return self._llms[name]

    # ------------------------------------------------------------------ stages
    def answers(self, data, queries) -> None:
        from helpers.generation import generate_answer, select_contexts
        from helpers.retrieval.registry import build_retriever

        cfg = self.config
        gen_name = cfg.generation_llm or cfg.llms[0].name
        llm, shared = self.llm(gen_name), {}
        for architecture in cfg.architectures:
            todo = [q for q in queries if not self.store.has(f"answer|{architecture}|{gen_name}|{q}")]
            if not todo:
                continue
            retriever = build_retriever(architecture, language=data.language, llm=llm,
                                        options=cfg.retrieval.options, shared=shared)
            start = time.perf_counter()
            retriever.index(data.corpus)
            log.info("%s indexed in %.1fs", architecture, time.perf_counter() - start)
            for qid in tqdm(todo, desc=f"{architecture}: retrieve + answer", unit="q"):
                record = {"kind": "answer", "architecture": architecture, "llm": gen_name, "qid": qid}
                try:
                    start = time.perf_counter()
                    run = retriever.retrieve({qid: queries[qid]}, cfg.retrieval.k)
                    retrieval_s = time.perf_counter() - start
                    contexts, dropped = select_contexts(run.get(qid, {}), data.corpus, k=cfg.retrieval.k,
                                                        language=data.language)
                    answer = generate_answer(llm, qid, queries[qid], contexts, language=data.language, dropped=dropped)
                    record.update(answer.to_dict(), retrieval_s=round(retrieval_s, 4),
                                  pages=[data.corpus[c["doc_id"]].get("page") for c in contexts])
                except Exception as exc:  # one sample's failure is recorded; the run goes on
                    record.update(question=queries[qid], answer=None, contexts=[], error=str(exc),
                                  error_kind=type(exc).__name__)
                self.store.add(f"answer|{architecture}|{gen_name}|{qid}", record)

    def score_offline(self, answers: list[dict]) -> None:
        from helpers.trace.offline_judge import OfflineJudge

        todo = [a for a in answers if not self.store.has(f"score|offline|{a['key']}")]
        if not todo:
            return
        judge = OfflineJudge.load()
        for answer in tqdm(todo, desc="offline TRACe judge", unit="answer"):
            if not answer.get("answer"):
                rows = _score_rows(answer, "offline", {m: None for m in TRACE_METRICS},
                                   {m: "no answer" for m in TRACE_METRICS})
            else:
                scores = judge.judge(answer["question"], [c["text"] for c in answer["contexts"]], answer["answer"]).scores
                rows = _score_rows(answer, "offline", {m: getattr(scores, m) for m in TRACE_METRICS}
                                   | {"adherence_score": scores.adherence_score})
            self.store.add(f"score|offline|{answer['key']}", {"kind": "score", "rows": rows})

    def score_trace_llm(self, answers: list[dict]) -> None:
        from helpers.trace.llm_judge import llm_judge

        llm = self.llm(self.config.judges.trace_llm)
        for answer in tqdm([a for a in answers if not self.store.has(f"score|trace_llm|{a['key']}")],
                           desc="TRACe LLM judge", unit="answer"):
            if not answer.get("answer"):
                values, reasons = {m: None for m in TRACE_METRICS}, {m: "no answer" for m in TRACE_METRICS}
                usage = None
            else:
                mark = len(llm.calls)
                judgement = llm_judge(llm, answer["question"], [c["text"] for c in answer["contexts"]], answer["answer"])
                values = {m: getattr(judgement.scores, m) for m in TRACE_METRICS}
                reasons = {m: judgement.error or "" for m in TRACE_METRICS}
                usage = llm.totals(since=mark)
            self.store.add(f"score|trace_llm|{answer['key']}", {"kind": "score", "judge": "trace_llm", "usage": usage,
                                                                "rows": _score_rows(answer, "trace_llm", values, reasons)})

    def score_ragas(self, answers: list[dict], data) -> None:
        from helpers.ragas_eval.runner import RagasJudge, RagasSample

        cfg = self.config.judges
        chosen = [a for a in answers if (cfg.ragas_questions is None or a["qid"] in cfg.ragas_questions)
                  and (cfg.ragas_architectures is None or a["architecture"] in cfg.ragas_architectures)]
        todo = [a for a in chosen if not self.store.has(f"score|ragas|{a['key']}")]
        if not todo:
            return
        llm = self.llm(cfg.ragas)
        judge = RagasJudge(llm, language=data.language, metrics=cfg.ragas_metrics)
        for answer in tqdm(todo, desc="RAGAS judge", unit="answer"):
            sample = RagasSample(answer["qid"], answer["question"], answer.get("answer"),
                                 [c["text"] for c in answer.get("contexts", [])], data.answers.get(answer["qid"]),
                                 answer.get("error"))
            mark = len(llm.calls)
            result = judge.score([sample]).rows
            rows = [{"architecture": answer["architecture"], "llm": answer["llm"], "judge": "ragas",
                     "qid": answer["qid"], "metric": r["metric"],
                     "value": None if pd.isna(r["value"]) else float(r["value"]), "reason": r["reason"]}
                    for r in result.to_dict("records")]
            self.store.add(f"score|ragas|{answer['key']}", {"kind": "score", "judge": "ragas",
                                                            "usage": llm.totals(since=mark), "rows": rows})

    # ------------------------------------------------------------------ driver
    def run(self) -> dict:
        from helpers.data import load_dataset

        cfg = self.config
        started = time.perf_counter()
        (self.store.directory / "config.yaml").write_text(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False, allow_unicode=True))
        self.store.write_json({"run_id": self.run_id, "git_commit": git_commit(), "versions": _versions()}, "meta.json")
        data = load_dataset(cfg.dataset.name, **cfg.dataset.options)
        qids = cfg.dataset.questions or list(data.queries)
        unknown = [q for q in qids if q not in data.queries]
        if unknown:
            raise ValueError(f"dataset.questions names unknown qids {unknown[:5]}; valid: {list(data.queries)[:10]}...")
        queries = {q: data.queries[q] for q in qids}
        self.answers(data, queries)
        answers = [a for a in self.store.of_kind("answer") if a["qid"] in queries and a["architecture"] in cfg.architectures]
        answers.sort(key=lambda a: (cfg.architectures.index(a["architecture"]), qids.index(a["qid"])))
        if cfg.judges.offline:
            self.score_offline(answers)
        if cfg.judges.trace_llm:
            self.score_trace_llm(answers)
        if cfg.judges.ragas:
            self.score_ragas(answers, data)
        return self.finish(data, answers, time.perf_counter() - started)

    def finish(self, data, answers, seconds: float) -> dict:
        rows = [dict(row, run_id=self.run_id, dataset=self.config.dataset.name)
                for rec in self.store.of_kind("score") for row in rec["rows"]]
        for a in answers:  # cost and speed as metrics too, for the Pareto view
            for metric in ("latency_s", "retrieval_s", "cost_usd", "output_tokens"):
                if a.get(metric) is not None:
                    rows.append({"run_id": self.run_id, "dataset": self.config.dataset.name, "architecture": a["architecture"],
                                 "llm": a["llm"], "judge": "system", "qid": a["qid"], "metric": metric,
                                 "value": float(a[metric]), "reason": ""})
        columns = ["run_id", "dataset", "architecture", "llm", "judge", "qid", "metric", "value", "reason"]
        scores = pd.DataFrame(rows, columns=columns).drop_duplicates(["architecture", "llm", "judge", "qid", "metric"], keep="last")
        self.store.write_table(scores, "scores.parquet")
        records = pd.DataFrame([{k: v for k, v in a.items() if k != "key"} for a in answers])
        records["contexts"] = records["contexts"].map(lambda cs: [{k: c.get(k) for k in ("doc_id", "rank", "score", "text")} for c in cs or []])
        self.store.write_table(records.astype({"contexts": str}), "records.parquet")
        failures = Counter(a.get("error_kind") for a in answers if a.get("error"))
        nan_reasons = Counter((r["judge"], r["metric"]) for r in rows if r["value"] is None)
        judge_usage: dict[str, Counter] = {}  # tokens, calls, cost and time of each LLM judge
        for rec in self.store.of_kind("score"):
            if rec.get("usage"):
                judge_usage.setdefault(rec["judge"], Counter()).update(rec["usage"] | {"samples": 1})
        summary = {"run_id": self.run_id, "directory": str(self.store.directory), "answers": len(answers),
                   "answer_failures": dict(failures), "nan_scores": {f"{j}/{m}": n for (j, m), n in nan_reasons.items()},
                   "judge_usage": {j: {k: round(v, 6) for k, v in u.items()} for j, u in judge_usage.items()},
                   "seconds": round(seconds, 1), "score_rows": len(scores)}
        self.store.write_json(summary, "summary.json")
        return summary
