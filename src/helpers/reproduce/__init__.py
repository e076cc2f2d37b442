"""Reproductions of published tables and figures, side by side with ours:

- ragbench_paper: RAGBench's (arXiv:2407.11005) judge table recomputed from the shipped judge
  columns, beside the printed numbers (each with its source) and why they differ;
- ragbench_label_stats: label statistics per subset (hallucination rate, score distributions) beside
  the paper's §3.3 and Table 1;
- seed_chunks: the seed obstetrics benchmark's own chunks against ours, on the same questions.
"""

from helpers.reproduce.ragbench_paper import PAPER_SOURCE, paper_table, recompute, side_by_side

__all__ = ["PAPER_SOURCE", "paper_table", "recompute", "side_by_side"]
