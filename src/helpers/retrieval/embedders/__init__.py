"""Text embedders for dense retrieval and RAGAS: the bundled offline models and hub models
(`models`: one interface, a persistent embedding cache, embedding on Ray), and multilingual-e5-small
rebuilt as a trainable transformers model (`helpers.local_models.e5_torch`)."""
