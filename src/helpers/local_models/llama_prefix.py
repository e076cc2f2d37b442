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
model answered before (checked in tests/local_models/test_llama_prefix.py and benchmarks/llm_engine.py). RAGAS's
prompts, which share long instructions, gain most.

A `PromptStore` extends the reuse from the model's previous prompt to every prompt the models of
one pool answered: the KV of each prompt is kept (its sequence state, about 28 KB a token for the
1.5B model), and a call starts from the one that shares the most whole blocks with it. In the
default run the six architectures' prompts for one question share their system text and often
their first contexts, but are answered 10 prompts apart (architecture by architecture), so the
previous prompt alone shares only the system text (benchmarks/prompt_store.py measures both).
A restored state holds the same bits as the blocks computed in place, so answers stay the same.
"""

from __future__ import annotations

import ctypes
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

DEFAULT_BLOCK = 512  # llama-cpp-python's own n_batch: the engine before prefix reuse

# Token ids as a list, or as the array llama_cpp keeps them in (Llama.input_ids)
Tokens = Sequence[int] | np.ndarray


def reusable_prefix(previous: Tokens, tokens: Tokens, previous_prompt: int, block: int) -> int:
    """How many leading tokens of `tokens` can keep their KV: the prefix shared with `previous`
    (the model's evaluated tokens), cut to the previous prompt's length (`previous_prompt`),
    leaving at least one token to evaluate (its logits give the first sample), rounded down to a
    multiple of `block`."""
    if block < 1:
        raise ValueError(f"block must be a positive number of tokens, not {block}")
    common = shared_prefix(np.asarray(previous[:previous_prompt]), np.asarray(tokens))
    return whole_blocks(common, len(tokens), block)


def whole_blocks(common: int, n_tokens: int, block: int) -> int:
    """Of `common` shared leading tokens of an `n_tokens` prompt, those in whole blocks, one token
    at least left to evaluate."""
    return max(min(common, n_tokens - 1), 0) // block * block


def shared_prefix(a: np.ndarray, b: np.ndarray) -> int:
    """The number of leading tokens `a` and `b` share."""
    n = min(len(a), len(b))
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if len(differ) else n


class PromptStore:
    """The KV states of earlier prompts (whole blocks only), for the models of one pool, least
    recently used first out once they pass `budget_mb`. Thread-safe: each model serves one call
    at a time, but a pool's models run side by side."""

    def __init__(self, budget_mb: float = 1024):
        if budget_mb < 0:
            raise ValueError(f"prompt_store_mb must be 0 or more megabytes, not {budget_mb}")
        self.budget = int(budget_mb * 2**20)
        self._entries: OrderedDict[bytes, tuple[np.ndarray, bytes]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def best(self, tokens: Tokens, block: int) -> tuple[int, bytes | None]:
        """(tokens reusable, the state holding them): the most whole blocks of `tokens` any stored
        prompt shares, leaving one token to evaluate; (0, None) when none shares a block."""
        wanted = np.asarray(tokens, dtype=np.int64)
        best, state = 0, None
        with self._lock:
            for key, (prompt, blob) in self._entries.items():
                n = whole_blocks(shared_prefix(prompt, wanted), len(wanted), block)
                if n > best:
                    best, state, hit = n, blob, key
            if state is not None:
                self._entries.move_to_end(hit)
        return best, state

    def add(self, prompt: Tokens, blob: bytes) -> None:
        """Keep `blob`, the state after `prompt` (whole blocks of it are what a later call reuses)."""
        if len(blob) > self.budget:
            return
        ids = np.asarray(prompt, dtype=np.int64)
        key = ids.tobytes()
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return
            self._entries[key] = (ids, blob)
            self._bytes += len(blob)
            while self._bytes > self.budget:
                _, (_, old) = self._entries.popitem(last=False)
                self._bytes -= len(old)


def block_aligned_llama(**kwargs):
    """A llama_cpp.Llama (keyword arguments as Llama's, plus `block`, default 512, and `store`, a
    PromptStore shared with the pool's other models, default none) that reuses only whole blocks
    of the previous prompt, or of a stored one (module docstring). block=None: no reuse at all,
    every call from an empty context, in llama-cpp-python's default batches."""
    import llama_cpp
    from llama_cpp import Llama

    class BlockAlignedLlama(Llama):
        def __init__(self, *, block: int | None = DEFAULT_BLOCK, store: PromptStore | None = None, **kw):
            size = block or DEFAULT_BLOCK
            super().__init__(n_batch=size, n_ubatch=size, **kw)
            self.block, self.previous_prompt, self.reused_tokens = block, 0, 0
            self.store = store if block is not None else None

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
                if self.store is not None:
                    stored, blob = self.store.best(tokens, self.block)
                    if stored > self.n_tokens and blob is not None:  # best() gives a blob when stored > 0
                        self._restore(blob, tokens[:stored])
            self.reused_tokens, self.previous_prompt = self.n_tokens, len(tokens)
            return self.n_tokens

        def _restore(self, blob: bytes, tokens: list) -> None:
            """Load a stored prompt's KV and keep its first len(tokens) positions."""
            self._ctx.kv_cache_clear()
            buffer = (ctypes.c_uint8 * len(blob)).from_buffer_copy(blob)
            if not llama_cpp.llama_state_seq_set_data(self._ctx.ctx, buffer, len(blob), 0):
                self.n_tokens = 0  # not loaded: the prompt is evaluated whole, as from an empty context
                return
            self._ctx.kv_cache_seq_rm(0, len(tokens), -1)
            self.input_ids[: len(tokens)] = tokens
            self.n_tokens = len(tokens)

        def remember_prompt(self) -> None:
            """Store the KV of the prompt just answered (the whole of it; a later call keeps only
            its whole blocks). Called after a call, when the KV holds the prompt and the answer."""
            if self.store is None or self.block is None:  # no store without blocks (__init__)
                return
            self._ctx.kv_cache_seq_rm(0, self.previous_prompt, -1)  # the answer's tokens: never reused
            self.n_tokens = min(self.n_tokens, self.previous_prompt)  # what the KV holds of the prompt
            if self.n_tokens < self.block:
                return
            size = llama_cpp.llama_state_seq_get_size(self._ctx.ctx, 0)
            buffer = (ctypes.c_uint8 * size)()
            written = llama_cpp.llama_state_seq_get_data(self._ctx.ctx, buffer, size, 0)
            if written:
                self.store.add(self.input_ids[: self.n_tokens], ctypes.string_at(buffer, written))

        def generate(self, tokens, *args, **kw):
            tokens = list(tokens)
            self.keep_prefix(tokens)  # llama-cpp-python then matches no further than n_tokens
            return super().generate(tokens, *args, **kw)

    return BlockAlignedLlama(**kwargs)
