"""How far one text says what another says, without an LLM: the signals the correctness judge
(answer vs reference) and the context-recall judge (reference statement vs contexts) combine.

- `similarity`: cosine under the multilingual e5 (both texts embedded as "query: ", e5's prefix for
  symmetric similarity; Wang et al. 2022, "Text Embeddings by Weakly-Supervised Contrastive
  Pre-training"), citations like "[2]" left out;
- content words (stemmed, accents folded, stop words out: helpers.text.Tokenizer) shared both ways:
  SQuAD's token F1 (Rajpurkar et al. 2016) read as recall and precision;
- numbers: the values each text states ("diez" read as 10, "24,9" as 24.9, "1.000" as 1000).

`logistic(features, weights)` turns a feature row into a probability; each judge keeps its own
fitted weights (and how they were fitted) in its module.
"""

from __future__ import annotations

import math
import re
from functools import cache

import numpy as np

from helpers.generation.answer_checks import strip_markers
from helpers.languages import languages
from helpers.text import Tokenizer

# digits with thousands separators ("1.000", "2,500") or with a decimal part ("24,9"), or plain
_NUMBER = re.compile(r"(?<![\w.,])(\d{1,3}(?:[.,]\d{3})+(?![\d.,]\d)|\d+(?:[.,]\d+)?)(?!\w)")
_THOUSANDS = re.compile(r"\d{1,3}(?:[.,]\d{3})+")
_LETTERS = re.compile(r"[^\W\d_]+")


def numbers(text: str) -> set[float]:
    """The values `text` states: digits ("16", "24,9", "1.000") and number words ("diez")."""
    text = strip_markers(text)
    values = set()
    for match in _NUMBER.finditer(text):
        raw = match[1]
        values.add(float(re.sub(r"[.,]", "", raw)) if _THOUSANDS.fullmatch(raw) else float(raw.replace(",", ".")))
    words = number_words()
    values.update(words[w] for w in _LETTERS.findall(text.lower()) if w in words)
    return values


@cache
def number_words() -> dict[str, int]:
    """Every language's number words (helpers.languages: `Language.number_words`), read together:
    an answer in English to a Spanish reference still states its numbers."""
    return {word: value for language in languages().values() for word, value in language.number_words.items()}


def number_match(answer: str, reference: str, question: str = "") -> float:
    """F1 of the two texts' sets of values; NaN when the reference states none. Values the question
    states are no part of either (issue 59: "¿... entre 16 y 23 puntos?" answered "bueno" against a
    reference that repeats 16 and 23 matched no number)."""
    asked = numbers(question) if question else set()
    wanted, given = numbers(reference) - asked, numbers(answer) - asked
    if not wanted:
        return math.nan
    return 2 * len(wanted & given) / (len(wanted) + len(given))


def logistic(features, weights) -> np.ndarray:
    """sigmoid(bias + w . x) of feature rows; `weights` = (bias, w_1, ..., w_n)."""
    bias, w = weights[0], np.asarray(weights[1:], dtype=float)
    return 1.0 / (1.0 + np.exp(-(bias + np.asarray(features, dtype=float) @ w)))


class ReferenceMatcher:
    """Embeddings (cached per text, helpers.retrieval.embedders) and content words of one language."""

    def __init__(self, language: str = "es", embedder=None):
        self.tokenize = Tokenizer(language)
        self._embedder = embedder

    @property
    def embedder(self):
        if self._embedder is None:
            from helpers.retrieval.embedders.models import CachedEmbedder, build_embedder

            # the multilingual e5 whatever the language: references and answers may mix languages
            self._embedder = CachedEmbedder(build_embedder("e5"))
        return self._embedder

    def unit_vectors(self, texts: list[str]) -> np.ndarray:
        vectors = np.asarray(self.embedder.embed_queries([strip_markers(t).strip() for t in texts]), dtype=float)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    def words(self, texts: list[str]) -> list[set[str]]:
        return [set(tokens) for tokens in self.tokenize([strip_markers(t) for t in texts])]

    @staticmethod
    def shared(wanted: set, given: set) -> float:
        """Share of `wanted` found in `given` (0 when `wanted` is empty)."""
        return len(wanted & given) / len(wanted) if wanted else 0.0

    def pair_features(
        self, answers: list[str], references: list[str], questions: list[str] | None = None
    ) -> np.ndarray:
        """Rows (similarity, word_recall, word_precision, number_match, has_numbers) of answer vs
        reference pairs; number_match 0 and has_numbers 0 when the reference states no number beyond
        the question's (`questions`, where given)."""
        similarity = np.sum(self.unit_vectors(answers) * self.unit_vectors(references), axis=1)
        rows = []
        for answer, reference, question, cosine in zip(
            answers, references, questions or [""] * len(answers), similarity
        ):
            a_words, r_words = self.words([answer, reference])
            match = number_match(answer, reference, question)
            has = not math.isnan(match)
            rows.append(
                (
                    float(cosine),
                    self.shared(r_words, a_words),
                    self.shared(a_words, r_words),
                    match if has else 0.0,
                    float(has),
                )
            )
        return np.asarray(rows, dtype=float).reshape(-1, 5)
