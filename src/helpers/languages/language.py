"""`Language`: everything the package writes, matches or measures differently by language, in one
object (one per language: helpers.languages.es, helpers.languages.en; the registry is
helpers.languages).

Why one object: these texts and settings were spread over ten modules (answer prompts, the token
budget, BM25, HyDE and multi-query, the test-set writer, chat, RAGAS, the judges); a new language
meant finding every table. Now it is one module filling every field below, which
tests/languages/test_languages.py checks (every text filled, with English's placeholders).

Every text is kept byte for byte as it was written: the LLM response cache keys on the prompts, and
a config with a non-default answer prompt keeps the prompts' texts in its run id.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

MAX_UNANSWERED_WORDS = 15  # a longer reference answers something, whatever its first words


def _folded_words(text: str) -> str:
    """'¿No está en la guía?' -> 'no esta en la guia': lower case, accents and punctuation dropped
    (helpers.text's words and fold_accents, which read this package, so not imported here)."""
    folded = "".join(c for c in unicodedata.normalize("NFKD", text.lower()) if not unicodedata.combining(c))
    return " ".join("".join(c if c.isalnum() or c == "_" else " " for c in folded).split())


@dataclass(frozen=True)
class AnswerTexts:
    """One answer prompt (helpers.generation.answer_prompts registers it by name) in one language."""

    system: str
    user: str  # has {contexts} (the numbered contexts) and {question}
    # how this prompt has the model say the documents do not hold the answer (the refusal metric
    # matches them on words, helpers.generation.answer_prompts.is_refusal)
    refusals: tuple[str, ...]
    answer_label: str = ""  # the answer follows this label (what comes before is kept apart); "": none


@dataclass(frozen=True)
class Language:
    """One language. The text fields are format strings where they say so (their placeholders are
    English's: tests/languages/test_languages.py compares them)."""

    code: str  # ISO 639-1, lower case: the module's name ("es")
    name: str  # in English, lower case ("spanish"): RAGAS's prompt language
    # ---- retrieval
    stemmer: str | None  # PyStemmer's Snowball algorithm for BM25 (helpers.text.Tokenizer); None: no stemming
    stop_words: str | None  # the bm25s list, bm25s.stopwords.STOPWORDS_<stop_words>; None: none
    embedder: str  # the embedder (helpers.retrieval.embedders.models.EMBEDDERS) when a config names none
    # characters per token of the corpus's text, the generation's context budget (helpers.generation.answering)
    chars_per_token: float
    # ---- answers (helpers.generation.answer_prompts, helpers.generation.answering)
    no_answer: str  # the sentence the answer prompts ask for when no context holds the answer
    answer_prompts: dict[str, AnswerTexts]  # every prompt helpers.generation.answer_prompts registers, by name
    # where an answer ends: the prompt's own labels, which a small model that has answered writes again
    # to start another exchange (at most 4: OpenAI's and Groq's limit)
    answer_stops: tuple[str, ...]
    no_context: str  # what the prompt holds instead of contexts when none was retrieved
    # ---- query rewriting (helpers.retrieval.architectures.composed)
    hyde: str  # HyDE: write a passage that answers {query}
    multi_query: str  # multi-query: rewrite {query} in {n} ways, one per line
    # ---- chat (helpers.explore.chat)
    # the condense-question prompt: {history} and the follow-up {question} -> a standalone question; its
    # last line is the label the model's reply may repeat (removed from the reply)
    condense: str
    speakers: tuple[str, str]  # (user, assistant) in the history the condense prompt shows
    # ---- the test-set writer (helpers.testsets.writer), JSON replies: system (no placeholder); single and
    # unanswerable ({passages}); two ({passage_a}, {passage_b}); check ({passages}, {question})
    testset: dict[str, str]
    not_in_documents: str  # an unanswerable question's reference answer
    # a reference that says the documents do not answer the question ("The documents do not say."), as
    # a regex matched at the start of its words, lower case and without accents or punctuation
    # (`says_unanswered`): such a question is unanswerable, and a refusal is its right answer
    unanswered_reference: str
    # ---- judges
    # a judge LLM refusing to judge, as regex alternatives (helpers.ragas_eval.ragas_scoring: an output that
    # is a refusal, not a parse failure); matched case-insensitively after a word boundary
    judge_refusal: str
    # the evidence model's negation negatives (helpers.judges.models.evidence_pairs.perturb), regexes
    # with one group, the verb: `negatable` finds a verb to negate, `negate` negates it ("{} not",
    # "no {}"), and `negated` finds one already negated (the negative then drops the negation)
    negatable: str
    negated: str
    negate: str
    # RAGAS's prompts (helpers.ragas_eval.prompts), by role: (a sentence added to the instruction,
    # one few-shot example's input fields, its output fields). Empty: RAGAS's English prompts as
    # they are (English, and every language that gets English's texts)
    ragas: dict[str, tuple[str, dict, dict]] = field(default_factory=dict)
    # number words up to a hundred and their values, those that are counts far more often than articles
    # ("una valoración": un, una, one are left out); correctness's number_match reads every language's
    # (answers and references may mix languages). Empty: digits only
    number_words: dict[str, int] = field(default_factory=dict)
    # a response saying the context lacks the answer ("does not mention", "no hay información"), as
    # regex alternatives matched case-insensitively between word boundaries: the offline TRACe judge's
    # `abstains` feature reads every language's (helpers.judges.models.trace_features). Empty: none
    abstention: str = ""
    # ---- set by the registry (helpers.languages), never in a language's module
    prompts_from: str = ""  # the code of the language whose texts these are, when not its own
    fallback: str | None = None  # that fallback as the run says it (summary.json `prompt_fallback`)

    def says_unanswered(self, reference: str | None) -> bool:
        """Whether a reference answer says the documents do not answer its question: one short
        sentence (at most MAX_UNANSWERED_WORDS words) matching `unanswered_reference`, or the
        language's own "not in the documents" sentences (`not_in_documents`, `no_answer`, every
        answer prompt's refusals). "Not in the first trimester" is an answer, not a refusal."""
        words = _folded_words(reference or "")
        if not words or len(words.split()) > MAX_UNANSWERED_WORDS:
            return False
        own = {self.not_in_documents, self.no_answer, *(r for t in self.answer_prompts.values() for r in t.refusals)}
        return words in map(_folded_words, own) or re.match(self.unanswered_reference, words) is not None

    def unanswered(self, reference: str | None, marked: bool = False) -> tuple[bool, str | None]:
        """(unanswerable, reference): a question is unanswerable when `marked` so (a questions file's
        `answerable: false`) or its reference says so (`says_unanswered`); such a question without a
        reference gets `not_in_documents`, so the correctness judge scores it. One rule for a run's
        datasets and for answers judged outside a run."""
        unanswerable = marked or self.says_unanswered(reference)
        return unanswerable, reference or (self.not_in_documents if unanswerable else None)

    @property
    def prompt_code(self) -> str:
        """The language the texts are written in: this one's code, or the fallback's ("en")."""
        return self.prompts_from or self.code
