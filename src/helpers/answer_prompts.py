"""The answer prompts, by name: the generation side's one pluggable setting.

    generation: {prompt: quote-then-answer}                 # a registered prompt
    generation: {prompt: {system: "...", user: "... {contexts} ... {question} ..."}}   # your own

A prompt has a system and a user text per language (Spanish, and English for every other
language), the stop sequences that end an answer, and the phrases with which it tells the model to
say the documents do not hold the answer (the refusal metric reads them, per language and per
prompt). `extract` keeps what the user is shown when a prompt asks for more than the answer (the
quote of `quote-then-answer`). The registry's error lists the valid names.

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
from helpers.text import fold_accents
from helpers.text import words as text_words

_NO_ANSWER = {
    "es": "No encuentro la respuesta en los documentos proporcionados.",
    "en": "I cannot find the answer in the provided documents.",
}
_CITE = {
    "es": (
        "Eres un asistente clínico que responde preguntas usando solo los contextos "
        "numerados que se te dan. Responde en español con una o dos frases completas que den "
        "el dato pedido, y cita al final de cada frase el número del contexto que la respalda "
        "entre corchetes, por ejemplo: «Se recomienda ... [2].» Si los contextos no contienen "
        'la respuesta, responde: "No encuentro la respuesta en los documentos '
        'proporcionados." No inventes datos.'
    ),
    "en": (
        "You are an assistant that answers questions using only the numbered contexts "
        "given to you. Answer in English with one or two complete sentences that give what "
        "is asked, and end each sentence with the number of the context that supports it in "
        'square brackets, e.g.: "It is recommended ... [2]." If the contexts do not contain '
        'the answer, reply: "I cannot find the answer in the provided documents." Do not '
        "make anything up."
    ),
}
# cite-sentences: full sentences, each ending with its citation. An earlier wording ("breve y
# precisa; cita los contextos con su número") made Qwen2.5-Coder-1.5B answer "[1]" alone (q3) or a
# bare "30 minutos" (q4); with this one, none of 6 BM25 answers tried was a bare citation or figure.
# Stops: a small model that has answered goes on with the prompt's own pattern (a new
# "Pregunta: ... Respuesta:" exchange or another context block); the answer ends before the
# prompt's labels reappear. At most 4 per prompt (OpenAI's and Groq's limit).
_CONTEXTS_FIRST = {
    "es": "Contextos:\n{contexts}\n\nPregunta: {question}\nRespuesta:",
    "en": "Contexts:\n{contexts}\n\nQuestion: {question}\nAnswer:",
}
_STOPS = {"es": ["\nPregunta:", "\nContextos:"], "en": ["\nQuestion:", "\nContexts:"]}
_NO_CONTEXT = {"es": "(no se recuperó ningún contexto)", "en": "(no context was retrieved)"}


@dataclass(frozen=True)
class AnswerPrompt:
    """One answer prompt: texts per language ('es', 'en'); `user` has {contexts} and {question}."""

    name: str
    system: dict[str, str]
    user: dict[str, str]
    stop: dict[str, list[str]] = field(default_factory=lambda: dict(_STOPS))
    refusals: dict[str, list[str]] = field(default_factory=dict)  # what "not in the documents" looks like
    answer_label: dict[str, str] = field(default_factory=dict)  # the answer follows this label, if any
    description: str = ""

    def texts(self, language: str) -> dict:
        lang = prompt_language(language)
        return {
            "system": self.system[lang],
            "user": self.user[lang],
            "no_context": _NO_CONTEXT[lang],
            "stop": list(self.stop.get(lang, [])),
        }

    def extract(self, text: str, language: str) -> tuple[str, str | None]:
        """(the answer shown and judged, what came before it) from the model's whole output."""
        label = self.answer_label.get(prompt_language(language))
        if label and label in text:
            before, after = text.rsplit(label, 1)
            return after.strip(), before.strip() or None
        return text.strip(), None

    def resolved(self) -> dict:
        """What a run's resolved config keeps: the name and every text the model was sent."""
        return {"name": self.name, "system": dict(self.system), "user": dict(self.user), "stop": dict(self.stop)}


PROMPT_LANGUAGES = tuple(_NO_ANSWER)  # the languages the prompts are written in


def prompt_language(language: str | None) -> str:
    """'es' for Spanish corpora, 'en' for every other language (`prompt_fallback` says so)."""
    return "es" if (language or "").lower().startswith("es") else "en"


def prompt_fallback(language: str | None) -> str | None:
    """A corpus language without prompts of its own: what it gets instead, to record and print
    ("prompts in English for fr: the prompts exist in es, en"); None when it has its own."""
    used = prompt_language(language)
    if not language or language.lower().startswith(used):
        return None
    return f"prompts in English for {language}: the prompts exist in {', '.join(PROMPT_LANGUAGES)}"


_REFUSALS = {lang: [text] for lang, text in _NO_ANSWER.items()}

ANSWER_PROMPTS: dict[str, AnswerPrompt] = {}


def register(prompt: AnswerPrompt) -> AnswerPrompt:
    ANSWER_PROMPTS[prompt.name] = prompt
    return prompt


register(
    AnswerPrompt(
        "cite-sentences",
        system=_CITE,
        user=_CONTEXTS_FIRST,
        refusals=_REFUSALS,
        description="one or two full sentences, each ending with the context that supports it (the default)",
    )
)
register(
    AnswerPrompt(
        "quote-then-answer",
        system={
            "es": _CITE["es"]
            + " Primero copia, palabra por palabra, la frase de un contexto que responde a ESTA pregunta "
            '(no otra que comparta sus palabras), así: «Cita: "..." [n]». Después escribe «Respuesta:» '
            "y responde a partir de esa frase.",
            "en": _CITE["en"] + " First copy, word for word, the sentence of a context that answers THIS question (not "
            'another that shares its words), as: Quote: "..." [n]. Then write "Answer:" and answer '
            "from that sentence.",
        },
        user={
            "es": "Contextos:\n{contexts}\n\nPregunta: {question}\nCita:",
            "en": "Contexts:\n{contexts}\n\nQuestion: {question}\nQuote:",
        },
        refusals=_REFUSALS,
        answer_label={"es": "Respuesta:", "en": "Answer:"},
        description="quote the sentence that answers this question, then answer from it (the quote is kept apart)",
    )
)
register(
    AnswerPrompt(
        "question-first",
        system=_CITE,
        user={
            "es": "Pregunta: {question}\n\nContextos:\n{contexts}\n\nResponde a la pregunta: {question}\nRespuesta:",
            "en": "Question: {question}\n\nContexts:\n{contexts}\n\nAnswer the question: {question}\nAnswer:",
        },
        refusals=_REFUSALS,
        description="the question before the contexts, and again after them",
    )
)
register(
    AnswerPrompt(
        "say-no-se",
        system={
            "es": _CITE["es"].replace(
                'Si los contextos no contienen la respuesta, responde: "No encuentro la respuesta en los '
                'documentos proporcionados."',
                'Si ningún contexto responde a esta pregunta, responde solo: "No sé."',
            ),
            "en": _CITE["en"].replace(
                'If the contexts do not contain the answer, reply: "I cannot find the answer in the '
                'provided documents."',
                'If no context answers this question, reply only: "I don\'t know."',
            ),
        },
        user=_CONTEXTS_FIRST,
        refusals={"es": ["No sé", "No lo sé"], "en": ["I don't know", "I do not know"]},
        description='"No sé" when no context answers the question, instead of a guess',
    )
)


def custom_prompt(system: str, user: str, *, name: str = "custom") -> AnswerPrompt:
    """A prompt from a config's {system, user}: the same texts for every language."""
    missing = [slot for slot in ("{contexts}", "{question}") if slot not in user]
    if missing:
        raise UserError(
            f"generation.prompt.user: it must contain {' and '.join(missing)} (where the contexts and the question go)"
        )
    return AnswerPrompt(
        name,
        system={"es": system, "en": system},
        user={"es": user, "en": user},
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


def is_refusal(answer: str | None, prompt: AnswerPrompt, language: str) -> bool:
    """Does `answer` say the documents do not hold the answer, in the words `prompt` asked for (or
    any registered prompt's, in `language`): matched on words, case- and accent-insensitive."""
    if not answer:
        return False

    def words(text: str) -> str:
        return " ".join(text_words(fold_accents(text)))

    lang = prompt_language(language)
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
