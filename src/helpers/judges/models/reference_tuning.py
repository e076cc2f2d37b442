"""Pairs (answer, reference, correct?) to fit the correctness judge's weights and threshold on,
built from data that is not the hand-labelled benchmark answers (those are kept for validation).

The wrong answers mimic what the hand labels show small models doing (benchmarks/labels/: the
model copies a sentence that shares the question's words but answers another question, restates
the question, or gets a number wrong); the right ones state the reference's fact in the source's
own words, as an extractive answer does:

- MaternaQA-es (306 Spanish obstetrics questions, each with an LLM-written reference and the gold
  passage it was written from): right = the two consecutive gold-passage sentences holding most of
  the reference's content words; wrong = the two sentences of another question's gold passage that
  share most words with this question (skipped when they hold >= 60 % of the reference's words:
  MaternaQA repeats facts), the question restated as a statement, and the right answer with the
  reference's numbers changed; and short answers (`clause_pairs`): the gold passage's clause that
  states what the question asks against another passage's clause that shares the question's words.
- XQuAD-es (SQuAD-format, short span references): right = the paragraph's sentence holding the
  answer span; wrong = the sentence holding another question's answer in the same paragraph.
"""

from __future__ import annotations

import random
import re

import numpy as np

from helpers.data import load_dataset
from helpers.data.obstetrics import read_maternaqa
from helpers.judges.models.reference_match import numbers
from helpers.text import Tokenizer
from helpers.trace.sentence_keys import split_sentences

MAX_SHARED_WITH_REFERENCE = 0.6


def _windows(sentences: list[str], size: int = 2) -> list[str]:
    if len(sentences) <= size:
        return [" ".join(sentences)]
    return [" ".join(sentences[i : i + size]) for i in range(len(sentences) - size + 1)]


def _share(words: set, text_words: set) -> float:
    return len(words & text_words) / len(words) if words else 0.0


def _change_numbers(text: str, reference: str) -> str | None:
    """`text` with each number it shares with `reference` changed (+3, or x1.5 for decimals);
    None when it shares none."""
    shared = numbers(text) & numbers(reference)
    if not shared:
        return None
    changed = text
    for value in sorted(shared, reverse=True):
        spelled = f"{value:g}".replace(".", ",")
        new = f"{value + 3:g}" if value == int(value) else f"{value * 1.5:.1f}".replace(".", ",")
        if spelled in changed:
            changed = changed.replace(spelled, new)
    return changed if changed != text else None


def maternaqa_pairs(tokenize: Tokenizer, *, seed: int = 0) -> list[dict]:
    records = read_maternaqa()
    passages = [
        _windows(split_sentences(r["contexto_fuente"].strip().strip('"“”').replace("[...]", " "))) for r in records
    ]
    passage_words = [[set(tokenize([w])[0]) for w in windows] for windows in passages]
    pairs = []
    for i, record in enumerate(records):
        reference, question = record["respuesta"], record["pregunta"]
        r_words, q_words = set(tokenize([reference])[0]), set(tokenize([question])[0])
        best = max(range(len(passages[i])), key=lambda j: _share(r_words, passage_words[i][j]))
        right = passages[i][best]
        pairs.append(
            {"source": "maternaqa", "kind": "gold passage", "answer": right, "reference": reference, "label": 1}
            | {"question": question}
        )
        # the wrong passage: another question's window sharing most words with this question
        candidates = [
            (_share(q_words, words), k, j)
            for k, windows in enumerate(passage_words)
            if k != i and records[k]["contexto_fuente"] != record["contexto_fuente"]
            for j, words in enumerate(windows)
        ]
        for _, k, j in sorted(candidates, reverse=True)[:5]:
            if _share(r_words, passage_words[k][j]) < MAX_SHARED_WITH_REFERENCE:
                pairs.append(
                    {
                        "source": "maternaqa",
                        "kind": "wrong passage",
                        "answer": passages[k][j],
                        "reference": reference,
                        "label": 0,
                        "question": question,
                    }
                )
                break
        restated = question.strip().strip("¿?").strip()
        pairs.append(
            {"source": "maternaqa", "kind": "question restated", "answer": restated, "reference": reference, "label": 0}
            | {"question": question}
        )
        changed = _change_numbers(right, reference)
        if changed:
            pairs.append(
                {
                    "source": "maternaqa",
                    "kind": "numbers changed",
                    "answer": changed,
                    "reference": reference,
                    "label": 0,
                    "question": question,
                }
            )
    return pairs + clause_pairs(records, tokenize)


_CLAUSE = re.compile(r"[,;:.]\s+|\n")
MIN_CLAUSE_SHARE = 0.2  # a right clause holds at least this share of the reference's new words
MAX_WRONG_CLAUSE_SHARE = 0.3  # a wrong clause holds under this share of them


def clause_pairs(records: list[dict], tokenize: Tokenizer) -> list[dict]:
    """Short answers, as the 1.5B model writes them ("Se reclasifica como preeclampsia [1]") against
    long references (issue 59): right = the clause of the question's gold passage holding most of
    the reference's content words that the question does not already hold; wrong = the clause of
    another question's passage sharing most words with the question, holding under
    MAX_WRONG_CLAUSE_SHARE of them."""
    passages = [r["contexto_fuente"].strip().strip('"“”').replace("[...]", " ") for r in records]
    clauses = [[c.strip() for c in _CLAUSE.split(p) if len(c.split()) >= 2] for p in passages]
    clause_words = [[set(w) for w in tokenize(cs)] if cs else [] for cs in clauses]
    pairs = []
    for i, record in enumerate(records):
        reference, question = record["respuesta"], record["pregunta"]
        q_words = set(tokenize([question])[0])
        wanted = set(tokenize([reference])[0]) - q_words
        if not wanted or not clauses[i]:
            continue
        best = max(range(len(clauses[i])), key=lambda j: _share(wanted, clause_words[i][j]))
        if _share(wanted, clause_words[i][best]) < MIN_CLAUSE_SHARE:
            continue
        base = {"source": "maternaqa", "reference": reference, "question": question}
        pairs.append(base | {"kind": "gold clause", "answer": clauses[i][best], "label": 1})
        candidates = sorted(
            (
                (_share(q_words, words), k, j)
                for k in range(len(records))
                if passages[k] != passages[i]
                for j, words in enumerate(clause_words[k])
            ),
            reverse=True,
        )
        for _, k, j in candidates[:10]:
            if _share(wanted, clause_words[k][j]) < MAX_WRONG_CLAUSE_SHARE:
                pairs.append(base | {"kind": "wrong clause", "answer": clauses[k][j], "label": 0})
                break
    return pairs


def xquad_pairs(*, lang: str = "es", limit: int = 300, seed: int = 0) -> list[dict]:
    data = load_dataset(f"xquad-{lang}")
    by_paragraph: dict[str, list[str]] = {}
    for qid, rels in data.qrels.items():
        by_paragraph.setdefault(next(iter(rels)), []).append(qid)
    pairs = []
    for doc_id, qids in by_paragraph.items():
        sentences = split_sentences(data.corpus[doc_id]["text"])
        holding = {qid: next((s for s in sentences if data.answers[qid] in s), None) for qid in qids}
        for qid in qids:
            right = holding[qid]
            if right is None:
                continue
            pairs.append(
                {
                    "source": data.name,
                    "kind": "answer sentence",
                    "answer": right,
                    "reference": data.answers[qid],
                    "label": 1,
                    "question": data.queries[qid],
                }
            )
            others = [
                s for other, s in holding.items() if other != qid and s and s != right and data.answers[qid] not in s
            ]
            if others:
                pairs.append(
                    {
                        "source": data.name,
                        "kind": "other answer's sentence",
                        "answer": others[0],
                        "reference": data.answers[qid],
                        "label": 0,
                        "question": data.queries[qid],
                    }
                )
    random.Random(seed).shuffle(pairs)
    return pairs[:limit]


def tuning_pairs(*, seed: int = 0) -> list[dict]:
    """Every pair, MaternaQA-es first: dicts with source, kind, question, answer, reference, label (1 right)."""
    return maternaqa_pairs(Tokenizer("es"), seed=seed) + xquad_pairs(seed=seed)


def attribution_pairs(matcher, *, negatives: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """(features [pairs, context_recall.FEATURES], labels) for the context-recall judge: each
    statement of a MaternaQA-es reference against its own gold passage (1), and against the gold
    passages of the `negatives` questions sharing most words with its question that hold under
    60 % of the statement's words (0)."""
    from helpers.judges.context_recall import attribution_features, statements

    records = read_maternaqa()
    passages = [r["contexto_fuente"].strip().strip('"“”').replace("[...]", " ") for r in records]
    question_words = matcher.words([r["pregunta"] for r in records])
    passage_words = matcher.words(passages)
    rows, labels = [], []
    for i, record in enumerate(records):
        claims = statements(record["respuesta"])
        if not claims:
            continue
        others = sorted(
            (k for k in range(len(records)) if passages[k] != passages[i]),
            key=lambda k: -_share(question_words[i], passage_words[k]),
        )
        claim_words = matcher.words(claims)
        chosen = [
            k for k in others[: negatives * 4]
            if max(_share(w, passage_words[k]) for w in claim_words) < MAX_SHARED_WITH_REFERENCE
        ][:negatives]  # fmt: skip
        features = attribution_features(matcher, claims, [passages[i]] + [passages[k] for k in chosen])
        for j in range(features.shape[1]):
            rows += list(features[:, j])
            labels += [1.0 if j == 0 else 0.0] * len(claims)
    return np.asarray(rows), np.asarray(labels)
