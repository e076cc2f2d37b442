"""Hallucination verdicts from a local GGUF chat model's next-token logits: P(yes) that a response,
or one of its sentences, is supported by the documents, without generating any text.

How a verdict is read: the chat prompt is formatted with the GGUF's own chat template (ending in the
assistant turn's header), evaluated, and the logits of its last position are kept. P(yes) is the
softmax restricted to two token groups, renormalised:

    P(yes) = sum_{t in YES} exp(l_t) / (sum_{t in YES} exp(l_t) + sum_{t in NO} exp(l_t))

YES: "yes", "Yes", "YES", " yes", " Yes"; NO: "no", "No", "NO", " no", " No" (each must be one
token of the model's vocabulary; in Qwen2.5's they are 9693, 9454, 14004, 9834, 7414 and 2152,
2753, 8996, 902, 2308). The spaced forms are included because a model may open its answer with a
space. `LogprobJudge.yes_ids` / `no_ids` hold the ids the loaded model uses.

Why the logits are read from llama.cpp's context, not `Llama.scores`: with logits_all=False
(logits_all=True would hold n_ctx x 151,936 floats, 2.5 GB at 4096 tokens), llama-cpp-python
0.3.x's `eval` never writes `scores` (it stays zeros, and holds only n_batch rows), so
`llama_get_logits_ith(ctx, -1)`, the last evaluated position's logits, is the one source.

Prompts are evaluated through `helpers.local_models.llama_prefix` (whole blocks of the previous prompt are
reused, so a verdict does not depend on which prompts came before). The part prompts share comes
first: system prompt, question and response, then the documents or a claim's evidence, so the
claims of one response (and its response-level prompt) reuse each other's leading blocks.

Claim level: the response is split into sentences (blingfire); each sentence's evidence is its
top 3 document sentences by BM25 (bm25s over the row's own document sentences, stemmed, English
stop words removed: helpers.text.Tokenizer); the response's score is its lowest
claim P(supported). A verdict that fails (a prompt longer than the context, a llama.cpp error) is
NaN with its reason, never an exception.

    judge = LogprobJudge(assemble("qwen2.5-coder-1.5b"))
    judge.response_verdict(question, documents, response)   # 0.93 (judge.last_error: None)
    claims = judge.claim_verdicts(question, documents, response)
    claim_score(claims)                                      # min P(supported) over claims
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np

from helpers.local_models.llama_prefix import block_aligned_llama
from helpers.text import Tokenizer

if TYPE_CHECKING:
    from llama_cpp.llama_types import ChatCompletionRequestMessage

YES_WORDS = ("yes", "Yes", "YES", " yes", " Yes")
NO_WORDS = ("no", "No", "NO", " no", " No")
EVIDENCE_SENTENCES = 3
# bump when a prompt changes: cached verdicts carry it (benchmarks/llm_judge_ragbench.py)
PROMPT_VERSION = 1

SYSTEM_PROMPT = (
    "You are a careful fact checker for retrieval-augmented generation. You decide "
    "whether statements are supported by source passages. A statement is supported "
    "only if the passages state or directly imply it. Answer with one word: yes or no."
)
RESPONSE_QUESTION = "Is every statement in the response supported by the documents above? Answer yes or no."
CLAIM_QUESTION = (
    "Is the claim supported by the evidence? The response above is given only for "
    "context; judge the claim alone. Answer yes or no."
)


def yes_probability(logits, yes_ids, no_ids) -> float:
    """P(yes): the softmax over the yes and no token groups only, each group's probabilities
    summed (computed from the max logit of both groups, so large logits cannot overflow)."""
    logits = np.asarray(logits, dtype=np.float64)
    yes, no = logits[list(yes_ids)], logits[list(no_ids)]
    top = max(yes.max(), no.max())
    p_yes, p_no = np.exp(yes - top).sum(), np.exp(no - top).sum()
    return float(p_yes / (p_yes + p_no))


def split_sentences(text: str) -> list[str]:
    """Sentences of `text` (blingfire), stripped, empty ones dropped."""
    import blingfire

    text = (text or "").strip()
    return [s.strip() for s in blingfire.text_to_sentences(text).split("\n") if s.strip()] if text else []


def select_evidence(
    claims: list[str], sentences: list[str], k: int = EVIDENCE_SENTENCES, tokenizer=None
) -> list[list[str]]:
    """For each claim, its `k` best sentences of `sentences` by BM25 (bm25s defaults, IDF over
    `sentences` themselves), best first; ties keep document order; all of them when there are
    at most `k`. A claim sharing no term with the sentences gets the first `k`."""
    import bm25s

    if not claims or len(sentences) <= k:
        return [list(sentences) for _ in claims]
    tokenizer = tokenizer or Tokenizer("en")
    corpus = tokenizer(sentences)
    if not any(corpus):  # nothing but stop words: no term to rank by
        return [sentences[:k] for _ in claims]
    index = bm25s.BM25()
    index.index(corpus, show_progress=False)
    picked = []
    for terms in tokenizer(claims):
        known = [t for t in terms if t in index.vocab_dict]
        scores = index.get_scores(known) if known else np.zeros(len(sentences))
        best = np.argsort(-np.asarray(scores), kind="stable")[:k]
        picked.append([sentences[i] for i in best])
    return picked


def claim_score(claims: list[dict]) -> float:
    """A response's score from its claims: the lowest P(supported) (one unsupported sentence makes
    a hallucination); NaN when there is no claim or any claim failed (a failed claim could be the
    unsupported one)."""
    values = [c["p_supported"] for c in claims]
    return float(min(values)) if values and not any(math.isnan(v) for v in values) else math.nan


def _shared_part(question: str, response: str) -> str:
    """The start of every user message about one response: the same tokens for its
    response-level and claim prompts, so their leading blocks are evaluated once."""
    return f"Question: {question.strip()}\n\nResponse: {response.strip()}\n\n"


def response_messages(question: str, documents: list[str], response: str) -> list[dict]:
    docs = "\n\n".join(f"Document {i}: {d.strip()}" for i, d in enumerate(documents, 1))
    user = _shared_part(question, response) + f"Documents:\n{docs}\n\n{RESPONSE_QUESTION}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def claim_messages(question: str, response: str, claim: str, evidence: list[str]) -> list[dict]:
    lines = "\n".join(f"- {s}" for s in evidence) or "- (no document text)"
    user = (
        _shared_part(question, response)
        + f"Evidence:\n{lines}\n\nClaim (a sentence of the response): {claim}\n\n{CLAIM_QUESTION}"
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


class LogprobJudge:
    """P(yes) verdicts from one GGUF chat model held in memory (one call at a time).

    threads: llama.cpp threads for prompt evaluation, default every core (prompt evaluation is
    nearly all of a verdict's cost). block: prompt-prefix reuse in whole blocks of this many
    tokens (helpers.local_models.llama_prefix); None evaluates every prompt from an empty context."""

    def __init__(self, path: str | Path, n_ctx: int = 4096, threads: int | None = None, block: int | None = 64):
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        threads = threads or os.cpu_count() or 1
        self.path = Path(path)
        self.model = block_aligned_llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=threads,
            n_threads_batch=threads,
            flash_attn=True,
            verbose=False,
            seed=0,
            block=block,
        )
        eos = self.model.detokenize([self.model.token_eos()], special=True).decode("utf-8")
        # the template adds its own special tokens (Qwen's <|im_start|>): no BOS of our own
        self._format = Jinja2ChatFormatter(
            self.model.metadata["tokenizer.chat_template"], eos_token=eos, bos_token="", add_generation_prompt=True
        )
        self.yes_ids, self.no_ids = self._single_tokens(YES_WORDS), self._single_tokens(NO_WORDS)
        self._bm25_tokenizer = Tokenizer("en")
        self.last_error: str | None = None
        self.tokens_evaluated = self.tokens_reused = 0  # what prefix reuse saved, over all calls

    def _single_tokens(self, words) -> list[int]:
        ids = {w: self.model.tokenize(w.encode("utf-8"), add_bos=False, special=False) for w in words}
        split = [w for w, t in ids.items() if len(t) != 1]
        if split:
            raise ValueError(f"{self.path.name}: {split} are not single tokens; P(yes) needs one-token answers")
        return [t[0] for t in ids.values()]

    def p_yes(self, messages: list[dict]) -> float:
        """P(yes) as the answer's first token after `messages` (raises on failure)."""
        model = self.model
        # the messages are chat turns ({role, content}), what llama_cpp's typed dicts describe
        prompt = self._format(messages=cast("list[ChatCompletionRequestMessage]", messages)).prompt
        tokens = model.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        if len(tokens) > model.n_ctx():
            raise ValueError(f"prompt of {len(tokens)} tokens exceeds n_ctx={model.n_ctx()}")
        # the KV of whole blocks shared with the previous prompt is kept, as for an answer;
        # eval() then starts at n_tokens, in batches of `block` from a block boundary
        self.tokens_reused += model.keep_prefix(tokens)
        self.tokens_evaluated += len(tokens) - model.n_tokens
        model.eval(tokens[model.n_tokens :])
        logits = np.ctypeslib.as_array(model._ctx.get_logits_ith(-1), shape=(model.n_vocab(),))
        return yes_probability(logits, self.yes_ids, self.no_ids)

    def _verdict(self, messages: list[dict]) -> tuple[float, str | None]:
        """(P(yes), None), or (NaN, reason) when the call fails; the KV is then discarded, since
        a half-evaluated prompt must not be reused."""
        try:
            return self.p_yes(messages), None
        except Exception as exc:
            self.model.reset()
            self.model.previous_prompt = 0
            return math.nan, f"{type(exc).__name__}: {exc}"[:300]

    def response_verdict(self, question: str, documents: list[str], response: str) -> float:
        """P(the whole response is supported by the documents); NaN on failure, the reason in
        `last_error` (None after a success)."""
        if not (response or "").strip():
            p, self.last_error = math.nan, "empty response"
        else:
            p, self.last_error = self._verdict(response_messages(question, documents, response))
        return p

    def claim_verdicts(self, question: str, documents: list[str], response: str) -> list[dict]:
        """One dict per response sentence: claim, evidence (its top document sentences by BM25),
        p_supported (NaN on failure) and error (None or the reason). [] for an empty response.
        Sentences without a letter are skipped: blingfire cuts list markers ("2.") off as
        sentences of their own, which state nothing and whose verdict would be noise."""
        claims = [s for s in split_sentences(response) if any(c.isalpha() for c in s)]
        sentences = [s for doc in documents for s in split_sentences(doc)]
        evidence = select_evidence(claims, sentences, tokenizer=self._bm25_tokenizer)
        out = []
        for claim, lines in zip(claims, evidence):
            p, error = self._verdict(claim_messages(question, response, claim, lines))
            out.append({"claim": claim, "evidence": lines, "p_supported": p, "error": error})
        return out
