"""RAGChecker's metrics with an LLM as the claim extractor and checker (the judge `ragchecker_llm`):
the same eleven numbers as the offline judge `ragchecker` (helpers.judges.ragchecker, which
defines them and cites the paper), the claims and their entailment by the configured LLM.

Per answer: two calls extract the claims of the answer and of the reference (JSON `{"claims":
[...]}`), then one call per text checks all of a side's claims against it (JSON `{"supported":
[true, false, ...]}`): the answer's claims against each chunk and the reference, the reference's
against each chunk and the answer, 2 + 2 (k + 1) calls for k chunks, each cached by the LLM layer.
The verdict list's length is part of the JSON schema asked for (a grammar on llama.cpp); a reply with
another number of verdicts than claims is a failure recorded with its reason (NaN), never padded:
the `ragchecker` package pads missing labels with "Neutral" silently
(docs/measurements/ragchecker-package.md).

    judges: {ragchecker_llm: {llm: NAME}}       # NAME: one of the config's llms
"""

from __future__ import annotations

import functools

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, conlist, create_model

from helpers.generation.answer_checks import strip_markers
from helpers.judges.judge_base import Judge, register
from helpers.judges.ragchecker import ClaimChecks, claim_metrics
from helpers.llm.structured import complete_json

EXTRACT = (
    "Split the text below into its factual claims: short sentences that each state one fact and "
    "stand on their own (no pronouns that point outside the claim), in the text's language. A text "
    "that states no fact (it says the information is not available) has no claims.\n\n"
    'Text:\n{text}\n\nReply with JSON only: {{"claims": ["...", "..."]}}'
)
CHECK = (
    "Passage:\n{passage}\n\nFor each numbered claim below, say whether the passage supports it: "
    "true when everything the claim states is in the passage, false otherwise.\n\n{claims}\n\n"
    'Reply with JSON only: {{"supported": [...]}}, exactly {n} booleans, in the claims\' order.'
)


class Claims(BaseModel):
    claims: list[str]


@functools.lru_cache(maxsize=64)
def verdicts_schema(n: int) -> type[BaseModel]:
    """`{"supported": [n booleans]}`: the length is in the JSON schema (minItems = maxItems = n), so a
    backend that constrains its output to the schema (llama.cpp's grammar) cannot give another
    count, and validation refuses one from a backend that does not."""
    return create_model("Verdicts", supported=(conlist(bool, min_length=n, max_length=n), ...))


class ClaimLLMOptions(BaseModel):
    """`judges: {ragchecker_llm: {llm: NAME}}`."""

    model_config = ConfigDict(extra="forbid")
    llm: str = Field(description="name of the LLM (in llms) that extracts and checks the claims")
    max_tokens: int = Field(512, ge=16, description="per call: a claim list or a verdict list")


class ClaimCheckError(RuntimeError):
    """The LLM's reply could not be read as claims or verdicts."""


@register
class LLMClaimChecks(Judge[ClaimLLMOptions]):
    name, label = "ragchecker_llm", "RAGChecker's metrics by an LLM"
    order = 80  # where reports, summaries and panels list it
    uses_llm = True
    Options = ClaimLLMOptions
    metrics = ClaimChecks.metrics
    requires = ClaimChecks.requires

    @classmethod
    def llm_name(cls, config) -> str | None:
        return cls.options_of(config).llm if cls.enabled(config) else None

    @classmethod
    def switch(cls, judges, on, llm=None):
        judges[cls.name] = {"llm": llm} if on else False

    def prepare(self) -> None:
        self.llm = self.context.llm(self.options.llm)
        self.workers = self.llm.workers

    def _ask(self, prompt: str, schema: type[BaseModel]):
        result = complete_json(
            self.llm, [{"role": "user", "content": prompt}], schema, max_tokens=self.options.max_tokens
        )
        if not result.ok:
            raise ClaimCheckError(result.error)
        return result.value

    def claims(self, text: str) -> list[str]:
        return [c.strip() for c in self._ask(EXTRACT.format(text=text), Claims).claims if c.strip()]

    def supported(self, claims: list[str], passage: str) -> np.ndarray:
        """[claim]: does the passage support it (one call for all the claims)."""
        numbered = "\n".join(f"{i}. {claim}" for i, claim in enumerate(claims, 1))
        prompt = CHECK.format(passage=passage, claims=numbered, n=len(claims))
        verdicts = self._ask(prompt, verdicts_schema(len(claims))).supported
        if len(verdicts) != len(claims):
            raise ClaimCheckError(f"{len(verdicts)} verdicts for {len(claims)} claims")
        return np.asarray(verdicts, bool)

    def entails(self, claims: list[str], texts: list[str]) -> np.ndarray:
        """[claim, text], as the offline judge's."""
        if not claims or not texts:
            return np.zeros((len(claims), len(texts)), bool)
        return np.stack([self.supported(claims, text) for text in texts], axis=1)

    def score_one(self, sample):
        with self.llm.track() as calls:
            answer = strip_markers(sample.answer)
            answer_claims, reference_claims = self.claims(answer), self.claims(sample.reference)
            if not answer_claims or not reference_claims:
                reason = "the answer has no claim" if not answer_claims else "the reference has no claim"
                return [(m.name, None, reason) for m in self.metrics], self.llm.usage(calls)
            contexts = list(sample.contexts)
            a_chunks, g_chunks = self.entails(answer_claims, contexts), self.entails(reference_claims, contexts)
            correct = self.entails(answer_claims, [sample.reference])[:, 0]
            recalled = self.entails(reference_claims, [answer])[:, 0]
        values = claim_metrics(correct, recalled, g_chunks, a_chunks)
        reason = f"{len(answer_claims)} answer claims, {len(reference_claims)} reference claims ({self.options.llm})"
        return [(name, value, reason) for name, value in values.items()], self.llm.usage(calls)
