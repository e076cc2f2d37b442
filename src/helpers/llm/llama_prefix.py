"""Prompt-prefix reuse for llama.cpp that never changes an answer.

llama-cpp-python keeps the KV cache of a model's previous prompt and, on the next call,
evaluates only the tokens after the longest prefix the two prompts share. That changed greedy
answers here (6 of 8 identical with flash attention, benchmarks/llm_engine.py), because a
token's numbers depend on the batch it was evaluated in: the reused prefix had been computed in
batches cut at other places than a prompt evaluated from an empty context would be.

The fix: prompts are evaluated in blocks of `block` tokens (n_batch = n_ubatch = block) cut at
multiples of `block` from position 0, and a call reuses only whole blocks, the ones that lie in
the prefix it shares with the previous *prompt* (the generated tokens were computed one by one).
Every block is then computed from the same tokens, the same earlier KV and the same batch
boundaries as from an empty context, so the answer is the same bit for bit whichever prompts the
model answered before (checked in tests/test_llama_prefix.py and benchmarks/llm_engine.py). RAGAS's
prompts, which share long instructions, gain most.
"""

from __future__ import annotations

from collections.abc import Sequence

DEFAULT_BLOCK = 512  # llama-cpp-python's own n_batch: the engine before prefix reuse


def reusable_prefix(previous: Sequence[int], tokens: Sequence[int], previous_prompt: int, block: int) -> int:
    """How many leading tokens of `tokens` can keep their KV: the prefix shared with `previous`
    (the model's evaluated tokens), cut to the previous prompt's length (`previous_prompt`),
    leaving at least one token to evaluate (its logits give the first sample), rounded down to a
    multiple of `block`."""
    if block < 1:
        raise ValueError(f"block must be a positive number of tokens, not {block}")
    limit = min(len(previous), previous_prompt, len(tokens) - 1)
    common = 0
    while common < limit and previous[common] == tokens[common]:
        common += 1
    return common // block * block


def block_aligned_llama(**kwargs):
    """A llama_cpp.Llama (keyword arguments as Llama's, plus `block`, default 512) that reuses
    only whole blocks of the previous prompt (module docstring). block=None: no reuse at all,
    every call from an empty context, in llama-cpp-python's default batches."""
    from llama_cpp import Llama

    class BlockAlignedLlama(Llama):
        def __init__(self, *, block: int | None = DEFAULT_BLOCK, **kw):
            size = block or DEFAULT_BLOCK
            super().__init__(n_batch=size, n_ubatch=size, **kw)
            self.block, self.previous_prompt, self.reused_tokens = block, 0, 0

        def keep_prefix(self, tokens) -> int:
            """Keep the KV of the whole blocks `tokens` shares with the previous prompt (none when
            block is None) and record `tokens` as the new previous prompt; the tokens kept. An
            evaluation of `tokens` then starts at n_tokens, on a block boundary."""
            if self.block is None:
                self.n_tokens = 0
            else:
                self.n_tokens = reusable_prefix(
                    self.input_ids[: self.n_tokens], tokens, self.previous_prompt, self.block
                )
            self.reused_tokens, self.previous_prompt = self.n_tokens, len(tokens)
            return self.n_tokens

        def generate(self, tokens, *args, **kw):
            tokens = list(tokens)
            self.keep_prefix(tokens)  # llama-cpp-python then matches no further than n_tokens
            return super().generate(tokens, *args, **kw)

    return BlockAlignedLlama(**kwargs)
