"""TRACe (RAGBench, arXiv:2407.11005): sentence keys, gold-label scores, and judges that predict them.

    from helpers.trace import METRICS, trace_scores, aggregate
    from helpers.trace.offline_judge import OfflineJudge

METRICS is the one definition of the TRACe metric names. Intervals and AUROC come from
helpers.stats.
"""

from helpers.trace.keys import (
    key_document,
    key_documents,
    key_response,
    letters,
    normalize_key,
    parse_keys,
    split_sentences,
)
from helpers.trace.scoring import (
    METRICS,
    TraceScores,
    aggregate,
    gold_scores,
    scores_from_probabilities,
    to_json,
    trace_scores,
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
