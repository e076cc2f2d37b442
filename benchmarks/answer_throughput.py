"""Answers per second of the local model, two ways, on the same prompts (issue 62: answers are the
search's cost, so which way should its answer stage use?).

- workers: what the workbench does today, two llama.cpp models of one thread each, each answering
  one prompt at a time from its own thread (helpers.local_models.local_weights.local_layout says why);
- batched: one model on both cores decoding every prompt at once, one sequence per prompt in the
  same batch (llama.cpp's batch API: `llama_batch` with a sequence id per prompt, one `llama_decode`
  a step for all of them), greedy, from the main thread.

Same GGUF, same prompts (RAG prompts built from obstetrics-es: a question and its five BM25
passages, in the model's chat template), greedy, `--max-tokens` each; the answers are compared
token for token (batched decoding may differ in the last bits of the logits).

    python benchmarks/answer_throughput.py [--prompts 8] [--max-tokens 64] [--model qwen2.5-coder-1.5b]

Results: docs/measurements/search.md.
"""

from __future__ import annotations

import argparse
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def prompts(n: int) -> list[str]:
    from helpers.data import load_dataset
    from helpers.retrieval.architectures.sparse import BM25

    data = load_dataset("obstetrics-es", query_split="dev")
    bm25 = BM25(data.language).index(data.corpus)
    out = []
    for qid in sorted(data.queries)[:n]:
        hits = list(bm25.retrieve({qid: data.queries[qid]}, 5)[qid])
        context = "\n\n".join(f"[{i}] {data.corpus[d]['text']}" for i, d in enumerate(hits, 1))
        user = f"Contextos:\n{context}\n\nPregunta: {data.queries[qid]}\nResponde solo con los contextos."
        out.append(f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n")
    return out


def workers(path: str, texts: list[str], max_tokens: int) -> tuple[float, list[list[int]]]:
    from llama_cpp import Llama

    models = [Llama(path, n_ctx=2048, n_threads=1, n_threads_batch=1, verbose=False) for _ in range(2)]
    free = list(models)
    lock = threading.Lock()

    def answer(text: str) -> list[int]:
        with lock:
            model = free.pop()
        try:
            out = model.create_completion(text, max_tokens=max_tokens, temperature=0.0, top_k=1)
            return model.tokenize(out["choices"][0]["text"].encode(), add_bos=False, special=True)
        finally:
            with lock:
                free.append(model)

    started = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(answer, texts))
    return time.perf_counter() - started, answers


def batched(path: str, texts: list[str], max_tokens: int) -> tuple[float, list[list[int]]]:
    import llama_cpp as L
    from llama_cpp import Llama

    n = len(texts)
    model = Llama(path, n_ctx=512, n_threads=2, verbose=False)  # the weights and the tokenizer
    params = L.llama_context_default_params()  # a context of its own: one sequence per prompt
    params.n_ctx, params.n_batch, params.n_ubatch, params.n_seq_max = 2048 * n, 512, 512, n
    params.n_threads = params.n_threads_batch = 2
    params.kv_unified = True
    ctx = L.llama_init_from_model(model._model.model, params)
    vocab = L.llama_model_get_vocab(model._model.model)
    n_vocab, eos = L.llama_vocab_n_tokens(vocab), L.llama_vocab_eos(vocab)
    eot = L.llama_vocab_eot(vocab)
    tokens = [model.tokenize(t.encode(), add_bos=True, special=True) for t in texts]
    batch = L.llama_batch_init(512, 0, n)

    def decode(items: list[tuple[int, int, int, bool]]) -> None:
        """items: (token, position, sequence, wants logits), in chunks the batch holds."""
        for start in range(0, len(items), 512):
            chunk = items[start : start + 512]
            batch.n_tokens = len(chunk)
            for i, (token, pos, seq, logits) in enumerate(chunk):
                batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, pos, 1
                batch.seq_id[i][0], batch.logits[i] = seq, logits
            if L.llama_decode(ctx, batch) != 0:
                raise RuntimeError("llama_decode failed")

    started = time.perf_counter()
    L.llama_memory_clear(L.llama_get_memory(ctx), True)
    answers: list[list[int]] = [[] for _ in texts]
    # the prompts, one sequence each, in chunks of the batch's size, all but their last tokens; then
    # every prompt's last token in one decode, so that each sequence's logits are in its result
    decode([(t, p, s, False) for s, toks in enumerate(tokens) for p, t in enumerate(toks[:-1])])
    last = [(toks[-1], len(toks) - 1, s, True) for s, toks in enumerate(tokens)]
    decode(last)
    rows = {s: i for i, (_, _, s, _) in enumerate(last)}  # sequence -> its row of logits
    lengths = [len(t) for t in tokens]
    alive = list(range(n))
    for _ in range(max_tokens):
        step = []
        for s in alive:
            logits = np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, rows[s]), shape=(n_vocab,))
            token = int(np.argmax(logits))
            if token in (eos, eot):
                continue
            answers[s].append(token)
            step.append((token, lengths[s], s, True))
            lengths[s] += 1
        alive = [s for _, _, s, _ in step]
        if not step:
            break
        decode(step)
        rows = {s: i for i, (_, _, s, _) in enumerate(step)}
    seconds = time.perf_counter() - started
    L.llama_batch_free(batch)
    L.llama_free(ctx)
    return seconds, answers


def main() -> None:
    from helpers.local_models.local_weights import resolve_local_model

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    args = parser.parse_args()
    path = resolve_local_model(args.model)
    texts = prompts(args.prompts)
    results = {}
    for name, way in (("two one-thread workers", workers), ("one model, every prompt in one batch", batched)):
        seconds, answers = way(path, texts, args.max_tokens)
        results[name] = (seconds, answers)
        print(
            f"{name}: {len(texts)} answers in {seconds:.1f} s, {len(texts) / seconds:.3f} answers/s, "
            f"{sum(map(len, answers)) / seconds:.1f} generated tokens/s"
        )
    (a, first), (b, second) = results.values()
    same = sum(x == y for x, y in zip(first, second))
    print(
        f"batched / workers: {a / b:.2f}x the answers per second; {same} of {len(texts)} answers token for token the same"
    )


if __name__ == "__main__":
    main()
