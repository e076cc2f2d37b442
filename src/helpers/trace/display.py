"""Pictures of TRACe: an example's sentences highlighted as relevant / utilized / unsupported (HTML),
and the judge comparison as bars (AUROC and RMSE per subset and judge)."""

from __future__ import annotations

import html
import math

import numpy as np

from helpers.figures import plt
from helpers.trace.scoring import gold_scores
from helpers.trace.sentence_keys import normalize_key

COLOURS = {"relevant": "#fff3b0", "utilized": "#b7e4c7", "unsupported": "#f4a6a6", "supported": "#e8f1fb"}


def _legend() -> str:
    items = [
        ("relevant (not utilized)", COLOURS["relevant"]),
        ("relevant/utilized", COLOURS["utilized"]),
        ("unsupported response sentence", COLOURS["unsupported"]),
    ]
    return " ".join(f'<span style="background:{c};padding:0 4px">{html.escape(t)}</span>' for t, c in items)


def example_html(
    question: str,
    documents_sentences,
    response_sentences,
    relevant_keys=(),
    utilized_keys=(),
    unsupported_keys=(),
    scores=None,
    title: str = "",
) -> str:
    """HTML of one example: documents with relevant sentences in yellow and utilized ones in green,
    the response with unsupported sentences in red, and the TRACe scores when given."""
    relevant = {normalize_key(k) for k in relevant_keys}
    utilized = {normalize_key(k) for k in utilized_keys}
    unsupported = {normalize_key(k) for k in unsupported_keys}
    parts = ["<div style='font-family:sans-serif;font-size:13px;max-width:900px'>"]
    if title:
        parts.append(f"<h4>{html.escape(title)}</h4>")
    parts.append(f"<p><b>Question:</b> {html.escape(question)}</p><p>{_legend()}</p>")
    for i, doc in enumerate(documents_sentences):
        spans = []
        for key, sentence in doc:
            colour = COLOURS["utilized"] if key in utilized else COLOURS["relevant"] if key in relevant else None
            style = f"background:{colour}" if colour else ""
            spans.append(
                f'<span style="{style}" title="{html.escape(key)}"><sup>{html.escape(key)}</sup>'
                f"{html.escape(sentence)}</span>"
            )
        parts.append(f"<p><b>Document {i}:</b> " + " ".join(spans) + "</p>")
    spans = []
    for key, sentence in response_sentences:
        colour = COLOURS["unsupported"] if key in unsupported else COLOURS["supported"]
        spans.append(f'<span style="background:{colour}"><sup>{html.escape(key)}</sup>{html.escape(sentence)}</span>')
    parts.append("<p><b>Response:</b> " + " ".join(spans) + "</p>")
    if scores is not None:
        s = scores if isinstance(scores, dict) else scores.as_dict()
        cells = " · ".join(
            f"{m} = {s[m]:.3f}"
            for m in ("relevance", "utilization", "completeness", "adherence")
            if s.get(m) is not None and not math.isnan(s[m])
        )
        parts.append(f"<p><b>TRACe:</b> {cells}</p>")
    parts.append("</div>")
    return "".join(parts)


def judgement_html(question: str, documents_sentences, response_sentences, judgement, title: str = "") -> str:
    """HTML of an offline-judge prediction (keys thresholded at 0.5)."""
    keys = judgement.keys()
    return example_html(
        question,
        documents_sentences,
        response_sentences,
        keys["all_relevant_sentence_keys"],
        keys["all_utilized_sentence_keys"],
        keys["unsupported_response_sentence_keys"],
        judgement.scores,
        title,
    )


def gold_html(row, title: str = "") -> str:
    return example_html(
        row["question"],
        row["documents_sentences"],
        row["response_sentences"],
        row["all_relevant_sentence_keys"],
        row["all_utilized_sentence_keys"],
        row["unsupported_response_sentence_keys"],
        gold_scores(row),
        title,
    )


def judge_comparison_figure(table, metrics=("auroc", "rmse_relevance", "rmse_utilization", "rmse_completeness")):
    """Grouped bars: one panel per metric, subsets on x, one bar per judge. `table`: the frame of
    `helpers.judges.judge_eval.result_frame`."""
    subsets = list(dict.fromkeys(table["subset"]))
    judges = list(dict.fromkeys(table["judge"]))
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.6), squeeze=False)
    width = 0.8 / max(len(judges), 1)
    cmap = plt.get_cmap("tab10")
    for ax, metric in zip(axes[0], metrics):
        for j, judge in enumerate(judges):
            values = [table[(table.subset == s) & (table.judge == judge)][metric].astype(float).mean() for s in subsets]
            ax.bar(
                np.arange(len(subsets)) + j * width - 0.4 + width / 2,
                np.nan_to_num(values, nan=0.0),
                width,
                label=judge,
                color=cmap(j),
            )
        ax.set_xticks(range(len(subsets)), subsets, rotation=30, ha="right")
        ax.set_title(metric.replace("_", " ") + (" (↑)" if metric == "auroc" else " (↓)"))
        if metric == "auroc":
            ax.axhline(0.5, color="grey", lw=0.8, ls="--")
            ax.set_ylim(0.3, 1.0)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.tight_layout()
    fig.legend(handles, labels, loc="lower center", ncol=len(judges), fontsize=8, bbox_to_anchor=(0.5, 1.0))
    return fig
