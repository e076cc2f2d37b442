"""A second opinion on why an answer is wrong, by intervention (issue 59): answer the question again
with the passage that holds the reference's statements first, and see whether the answer turns right.

    wrong, then right with the passage in front   -> retrieval (the retriever lost or mis-ranked it)
    wrong, and still wrong with it in front        -> generation (the model had it and did not use it)

The passage is the question's gold passage where the dataset has qrels, else the context that
context_recall's attribution says holds most of the reference (from the answer's own contexts, or,
for a run whose corpus is known, the best of BM25's top passages for the reference), followed by the
answer's other contexts in their order, k in all. The new answer is judged by the same correctness
judge and read through the same cut as the first. One LLM call per wrong answer: `plan` counts them
before any is made. This is the counterfactual test RAGChecker's retrieval/generator split
approximates from claims (Ru et al. 2024), made directly, as in "lost in the middle" style
position interventions (Liu et al. 2024).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from helpers.errors import UserError

COLUMNS = [
    "id",
    "architecture",
    "verdict",
    "second_opinion",
    "agree",
    "passage_from",
    "new_correctness",
    "new_answer",
    "reason",
]


def wrong(answers: pd.DataFrame, wide: pd.DataFrame, bands: dict) -> pd.DataFrame:
    """The rows of `wide` whose correctness reads "no" through `bands` (whatever the stage verdict),
    with their first verdict: the answers an intervention can re-try."""
    merged = wide.merge(answers[["id", "architecture", "verdict"]], on=["id", "architecture"])
    said_no = [bands["correct"].read(v) is False for v in merged["correctness"]]
    return merged[said_no].reset_index(drop=True)


def best_passage(matcher, reference: str, texts: list[str]) -> tuple[int, float]:
    """(index, score) of the text holding most of the reference: the mean over the reference's
    statements of P(attributed) (context_recall's attribution), best first."""
    from helpers.judges.context_recall import attribution, attribution_features, statements

    claims = statements(reference)
    if not claims or not texts:
        return -1, float("nan")
    p = attribution(attribution_features(matcher, claims, texts)).mean(axis=0)  # per text
    return int(np.argmax(p)), float(p.max())


def choose_passage(row, matcher, band, *, gold: list[str] | None = None, search=None) -> tuple[list[str], str]:
    """(the contexts to answer with, where the passage came from) for one wrong answer: the gold
    passage first (`gold`: its texts), else the best-attributed context where the cut says it holds,
    else `search(reference)`'s best-attributed passage where the cut says it holds (a run's corpus);
    else no contexts (nothing that holds the reference to put first) and why."""
    contexts = list(row.contexts)
    k = max(len(contexts), 1)
    passage, where = None, "no passage that holds the reference (no gold passage, no corpus to search)"
    if gold:
        passage, where = gold[0], "gold passage"
    else:
        index, score = best_passage(matcher, row.reference, contexts)
        if index >= 0 and band.read(score) is True:
            passage, where = contexts[index], f"context [{index + 1}] ({score:.2f})"
        elif search is not None:
            found = search(row.reference)
            j, found_score = best_passage(matcher, row.reference, found)
            if j >= 0 and band.read(found_score) is True:
                passage, where = found[j], f"corpus search ({found_score:.2f})"
            else:
                where = f"no passage that holds the reference in the contexts or the corpus ({found_score:.2f})"
    if passage is None:
        return [], where
    rest = [c for c in contexts if " ".join(c.split()) != " ".join(passage.split())]
    return [passage, *rest][:k], where


def plan(rows: pd.DataFrame) -> str:
    """What --dry-run says: how many calls the intervention would make."""
    by = rows.groupby("architecture").size().to_dict() if len(rows) else {}
    per = ", ".join(f"{a} {n}" for a, n in by.items())
    return f"--intervene would answer {len(rows)} wrong answer(s) again, one LLM call each ({per or 'none'})"


def intervene(
    rows: pd.DataFrame,
    *,
    llm,
    bands: dict,
    language: str,
    prompt=None,
    gold: dict | None = None,
    search=None,
    log=print,
) -> pd.DataFrame:
    """The second opinion of each row of `wrong(...)` (with question, reference, contexts: a list of
    texts, and verdict): one new answer with the chosen passage first, judged by correctness. `gold`:
    {id: [gold passage texts]}; `search`: reference -> candidate passages. A failed call is recorded
    (second_opinion "failed", its error as reason) and the rest go on. What the calls cost is in
    `frame.attrs["usage"]` (helpers.llm.call_records.usage)."""
    from helpers.experiment.diagnosis import BLAME
    from helpers.judges.models.reference_match import ReferenceMatcher

    if isinstance(llm, dict):  # an LLM config, as --llm gives it
        from helpers.llm import LLM

        llm = LLM(llm)
    matcher = ReferenceMatcher(language)
    with llm.track() as calls:
        tried = [
            _answer_again(row, llm, matcher, bands, language, prompt, gold, search, log) for row in rows.itertuples()
        ]
    out = _judge_again(tried, bands, language)
    frame = pd.DataFrame(out, columns=COLUMNS)
    frame["agree"] = frame["verdict"].map(lambda v: BLAME.get(v, v)) == frame["second_opinion"]  # refusals by blame
    frame.attrs["usage"] = llm.usage(calls)
    return frame


def _answer_again(row, llm, matcher, bands, language, prompt, gold, search, log) -> dict:
    """One wrong answer answered again (intervene's row): its row of COLUMNS so far, and the new
    answer with what `_judge_again` needs, or the reason there is none."""
    from helpers.generation.answering import generate_answer

    contexts, where = choose_passage(row, matcher, bands["holds"], gold=(gold or {}).get(row.id), search=search)
    base = {"id": row.id, "architecture": row.architecture, "verdict": row.verdict, "passage_from": where}
    if not contexts:
        return base | {"second_opinion": "cannot tell", "reason": f"not answered again: {where}"}
    record = generate_answer(
        llm, str(row.id), row.question, [{"doc_id": f"c{i}", "text": t} for i, t in enumerate(contexts)],
        language=language, prompt=prompt,
    )  # fmt: skip
    if not record.ok:
        log(f"intervention on {row.id} ({row.architecture}) failed: {record.error}")
        return base | {"second_opinion": "failed", "reason": f"the LLM call failed: {record.error}"}
    return base | {"new_answer": record.answer, "_judge": (row.question, contexts, row.reference)}


def _judge_again(tried: list[dict], bands: dict, language: str) -> list[dict]:
    """The new answers judged by correctness in one pass (the judge prepared once) and read through
    the same cut as the first: right, retrieval; still wrong, generation."""
    from helpers.judges.evaluate import score_answers

    new = [t for t in tried if "_judge" in t]
    answers = [
        {"qid": str(i), "question": q, "answer": t["new_answer"], "contexts": c, "reference": r, "architecture": None}
        for i, t in enumerate(new)
        for q, c, r in [t.pop("_judge")]
    ]
    scores = score_answers(answers, ["correctness"], language=language, log=lambda *_: None) if answers else None
    values = scores[scores["metric"] == "correctness"].set_index("id")["value"] if scores is not None else {}
    for i, t in enumerate(new):
        value = values.get(str(i), float("nan"))
        score = float(value) if value is not None and not math.isnan(value) else float("nan")
        now = bands["correct"].read(score)
        where = t["passage_from"]
        t["reason"] = {
            True: f"right with the passage first ({where}): the retriever lost or mis-ranked it",
            False: f"still wrong with the passage first ({where}): the generator does not use it",
            None: f"correctness {score:.2f} with the passage first: between the cuts",
        }[now]
        t["second_opinion"] = {True: "retrieval", False: "generation", None: "cannot tell"}[now]
        t["new_correctness"] = score
    return tried


def summary(frame: pd.DataFrame) -> str:
    """Both opinions side by side, and where they disagree."""
    if frame.empty:
        return "Second opinion by intervention: no wrong answer to re-try"
    table = pd.crosstab(frame["verdict"], frame["second_opinion"], rownames=["first"], colnames=["second"])
    decided = frame[frame["second_opinion"].isin(("retrieval", "generation"))]
    lines = [
        f"Second opinion by intervention ({len(frame)} wrong answers answered again with the passage first):",
        table.to_string(),
        f"the opinions agree on {int(decided['agree'].sum())} of {len(decided)} answers both decide",
    ]
    if "usage" in frame.attrs:  # what it cost
        used = frame.attrs["usage"]
        lines.append(
            f"cost: {used['calls']} LLM calls ({used['cache_hits']} from the cache), {used['input_tokens']:,} tokens "
            f"in, {used['output_tokens']:,} out, ${used['cost_usd']:.4f}"
        )
    for row in frame[~frame["agree"] & frame["second_opinion"].isin(("retrieval", "generation"))].itertuples():
        lines.append(f"  {row.id} ({row.architecture}): first {row.verdict}, second {row.second_opinion}: {row.reason}")
    return "\n".join(lines)


def require_llm(llm, where: str) -> None:
    if llm is None:
        raise UserError(
            f"{where}: --intervene answers each wrong answer again and needs an LLM: give --llm "
            '\'{"provider": "local"}\' (any LLM config as JSON), or diagnose a run id (its own LLM answers)'
        )


def from_run(run_id: str, rows: pd.DataFrame, results_dir=None) -> dict:
    """What an intervention on a run's wrong answers needs: `rows` with each answer's question,
    contexts and reference, and the keyword arguments of `intervene` (the run's own LLM, prompt and
    language; its dataset's gold passages; BM25 over its corpus for the reference)."""
    from helpers.data import load_dataset
    from helpers.experiment.analysis import run_config, run_dir
    from helpers.experiment.store import RunStore
    from helpers.llm import LLM
    from helpers.retrieval.architectures.sparse import BM25

    config = run_config(run_id, results_dir)
    if config is None:
        raise UserError(f"{run_id}: the run has no config.yaml; give --llm and diagnose its answers file instead")
    data = load_dataset(config.dataset.name, **config.dataset.options)
    records = {
        (r["architecture"], r["llm"], r["qid"]): r for r in RunStore(run_dir(run_id, results_dir)).of_kind("answer")
    }
    keys = list(zip(rows["architecture"], rows["llm"], rows["qid"]))
    rows = rows.assign(
        question=[records[k]["question"] for k in keys],
        contexts=[[c["text"] for c in records[k].get("contexts") or []] for k in keys],
        reference=[data.answers.get(k[2]) for k in keys],
    )
    gold = {
        i: [data.corpus[d]["text"] for d, g in sorted(data.qrels[q].items(), key=lambda item: -item[1]) if g > 0]
        for i, q in zip(rows["id"], rows["qid"])
        if data.qrels.get(q)
    }
    index: dict = {}  # BM25 over the corpus, built the first time an answer needs it (gold passages need none)

    def search(reference: str) -> list[str]:
        if not index:
            index["bm25"] = BM25(data.language).index(data.corpus)
        ranked = index["bm25"].retrieve({"q": reference}, k=10)["q"]
        return [data.corpus[d]["text"] for d in sorted(ranked, key=lambda d: -ranked[d])]

    name = config.generation_llm or config.llms[0].name
    return {
        "rows": rows,
        "llm": LLM(config.llm(name)),
        "language": config.generation.language or data.language,
        "prompt": config.generation.prompt,
        "gold": gold,
        "search": search,
    }


def second_opinion(
    answers: pd.DataFrame,
    wide: pd.DataFrame,
    bands: dict,
    *,
    run_id: str | None = None,
    answers_file=None,
    llm=None,
    language: str | None = None,
    log=print,
) -> pd.DataFrame:
    """Each wrong answer's second opinion, saved as CSV beside its source: a run's (`run_id`: its own
    LLM unless `llm` is given, results/RUN/intervention.csv) or an answers file's (`answers_file`:
    `wide` carries the texts, `llm` is needed, FILE.intervention.csv)."""
    from pathlib import Path

    rows = wrong(answers, wide, bands)
    if run_id is not None:
        from helpers.experiment.analysis import run_dir

        inputs = from_run(run_id, rows)
        if llm is not None:
            inputs["llm"] = llm
        out = run_dir(run_id) / "intervention.csv"
    else:
        from helpers.judges.evaluate import guess_language

        require_llm(llm, str(answers_file))
        language = language or guess_language(list(wide["question"]) + list(wide["answer"]))
        inputs = {"rows": rows, "llm": llm, "language": language}
        out = Path(answers_file).with_suffix(".intervention.csv")
    frame = intervene(inputs.pop("rows"), bands=bands, log=log, **inputs)
    frame.to_csv(out, index=False)
    log(f"second opinions: {out}")
    return frame
