"""Language-agnostic features for the offline TRACe judge: lexical overlap after normalisation
(accents stripped, lower case, 6-character prefix stems, English + Spanish stop words), numbers,
capitalised names, position and length. IDF is computed inside each example (over its document
sentences), so no vocabulary of any one language is learnt.

One row per document sentence (for relevance and utilization) and one per response sentence (for
support). Row order follows `documents_sentences` / `response_sentences`. Columns are built by
name and stacked in the order of `DOC_FEATURES` / `RESPONSE_FEATURES`, the order the trained
judge's trees read: a change to either means retraining the judge.
"""

from __future__ import annotations

import math
import re
from functools import cache

import numpy as np

from helpers.languages import languages
from helpers.text import NUMBER_OR_LETTERS, fold_accents, number_and_stem_tokens
from helpers.trace.sentence_keys import as_documents_sentences, as_response_sentences

STOP_WORDS = frozenset(
    """
a about above after again against all also am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further had has
have having he her here hers him his how i if in into is it its itself just me more most my no nor
not now of off on once only or other our out over own same she should so some such than that the
their them then there these they this those through to too under until up very was we were what
when where which while who whom why will with would you your yours yes may might must shall
al algo ante antes como con contra cual cuando de del desde donde durante e el ella ellas ellos en
entre era eran es esa ese eso esta estaba estan este esto estos fue fueron ha han hay la las le les
lo los mas me mi mucho muy nada ni no nos o otra otro para pero poco por porque que quien se ser si
sin sobre son su sus tambien te tiene tienen todo todos tu un una uno unos y ya puede pueden segun
title passage
""".split()
)

_CAPITALISED = re.compile(r"(?<![.!?¿¡]\s)(?<!^)\b[A-ZÁÉÍÓÚÑ][\w-]+")
STEM_LENGTH = 6


@cache
def abstention() -> re.Pattern:
    """A response that says the context lacks the answer, in any language with cues
    (`Language.abstention`: English's and Spanish's): such sentences are nearly always judged
    supported, and their examples' documents are still often judged relevant."""
    cues = [language.abstention for language in languages().values() if language.abstention]
    return re.compile(r"\b(?:" + "|".join(cues) + r")\b", re.IGNORECASE)


DOC_FEATURES = (
    "log_n_sentences",
    "n_documents",
    "document_index",
    "sentence_index",
    "relative_position",
    "is_first",
    "is_title",
    "log_length",
    "n_content",
    "doc_log_n_sentences",
    "q_recall",
    "q_precision",
    "r_precision",
    "r_precision_idf",
    "r_best_precision",
    "r_best_recall",
    "r_bigram_precision",
    "r_numbers_shared",
    "r_precision_rank",
    "r_precision_gap",
    "q_recall_rank",
    "q_recall_gap",
    "prev_r_precision",
    "next_r_precision",
    "prev_q_recall",
    "next_q_recall",
    "doc_max_r_precision",
    "doc_mean_r_precision",
    "doc_max_q_recall",
    "doc_mean_q_recall",
    "ex_response_coverage",
    "ex_log_response_length",
    "ex_n_response_sentences",
    "ex_mean_r_precision",
    "ex_mean_q_recall",
    "doc_q_recall",
    "doc_r_recall",
    "doc_q_rank",
    "doc_r_rank",
    "doc_share_q_overlap",
    "window_max_r_precision",
    "window_max_q_recall",
    "ex_abstains",
)
RESPONSE_FEATURES = (
    "log_length",
    "n_content",
    "position",
    "relative_position",
    "is_last",
    "n_response_sentences",
    "coverage",
    "coverage_idf",
    "best_sentence_coverage",
    "best_window_coverage",
    "best_document_coverage",
    "bigram_coverage",
    "trigram_coverage",
    "n_numbers",
    "n_numbers_missing",
    "n_names",
    "n_names_missing",
    "question_overlap",
    "n_novel",
    "novel_fraction",
    "log_n_document_sentences",
    "ex_min_coverage",
    "ex_mean_coverage",
    "ex_min_best_window",
    "ex_n_novel",
    "relative_novel",
    "abstains",
    "best_sentence_bigram",
    "best_window_missing_idf",
    "q_in_docs",
    "pair_window_support",
    "pair_document_support",
    "pair_window_support_rare",
    "ex_min_pair_window",
)


def normalize(text: str) -> str:
    return fold_accents(text or "").lower()


def tokens(text: str) -> list[str]:
    """Stems of the words and normalised numbers ('1,000' -> '1000') of `text` (helpers.text)."""
    return number_and_stem_tokens(text, STEM_LENGTH)


def content(toks: list[str]) -> list[str]:
    return [t for t in toks if t not in STOP_WORDS and (len(t) > 1 or t.isdigit())]


def ngrams(toks: list[str], n: int) -> set:
    return {tuple(toks[i : i + n]) for i in range(len(toks) - n + 1)}


def names(text: str) -> set[str]:
    """Capitalised words not at a sentence start (names, brands, places), normalised."""
    return {normalize(m)[:STEM_LENGTH] for m in _CAPITALISED.findall(text or "")}


def _weighted(part: set, whole: set, idf: dict, default: float) -> float:
    total = sum(idf.get(t, default) for t in whole)
    return sum(idf.get(t, default) for t in part & whole) / total if total else 0.0


def _fraction(part: set, whole: set) -> float:
    return len(part & whole) / len(whole) if whole else 0.0


def _rank(values: np.ndarray) -> np.ndarray:
    """Descending rank scaled to [0, 1] (0 = highest); ties share the best rank."""
    if values.size <= 1:
        return np.zeros_like(values)
    order = (-values).argsort(kind="stable").argsort(kind="stable")
    return order / (values.size - 1)


def _pair_support(found: set, window_of: dict, doc_of: dict, idf: dict) -> list[float]:
    """Fractions of pairs of the response sentence's words (those found in the documents) that
    also occur together in one sentence window / one document, and the same over its 6 rarest
    words: words that are all in the documents but never together signal a wrong combination."""
    words = sorted(found)
    pairs = [(a, b) for i, a in enumerate(words) for b in words[i + 1 :]]
    if not pairs:
        return [1.0, 1.0, 1.0]
    in_window = np.mean([bool(window_of[a] & window_of[b]) for a, b in pairs])
    in_document = np.mean([bool(doc_of[a] & doc_of[b]) for a, b in pairs])
    rare = sorted(words, key=lambda t: (-idf.get(t, 0.0), t))[:6]
    rare_pairs = [(a, b) for i, a in enumerate(rare) for b in rare[i + 1 :]]
    in_window_rare = np.mean([bool(window_of[a] & window_of[b]) for a, b in rare_pairs]) if rare_pairs else 1.0
    return [float(in_window), float(in_document), float(in_window_rare)]


def _matrix(columns: dict[str, np.ndarray], features: tuple[str, ...]) -> np.ndarray:
    """The columns stacked in the order of `features`: that order is what the trained trees read,
    so a column computed but not named there (or the reverse) is a mistake, not a new feature."""
    if set(columns) != set(features):
        raise ValueError(f"feature columns differ from the names: {sorted(set(columns) ^ set(features))}")
    return np.column_stack([columns[name] for name in features])


def example_features(question: str, documents, response) -> tuple[np.ndarray, np.ndarray]:
    """(document-sentence feature matrix, response-sentence feature matrix) of one example."""
    docs = as_documents_sentences(documents)
    resp = as_response_sentences(response)
    sent_text = [s for doc in docs for _, s in doc]
    sent_doc = [d for d, doc in enumerate(docs) for _ in doc]
    sent_idx = [i for doc in docs for i in range(len(doc))]
    sent_toks = [content(tokens(s)) for s in sent_text]
    sent_sets = [set(t) for t in sent_toks]
    n = len(sent_text)
    df: dict[str, int] = {}
    for s in sent_sets:
        for t in s:
            df[t] = df.get(t, 0) + 1
    idf = {t: math.log((n + 1) / (c + 0.5)) for t, c in df.items()}
    unseen_idf = math.log((n + 1) / 0.5)
    q_set = set(content(tokens(question)))
    resp_toks = [content(tokens(s)) for _, s in resp]
    resp_sets = [set(t) for t in resp_toks]
    resp_all = set().union(*resp_sets) if resp_sets else set()
    resp_bigrams = set().union(*(ngrams(t, 2) for t in resp_toks)) if resp_toks else set()
    doc_vocab = set().union(*sent_sets) if sent_sets else set()

    # ---- document sentences
    q_rec = np.array([_weighted(s, q_set, idf, unseen_idf) for s in sent_sets])
    q_prec = np.array([_fraction(q_set, s) for s in sent_sets])
    r_prec = np.array([_fraction(resp_all, s) for s in sent_sets])
    r_prec_idf = np.array([_weighted(resp_all, s, idf, unseen_idf) for s in sent_sets])
    r_best_prec = np.array([max((_fraction(r, s) for r in resp_sets), default=0.0) for s in sent_sets])
    r_best_rec = np.array([max((_weighted(s, r, idf, unseen_idf) for r in resp_sets), default=0.0) for s in sent_sets])
    r_bigram = np.array([_fraction(resp_bigrams, ngrams(t, 2)) for t in sent_toks])
    resp_numbers = {t for t in resp_all if t[0].isdigit()}
    r_numbers = np.array([len({t for t in s if t[0].isdigit()} & resp_numbers) for s in sent_sets])
    doc_len = np.array([len(docs[d]) for d in sent_doc], float)
    resp_cov = _fraction(doc_vocab, resp_all)

    def neighbour(values, shift):
        out = np.zeros(n)
        for j in range(n):
            k = j + shift
            if 0 <= k < n and sent_doc[k] == sent_doc[j]:
                out[j] = values[k]
        return out

    doc_max_r, doc_mean_r, doc_max_q, doc_mean_q = (np.zeros(n) for _ in range(4))
    for d in set(sent_doc):
        idx = [j for j in range(n) if sent_doc[j] == d]
        doc_max_r[idx], doc_mean_r[idx] = r_prec[idx].max(), r_prec[idx].mean()
        doc_max_q[idx], doc_mean_q[idx] = q_rec[idx].max(), q_rec[idx].mean()
    doc_sets = [set().union(*(sent_sets[j] for j in range(n) if sent_doc[j] == d)) for d in range(len(docs))]
    doc_q = np.array([_weighted(d, q_set, idf, unseen_idf) for d in doc_sets])
    doc_r = np.array([_weighted(d, resp_all, idf, unseen_idf) for d in doc_sets])
    doc_q_rank, doc_r_rank = _rank(doc_q), _rank(doc_r)
    share_q = np.array(
        [np.mean([q_rec[j] > 0 for j in range(n) if sent_doc[j] == d]) if docs[d] else 0.0 for d in range(len(docs))]
    )
    sd = np.array(sent_doc, int)

    def window_max(values, width=2):
        out = values.copy()
        for shift in range(1, width + 1):
            out = np.maximum(out, np.maximum(neighbour(values, -shift), neighbour(values, shift)))
        return out

    abstains = float(any(abstention().search(s) for _, s in resp))
    if n:
        ones = np.ones(n)
        doc_columns = {
            "log_n_sentences": ones * math.log(n + 1),
            "n_documents": ones * len(docs),
            "document_index": np.array(sent_doc, float),
            "sentence_index": np.array(sent_idx, float),
            "relative_position": np.array(sent_idx) / np.maximum(doc_len - 1, 1),
            "is_first": (np.array(sent_idx) == 0).astype(float),
            "is_title": np.array([s.lower().startswith(("title:", "titulo:", "título:")) for s in sent_text], float),
            "log_length": np.log1p([len(tokens(s)) for s in sent_text]),
            "n_content": np.array([len(s) for s in sent_sets], float),
            "doc_log_n_sentences": np.log1p(doc_len),
            "q_recall": q_rec,
            "q_precision": q_prec,
            "r_precision": r_prec,
            "r_precision_idf": r_prec_idf,
            "r_best_precision": r_best_prec,
            "r_best_recall": r_best_rec,
            "r_bigram_precision": r_bigram,
            "r_numbers_shared": r_numbers,
            "r_precision_rank": _rank(r_prec_idf),
            "r_precision_gap": r_prec_idf - r_prec_idf.max(),
            "q_recall_rank": _rank(q_rec),
            "q_recall_gap": q_rec - q_rec.max(),
            "prev_r_precision": neighbour(r_prec_idf, -1),
            "next_r_precision": neighbour(r_prec_idf, 1),
            "prev_q_recall": neighbour(q_rec, -1),
            "next_q_recall": neighbour(q_rec, 1),
            "doc_max_r_precision": doc_max_r,
            "doc_mean_r_precision": doc_mean_r,
            "doc_max_q_recall": doc_max_q,
            "doc_mean_q_recall": doc_mean_q,
            "ex_response_coverage": ones * resp_cov,
            "ex_log_response_length": ones * math.log1p(sum(map(len, resp_toks))),
            "ex_n_response_sentences": ones * len(resp),
            "ex_mean_r_precision": ones * r_prec_idf.mean(),
            "ex_mean_q_recall": ones * q_rec.mean(),
            "doc_q_recall": doc_q[sd],
            "doc_r_recall": doc_r[sd],
            "doc_q_rank": doc_q_rank[sd],
            "doc_r_rank": doc_r_rank[sd],
            "doc_share_q_overlap": share_q[sd],
            "window_max_r_precision": window_max(r_prec_idf),
            "window_max_q_recall": window_max(q_rec),
            "ex_abstains": ones * abstains,
        }
        doc_rows = _matrix(doc_columns, DOC_FEATURES)
    else:
        doc_rows = np.zeros((0, len(DOC_FEATURES)))

    # ---- response sentences
    doc_bigrams = set().union(*(ngrams(t, 2) for t in sent_toks)) if sent_toks else set()
    doc_trigrams = set().union(*(ngrams(t, 3) for t in sent_toks)) if sent_toks else set()
    doc_names = set().union(*(names(s) for s in sent_text)) if sent_text else set()
    doc_names |= {normalize(t)[:STEM_LENGTH] for s in sent_text for t in NUMBER_OR_LETTERS.findall(s)}
    windows = [
        sent_sets[j]
        | (sent_sets[j + 1] if j + 1 < n and sent_doc[j + 1] == sent_doc[j] else set())
        | (sent_sets[j - 1] if j > 0 and sent_doc[j - 1] == sent_doc[j] else set())
        for j in range(n)
    ]
    sent_bigrams = [ngrams(t, 2) for t in sent_toks]
    window_bigrams = [
        sent_bigrams[j] | (sent_bigrams[j + 1] if j + 1 < n and sent_doc[j + 1] == sent_doc[j] else set())
        for j in range(n)
    ]
    window_of: dict[str, set] = {}  # token -> ids of sentence windows (sentence ± 1) holding it
    doc_of: dict[str, set] = {}
    for j in range(n):
        for t in windows[j]:
            window_of.setdefault(t, set()).add(j)
        for t in sent_sets[j]:
            doc_of.setdefault(t, set()).add(sent_doc[j])
    per_sentence: list[dict[str, float]] = []
    m = len(resp)
    for i, ((_, text), toks, rset) in enumerate(zip(resp, resp_toks, resp_sets)):
        numbers = {t for t in rset if t[0].isdigit()}
        rnames = names(text) - q_set
        novel = rset - doc_vocab - q_set
        best_window = max(range(n), key=lambda j: _fraction(windows[j], rset)) if n else None
        missing = rset - windows[best_window] if best_window is not None else rset
        pair_window, pair_document, pair_window_rare = _pair_support(rset & doc_vocab, window_of, doc_of, idf)
        per_sentence.append(
            {
                "log_length": math.log1p(len(tokens(text))),
                "n_content": len(rset),
                "position": i,
                "relative_position": i / max(m - 1, 1),
                "is_last": float(i == m - 1),
                "n_response_sentences": m,
                "coverage": _fraction(doc_vocab, rset),
                "coverage_idf": _weighted(doc_vocab, rset, idf, unseen_idf),
                "best_sentence_coverage": max((_fraction(s, rset) for s in sent_sets), default=0.0),
                "best_window_coverage": max((_fraction(w, rset) for w in windows), default=0.0),
                "best_document_coverage": max((_fraction(d, rset) for d in doc_sets), default=0.0),
                "bigram_coverage": _fraction(doc_bigrams, ngrams(toks, 2)),
                "trigram_coverage": _fraction(doc_trigrams, ngrams(toks, 3)),
                "n_numbers": len(numbers),
                "n_numbers_missing": len(numbers - doc_vocab),
                "n_names": len(rnames),
                "n_names_missing": len(rnames - doc_names),
                "question_overlap": _fraction(q_set, rset),
                "n_novel": len(novel),
                "novel_fraction": len(novel) / max(len(rset), 1),
                "log_n_document_sentences": math.log(n + 1),
                "abstains": float(bool(abstention().search(text))),
                "best_sentence_bigram": max((_fraction(b, ngrams(toks, 2)) for b in window_bigrams), default=0.0),
                "best_window_missing_idf": sum(idf.get(t, unseen_idf) for t in missing)
                / max(sum(idf.get(t, unseen_idf) for t in rset), 1e-9),
                "q_in_docs": _fraction(doc_vocab, q_set),
                "pair_window_support": pair_window,
                "pair_document_support": pair_document,
                "pair_window_support_rare": pair_window_rare,
            }
        )
    if not m:
        return doc_rows, np.zeros((0, len(RESPONSE_FEATURES)))
    resp_columns = {name: np.array([row[name] for row in per_sentence], float) for name in per_sentence[0]}
    # the example's response as a whole, repeated on each of its sentences' rows
    cov, win, nov = (resp_columns[name] for name in ("coverage", "best_window_coverage", "n_novel"))
    resp_columns |= {
        "ex_min_coverage": np.full(m, cov.min()),
        "ex_mean_coverage": np.full(m, cov.mean()),
        "ex_min_best_window": np.full(m, win.min()),
        "ex_n_novel": np.full(m, nov.sum()),
        "relative_novel": nov - nov.mean(),
        "ex_min_pair_window": np.full(m, resp_columns["pair_window_support"].min()),
    }
    return doc_rows, _matrix(resp_columns, RESPONSE_FEATURES)
