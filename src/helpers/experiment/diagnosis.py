"""Why an answer is wrong: one verdict per answer that has a reference, from judges that agree with
people (issue 49), and per architecture how many answers fall in each, with intervals.

    correct        the answer agrees with the reference (correctness judge)
    retrieval      wrong, and the reference's statements are not in the contexts (context_recall
                   judge): the retriever lost it; the evidence names the statements not found
    generation     wrong although the contexts hold the reference's statements: the generator lost
                   it; the evidence names the context that held them
    refused        said "not in the documents" although the contexts hold the answer: the
                   generator's failure
    refused, not found  said "not in the documents", and the contexts do not hold the answer: the
                   retriever's failure (the generator was right to refuse what it was given)
    cannot tell    a judge's score falls between its two cuts (`Band`): never a forced guess

A question the documents do not answer (helpers.data.contracts.Dataset.mark_unanswerable: its
correctness is the refusal judge's reading) is `correct` when refused and `generation` when
answered; both refusal verdicts count as wrong answers in the table and the advice (issue 60).

RAGChecker (Ru et al., NeurIPS 2024 D&B) splits the same way, claim by claim, with a strong LLM;
here the claims are the reference's statements that `context_recall` attributes to the contexts,
and the answer's agreement is the `correctness` judge's (both without an LLM, both checked against
hand labels: helpers/judges/validity.csv).

    table, answers = diagnose_run("obstetrics-default-8eb4bca9")
    print(format_table(table))
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict
from pathlib import Path
from typing import NamedTuple

import pandas as pd
from scipy.stats import binomtest

from helpers.errors import UserError
from helpers.experiment.analysis import load_scores, run_config, run_dir
from helpers.experiment.diagnosis_cuts import (
    SCORE_OF,
    SHIPPED,
    Band,
    fit_bands,
    match_labels,
    read_diagnosis_labels,
    sources,
)
from helpers.experiment.store import RunStore
from helpers.generation.answer_prompts import get_prompt, is_refusal
from helpers.judges.correctness import UNANSWERABLE

__all__ = ["Band", "SHIPPED", "VERDICTS", "verdict", "verdicts", "verdict_table", "run_diagnosis", "agreement"]

VERDICTS = ("correct", "retrieval", "generation", "refused", "refused, not found", "cannot tell")
WRONG = ("retrieval", "generation")
DECIDED = ("correct", *WRONG)  # the verdicts a person's labels give (person_verdicts)
# the stage a refusal blames, to compare with a person's verdict: refusing although the contexts hold
# the answer is the generator's failure; refusing because they do not, the retriever's
BLAME = {"refused": "generation", "refused, not found": "retrieval"}
MAX_BETWEEN = 0.2  # more of a run's answers than this cannot tell: no advice
VERDICT_COLOURS = {  # the figure's and the answer card's
    "correct": "#4c9a5b",
    "retrieval": "#d1603d",
    "generation": "#e8a33d",
    "refused": "#7f63b8",
    "refused, not found": "#9fb7d6",
    "cannot tell": "#c9c9c9",
}
CORRECTNESS = ("correctness", "correctness")
RECALL = ("context_recall", "context_recall")


def _statements(reason: str) -> tuple[list[str], list[str]]:
    """(statements found with their context, statements not found) from context_recall's reason."""
    found: list = []
    missing: list = []
    for part in (reason if isinstance(reason, str) else "").split("; "):
        m = re.match(r"statement (\d+): (in context \[(\d+)\]|not found)", part)
        if m:
            (found if m.group(3) else missing).append(
                f"statement {m.group(1)} in context [{m.group(3)}]" if m.group(3) else f"statement {m.group(1)}"
            )
    return found, missing


def verdict(
    correctness: float | None,
    recall: float | None,
    recall_reason: str,
    refused: bool,
    bands: dict,
    unanswerable: bool = False,
):
    """(verdict, evidence) of one answer: the two judges' scores read through their bands; on a
    question the documents do not answer, whether it refused."""
    if unanswerable:
        if refused:
            return "correct", "refused, rightly: the documents do not answer this question"
        return "generation", "answered, although the documents do not answer this question"
    correct, holds = bands["correct"].read(correctness), bands["holds"].read(recall)
    found, missing = _statements(recall_reason)
    where = f"context recall {recall:.2f}" if recall is not None and not math.isnan(recall) else "no context recall"
    if refused:
        if holds is None:
            return "cannot tell", f"refused; {where}: between the cuts"
        if holds:
            return "refused", f"refused although {', '.join(found) or 'the contexts hold it'} ({where})"
        return "refused, not found", f"refused, and the contexts lack {', '.join(missing) or 'the answer'} ({where})"
    score = f"correctness {correctness:.2f}" if correctness is not None and not math.isnan(correctness) else ""
    if correct is None:
        return "cannot tell", f"{score or 'no correctness score'}: between the cuts"
    if correct:
        return "correct", score
    if holds is None:
        return "cannot tell", f"wrong ({score}); {where}: between the cuts"
    if holds:
        return "generation", f"wrong ({score}) although {', '.join(found) or 'the contexts hold it'} ({where})"
    return "retrieval", f"wrong ({score}); not in the contexts: {', '.join(missing) or 'the reference'} ({where})"


def unlike(wide: pd.DataFrame, bands: dict) -> dict:
    """The bands these answers are read with: a band whose `zone` (where the calibration corpora
    put the cut differently) holds more than MAX_IN_ZONE of these answers' scores is widened to it,
    so that those scores read "cannot tell" instead of a verdict one corpus's cut would force."""
    return {name: band.for_scores(wide[SCORE_OF[name]]) for name, band in bands.items()}


def verdicts(wide: pd.DataFrame, bands: dict | None = None) -> pd.DataFrame:
    """One row per answer of `wide` (id, architecture, correctness, context_recall, recall_reason,
    refused, and `answer` where known: a generation verdict quotes what it said instead): id,
    architecture, verdict, evidence. Answers without a correctness score (no reference) are left out.
    Answers unlike the calibration corpora read "cannot tell" in the cuts' zone (`unlike`)."""
    bands = unlike(wide, bands or SHIPPED)
    rows = []
    for r in wide.itertuples():
        if r.correctness is None or math.isnan(r.correctness):
            continue
        v, evidence = verdict(
            r.correctness,
            r.context_recall,
            r.recall_reason,
            bool(r.refused),
            bands,
            bool(getattr(r, "unanswerable", False)),
        )
        said = getattr(r, "answer", None)
        if v == "generation" and isinstance(said, str) and said.strip():  # what it said instead
            said = " ".join(said.split())
            evidence += f"; the answer says: {said[:160]}{'...' if len(said) > 160 else ''}"
        rows.append({"id": r.id, "architecture": r.architecture, "verdict": v, "evidence": evidence})
    return pd.DataFrame(rows, columns=["id", "architecture", "verdict", "evidence"])


def verdict_table(answers: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """Per architecture and verdict: n answers, count, share and its Clopper-Pearson interval."""
    rows = []
    for architecture, group in answers.groupby("architecture", sort=False):
        n = len(group)
        for name in VERDICTS:
            k = int((group["verdict"] == name).sum())
            ci = binomtest(k, n).proportion_ci(confidence, method="exact")
            rows.append(
                {"architecture": architecture, "n": n, "verdict": name, "count": k, "share": k / n, "low": ci.low}
                | {"high": ci.high}
            )
    return pd.DataFrame(rows, columns=["architecture", "n", "verdict", "count", "share", "low", "high"])


def advice(table: pd.DataFrame) -> list[str]:
    """The sentence a user needs per architecture: where its wrong answers were lost (a refusal of
    an answerable question is a wrong answer, blamed on the stage `BLAME` names)."""
    lines = []
    for architecture, group in table.groupby("architecture", sort=False):
        count = dict(zip(group["verdict"], group["count"]))
        stage = {s: sum(n for v, n in count.items() if BLAME.get(v, v) == s) for s in WRONG}
        wrong, refusals = sum(stage.values()), sum(count[v] for v in BLAME)
        if not wrong:
            lines.append(f"{architecture}: no answer judged wrong ({count['cannot tell']} cannot tell)")
            continue
        if stage["generation"] >= stage["retrieval"]:
            fix = "change the prompt or the generator, not the retriever"
        else:
            fix = "change the retriever (k, chunking, rerank), not the prompt"
        refused = f" ({refusals} of them refusals)" if refusals else ""
        lines.append(
            f"{architecture}: {stage['generation']} of {wrong} wrong answers{refused} had the fact in their "
            f"contexts: {fix}"
        )
    return lines


def unlike_calibration(table: pd.DataFrame) -> str | None:
    """The line that replaces the advice when more than MAX_BETWEEN of the answers fall between a
    judge's cuts: these documents' scores do not separate as the calibration corpora's did, and a
    stage named from the rest would be a guess."""
    n = int(table.groupby("architecture", sort=False)["n"].first().sum())
    between = int(table.loc[table["verdict"] == "cannot tell", "count"].sum())
    if not n or between / n <= MAX_BETWEEN:
        return None
    return (
        f"{between} of {n} answers ({between / n:.0%}) score between a judge's cuts: on these documents the "
        "scores do not separate as on the corpora the cuts were fitted on, so no stage is blamed for them and "
        "no advice is given; label 5 answers of each kind (the labelling panel, or --cuts-from FILE) to fit "
        "cuts on your own documents"
    )


def format_table(table: pd.DataFrame, bands: dict | None = None) -> str:
    bands = bands or SHIPPED
    wide = table.pivot_table(index="architecture", columns="verdict", values="count", aggfunc="sum", sort=False)
    wide = wide[list(VERDICTS)].astype(int)
    wide.insert(0, "n", table.groupby("architecture", sort=False)["n"].first())
    unlike = unlike_calibration(table)
    return "\n".join(
        [
            "Why answers fail (answers per verdict; between a judge's cuts: cannot tell):",
            wide.to_string(),
            *([unlike] if unlike else advice(table)),
            "cuts (a judge's score at or above the second number reads yes, at or below the first no, between "
            f"them cannot tell): {sources(bands)}",
        ]
    )


def to_json(table: pd.DataFrame, answers: pd.DataFrame) -> dict:
    return {"answers": answers.to_dict("records"), "architectures": table.to_dict("records")}


def bands_json(bands: dict) -> dict:
    return {name: asdict(band) for name, band in bands.items()}


def wide_from_scores(scores: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    """The two judges' scores of each answer side by side (long scores in, one row per answer out)."""

    def pick(judge_metric, column):
        judge, metric = judge_metric
        part = scores[(scores["judge"] == judge) & (scores["metric"] == metric)]
        return part.set_index(key)[column]

    if pick(CORRECTNESS, "value").empty:
        raise UserError(
            "no correctness scores: diagnosis needs references and the correctness judge "
            "(judges: {correctness: {}, context_recall: {}}; `helpers judge FILE --judges correctness,context_recall`)"
        )
    wide = pd.DataFrame({"correctness": pick(CORRECTNESS, "value")})
    # the correctness judge's reason says which questions the documents do not answer
    wide["unanswerable"] = pick(CORRECTNESS, "reason").map(lambda r: isinstance(r, str) and r.startswith(UNANSWERABLE))
    wide["context_recall"] = pick(RECALL, "value")
    wide["recall_reason"] = pick(RECALL, "reason")
    return wide


def read_scores_csv(path: str | Path) -> pd.DataFrame:
    """A `helpers judge --out` CSV as diagnose reads it: id, architecture (when the answers had one),
    correctness, context_recall, its reason, and refused (from the refusal judge, where it ran)."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such run id under results/, nor a scores CSV (`helpers judge FILE --out F`)")
    return wide_from_judged(pd.read_csv(path, dtype={"id": str}, keep_default_na=True), str(path))


def wide_from_judged(scores: pd.DataFrame, where: str = "scores") -> pd.DataFrame:
    """Long scores of answers judged outside a run (`helpers.evaluate(...).scores`, the CSV
    `helpers judge --out` writes) as diagnose reads them: one row per answer (id, architecture),
    correctness, context_recall, its reason, and refused (the refusal judge's, where it ran)."""
    missing = [c for c in ("id", "judge", "metric", "value") if c not in scores.columns]
    if missing:
        raise UserError(
            f"{where}: missing column(s) {missing}; diagnose reads the scores `helpers.evaluate` returns "
            "or the CSV `helpers judge --out` writes"
        )
    scores = scores.copy()
    scores["id"] = scores["id"].astype(str)
    if "reason" not in scores.columns:
        scores["reason"] = ""
    if "architecture" not in scores.columns:
        scores["architecture"] = "answers"
    scores["architecture"] = scores["architecture"].fillna("answers").astype(str)
    wide = wide_from_scores(scores, ["id", "architecture"])
    refusal = scores[(scores["judge"] == "refusal") & scores["metric"].isin(["refusal", "false_refusal"])]
    refused = refusal.set_index(["id", "architecture"])["value"].groupby(level=[0, 1]).max()
    wide["refused"] = refused.reindex(wide.index).fillna(0).astype(bool)
    return wide.reset_index()


def read_run(run_id: str, results_dir: Path | None = None, *, scores: pd.DataFrame | None = None) -> pd.DataFrame:
    """A run's answers as diagnose reads them: the two judges' scores from scores.parquet (`scores`:
    already read), each answer's text, and refused from it (helpers.generation.answer_prompts.is_refusal, with
    the run's prompt)."""
    scores = load_scores(run_id, results_dir) if scores is None else scores
    several = scores["llm"].nunique() > 1  # then an answer is named by its LLM too
    wide = wide_from_scores(scores, ["architecture", "llm", "qid"]).reset_index()
    config = run_config(run_id, results_dir)
    prompt = get_prompt(config.generation.prompt if config else "cite-sentences")
    records = {
        (r["architecture"], r["llm"], r["qid"]): r for r in RunStore(run_dir(run_id, results_dir)).of_kind("answer")
    }
    keys = list(zip(wide["architecture"], wide["llm"], wide["qid"]))
    wide["answer"] = [records.get(k, {}).get("answer") for k in keys]
    wide["refused"] = [
        k in records and is_refusal(records[k].get("answer"), prompt, records[k].get("language") or "en") for k in keys
    ]
    wide["id"] = answer_ids(wide["qid"], wide["llm"], several)
    return wide


def answer_ids(qids: pd.Series, llms: pd.Series, several: bool) -> pd.Series:
    """How diagnose names a run's answer: its qid, and `qid|llm` where several LLMs answered."""
    return qids.astype(str) + ("|" + llms.astype(str) if several else "")


def is_answers_file(path: str | Path) -> bool:
    """An answers file (question, answer, contexts: XLSX, JSONL or CSV) rather than the long scores
    CSV `helpers judge --out` writes (id, judge, metric, value)."""
    path = Path(path)
    if path.suffix.lower() != ".csv":
        return path.suffix.lower() in (".xlsx", ".jsonl")
    with open(path, encoding="utf-8", errors="replace") as handle:
        header = handle.readline().lower()
    return not ("judge" in header and "metric" in header)


def read_source(source: str, results_dir: Path | None = None) -> pd.DataFrame:
    """A run id (a folder of results/) or a `helpers judge --out` CSV."""

    if str(source).endswith(".csv") or Path(source).is_file():
        return read_scores_csv(source)
    if (run_dir(source, results_dir) / "scores.parquet").exists():
        return read_run(source, results_dir)
    raise UserError(
        f"{source}: neither a run with scores under results/ nor a scores CSV; give a run id "
        "(`python -m helpers run CONFIG`) or the CSV `python -m helpers judge FILE --out F.csv` writes"
    )


def person_verdicts(labels: pd.DataFrame) -> pd.Series:
    """A person's verdict from their labels: `correct` yes -> correct; otherwise `reference_in_contexts`
    yes -> generation, no -> retrieval; partly or empty -> cannot tell."""

    def one(correct: str, holds: str) -> str:
        if correct == "yes":
            return "correct"
        if correct in ("no", "partly"):
            return {"yes": "generation", "no": "retrieval"}.get(holds, "cannot tell")
        return "cannot tell"

    return pd.Series(
        [one(c, h) for c, h in zip(labels["correct"], labels["reference_in_contexts"])], index=labels.index
    )


def agreement(answers: pd.DataFrame, labels_path: str | Path) -> tuple[pd.DataFrame, float, int]:
    """(confusion table ours x person's, Cohen's kappa, answers compared) on the answers a person
    labelled (diagnosis_cuts.read_diagnosis_labels: id or qid, architecture where the answers have
    one, correct and reference_in_contexts, yes / partly / no), over the answers both read as
    correct, retrieval or generation (ours "refused" as generation, "refused, not found" as retrieval:
    `BLAME`)."""
    labels = read_diagnosis_labels(labels_path, required=("correct", "reference_in_contexts"))
    return compare(answers, labels, str(labels_path))


def compare(answers: pd.DataFrame, labels: pd.DataFrame, what: str = "labels") -> tuple[pd.DataFrame, float, int]:
    """`agreement` on labels already read (read_diagnosis_labels's frame; `what` names them)."""
    from sklearn.metrics import cohen_kappa_score  # scikit-learn: loaded only when labels are given

    pooled = match_labels(answers, labels, what)
    merged = answers.set_index(["id", "architecture"]).join(pooled.assign(person=person_verdicts(pooled)), how="inner")
    merged["ours"] = merged["verdict"].map(lambda v: BLAME.get(v, v))  # a refusal read as the stage it blames
    confusion = pd.crosstab(merged["ours"], merged["person"], rownames=["ours"], colnames=["person's"])
    decided = merged[merged["ours"].isin(DECIDED) & merged["person"].isin(DECIDED)]
    kappa = float(cohen_kappa_score(decided["ours"], decided["person"])) if len(decided) > 1 else float("nan")
    return confusion, kappa, len(decided)


def bands_for(wide: pd.DataFrame, labels_path: str | Path | None) -> dict:
    """The cuts for these answers: fitted on the labels at `labels_path` where they are enough
    (diagnosis_cuts.fit_bands), else shipped."""
    if labels_path is None or not Path(labels_path).is_file():
        return dict(SHIPPED)
    return fit_bands(wide, read_diagnosis_labels(labels_path), str(labels_path))


class RunDiagnosis(NamedTuple):
    """A run's diagnosis: the verdict table per architecture (verdict_table), each answer with its
    verdict and evidence (verdicts), and the cuts it was read through (bands_for)."""

    table: pd.DataFrame
    answers: pd.DataFrame
    bands: dict


def run_diagnosis(
    run_id: str, results_dir: Path | None = None, *, confidence: float = 0.95, scores: pd.DataFrame | None = None
) -> RunDiagnosis | None:
    """The RunDiagnosis (table, answers, bands) of a run, or None when no answer has a correctness score (a
    run without references or without the correctness judge has nothing to diagnose). The cuts
    come from the run's labels.csv (the labelling panel's) where it labels enough answers.
    `scores`: the run's scores, already read."""
    scores = load_scores(run_id, results_dir) if scores is None else scores
    if not ((scores["judge"] == CORRECTNESS[0]) & (scores["metric"] == CORRECTNESS[1]) & scores["value"].notna()).any():
        return None
    wide = read_run(run_id, results_dir, scores=scores)  # scores read once
    bands = bands_for(wide, run_dir(run_id, results_dir) / "labels.csv")
    answers = verdicts(wide, bands)
    return RunDiagnosis(verdict_table(answers, confidence=confidence), answers, bands)
