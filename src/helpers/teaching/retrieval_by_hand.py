"""Retrieval mechanisms on toy cases: BM25 on a four-sentence corpus by hand and by bm25s, the
cosine of two vectors, reciprocal rank fusion of two short lists, nDCG and recall by hand, and
a reranker's moves. Notebooks 01 and 02 show them; the exercises check the numbers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from helpers.retrieval.architectures.fusion import rrf
from helpers.retrieval.embedders.models import build_embedder
from helpers.teaching.exercises import exercise
from helpers.text import words

FOUR_SENTENCES = {
    "s1": "the cat sat on the mat",
    "s2": "the dog sat on the log",
    "s3": "cats and dogs are pets",
    "s4": "the cat chased the dog",
}
TOY_QUERY = "cat on mat"
K1, B = 1.5, 0.75  # bm25s's defaults (Lucene's)


def tokens(text: str) -> list[str]:
    """Lower-case words: no stemming and no stop words, so every step can be followed by hand."""
    return words(text)


def idf(term: str, corpus: dict[str, str] = FOUR_SENTENCES) -> float:
    """Lucene's BM25 IDF, as bm25s computes it: ln(1 + (N - df + 0.5) / (df + 0.5))."""
    n = len(corpus)
    df = sum(term in tokens(text) for text in corpus.values())
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def bm25_by_hand(
    query: str = TOY_QUERY, corpus: dict[str, str] = FOUR_SENTENCES, *, k1: float = K1, b: float = B
) -> pd.DataFrame:
    """One row per (document, query term): tf, document length, IDF and the term's contribution
    idf · tf / (tf + k1 · (1 - b + b · |d| / avgdl)) (Lucene's variant, which bm25s implements:
    Robertson's (k1 + 1) factor is dropped, a constant that changes no ranking)."""
    lengths = {doc_id: len(tokens(text)) for doc_id, text in corpus.items()}
    avgdl = sum(lengths.values()) / len(lengths)
    rows = []
    for doc_id, text in corpus.items():
        words = tokens(text)
        for term in dict.fromkeys(tokens(query)):
            tf = words.count(term)
            norm = k1 * (1 - b + b * lengths[doc_id] / avgdl)
            rows.append(
                {
                    "doc_id": doc_id,
                    "term": term,
                    "tf": tf,
                    "doc_len": lengths[doc_id],
                    "avgdl": round(avgdl, 3),
                    "idf": idf(term, corpus),
                    "contribution": idf(term, corpus) * tf / (tf + norm) if tf else 0.0,
                }
            )
    return pd.DataFrame(rows)


def bm25_scores_by_hand(query: str = TOY_QUERY, corpus: dict[str, str] = FOUR_SENTENCES) -> dict[str, float]:
    return bm25_by_hand(query, corpus).groupby("doc_id")["contribution"].sum().to_dict()


def bm25_scores_bm25s(query: str = TOY_QUERY, corpus: dict[str, str] = FOUR_SENTENCES) -> dict[str, float]:
    """The same scores from the bm25s library, on the same tokens."""
    import bm25s

    doc_ids = list(corpus)
    model = bm25s.BM25(k1=K1, b=B)
    model.index([tokens(corpus[d]) for d in doc_ids], show_progress=False)
    return dict(zip(doc_ids, model.get_scores(tokens(query)).tolist()))


def cosine(a, b) -> float:
    """cos(a, b) = a·b / (|a| |b|): 1 same direction, 0 orthogonal. Embedders here return unit
    vectors, so their cosine is a plain dot product."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def embedding_cosines(sentences: list[str], language: str = "es", embedder: str | None = None) -> pd.DataFrame:
    """Cosine of every pair of sentences with the dense architecture's embedder (the language's
    default unless named): paraphrases score near each other, unrelated text lower."""
    vectors = np.asarray(build_embedder(embedder, language).embed_documents(sentences), dtype=float)
    matrix = [[round(cosine(a, b), 3) for b in vectors] for a in vectors]
    return pd.DataFrame(matrix, index=sentences, columns=[f"s{i}" for i in range(len(sentences))])


TOY_VECTORS = ([1.0, 2.0, 2.0], [2.0, 1.0, 2.0])
TOY_LISTS = {"dense": ["a", "b", "c", "d"], "bm25": ["c", "a", "e"]}


def rrf_by_hand(lists: dict[str, list[str]] = TOY_LISTS, k: int = 60) -> pd.DataFrame:
    """Reciprocal rank fusion (Cormack et al. 2009): score(d) = Σ_lists 1 / (k + rank_list(d)),
    one column per list (empty where the list misses d), sorted by the fused score."""
    docs = list(dict.fromkeys(d for ranked in lists.values() for d in ranked))
    rows = []
    for doc_id in docs:
        row: dict[str, object] = {"doc_id": doc_id}
        terms = []
        for name, ranked in lists.items():
            row[f"rank in {name}"] = ranked.index(doc_id) + 1 if doc_id in ranked else None
            term = 1 / (k + ranked.index(doc_id) + 1) if doc_id in ranked else 0.0
            row[f"1/(k+rank) {name}"] = term
            terms.append(term)
        row["rrf"] = sum(terms)
        rows.append(row)
    return pd.DataFrame(rows).sort_values(["rrf", "doc_id"], ascending=[False, True]).reset_index(drop=True)


def rrf_by_package(lists: dict[str, list[str]] = TOY_LISTS, k: int = 60) -> dict[str, float]:
    """The package's RRF on the same lists (as runs {qid: {doc_id: score}}, best first)."""
    runs = [{"q": {d: float(len(ranked) - i) for i, d in enumerate(ranked)}} for ranked in lists.values()]
    return rrf(runs, k=k)["q"]


TOY_RANKING = ["d3", "d1", "d7", "d2", "d9"]
TOY_RELEVANT = {"d1": 1, "d2": 1}


def ndcg_by_hand(ranking=TOY_RANKING, qrels=TOY_RELEVANT, k: int = 5) -> dict:
    """nDCG@k with binary gains (Järvelin & Kekäläinen 2002): DCG = Σ rel_i / log2(i + 1) over the
    top k, divided by the DCG of the ideal order; recall@k = relevant found / relevant."""
    gains = [qrels.get(d, 0) for d in ranking[:k]]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sorted(qrels.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return {
        "gains": gains,
        "dcg": dcg,
        "idcg": idcg,
        "ndcg": dcg / idcg if idcg else 0.0,
        "recall": sum(1 for d in ranking[:k] if qrels.get(d, 0) > 0) / len(qrels),
    }


def ndcg_by_ranx(ranking=TOY_RANKING, qrels=TOY_RELEVANT, k: int = 5) -> dict:
    """The same two numbers from ranx (Bassani 2022), the library the package's metrics are tested against."""
    from ranx import Qrels, Run, evaluate

    run = {"q": {d: float(len(ranking) - i) for i, d in enumerate(ranking)}}
    scores = evaluate(Qrels({"q": qrels}), Run(run), [f"ndcg@{k}", f"recall@{k}"])
    return {"ndcg": float(scores[f"ndcg@{k}"]), "recall": float(scores[f"recall@{k}"])}


def rank_moves(first_stage: list[str], reranked: list[str]) -> pd.DataFrame:
    """Where each reranked document was in the first stage: positive `moved` = up."""
    return pd.DataFrame(
        [
            {
                "doc_id": d,
                "rank after": i + 1,
                "rank before": first_stage.index(d) + 1,
                "moved": first_stage.index(d) - i,
            }
            for i, d in enumerate(reranked)
        ]
    )


def reranker_moves(rerank, queries: dict[str, str], k: int = 5) -> pd.DataFrame:
    """The reranker's top k for each question and each document's rank in its first stage."""
    run = rerank.retrieve(queries, k)
    frames = [rank_moves(rerank.first_stage[qid], list(run[qid])).assign(qid=qid) for qid in queries]
    return pd.concat(frames, ignore_index=True)[["qid", "doc_id", "rank before", "rank after", "moved"]]


TOPIC_01, TOPIC_02 = "01-architectures", "02-retrieval-benchmark"
exercise(
    "bm25-idf-cat",
    TOPIC_01,
    "What is BM25's IDF of the term 'cat' in the four-sentence corpus "
    "(Lucene's formula, natural log)? Two of the four sentences contain 'cat'.",
    lambda: idf("cat"),
    "ln(1 + (N - df + 0.5) / (df + 0.5)) with N = 4, df = 2",
)
exercise(
    "bm25-top-doc",
    TOPIC_01,
    f"Which sentence does BM25 rank first for {TOY_QUERY!r}? (its id)",
    lambda: max(bm25_scores_by_hand().items(), key=lambda kv: kv[1])[0],
    "the sentence that holds the rarest query terms ('mat' is in one sentence only)",
)
exercise(
    "cosine-toy",
    TOPIC_01,
    "Cosine of [1, 2, 2] and [2, 1, 2]?",
    lambda: cosine(*TOY_VECTORS),
    "dot product 8, each norm 3",
    tolerance=0.001,
)
exercise(
    "rrf-a",
    TOPIC_01,
    "RRF score (k = 60) of document 'a': rank 1 in dense, rank 2 in bm25?",
    lambda: rrf_by_hand().set_index("doc_id").loc["a", "rrf"],
    "1/(60+1) + 1/(60+2)",
    tolerance=1e-5,
)
exercise(
    "ndcg-toy",
    TOPIC_02,
    "nDCG@5 of the ranking d3, d1, d7, d2, d9 when d1 and d2 are the relevant documents?",
    lambda: ndcg_by_hand()["ndcg"],
    "DCG = 1/log2(3) + 1/log2(5); the ideal puts both at ranks 1 and 2",
    tolerance=0.001,
)
exercise(
    "recall-at-2",
    TOPIC_02,
    "Recall@2 of the same ranking?",
    lambda: ndcg_by_hand(k=2)["recall"],
    "one of the two relevant documents is in the top 2",
    tolerance=0.001,
)


def first_relevant_figure(table: pd.DataFrame, qrels: dict[str, dict[str, int]], k: int):
    """What each architecture retrieved for each question, as one figure: the rank of the first
    passage marked relevant (the hand-marked qrels) in its top k, or none (side_by_side's table
    in; one cell per architecture and question). Green is rank 1, red is none."""
    import matplotlib.pyplot as plt  # matplotlib: loaded only when this runs

    architectures = list(dict.fromkeys(table["architecture"]))
    qids = [q for q in dict.fromkeys(table["qid"]) if qrels.get(q)]
    grid = np.full((len(architectures), len(qids)), np.nan)
    for (a, q), part in table.groupby(["architecture", "qid"], sort=False):
        if q in qids:
            hits = part.loc[part["doc_id"].isin(list(qrels[q])), "rank"]
            grid[architectures.index(a), qids.index(q)] = hits.min() if len(hits) else k + 1
    fig, ax = plt.subplots(figsize=(1.1 * len(qids) + 2.5, 0.45 * len(architectures) + 1.4))
    ax.imshow(grid, cmap="RdYlGn_r", vmin=1, vmax=k + 1, aspect="auto")
    for i in range(len(architectures)):
        for j in range(len(qids)):
            value = grid[i, j]
            ax.text(
                j,
                i,
                "none" if value == k + 1 else ("" if np.isnan(value) else str(int(value))),
                ha="center",
                va="center",
            )
    ax.set_xticks(range(len(qids)), qids)
    ax.set_yticks(range(len(architectures)), architectures)
    ax.set_title(f"First hand-marked passage: its rank in the top {k}", fontsize=10)
    fig.tight_layout()
    return fig
