"""Qwen2.5-Coder-1.5B-Instruct (the local GGUF) as a hallucination judge on RAGBench, at response
level and at claim level (helpers.judges.models.llm_verdicts), next to the lexical offline judge, RAGBench's
shipped baselines and a judge stacking the three signals.

  python benchmarks/llm_judge_ragbench.py --subsets covidqa,delucionqa,emanual,hotpotqa --n 20 \
      --seed 0 --out results/benchmarks/llm_judge_ragbench.json

Rows: per subset, `--n` test rows and `--n` validation rows, sampled with `--seed` and balanced
between the adherence classes (n//2 hallucinated rows when the split has that many, the rest
adherent): AUROC does not depend on the class ratio, and a natural sample of 20 would hold only
1-3 hallucinations (7-16% of RAGBench's rows).

Per row: P(yes) that the whole response is supported (`response`), the lowest P(supported) over its
sentences, each judged against its top-3 BM25 document sentences (`claims`), the lexical judge's
adherence score (`lexical`, OfflineJudge without the evidence model) and the shipped columns
ragas_faithfulness, trulens_groundedness, gpt3_adherence. Per subset: hallucination AUROC
(positive: adherence_score False) with its 95% bootstrap interval, and seconds per row of each
LLM verdict kind (claims run right after the row's response prompt and reuse its leading blocks).

Stacked: a logistic regression over the log-odds of [lexical, response, claims], fitted on the
validation rows of every subset together (n x subsets rows, those with all three scores) and
evaluated on the test rows. Caveat: the lexical judge was trained on RAGBench's validation and
train splits, so its validation scores are in-sample (the JSON reports each feature's validation
AUROC next to its test AUROC): the stack can over-trust it.

Verdicts are cached per row in `<out stem>.verdicts.jsonl` beside --out (keyed by subset, split,
id and a hash of the response; kept only for the same model, prompt version, n_ctx and block):
a rerun skips done rows.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

import _offline  # noqa: F401  (the offline defaults, before any hub library)
from helpers import paths
from helpers.data import load_ragbench
from helpers.judges.judge_eval import hallucination_auroc
from helpers.judges.models.llm_verdicts import PROMPT_VERSION, LogprobJudge, claim_score
from helpers.trace.scoring import to_json

BASELINES = {"ragas": "ragas_faithfulness", "trulens": "trulens_groundedness", "gpt3.5": "gpt3_adherence"}
JUDGES = ("response", "claims", "lexical", "stacked", *BASELINES)
STACK_FEATURES = ("lexical", "response", "claims")


def sample_rows(frame: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """n rows, n//2 of them hallucinated when there are enough (fewer of a class: the other fills)."""
    hallucinated = ~frame["adherence_score"].astype(bool)
    positives, negatives = frame[hallucinated], frame[~hallucinated]
    k = min(n // 2, len(positives))
    k = max(k, n - len(negatives))
    picked = pd.concat(
        [
            positives.sample(n=min(k, len(positives)), random_state=seed),
            negatives.sample(n=min(n - k, len(negatives)), random_state=seed),
        ]
    )
    return picked.sort_index()


def row_key(row) -> str:
    """subset/split/id/response hash: in delucionqa and emanual every id is shared by the rows
    answering one question with different responses; (id, response) is unique in every split."""
    digest = hashlib.sha256(str(row["response"]).encode("utf-8")).hexdigest()[:12]
    return f"{row['subset']}/{row['split']}/{row['id']}/{digest}"


def load_cache(path: Path, config: dict) -> dict:
    """key -> cached verdict record made with `config` (a line cut short by a killed run is skipped)."""
    cached = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if record.get("config") == config:
                cached[record["key"]] = record
    return cached


def llm_record(judge: LogprobJudge, row, config: dict) -> dict:
    """Both verdict kinds of one row, timed, with what prefix reuse saved."""
    docs = [str(d) for d in row["documents"]]
    start, evaluated = time.perf_counter(), judge.tokens_evaluated
    p_response = judge.response_verdict(row["question"], docs, row["response"])
    response_s, response_tokens = time.perf_counter() - start, judge.tokens_evaluated - evaluated
    error = judge.last_error
    start, evaluated, reused = time.perf_counter(), judge.tokens_evaluated, judge.tokens_reused
    claims = judge.claim_verdicts(row["question"], docs, row["response"])
    return {
        "key": row_key(row),
        "config": config,
        "response": p_response,
        "response_error": error,
        "response_s": round(response_s, 3),
        "response_tokens": response_tokens,
        "claims": claim_score(claims),
        "claims_s": round(time.perf_counter() - start, 3),
        "claims_tokens_evaluated": judge.tokens_evaluated - evaluated,
        "claims_tokens_reused": judge.tokens_reused - reused,
        "claim_verdicts": claims,
    }


def llm_verdicts(rows: pd.DataFrame, cache_path: Path, model_path: Path, args) -> tuple[dict, dict]:
    """(key -> verdict record for every row, run info); the model is loaded only if a row is missing."""
    config = {"model": model_path.name, "prompt_version": PROMPT_VERSION, "n_ctx": args.n_ctx, "block": 64}
    records = load_cache(cache_path, config)
    todo = [row for _, row in rows.iterrows() if row_key(row) not in records]
    info = {"cached_rows": len(rows) - len(todo), "computed_rows": len(todo), "load_s": None}
    if todo:
        start = time.perf_counter()
        judge = LogprobJudge(model_path, n_ctx=args.n_ctx, threads=args.threads, block=64)
        info["load_s"] = round(time.perf_counter() - start, 2)
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        with cache_path.open("a", encoding="utf-8") as cache:
            for i, row in enumerate(todo, 1):
                record = llm_record(judge, row, config)
                cache.write(json.dumps(record, ensure_ascii=False) + "\n")
                cache.flush()  # a killed run keeps every finished row
                records[record["key"]] = record
                print(
                    f"  [{i}/{len(todo)}] {record['key']}: response {record['response']:.3f} "
                    f"({record['response_s']:.1f} s), claims {record['claims']:.3f} "
                    f"({len(record['claim_verdicts'])} in {record['claims_s']:.1f} s)",
                    flush=True,
                )
    return records, info


def _log_odds(p) -> np.ndarray:
    """Scores as log-odds: P(yes) piles up near 0 and 1, where a linear model would not see apart."""
    p = np.clip(np.asarray(p, float), 1e-4, 1 - 1e-4)
    return np.log(p / (1 - p))


def fit_stack(frame: pd.DataFrame):
    """(logistic regression over the log-odds of STACK_FEATURES predicting adherence, rows fitted)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x = _log_odds(frame[list(STACK_FEATURES)].to_numpy())
    keep = ~np.isnan(x).any(axis=1)
    y = frame["adherence_score"].astype(bool).to_numpy()[keep]
    if len(set(y)) < 2:
        return None, int(keep.sum())
    return make_pipeline(StandardScaler(), LogisticRegression()).fit(x[keep], y), int(keep.sum())


def predict_stack(model, frame: pd.DataFrame) -> np.ndarray:
    """P(adherent) from the stack; NaN where a feature is missing (or no stack could be fitted)."""
    x = _log_odds(frame[list(STACK_FEATURES)].to_numpy())
    out = np.full(len(frame), np.nan)
    keep = ~np.isnan(x).any(axis=1)
    if model is not None and keep.any():
        out[keep] = model.predict_proba(x[keep])[:, 1]
    return out


def scored_rows(rows: pd.DataFrame, records: dict, lexical_judge) -> pd.DataFrame:
    """One row per example: labels and every judge's support score (stacked added later)."""
    out = rows[["subset", "split", "id", "adherence_score", *BASELINES.values()]].copy()
    out = out.rename(columns={column: name for name, column in BASELINES.items()})
    out["lexical"] = [j.scores.adherence_score for j in lexical_judge.judge_frame(rows)]
    for column in ("response", "claims", "response_s", "claims_s"):
        out[column] = [float(records[row_key(r)][column]) for _, r in rows.iterrows()]
    out["errors"] = [
        [
            e
            for e in [
                records[row_key(r)]["response_error"],
                *(c["error"] for c in records[row_key(r)]["claim_verdicts"]),
            ]
            if e
        ]
        for _, r in rows.iterrows()
    ]
    return out


def summarise(test: pd.DataFrame) -> dict:
    hallucinated = (~test["adherence_score"].astype(bool)).astype(float).to_numpy()
    judges = {name: hallucination_auroc(hallucinated, test[name].to_numpy(float)) for name in JUDGES}
    failures = [e for errors in test["errors"] for e in errors]
    return {
        "n": len(test),
        "n_hallucinated": int(hallucinated.sum()),
        "judges": judges,
        "seconds_per_row": {
            "response": round(float(test["response_s"].mean()), 2),
            "claims": round(float(test["claims_s"].mean()), 2),
        },
        "n_failed": {kind: int(test[kind].isna().sum()) for kind in ("response", "claims")},
        "failures": failures[:5],
    }


def format_table(result: dict) -> str:
    fmt = lambda v: "     —" if v is None or math.isnan(v) else f"{v:6.3f}"
    lines = [
        f"hallucination AUROC on test rows (stack fitted on {result['stack']['n_fit']} validation rows)",
        f"{'subset':11s} {'n':>3s} {'hal':>3s} " + " ".join(f"{j:>7s}" for j in JUDGES) + "   s/row resp  claims",
    ]
    for subset, block in result["subsets"].items():
        seconds = block["seconds_per_row"]
        lines.append(
            f"{subset:11s} {block['n']:3d} {block['n_hallucinated']:3d} "
            + " ".join(f" {fmt(block['judges'][j]['auroc'])}" for j in JUDGES)
            + f"   {seconds['response']:10.1f} {seconds['claims']:7.1f}"
        )
    stack = result["stack"]
    lines.append(
        f"stack coefficients ({', '.join(STACK_FEATURES)}): {stack['coefficients']}; validation AUROC "
        + ", ".join(f"{f} {fmt(v['auroc']).strip()}" for f, v in stack["validation_auroc"].items())
        + " (lexical: in-sample)"
    )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--subsets", default="covidqa,delucionqa,emanual,hotpotqa")
    parser.add_argument("--n", type=int, default=20, help="test rows, and validation rows, per subset")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(paths.benchmark_output("llm_judge_ragbench")))
    parser.add_argument("--ragbench-dir", default=None)
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: every core)")
    args = parser.parse_args(argv)

    from helpers.judges.models.trace_trees import OfflineJudge
    from helpers.local_models.split_models import assemble

    subsets = [s.strip() for s in args.subsets.split(",") if s.strip()]
    rows = pd.concat(
        [
            sample_rows(load_ragbench(subset, split, args.ragbench_dir), args.n, args.seed)
            for subset in subsets
            for split in ("test", "validation")
        ],
        ignore_index=True,
    )
    out = Path(args.out)
    model_path = assemble("qwen2.5-coder-1.5b")
    print(f"{len(rows)} rows ({args.n} test + {args.n} validation per subset); model {model_path}")
    records, run = llm_verdicts(rows, out.with_name(out.stem + ".verdicts.jsonl"), model_path, args)
    lexical_judge = OfflineJudge.load(evidence=None, use="lexical")
    scored = scored_rows(rows, records, lexical_judge)

    validation, test = scored[scored["split"] == "validation"], scored[scored["split"] == "test"].copy()
    stack, n_fit = fit_stack(validation)
    test["stacked"] = predict_stack(stack, test)
    val_hallucinated = (~validation["adherence_score"].astype(bool)).astype(float).to_numpy()
    result = {
        "model": model_path.name,
        "prompt_version": PROMPT_VERSION,
        "n_ctx": args.n_ctx,
        "seed": args.seed,
        "n_per_subset": args.n,
        "sampling": "balanced: n//2 hallucinated rows when available",
        "run": run,
        "lexical_judge": {"path": str(lexical_judge.path), "trained_on": lexical_judge.meta.get("trained_on")},
        "stack": {
            "features": [f"log-odds({f})" for f in STACK_FEATURES],
            "n_fit": n_fit,
            "fitted_on": f"validation rows of {', '.join(subsets)}",
            "coefficients": (stack[-1].coef_[0].round(3).tolist() if stack is not None else None),
            "validation_auroc": {
                f: hallucination_auroc(val_hallucinated, validation[f].to_numpy(float)) for f in STACK_FEATURES
            },
        },
        "subsets": {subset: summarise(test[test["subset"] == subset]) for subset in subsets},
    }
    if len(subsets) > 1:
        result["subsets"]["all"] = summarise(test)
    result["rows"] = test.drop(columns=["errors"]).to_dict(orient="records")
    print(format_table(result))
    to_json(result, out)
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
