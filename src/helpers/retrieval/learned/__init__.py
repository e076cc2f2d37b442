"""Second-stage scorers for `Rerank` and how they are trained: the scorer protocol and its
implementations (`scorers`), the offline learning-to-rank reranker's features and training
(`features`, `ltr_training`), and the cross-encoder fine-tuned on CPU (its settings and training
pairs `cross_encoder_data`, the training `cross_encoder_training`)."""
