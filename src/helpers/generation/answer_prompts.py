"""The answer prompts, by name: the generation side's one pluggable setting.

    generation: {prompt: quote-then-answer}                 # a registered prompt
    generation: {prompt: {system: "...", user: "... {contexts} ... {question} ..."}}   # your own

A prompt has a system and a user text per language, the stop sequences that end an answer, and the
phrases with which it tells the model to say the documents do not hold the answer (the refusal
metric reads them, per language and per prompt); the texts are the languages' (helpers.languages:
Spanish and English; every other language gets English's, and the run says so). `extract` keeps
what the user is shown when a prompt asks for more than the answer (the quote of
`quote-then-answer`). The registry's error lists the valid names.

Why these four (issue 36; the hand labels of the 1.5B model's 60 answers, docs/measurements/
answers-labelled-by-hand.md): it copies the first "Se recomienda ..." sentence that shares the
question's words, even when that sentence answers another question. `quote-then-answer` makes it
choose the sentence for *this* question first; `question-first` puts the question where a small
model reads it before the contexts; `say-no-se` asks for a short "No sé" instead of a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from helpers.errors import UserError
from helpers.languages import corpus_language, get_language, prompt_languages
from helpers.text import fold_accents
from helpers.text import words as text_words

# every prompt's texts, stops and refusal phrases are the languages' (helpers.languages); the
# prompts are registered below by name, with one text per language that has its own
_STOPS = {code: list(get_language(code).answer_stops) for code in prompt_languages()}
_REFUSALS = {code: [get_language(code).no_answer] for code in prompt_languages()}


@dataclass(frozen=True)
class AnswerPrompt:
    """One answer prompt: texts per language code (helpers.languages.prompt_languages: 'es', 'en');
    `user` has {contexts} and {question}."""

    name: str
    system: dict[str, str]
    user: dict[str, str]
    stop: dict[str, list[str]] = field(default_factory=lambda: dict(_STOPS))
    refusals: dict[str, list[str]] = field(default_factory=dict)  # what "not in the documents" looks like
    answer_label: dict[str, str] = field(default_factory=dict)  # the answer follows this label, if any
    description: str = ""

    def texts(self, language: str) -> dict:
        lang = corpus_language(language).prompt_code
        return {
            "system": self.system[lang],
            "user": self.user[lang],
            "no_context": get_language(lang).no_context,
            "stop": list(self.stop.get(lang, [])),
        }

    def extract(self, text: str, language: str) -> tuple[str, str | None]:
        """(the answer shown and judged, what came before it) from the model's whole output."""
        label = self.answer_label.get(corpus_language(language).prompt_code)
        if label and label in text:
            before, after = text.rsplit(label, 1)
            return after.strip(), before.strip() or None
        return text.strip(), None

    def resolved(self) -> dict:
        """What a run's resolved config keeps: the name and every text the model was sent."""
        return {"name": self.name, "system": dict(self.system), "user": dict(self.user), "stop": dict(self.stop)}


ANSWER_PROMPTS: dict[str, AnswerPrompt] = {}


def register(prompt: AnswerPrompt) -> AnswerPrompt:
    ANSWER_PROMPTS[prompt.name] = prompt
    return prompt


# What each prompt is for (its texts, per language, are helpers.languages'); reports list them in this order
DESCRIPTIONS = {
    "cite-sentences": "one or two full sentences, each ending with the context that supports it (the default)",
    "quote-then-answer": "quote the sentence that answers this question, then answer from it (the quote is kept apart)",
    "question-first": "the question before the contexts, and again after them",
    "say-no-se": '"No sé" when no context answers the question, instead of a guess',
}


def _from_languages(name: str, description: str) -> AnswerPrompt:
    """The registered prompt `name` with the texts of every language that has its own."""
    texts = {code: get_language(code).answer_prompts[name] for code in prompt_languages()}
    return AnswerPrompt(
        name,
        system={code: t.system for code, t in texts.items()},
        user={code: t.user for code, t in texts.items()},
        refusals={code: list(t.refusals) for code, t in texts.items()},
        answer_label={code: t.answer_label for code, t in texts.items() if t.answer_label},
        description=description,
    )


for _name, _description in DESCRIPTIONS.items():
    register(_from_languages(_name, _description))


def custom_prompt(system: str, user: str, *, name: str = "custom") -> AnswerPrompt:
    """A prompt from a config's {system, user}: the same texts for every language."""
    missing = [slot for slot in ("{contexts}", "{question}") if slot not in user]
    if missing:
        raise UserError(
            f"generation.prompt.user: it must contain {' and '.join(missing)} (where the contexts and the question go)"
        )
    return AnswerPrompt(
        name,
        system=dict.fromkeys(prompt_languages(), system),
        user=dict.fromkeys(prompt_languages(), user),
        refusals={lang: list(v) for lang, v in _REFUSALS.items()},
    )


def get_prompt(spec: str | dict | AnswerPrompt | None = None) -> AnswerPrompt:
    """A prompt by name (None: cite-sentences), from {system, user}, or as it is."""
    if isinstance(spec, AnswerPrompt):
        return spec
    if spec is None:
        return ANSWER_PROMPTS["cite-sentences"]
    if isinstance(spec, dict):
        unknown = set(spec) - {"system", "user", "name"}
        if unknown or not {"system", "user"} <= set(spec):
            raise UserError(
                "generation.prompt: give a registered name or {system: TEXT, user: TEXT}; got keys " + str(sorted(spec))
            )
        return custom_prompt(spec["system"], spec["user"], name=spec.get("name", "custom"))
    if spec not in ANSWER_PROMPTS:
        raise UserError(f"unknown answer prompt {spec!r}; valid names: {sorted(ANSWER_PROMPTS)}")
    return ANSWER_PROMPTS[spec]


def refusal_reader(generation, language: str):
    """answer -> whether it refuses, in the words of a run's answer prompt and the language its
    answers were asked in: `generation` a config's GenerationConfig (None: the default prompt) and
    its language, else `language` (the corpus's)."""
    prompt = get_prompt(generation.prompt if generation is not None else None)
    asked_in = (generation.language if generation is not None else None) or language
    return lambda answer: is_refusal(answer, prompt, asked_in)


def is_refusal(answer: str | None, prompt: AnswerPrompt, language: str) -> bool:
    """Does `answer` say the documents do not hold the answer, in the words `prompt` asked for (or
    any registered prompt's, in `language`): matched on words, case- and accent-insensitive."""
    if not answer:
        return False

    def words(text: str) -> str:
        return " ".join(text_words(fold_accents(text)))

    lang = corpus_language(language).prompt_code
    phrases = set(prompt.refusals.get(lang, []))
    for other in ANSWER_PROMPTS.values():
        phrases.update(other.refusals.get(lang, []))
    sentences = [words(s) for s in re.split(r"(?<=[.!?])\s+|\n+", answer) if words(s)]
    for phrase in filter(None, map(words, phrases)):
        # a short phrase ("no se") must be a whole sentence: "No se recomienda ..." is an answer
        long_enough = len(phrase.split()) >= 4
        if any(s == phrase or (long_enough and s.startswith(phrase)) for s in sentences):
            return True
    return False
