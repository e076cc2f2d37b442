"""The four RAGAS metrics step by step on the seed document's worked examples
(../shared/seeds/ragas-evaluation-framework.md), with ragas 0.4.3's formulas, including where the
seed's own arithmetic differs from them (its context-precision example)."""

from __future__ import annotations

from typing import TypedDict

import pandas as pd

from helpers.teaching.exercises import exercise


class FaithfulnessExample(TypedDict):
    question: str
    context: str
    answer: str
    statements: dict[str, bool]  # the answer's statements -> supported by the context


class AnswerRelevancyExample(TypedDict):
    question: str
    similarities: dict[str, float]
    noncommittal: bool


class ContextPrecisionExample(TypedDict):
    question: str
    relevant: list[bool]
    seed_score: float


class ContextRecallExample(TypedDict):
    question: str
    facts: list[str]
    found_complete: list[bool]
    found_incomplete: list[bool]


# The seed's examples, as it writes them (Spanish questions from the obstetrics benchmark).
FAITHFULNESS: FaithfulnessExample = {
    "question": "¿Cuál es la cantidad ideal de controles prenatales?",
    "context": "Se recomienda un programa de diez citas para primigestantes. Para una mujer multípara con un "
    "embarazo de curso normal se recomienda un programa de siete citas.",
    "answer": "Se recomienda un programa de diez citas para embarazos primarios y siete citas para multíparas "
    "con embarazos de curso normal.",
    "statements": {
        "Se recomienda un programa de diez citas para embarazos primarios": True,
        "Siete citas para multíparas con embarazos de curso normal": True,
    },
}
ANSWER_RELEVANCY: AnswerRelevancyExample = {
    "question": "¿Cuál es la cantidad ideal de controles prenatales?",
    # cosine of the question with each question an LLM regenerated from the answer (the seed's values)
    "similarities": {
        "¿Cuántas citas prenatales se recomiendan para primigestantes?": 0.92,
        "¿Cuál es el número de controles recomendados durante el embarazo?": 0.95,
        "¿Cuántos controles debe tener una mujer embarazada?": 0.88,
    },
    "noncommittal": False,
}
CONTEXT_PRECISION: ContextPrecisionExample = {
    "question": "¿Cuándo realizar la valoración de riesgo psicosocial?",
    "relevant": [True, True, False, True, False],  # contexts 1..5 in retrieval order
    "seed_score": 0.81,  # what the seed document prints
}
CONTEXT_RECALL: ContextRecallExample = {
    "question": "¿Cuáles son las metas de ganancia de peso en las mujeres gestantes?",
    "facts": [
        "IMC registrado hacia la semana 10",
        "IMC < 20: 12-18 kg",
        "IMC 20-24,9: 10-13 kg",
        "IMC 25-29,9: 7-10 kg",
        "IMC > 30: 6-7 kg",
    ],
    "found_complete": [True, True, True, True, True],
    "found_incomplete": [True, True, True, False, False],
}


def faithfulness(statements: dict[str, bool]) -> float:
    """ragas Faithfulness: statements the context supports / statements of the answer."""
    return sum(statements.values()) / len(statements)


def answer_relevancy(similarities: dict[str, float], noncommittal: bool = False) -> float:
    """ragas ResponseRelevancy: mean cosine of the question with the regenerated questions, times
    0 when the answer is noncommittal ("I don't know")."""
    return 0.0 if noncommittal else sum(similarities.values()) / len(similarities)


def context_precision_steps(relevant: list[bool]) -> pd.DataFrame:
    """precision@k at every rank, and whether rank k is relevant (v_k)."""
    rows, hits = [], 0
    for k, is_relevant in enumerate(relevant, 1):
        hits += is_relevant
        rows.append(
            {
                "rank k": k,
                "relevant v_k": int(is_relevant),
                "precision@k": hits / k,
                "precision@k × v_k": hits / k * is_relevant,
            }
        )
    return pd.DataFrame(rows)


def context_precision(relevant: list[bool]) -> float:
    """ragas ContextPrecision (average precision): Σ_k precision@k · v_k / (number of relevant
    contexts); ragas adds 1e-10 to the denominator, so no relevant context scores 0
    (ragas/metrics/collections/context_precision/metric.py, `_calculate_average_precision`)."""
    steps = context_precision_steps(relevant)
    return float(steps["precision@k × v_k"].sum() / (steps["relevant v_k"].sum() + 1e-10))


def mean_precision_at_k(relevant: list[bool]) -> float:
    """The mean of precision@k over every rank: what the seed's 0.81 is closest to (0.80), and
    not ragas's formula, which only counts the ranks holding a relevant context."""
    return float(context_precision_steps(relevant)["precision@k"].mean())


def context_recall(found: list[bool]) -> float:
    """ragas ContextRecall: reference statements attributable to the contexts / reference statements."""
    return sum(found) / len(found)


def worked_examples() -> pd.DataFrame:
    """Each metric: the seed's printed value and ragas's formula on the same example."""
    precision = CONTEXT_PRECISION["relevant"]
    return pd.DataFrame(
        [
            {
                "metric": "faithfulness",
                "seed": 1.0,
                "formula": faithfulness(FAITHFULNESS["statements"]),
                "how": "2 supported / 2 statements",
            },
            {
                "metric": "answer_relevancy",
                "seed": 0.92,
                "formula": answer_relevancy(ANSWER_RELEVANCY["similarities"]),
                "how": "(0.92 + 0.95 + 0.88) / 3",
            },
            {
                "metric": "context_precision",
                "seed": CONTEXT_PRECISION["seed_score"],
                "formula": context_precision(precision),
                "how": "(1/1 + 2/2 + 3/4) / 3 relevant; the seed's 0.81 is near the mean of all precision@k, "
                f"{mean_precision_at_k(precision):.3f}",
            },
            {
                "metric": "context_recall (complete)",
                "seed": 1.0,
                "formula": context_recall(CONTEXT_RECALL["found_complete"]),
                "how": "5 of 5 facts in the contexts",
            },
            {
                "metric": "context_recall (incomplete)",
                "seed": 0.6,
                "formula": context_recall(CONTEXT_RECALL["found_incomplete"]),
                "how": "3 of 5 facts",
            },
        ]
    ).assign(agree=lambda t: (t["seed"] - t["formula"]).abs() < 0.01)


TOPIC = "03-generation-and-ragas"
exercise(
    "ragas-context-precision",
    TOPIC,
    "ragas context precision of the seed's example (relevant, relevant, not, relevant, not)?",
    lambda: context_precision(CONTEXT_PRECISION["relevant"]),
    "sum precision@k only at the relevant ranks (1, 2, 4), divide by 3",
)
exercise(
    "ragas-precision-swap",
    TOPIC,
    "The same five contexts, but the irrelevant third one moved to the end "
    "(relevant, relevant, relevant, not, not): context precision?",
    lambda: context_precision([True, True, True, False, False]),
    "every relevant context now has precision 1",
)
exercise(
    "ragas-faithfulness-half",
    TOPIC,
    "An answer makes 4 statements; the context supports 3. Faithfulness?",
    lambda: faithfulness({"a": True, "b": True, "c": True, "d": False}),
    "supported / all statements",
)


def scores_figure(rows: pd.DataFrame):
    """The four RAGAS scores of each judged answer (RagasJudge's rows: qid, metric, value,
    error_kind), one bar each; a NaN is a grey stub labelled with why (parse failure, timeout, ...)."""
    import matplotlib.pyplot as plt  # matplotlib: loaded only when this runs

    metrics = list(dict.fromkeys(rows["metric"]))
    qids = list(dict.fromkeys(rows["qid"]))
    width = 0.8 / len(metrics)
    fig, ax = plt.subplots(figsize=(1.6 * len(qids) + 2.5, 3.6))
    for m, metric in enumerate(metrics):
        part = rows[rows["metric"] == metric].set_index("qid")
        for q, qid in enumerate(qids):
            x = q + (m - (len(metrics) - 1) / 2) * width
            value = part["value"].get(qid) if qid in part.index else None
            if value is None or value != value:  # NaN: a stub and the reason's kind
                why = str(part["error_kind"].get(qid) or "no score") if qid in part.index else "not judged"
                ax.bar(x, 0.04, width, color="#c9c9c9", hatch="//")
                ax.text(x, 0.06, f"NaN: {why}", rotation=90, ha="center", va="bottom", fontsize=7)
            else:
                ax.bar(x, value, width, color=f"C{m}", label=metric if q == 0 else None)
    ax.set_xticks(range(len(qids)), qids)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score")
    ax.set_title("RAGAS per answer (grey: NaN, and why)", fontsize=10)
    handles = [plt.Rectangle((0, 0), 1, 1, color=f"C{m}") for m in range(len(metrics))]
    ax.legend(handles, metrics, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig
