"""TRACe from sentence keys to scores, step by step (RAGBench, arXiv:2407.11005 §3): a toy
example small enough to count by hand, then the same steps on one shipped RAGBench row."""

from __future__ import annotations

import pandas as pd

from helpers.teaching.exercises import exercise
from helpers.trace.scoring import trace_scores
from helpers.trace.sentence_keys import normalize_key

# Two documents of 3 and 2 sentences, keyed as RAGBench keys them ("0a" = document 0, sentence a).
TOY = {
    "question": "When should the first prenatal visit take place?",
    "documents_sentences": [
        [
            ["0a", "The first visit should be before week 10."],
            ["0b", "It includes a blood test."],
            ["0c", "The clinic opens at 8 am."],
        ],
        [["1a", "Later visits are monthly."], ["1b", "Parking is free."]],
    ],
    "response_sentences": [["a", "The first visit should be before week 10."], ["b", "It is free of charge."]],
    "all_relevant_sentence_keys": ["0a", "0b", "1a"],
    "all_utilized_sentence_keys": ["0a"],
    "unsupported_response_sentence_keys": ["b"],
}


def _key_set(raw_keys) -> set[str]:
    """The keys normalised; one that names no sentence is refused here (its None could not be
    sorted or joined below)."""
    keys = set()
    for raw in raw_keys:
        key = normalize_key(raw)
        if key is None:
            raise ValueError(f"{raw!r} is not a sentence key such as '0a'")
        keys.add(key)
    return keys


def steps(example: dict) -> pd.DataFrame:
    """Each quantity the four formulas use, and the formulas' results."""
    n = sum(len(doc) for doc in example["documents_sentences"])
    relevant = _key_set(example["all_relevant_sentence_keys"])
    utilized = _key_set(example["all_utilized_sentence_keys"])
    unsupported = _key_set(example["unsupported_response_sentence_keys"])
    scores = trace_scores(
        example["documents_sentences"],
        example["all_relevant_sentence_keys"],
        example["all_utilized_sentence_keys"],
        example["unsupported_response_sentence_keys"],
    )
    rows = [
        ("document sentences |D|", n, ""),
        ("relevant keys |R|", len(relevant), ", ".join(sorted(relevant))),
        ("utilized keys |U|", len(utilized), ", ".join(sorted(utilized))),
        ("relevant and utilized |R ∩ U|", len(relevant & utilized), ", ".join(sorted(relevant & utilized))),
        ("unsupported response sentences", len(unsupported), ", ".join(sorted(unsupported))),
        ("relevance = |R| / |D|", scores.relevance, ""),
        ("utilization = |U| / |D|", scores.utilization, ""),
        ("completeness = |R ∩ U| / |R|", scores.completeness, ""),
        ("adherence = no unsupported sentence", scores.adherence, ""),
    ]
    return pd.DataFrame(rows, columns=["quantity", "value", "keys"])


TOPIC = "04-trace"


def toy_scores():
    """TRACe of the toy example, from its sentence keys (the exercises' answers)."""
    return trace_scores(
        TOY["documents_sentences"],
        TOY["all_relevant_sentence_keys"],
        TOY["all_utilized_sentence_keys"],
        TOY["unsupported_response_sentence_keys"],
    )


exercise(
    "trace-relevance",
    TOPIC,
    "Relevance of the toy example (3 of its 5 document sentences are relevant)?",
    lambda: toy_scores().relevance,
    "|R| / |D| counts sentences of all documents",
)
exercise(
    "trace-completeness",
    TOPIC,
    "Completeness of the toy example?",
    lambda: toy_scores().completeness,
    "of the relevant sentences (0a, 0b, 1a), which were utilized?",
)
exercise(
    "trace-adherence",
    TOPIC,
    "Adherence of the toy example (0 or 1)?",
    lambda: toy_scores().adherence,
    "one response sentence is unsupported",
)


def gold_figure(scores: list, title: str = "RAGBench gold TRACe scores"):
    """The four gold scores of every example (helpers.trace's gold_scores), one histogram each:
    relevance and utilization sit low even for good answers (shares of all document sentences),
    completeness and adherence spread to 1."""
    import matplotlib.pyplot as plt  # matplotlib: loaded only when this runs

    frame = pd.DataFrame([s.as_dict() for s in scores])
    metrics = [m for m in ("relevance", "utilization", "completeness", "adherence") if m in frame]
    fig, axes = plt.subplots(1, len(metrics), figsize=(2.6 * len(metrics), 2.6), sharey=True)
    for ax, metric in zip(axes, metrics):
        values = frame[metric].dropna()
        ax.hist(values, bins=10, range=(0, 1), color="#4c72b0")
        ax.axvline(values.mean(), color="#c44e52", linestyle="--")
        ax.set_title(f"{metric} (mean {values.mean():.2f})", fontsize=9)
        ax.set_xlim(0, 1)
    axes[0].set_ylabel("examples")
    fig.suptitle(f"{title}, {len(frame)} examples", fontsize=10)
    fig.tight_layout()
    return fig
