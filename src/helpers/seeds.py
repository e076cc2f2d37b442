"""The reference documents' interfaces, as they write them, on top of the package (issue 61): a
student coming from the seeds types their code and gets the workbench's judges, loaders and
retrievers underneath. Nothing here computes a score of its own.

    seed (../shared/seeds/)                               here, and what runs underneath
    RAGASEvaluator(rag_type="hybrid").run_evaluation()     a run of the default config (HELPERS_SMOKE=1:
                                                           the smoke config) with one architecture and
                                                           the `ragas` judge; the four metrics' means
    TRACEEvaluator().evaluate(query=..., response=...,     the offline TRACe judge (`llm=`: the LLM
        retrieved_documents=..., ground_truth=...)         judge, `trace_llm`) through helpers.evaluate
    TRACEEvaluator().evaluate_batch(test_cases)            the seed's dict: the four means, average,
                                                           num_samples, individual_scores
    RAGBenchLoader().get_test_data("hotpot_qa", 10)        helpers.data.load_ragbench's test split
    RAGBenchLoader().get_test_data_size("hotpot_qa")       its rows
    RAGPipeline(documents).query(question, n_results=5)    an architecture's retriever (build_retriever)
                                                           and helpers.generation.answering.generate_answer

Every score comes with how far people agree with its judge (`.validity`, helpers.judges.validity):
the offline TRACe judge and RAGAS with the local judge cannot tell, which `run_evaluation` and
`evaluate_batch` say when they return.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from helpers.errors import UserError

TRACE_METRICS = ("utilization", "relevance", "adherence", "completeness")


@dataclass
class TRACEScores:
    """The seed's dataclass: the four TRACe scores of one answer (NaN where the judge could not)."""

    utilization: float
    relevance: float
    adherence: float
    completeness: float

    def average(self) -> float:
        """The seed's overall TRACe score: the mean of the four."""
        return sum(getattr(self, m) for m in TRACE_METRICS) / len(TRACE_METRICS)

    def to_dict(self) -> dict:
        return asdict(self) | {"average": self.average()}


class TRACEEvaluator:
    """`evaluate` and `evaluate_batch` as the TRACe guide writes them. Default: the offline TRACe
    judge (judge `offline`, no LLM); `llm` (an helpers.llm.LLM or its config): the LLM judge
    (`trace_llm`), as the seed's Groq judge."""

    def __init__(self, llm=None, language: str | None = None):
        self.judge, self.llm, self.language = ("trace_llm" if llm is not None else "offline"), llm, language

    @property
    def validity(self) -> dict[str, str]:
        """How far people agree with each metric of this judge (helpers.judges.validity)."""
        from helpers.judges import validity

        return {m: validity.note(self.judge, m) for m in TRACE_METRICS}

    def _score(self, cases: list[dict]) -> list[TRACEScores]:
        from helpers.judges.evaluate import score_answers  # pandas, the judges: loaded when used

        answers = [
            {
                "qid": f"case{i}",
                "question": c["query"],
                "answer": c["response"],
                "contexts": list(c["retrieved_documents"]),
                "reference": c.get("ground_truth") or None,
                "architecture": None,
            }
            for i, c in enumerate(cases)
        ]
        scores = score_answers(answers, [self.judge], llm=self.llm, language=self.language, log=lambda *_: None)
        value = scores.set_index(["id", "metric"])["value"]
        return [
            TRACEScores(**{m: float(value.get((a["qid"], m), float("nan"))) for m in TRACE_METRICS}) for a in answers
        ]

    def evaluate(self, query: str, response: str, retrieved_documents: list[str], ground_truth: str | None = None):
        """TRACEScores of one answer."""
        case = {"query": query, "response": response, "retrieved_documents": retrieved_documents}
        return self._score([case | {"ground_truth": ground_truth}])[0]

    def evaluate_batch(self, test_cases: list[dict]) -> dict:
        """The seed's dict: each metric's mean, their average, num_samples, individual_scores
        (and `validity`: how far people agree with this judge, per metric)."""
        individual = [s.to_dict() for s in self._score(test_cases)]
        means = {m: sum(s[m] for s in individual) / len(individual) for m in (*TRACE_METRICS, "average")}
        return means | {"num_samples": len(individual), "individual_scores": individual, "validity": self.validity}


class RAGBenchLoader:
    """`get_test_data` and `get_test_data_size` as the TRACe guide writes them, over RAGBench's
    published subsets (helpers.data.ragbench: the twelve, fetched on first use). The seed's names
    work with or without their underscore ("hotpot_qa" is hotpotqa)."""

    def __init__(self, split: str = "test", ragbench_dir=None):
        self.split, self.ragbench_dir = split, ragbench_dir

    def _subset(self, dataset_name: str) -> str:
        from helpers.data.ragbench import published

        subset = dataset_name.replace("_", "").lower()
        if subset not in published():
            raise UserError(f"dataset {dataset_name!r} is not a RAGBench subset; the twelve: {', '.join(published())}")
        return subset

    def get_test_data(self, dataset_name: str, num_samples: int = 10) -> list[dict]:
        """The first `num_samples` examples: question, answer (RAGBench's response), documents, id."""
        from helpers.data.ragbench import load_ragbench

        frame = load_ragbench(self._subset(dataset_name), self.split, self.ragbench_dir).head(num_samples)
        return [
            {"id": str(r["id"]), "question": r["question"], "answer": r["response"], "documents": list(r["documents"])}
            for r in frame.to_dict("records")
        ]

    def get_test_data_size(self, dataset_name: str) -> int:
        from helpers.data.ragbench import load_ragbench

        return len(load_ragbench(self._subset(dataset_name), self.split, self.ragbench_dir))


def _seed_config():
    """The config the seeds' classes run: the default benchmark, or the smoke one (HELPERS_SMOKE=1)."""
    from helpers.experiment.config import load_config
    from helpers.experiment.own_documents import resolve_config
    from helpers.smoke import is_smoke

    return load_config(resolve_config("smoke" if is_smoke() else "default"))


class RAGPipeline:
    """`query(query_str, n_results=5)` as the TRACe guide's RAGPipeline: one of the six architectures
    over `documents` (texts, or {doc_id: text}), answered by the config's LLM (default: the default
    benchmark's local model; HELPERS_SMOKE=1: the smoke one)."""

    def __init__(self, documents, architecture: str = "dense", llm=None, language: str | None = None):
        from helpers.judges.evaluate import guess_language
        from helpers.llm import LLM
        from helpers.retrieval import build_retriever

        texts = documents if isinstance(documents, dict) else {f"d{i}": t for i, t in enumerate(documents)}
        self.corpus = {k: v if isinstance(v, dict) else {"title": "", "text": str(v)} for k, v in texts.items()}
        self.language = language or guess_language([d["text"] for d in self.corpus.values()])
        self.architecture = architecture
        self.retriever = build_retriever(architecture, language=self.language).index(self.corpus)
        if llm is None:
            llm = _seed_config().llms[0].model_dump(exclude={"name"})
        self.llm = llm if isinstance(llm, LLM) else LLM(llm)

    def query(self, query_str: str, n_results: int = 5) -> dict:
        """The seed's dict: query, response, retrieved_documents (document, distance, metadata).
        `distance` is 1 - the retriever's score for dense (cosine distance, as Chroma's), None for
        the others, whose scores are no distance (the score is in `metadata`)."""
        from helpers.generation.answering import generate_answer

        run = self.retriever.retrieve({"q": query_str}, n_results)["q"]
        contexts: list[dict[str, Any]] = [
            {"doc_id": doc_id, "rank": rank, "score": score, "text": self.corpus[doc_id]["text"]}
            for rank, (doc_id, score) in enumerate(run.items(), 1)
        ]
        record = generate_answer(self.llm, "q", query_str, contexts, language=self.language)
        if record.error:
            raise UserError(f"the LLM did not answer: {record.error}")
        return {
            "query": query_str,
            "response": record.answer,
            "retrieved_documents": [
                {
                    "document": c["text"],
                    "distance": 1 - c["score"] if self.architecture == "dense" else None,
                    "metadata": {"doc_id": c["doc_id"], "rank": c["rank"], "score": c["score"]},
                }
                for c in contexts
            ],
        }


class RAGASEvaluator:
    """`RAGASEvaluator(rag_type).run_evaluation()` as the RAGAS framework writes it: the default
    benchmark (its 10 questions; HELPERS_SMOKE=1: the smoke config) with one architecture, judged by
    RAGAS (`judge_llm`: a name of the config's llms; default the config's RAGAS judge, the local
    model, which cannot tell: docs/measurements/judges-validity.md; a hosted judge: configs/groq.yaml
    and `judge_llm="groq"`)."""

    def __init__(self, rag_type: str = "hybrid", judge_llm: str | None = None, log=print):
        self.rag_type, self.judge_llm, self.log = rag_type, judge_llm, log
        self.run_id: str | None = None

    def run_evaluation(self) -> dict:
        """The four RAGAS metrics' means over the questions: faithfulness, answer_relevancy,
        context_precision, context_recall (the run: `self.run_id`; its validity: `self.validity`)."""
        from helpers.experiment.analysis import load_scores
        from helpers.experiment.config import ExperimentConfig
        from helpers.experiment.runner import Experiment
        from helpers.judges import validity
        from helpers.ragas_eval import RAGAS_METRICS
        from helpers.smoke import is_smoke

        raw = _seed_config().model_dump(mode="json")
        # every question of the benchmark, as the seed; the smoke config's first only (RAGAS by its
        # 135M judge: about 30 s a question)
        first = [(raw["dataset"].get("questions") or [None])[0]] if is_smoke() else None
        ragas = {**(raw["judges"].get("ragas") or {}), "questions": first if first != [None] else None}
        ragas["architectures"] = None
        if self.judge_llm:
            ragas["llm"] = self.judge_llm
        raw.update(run_id=None, architectures=[self.rag_type], figures=False)
        raw["judges"] = {**raw["judges"], "ragas": ragas}
        config = ExperimentConfig(**raw)
        summary = Experiment(config).run()
        self.run_id = summary["run_id"]
        scores = load_scores(self.run_id)
        part = scores[scores["judge"] == "ragas"]
        results = {m: float(part.loc[part["metric"] == m, "value"].mean()) for m in RAGAS_METRICS}
        self.validity = {m: validity.note("ragas", m) for m in RAGAS_METRICS}
        judge = ragas.get("llm", "local")
        self.log(
            f"RAGAS judged by {judge!r} on run {self.run_id}: "
            + "; ".join(f"{m}: {v}" for m, v in self.validity.items())
        )
        return results
