"""Retrieval measured on labelled queries: nDCG, recall and MRR with ranx's definitions (`metrics`), quality and
latency per architecture (`evaluate`), the hybrid's fusion chosen on held-out queries
(`fusion_tuning`), and tables and plots of the results (`report`)."""
