"""A test set written from a corpus by the configured LLM, for documents that come without questions.

    testset = generate_testset(corpus, llm, n=50, language="es", seed=0)
    testset.write("questions.jsonl")     # id, question, reference, relevant, kind: a questions file
    print(testset.format_report())        # kept / dropped by each filter, per kind

Kinds (the query types of ragas's test-set generator, kept small): `single` (a factual question one
passage answers), `two` (a question that needs two passages on one topic: the second is one of the first's nearest
passages by BM25) and
`unanswerable` (on the documents' topic, but answered by none of them: measures refusals; its
reference says so and it has no qrels). Each candidate must pass, in this order (each count is
reported):
  1. `parsed`: the LLM wrote a question (three words or more, with its '?') and an answer (JSON,
     schema-constrained);
  2. `standalone`: it does not point at "the passage", "passage A", "the text" (a retriever's user
     has no passage in front of them); this and the other filters without an LLM (grounding by
     content words, copies) are helpers.testsets.question_checks;
  3. `grounded`: the reference answer's content words are in its source passages (at least
     `min_grounding` of them: an evidence check without an LLM), and the LLM, shown the passages,
     says they answer the question and answers it again in agreement with the reference
     (content-word F1 >= `min_agreement`); for `unanswerable`, the LLM says the corpus's best BM25
     passages do not;
  4. `not_a_copy`: the question does not copy a source sentence (word Jaccard < `max_copy_overlap`;
     such questions make lexical retrieval look better than it is);
  5. `not_a_duplicate`: no kept question is a near duplicate (embedding cosine < `max_similarity`).
qrels (`relevant`) are the source passages' character spans, `file@start-end` (or the doc_id when
the corpus has no spans), so they survive a change of chunking.

Why not ragas's TestsetGenerator: it first builds a knowledge graph with several LLM extraction calls
per chunk (summaries, headlines, key phrases, themes, embeddings) and English prompts; on 2 CPU cores
with a 1.5B local model that is hours before the first question. Written here: two calls per kept
question, prompts in the corpus language.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from pydantic import BaseModel
from tqdm import tqdm

from helpers.errors import UserError
from helpers.languages import corpus_language
from helpers.llm.structured import complete_json
from helpers.retrieval.architectures.sparse import BM25
from helpers.retrieval.embedders.models import build_embedder
from helpers.testsets.question_checks import agreement, copy_overlap, grounding, looks_like_references, self_reference
from helpers.text import words  # lower-cased \w+ words, one definition

KINDS = ("single", "two", "unanswerable")
DEFAULT_MIX = {"single": 0.6, "two": 0.25, "unanswerable": 0.15}
FILTERS = ("parsed", "standalone", "grounded", "not_a_copy", "not_a_duplicate")


class QA(BaseModel):
    question: str
    answer: str


class Verdict(BaseModel):
    answered: bool
    answer: str = ""


@dataclass
class Item:
    id: str
    kind: str
    question: str
    reference: str
    relevant: str  # 'file@start-end; ...' (the questions-file format), '' for unanswerable
    source_doc_ids: list[str]
    status: str = "kept"  # or the first filter it failed
    detail: str = ""


@dataclass
class Testset:
    items: list[Item]
    settings: dict = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def kept(self) -> list[Item]:
        return [item for item in self.items if item.status == "kept"]

    def counts(self) -> dict:
        """Candidates per kind, and how many each filter dropped (a candidate is counted at the
        first filter it fails)."""
        out = {}
        for kind in KINDS:
            items = [i for i in self.items if i.kind == kind]
            failed = Counter(i.status for i in items)
            out[kind] = {
                "candidates": len(items),
                **{f"dropped_{f}": failed.get(f, 0) for f in FILTERS},
                "kept": failed.get("kept", 0),
            }
        return out

    def format_report(self) -> str:
        lines = [f"{'kind':13s} candidates " + " ".join(f"{'-' + f:>16s}" for f in FILTERS) + "  kept"]
        for kind, c in self.counts().items():
            lines.append(
                f"{kind:13s} {c['candidates']:10d} "
                + " ".join(f"{c['dropped_' + f]:16d}" for f in FILTERS)
                + f"  {c['kept']:4d}"
            )
        kept = len(self.kept)
        lines.append(
            f"{kept} question(s) kept of {len(self.items)} candidates in {self.seconds:.0f} s"
            + (f" ({self.seconds / kept:.1f} s per kept question)" if kept else "")
        )
        return "\n".join(lines)

    def write(self, path: str | Path, *, all_candidates: bool = False) -> Path:
        """A questions file (JSONL or CSV, by extension) of the kept questions (or every candidate,
        with its status: what the review panel shows)."""
        import pandas as pd

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = [
            asdict(i) | {"source_doc_ids": " ".join(i.source_doc_ids)}
            for i in (self.items if all_candidates else self.kept)
        ]
        if path.suffix.lower() == ".csv":
            pd.DataFrame(rows).to_csv(path, index=False)
        else:
            path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        return path


def span_ref(doc_id: str, doc: dict) -> str:
    if doc.get("source") and doc.get("char_start") is not None:
        return f"{doc['source']}@{doc['char_start']}-{doc['char_end']}"
    return doc_id


def _passages(texts: list[str]) -> str:
    return "\n\n".join(texts)


def _draw(rng: random.Random, kind: str, pool: list[str], neighbours) -> list[str]:
    """One passage, or for `two` a second one on the same topic: one of the first's three nearest
    passages by BM25 (two random chunks of one long file shared no topic in 16 of 17 pairs: hand
    labels, benchmarks/labels/testsets/*-v2.csv)."""
    doc_ids = [rng.choice(pool)]
    if kind == "two":
        near = [d for d in neighbours(doc_ids[0]) if d != doc_ids[0]][:3]
        doc_ids.append(rng.choice(near or [d for d in pool if d != doc_ids[0]] or doc_ids))
    return doc_ids


def _neighbours(bm25, corpus: dict, doc_id: str, pool: set[str]) -> list[str]:
    """The passages of the pool nearest to `doc_id` by BM25 (its text as the query), nearest first,
    without those overlapping it (the same text again, from the chunk overlap)."""
    doc = corpus[doc_id]
    ranked = bm25.retrieve({"q": doc["text"]}, 10).get("q", {})
    near = []
    for other in sorted(ranked, key=ranked.get, reverse=True):
        o = corpus[other]
        overlapping = (
            o.get("source") == doc.get("source")
            and o.get("char_start") is not None
            and doc.get("char_start") is not None
            and o["char_start"] < doc["char_end"]
            and doc["char_start"] < o["char_end"]
        )
        if other in pool and other != doc_id and not overlapping:
            near.append(other)
    return near


def _ask(llm, prompts: dict, user: str, schema, **params):
    return complete_json(
        llm, [{"role": "system", "content": prompts["system"]}, {"role": "user", "content": user}], schema, **params
    )


def _first_failure(
    item: Item,
    texts: list[str],
    check_texts: list[str],
    llm,
    prompts: dict,
    *,
    min_grounding: float,
    min_agreement: float,
    llm_check: bool,
    max_copy_overlap: float,
) -> tuple[str, str] | None:
    """(filter, why) of the first of standalone, grounded and not_a_copy that `item` fails; None: passed."""
    if pointer := self_reference(item.question):
        return "standalone", f"points at the passage: {pointer!r}"
    answerable = item.kind != "unanswerable"
    if answerable and (share := grounding(item.reference, texts)) < min_grounding:
        return "grounded", f"answer grounding {share:.2f} < {min_grounding}"
    if llm_check:
        verdict = _ask(
            llm, prompts, prompts["check"].format(passages=_passages(check_texts), question=item.question), Verdict
        )
        if not verdict.ok or verdict.value.answered != answerable:
            return (
                "grounded",
                verdict.error or f"the LLM says the passages {'do not answer' if answerable else 'answer'} it",
            )
        # asked again without the reference, the LLM must give the same answer: a reference taken from
        # the wrong sentence of the passage disagreed (9 of the 16 bad questions of the v2 labels)
        if answerable and (f1 := agreement(verdict.value.answer, item.reference)) < min_agreement:
            return (
                "grounded",
                f"a second answer disagrees with the reference (content-word F1 {f1:.2f} < {min_agreement})",
            )
    if (overlap := copy_overlap(item.question, texts)) >= max_copy_overlap:
        return "not_a_copy", f"word Jaccard {overlap:.2f} with a source sentence"
    return None


def generate_testset(
    corpus: dict[str, dict],
    llm,
    *,
    n: int = 50,
    language: str = "en",
    seed: int = 0,
    mix: dict[str, float] | None = None,
    min_chars: int = 200,
    min_grounding: float = 0.6,
    min_agreement: float = 0.4,
    max_copy_overlap: float = 0.6,
    max_similarity: float = 0.92,
    embedder=None,
    llm_check: bool = True,
    max_candidates: int | None = None,
    progress: bool = True,
) -> Testset:
    """Write candidates until `n` are kept (at most `max_candidates`, default 3 n). Passages are drawn
    with `seed` from chunks of at least `min_chars` characters (not reference lists); `two` pairs a
    passage with one of its three nearest by BM25. `embedder`: for the duplicate filter (default: the corpus language's).
    `llm_check`: False skips the LLM's answerability verdict and second answer (which must agree with
    the reference: content-word F1 >= `min_agreement`); the lexical grounding still applies."""
    import time

    if n <= 0:
        raise UserError(f"testset n must be > 0, got {n}")
    mix = mix or DEFAULT_MIX
    unknown = set(mix) - set(KINDS)
    if unknown:
        raise UserError(f"testset mix names unknown kinds {sorted(unknown)}; valid: {', '.join(KINDS)}")
    lang = corpus_language(language)  # its texts: the prompts (JSON replies) and the unanswerable's reference
    prompts = lang.testset
    pool = [d for d, doc in corpus.items() if len(doc["text"]) >= min_chars and not looks_like_references(doc["text"])]
    pool = pool or list(corpus)
    rng = random.Random(seed)
    pool_set = set(pool)
    bm25 = BM25(language).index(corpus)
    max_candidates = max_candidates or 3 * n
    items: list = []
    kept_vectors: list = []
    start = time.perf_counter()
    kinds = list(mix)
    weights = [mix[k] for k in kinds]
    bar = tqdm(total=n, desc="testset", unit="question", disable=not progress)
    while len([i for i in items if i.status == "kept"]) < n and len(items) < max_candidates:
        kind = rng.choices(kinds, weights)[0]
        doc_ids = _draw(rng, kind, pool, lambda d: _neighbours(bm25, corpus, d, pool_set))
        texts = [corpus[d]["text"] for d in doc_ids]
        item = Item(f"g{len(items) + 1}", kind, "", "", "", doc_ids if kind != "unanswerable" else [])
        items.append(item)
        made = _ask(
            llm,
            prompts,
            prompts["two"].format(passage_a=texts[0], passage_b=texts[1])
            if kind == "two"
            else prompts[kind].format(passages=_passages(texts)),
            QA,
            sample=len(items),
        )
        if not made.ok or len(words(made.value.question)) < 3 or "?" not in made.value.question:
            item.status, item.detail = "parsed", made.error or f"not a question: {made.value.question[:80]!r}"
            continue
        item.question = " ".join(made.value.question.split())
        if kind == "unanswerable":  # checked against the corpus's best passages: none may answer it
            item.reference = lang.not_in_documents
            check_texts = [corpus[d]["text"] for d in bm25.retrieve({"q": item.question}, 3).get("q", {})]
        else:
            item.reference = " ".join(made.value.answer.split())
            item.relevant = "; ".join(span_ref(d, corpus[d]) for d in dict.fromkeys(doc_ids))
            check_texts = texts
        failed = _first_failure(
            item,
            texts,
            check_texts,
            llm,
            prompts,
            min_grounding=min_grounding,
            min_agreement=min_agreement,
            llm_check=llm_check,
            max_copy_overlap=max_copy_overlap,
        )
        if failed is None:
            embedder = embedder or build_embedder(None, language)  # loaded when a question first gets here
            vector = np.asarray(embedder.embed_queries([item.question])[0], dtype=np.float32)
            vector /= np.linalg.norm(vector) or 1.0
            similar = max((float(vector @ v) for v in kept_vectors), default=-np.inf)
            failed = (
                ("not_a_duplicate", f"cosine {similar:.3f} with a kept question") if similar >= max_similarity else None
            )
        if failed:
            item.status, item.detail = failed
            continue
        kept_vectors.append(vector)
        bar.update(1)
    bar.close()
    settings = {
        "n": n,
        "language": language,
        "seed": seed,
        "mix": mix,
        "min_chars": min_chars,
        "min_grounding": min_grounding,
        "min_agreement": min_agreement,
        "max_copy_overlap": max_copy_overlap,
        "max_similarity": max_similarity,
        "llm_check": llm_check,
        "llm": getattr(llm, "name", str(llm)),
    }
    return Testset(items, settings, time.perf_counter() - start)
