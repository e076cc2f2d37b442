"""The seed benchmark's own chunks (data/raw/obstetrics/chunks_final.json, `chunks="seed"`) against
ours (the guideline PDF chunked here, 500 / 100, sentence boundaries), measured offline.

What can be measured honestly here:
1. The seed's 10 questions (the same 10 for both chunkings): retrieval of each question's ground
   truth. The share of the ground truth's content words (stemmed, stop words out: the BM25
   tokeniser, helpers.text.Tokenizer) found in the top-k contexts: a lexical stand-in
   for RAGAS context recall, which counts the ground-truth claims attributable to the context
   (Es et al. 2023, arXiv:2309.15217, §3). Words stand in for claims: no LLM judges here.
2. obstetrics-es (306 MaternaQA-es questions, gold passages), with either chunking as the
   guideline part of the corpus. The gold passages come from two other documents (MaternaQA's
   `source_pdf`), so the guideline chunks are distractors there: nDCG shows how hard each chunking
   makes finding the gold passage, not how good its chunks are.
3. Optional (`answer_runs`): the seed's RAGAS table layout (helpers.experiment.analysis.seed_table)
   from a tiny run of the experiment runner per chunking, judged by the bundled 135M model (slow, and
   its RAGAS verdicts carry no meaning yet: see the README), with the offline TRACe judge beside it.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from helpers import paths
from helpers.data import load_dataset
from helpers.experiment.analysis import seed_table
from helpers.experiment.config import ExperimentConfig
from helpers.inference.classical import bootstrap_ci, paired_permutation_test
from helpers.retrieval.evaluation.metrics import evaluate_run
from helpers.retrieval.registry import build_retriever
from helpers.text import Tokenizer

CHUNKINGS = {"seed": {"chunks": "seed"}, "ours": {}}  # dataset options of each chunking
ARCHITECTURES = ("bm25", "dense", "hybrid")  # the ones that need no LLM


def content_terms(text: str, tokenizer) -> set[str]:
    return set(tokenizer([text])[0])


def ground_truth_recall(ground_truth: str, contexts: list[str], tokenizer) -> float:
    """Share of the ground truth's content terms present in the contexts (NaN: no terms)."""
    wanted = content_terms(ground_truth, tokenizer)
    if not wanted:
        return float("nan")
    found = content_terms(" ".join(contexts), tokenizer)
    return len(wanted & found) / len(wanted)


def _retrievers(data, architectures, shared: dict):
    for name in architectures:
        retriever = build_retriever(name, language=data.language, shared=shared)
        start = time.perf_counter()
        retriever.index(data.corpus)
        yield name, retriever, time.perf_counter() - start


def seed_question_recall(
    *, k: int = 5, architectures=ARCHITECTURES, questions=None, ours: dict | None = None
) -> pd.DataFrame:
    """One row per (chunking, architecture, qid): ground-truth recall@k, the characters of the
    top-k contexts (more text finds more words), and the pages they come from. `ours`: options of
    our chunking (e.g. pages, for a quick look; default the whole guideline, as the seed's)."""
    tokenizer, rows = Tokenizer("es"), []
    for chunking, options in CHUNKINGS.items():
        data = load_dataset("obstetrics", **(options if chunking == "seed" else ours or options))
        queries = {q: data.queries[q] for q in (questions or data.queries)}
        for name, retriever, index_s in _retrievers(data, architectures, {}):
            run = retriever.retrieve(queries, k)
            for qid, hits in run.items():
                top = sorted(hits, key=hits.get, reverse=True)[:k]
                contexts = [data.corpus[d]["text"] for d in top]
                rows.append(
                    {
                        "chunking": chunking,
                        "architecture": name,
                        "qid": qid,
                        "k": k,
                        "recall": ground_truth_recall(data.answers[qid], contexts, tokenizer),
                        "context_chars": sum(map(len, contexts)),
                        "pages": [data.corpus[d].get("page") for d in top],
                        "index_s": round(index_s, 1),
                    }
                )
    return pd.DataFrame(rows)


def recall_table(per_question: pd.DataFrame, *, n_resamples: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """Per architecture: mean recall of each chunking with 95% bootstrap intervals, the paired
    difference seed - ours (its interval, and a sign-flip permutation p-value) over the questions."""
    rows = []
    for name, part in per_question.groupby("architecture", sort=False):
        wide = part.pivot(index="qid", columns="chunking", values="recall")
        row = {"architecture": name, "questions": len(wide), "k": int(part["k"].iloc[0])}
        for chunking in CHUNKINGS:
            mean, low, high = bootstrap_ci(wide[chunking], n_resamples=n_resamples, seed=seed)
            row |= {
                f"{chunking}": mean,
                f"{chunking}_ci95": [low, high],
                f"{chunking}_context_chars": float(part[part.chunking == chunking]["context_chars"].mean()),
            }
        diff, low, high = bootstrap_ci(wide["seed"] - wide["ours"], n_resamples=n_resamples, seed=seed)
        row |= {
            "seed_minus_ours": diff,
            "difference_ci95": [low, high],
            "p_value": paired_permutation_test(wide["seed"], wide["ours"], n_resamples=n_resamples, seed=seed),
        }
        rows.append(row)
    return pd.DataFrame(rows)


def maternaqa_retrieval(*, architectures=ARCHITECTURES, limit: int | None = None) -> pd.DataFrame:
    """obstetrics-es with each chunking as the guideline part of the corpus: nDCG@10, Recall@10,
    MRR@10 per architecture (helpers.retrieval.evaluation.metrics), and the corpus size."""
    rows = []
    for chunking, options in CHUNKINGS.items():
        data = load_dataset("obstetrics-es", **options)
        qids = sorted(data.qrels)[:limit] if limit else sorted(data.qrels)
        queries = {q: data.queries[q] for q in qids}
        for name, retriever, index_s in _retrievers(data, architectures, {}):
            metrics = evaluate_run(
                {q: data.qrels[q] for q in qids}, retriever.retrieve(queries, 100), ("ndcg@10", "recall@10", "mrr@10")
            )
            rows.append(
                {
                    "chunking": chunking,
                    "architecture": name,
                    "documents": len(data.corpus),
                    "queries": len(qids),
                    **{m: round(v, 4) for m, v in metrics.items()},
                    "index_s": round(index_s, 1),
                }
            )
    return pd.DataFrame(rows)


def answer_runs(
    *, questions=("q1",), architecture: str = "hybrid", ragas: bool = True, results_dir=None
) -> pd.DataFrame:
    """The seed's RAGAS table (analysis.seed_table) for each chunking, from one tiny run each of
    the experiment runner (configs built here): `questions` answered by the bundled model, judged
    by the same model under RAGAS (`ragas=False`: the offline TRACe judge only, via the returned
    scores). Rows: '<architecture> (<chunking> chunks)'."""
    from helpers.experiment.runner import Experiment  # matplotlib: loaded only when this runs

    tables = []
    for chunking, options in CHUNKINGS.items():
        config = ExperimentConfig.model_validate(
            {
                "name": f"seed-chunks-{chunking}",
                "dataset": {"name": "obstetrics", "options": options, "questions": list(questions)},
                "architectures": [architecture],
                "retrieval": {"k": 5},
                "llms": [
                    {"name": "local", "provider": "local", "max_tokens": 160, "temperature": 0.0},
                    {"name": "judge", "provider": "local", "max_tokens": 400, "temperature": 0.0},
                ],
                "judges": {"offline": True, "ragas": "judge" if ragas else None, "ragas_evidence": False},
                "statistics": {"n_resamples": 1000},
                "figures": False,
            }
        )
        experiment = Experiment(config, results_dir=Path(results_dir) if results_dir else None)
        experiment.run()
        scores = pd.read_parquet(experiment.store.directory / "scores.parquet")
        scores["architecture"] = f"{architecture} ({chunking} chunks)"
        tables.append(scores)
    scores = pd.concat(tables, ignore_index=True)
    table = seed_table(scores)
    trace = scores[scores.judge == "offline"].groupby(["architecture", "metric"])["value"].mean().unstack()
    return table.join(trace.add_prefix("trace "), how="outer") if len(table) else trace.add_prefix("trace ")


def compare(*, k: int = 5, architectures=ARCHITECTURES, maternaqa: bool = True, n_resamples: int = 10_000) -> dict:
    """Everything measured, JSON-ready: the 10-question recall table (and its per-question rows),
    the obstetrics-es table, corpus sizes and timings."""
    started = time.perf_counter()
    per_question = seed_question_recall(k=k, architectures=architectures)
    result = {
        "k": k,
        "architectures": list(architectures),
        "corpus_sizes": {c: len(load_dataset("obstetrics", **o).corpus) for c, o in CHUNKINGS.items()},
        "seed_questions": recall_table(per_question, n_resamples=n_resamples).to_dict(orient="records"),
        "seed_questions_per_question": per_question.to_dict(orient="records"),
    }
    if maternaqa:
        result["obstetrics_es"] = maternaqa_retrieval(architectures=architectures).to_dict(orient="records")
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def format_result(result: dict) -> str:
    """Plain-text tables of compare()'s result."""
    recall = pd.DataFrame(result["seed_questions"])
    show = recall[
        [
            "architecture",
            "questions",
            "seed",
            "ours",
            "seed_minus_ours",
            "p_value",
            "seed_context_chars",
            "ours_context_chars",
        ]
    ].round(3)
    lines = [
        f"Corpus sizes: {result['corpus_sizes']}",
        f"The seed's 10 questions: ground-truth term recall in the top {result['k']} contexts "
        "(lexical stand-in for RAGAS context recall)",
        show.to_string(index=False),
    ]
    if "obstetrics_es" in result:
        lines += [
            "",
            "obstetrics-es (MaternaQA-es gold passages; guideline chunks are distractors)",
            pd.DataFrame(result["obstetrics_es"]).to_string(index=False),
        ]
    return "\n".join(lines)


def load_result(path=None) -> dict | None:
    """The saved benchmark result (results/benchmarks/seed_chunks.json), None if not run yet."""
    import json

    path = path or paths.RESULTS_DIR / "benchmarks" / "seed_chunks.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
