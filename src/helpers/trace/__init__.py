"""TRACe (RAGBench, arXiv:2407.11005): sentence keys, gold-label scores, and judges that predict them.

    from helpers.trace import trace_scores, aggregate, OfflineJudge
"""
from helpers.trace.keys import (key_document, key_documents, key_response, letters, normalize_key,
                                parse_keys, split_sentences)
from helpers.trace.scoring import (METRICS, TraceScores, aggregate, bootstrap_ci, gold_scores,
                                   scores_from_probabilities, to_json, trace_scores)

__all__ = ["METRICS", "TraceScores", "aggregate", "bootstrap_ci", "gold_scores", "key_document",
           "key_documents", "key_response", "letters", "normalize_key", "parse_keys",
           "scores_from_probabilities", "split_sentences", "to_json", "trace_scores"]
