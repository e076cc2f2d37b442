"""TRACe (RAGBench, arXiv:2407.11005) as defined: sentence keys, gold-label scores, pictures, and
the `train-judge` / `judge-eval` commands.

    from helpers.trace import METRICS, trace_scores, aggregate

METRICS is the one definition of the TRACe metric names. The judges that predict TRACe (the
offline trees, the LLM annotator, the evidence model) live in `helpers.judges.models`; intervals
and AUROC come from helpers.inference.classical.
"""

from helpers.trace.scoring import (
    METRICS,
    TraceScores,
    aggregate,
    gold_scores,
    scores_from_probabilities,
    to_json,
    trace_scores,
)
from helpers.trace.sentence_keys import (
    key_document,
    key_documents,
    key_response,
    letters,
    normalize_key,
    parse_keys,
    split_sentences,
)

__all__ = [
    "METRICS",
    "TraceScores",
    "aggregate",
    "gold_scores",
    "key_document",
    "key_documents",
    "key_response",
    "letters",
    "normalize_key",
    "parse_keys",
    "scores_from_probabilities",
    "split_sentences",
    "to_json",
    "trace_scores",
]
