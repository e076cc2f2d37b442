"""The logic behind the answer panel: generate an answer from one column's contexts and judge it
with the offline TRACe judge, as highlighted sentences and four cards; with an LLM judge chosen
(`ragas_llm`), RAGAS's four metrics for the same answer beside them (the reference, when the
question is one of the dataset's; context precision then without it, context recall NaN with its
reason), each card saying how far people agree with its judge. Where the question has a reference,
the answer's verdict (helpers.experiment.diagnosis: correct, or lost by retrieval or by generation)
heads the cards, with its evidence."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from helpers.explore.cards import ragas_cards_html, trace_cards_html, verdict_card_html
from helpers.explore.workbench import ExploreError, Workbench, explain
from helpers.generation.answering import generate_answer, select_contexts
from helpers.llm.llm_errors import MissingKeyError
from helpers.trace.scoring import METRICS as TRACE_METRICS
from helpers.trace.sentence_keys import as_documents_sentences, as_response_sentences

_JUDGES: dict = {}


@dataclass
class AnswerView:
    architecture: str
    llm: str
    answer: str | None
    error: str = ""
    scores: dict = field(default_factory=dict)
    sentences_html: str = ""  # contexts and answer, sentences highlighted
    cards_html: str = ""
    ragas_llm: str | None = None  # the LLM that judges RAGAS (None: RAGAS not asked for)
    ragas_scores: dict = field(default_factory=dict)  # {metric: value or NaN}
    ragas_reasons: dict = field(default_factory=dict)  # {metric: why it is NaN, or RAGAS's detail}
    ragas_cards_html: str = ""
    verdict: str = ""  # correct, retrieval, generation, ... ('' where the question has no reference)
    verdict_evidence: str = ""
    seconds: float = 0.0


def offline_judge():
    """The trained offline TRACe judge, loaded once per process."""
    from helpers.judges.models.trace_trees import OfflineJudge  # sklearn: loaded only when this runs

    if "offline" not in _JUDGES:
        _JUDGES["offline"] = OfflineJudge.load()
    return _JUDGES["offline"]


def reference_judge(name: str, language: str):
    """The correctness or context_recall judge (no LLM), prepared once per process and language."""
    from helpers.judges.judge_base import JudgeContext, judge_class

    if (name, language) not in _JUDGES:
        judge = judge_class(name)(context=JudgeContext(language=language))
        judge.prepare()
        _JUDGES[(name, language)] = judge
    return _JUDGES[(name, language)]


def verdict_for_answer(bench: Workbench, view: AnswerView, question: str, qid: str | None, contexts: list[str]) -> None:
    """The answer's verdict against the question's reference (none without one), read through the
    shipped cuts, into `view.verdict*` and at the head of `view.cards_html`."""
    from helpers.data.contracts import Sample
    from helpers.experiment.diagnosis import SHIPPED, verdict
    from helpers.generation.answer_prompts import get_prompt, is_refusal

    data = bench.loaded()
    reference = data.answers.get(qid) if qid else None
    if not qid or not reference:
        return
    sample = Sample(qid, question, view.answer, tuple(contexts), reference)
    scores = {}
    for name in ("correctness", "context_recall"):
        values, _ = reference_judge(name, data.language).score_sample(sample)
        scores.update({metric: (value, reason) for metric, value, reason in values})
    refused = is_refusal(view.answer, get_prompt(None), data.language)
    recall, reason = scores["context_recall"]
    view.verdict, view.verdict_evidence = verdict(scores["correctness"][0], recall, reason, refused, SHIPPED)
    view.cards_html = verdict_card_html(view.verdict, view.verdict_evidence) + view.cards_html


def ragas_for_answer(bench: Workbench, view: AnswerView, question: str, qid: str | None, contexts: list[str]) -> None:
    """RAGAS's four metrics for one answer, judged by the LLM `view.ragas_llm` names (seconds to
    minutes: every metric is one or more LLM calls), into `view.ragas_*`."""
    from helpers.data.contracts import Sample
    from helpers.ragas_eval.ragas_scoring import RagasJudge  # imports ragas (seconds)

    data = bench.loaded()
    reference = data.answers.get(qid) if qid else None
    judge = RagasJudge(bench.llm(view.ragas_llm), language=data.language)
    scored = judge.score([Sample(qid or "typed", question, view.answer, tuple(contexts), reference)])
    for row in scored.rows.to_dict("records"):
        view.ragas_scores[row["metric"]] = row["value"]
        view.ragas_reasons[row["metric"]] = row["reason"]
    view.ragas_cards_html = ragas_cards_html(view.ragas_scores, view.ragas_reasons)


def answer_and_judge(
    bench: Workbench,
    architecture: str,
    llm: str | None = None,
    *,
    max_tokens: int | None = None,
    k: int | None = None,
    ragas_llm: str | None = None,
) -> AnswerView:
    """Answer the last searched question from `architecture`'s contexts (its top k, the context
    budget of helpers.generation.answering applied), then judge the answer (TRACe offline; RAGAS too when
    `ragas_llm` names an LLM). A failed answer or judge is in `error`, never raised, apart from
    asking before any search."""
    from helpers.trace.display import judgement_html  # matplotlib: loaded only when this runs

    comparison = bench.last
    if comparison is None:
        raise ExploreError("no question searched yet: search in the query panel first")
    if architecture not in comparison.contexts:
        searched = sorted(comparison.contexts)
        raise ExploreError(f"{architecture!r} has no results for this question; searched: {searched}")
    name = llm or bench.llm_name
    view = AnswerView(architecture, name, None, ragas_llm=ragas_llm)
    start = time.perf_counter()
    try:
        client = bench.llm(name)
        data = bench.loaded()  # a search loaded it
        ranking = {c["doc_id"]: c["score"] for c in comparison.contexts[architecture]}
        contexts, dropped = select_contexts(ranking, data.corpus, k=k or comparison.k, language=data.language)
        record = generate_answer(
            client,
            comparison.qid or "typed",
            comparison.question,
            contexts,
            language=data.language,
            dropped=dropped,
            max_tokens=max_tokens,
        )
    except Exception as exc:  # a missing key, a server that does not answer: said in the panel
        view.error, view.seconds = explain(exc), time.perf_counter() - start
        return view
    view.answer, view.error = record.answer, record.error or ""
    if record.error_kind == MissingKeyError.kind:  # the LLM layer records it; say where the key goes
        view.error += " (put the key in the environment or in .env)"
    if not view.answer:
        view.error = view.error or "the LLM returned an empty answer"
        view.seconds = time.perf_counter() - start
        return view
    try:
        documents = as_documents_sentences([c["text"] for c in contexts])
        response = as_response_sentences(view.answer)
        judgement = offline_judge().judge(comparison.question, documents, response)
        view.scores = {m: getattr(judgement.scores, m) for m in TRACE_METRICS}
        view.sentences_html = judgement_html(
            comparison.question, documents, response, judgement, title=f"{architecture} · {name}"
        )
        view.cards_html = trace_cards_html(view.scores)
    except Exception as exc:  # e.g. no trained judge: the answer still shows
        view.error = f"the offline judge failed: {explain(exc)} (train it with `python -m helpers train-judge`)"
    try:
        verdict_for_answer(bench, view, comparison.question, comparison.qid, [c["text"] for c in contexts])
    except Exception as exc:  # the verdict is a help, not the answer: say why it is missing
        view.error = "; ".join(filter(None, [view.error, f"no verdict: {explain(exc)}"]))
    if ragas_llm:
        try:
            ragas_for_answer(bench, view, comparison.question, comparison.qid, [c["text"] for c in contexts])
        except Exception as exc:  # a judge that does not answer: the answer and TRACe still show
            view.error = "; ".join(filter(None, [view.error, f"RAGAS failed: {explain(exc)}"]))
    view.seconds = time.perf_counter() - start
    return view
