"""The languages, by ISO 639-1 code: one `Language` object each (fields: helpers.languages.language).

    from helpers.languages import corpus_language, get_language
    get_language("es").hyde          # Spanish's HyDE prompt
    get_language("fr").fallback      # 'prompts in English for fr: the prompts exist in es, en'
    get_language("xx")               # UserError naming the valid codes
    corpus_language("ca")            # a detected language no stemmer covers: English's texts, no stemming

A language with texts of its own is one module of this package named by its code (es.py, en.py)
defining `LANGUAGE = Language(...)`: found by being here (pkgutil), no list to edit. The languages
PyStemmer and bm25s cover without a module (STEMMED) get a fallback object: English's texts with
their own stemmer, stop words and embedder, and the note that says so, which a run records
(summary.json `prompt_fallback`), logs and reports.

Codes are read in lower case and without a region ('es-CO' is Spanish).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import replace
from functools import cache

from helpers.errors import UserError
from helpers.languages.language import AnswerTexts, Language

__all__ = [
    "FALLBACK",
    "MULTILINGUAL_EMBEDDER",
    "AnswerTexts",
    "Language",
    "corpus_language",
    "get_language",
    "languages",
    "prompt_languages",
]

FALLBACK = "en"  # the language whose texts every other language gets
MULTILINGUAL_EMBEDDER = "e5"  # a fallback's embedder: MiniLM, English's, is English-only

# ISO code -> (PyStemmer's Snowball stemmer, bm25s's stop-word list): the languages both libraries
# cover that no module here writes texts for (a module of that code replaces its entry)
STEMMED = {
    "fr": ("french", "FRENCH"),
    "de": ("german", "GERMAN"),
    "it": ("italian", "ITALIAN"),
    "pt": ("portuguese", "PORTUGUESE"),
    "nl": ("dutch", "DUTCH"),
    "da": ("danish", "DANISH"),
    "sv": ("swedish", "SWEDISH"),
    "no": ("norwegian", "NORWEGIAN"),
    "ru": ("russian", "RUSSIAN"),
    "tr": ("turkish", "TURKISH"),
}


def _code(code: str) -> str:
    """'es-CO', 'ES', 'pt_BR' -> 'es', 'es', 'pt'."""
    return str(code).strip().lower().replace("_", "-").split("-")[0]


@cache
def _modules() -> dict[str, Language]:
    """{code: Language} of this package's language modules, English last: it is the one the others
    fall back to (the note lists the languages in this order: 'es, en')."""
    found = {}
    for module in pkgutil.iter_modules(__path__):
        language = getattr(importlib.import_module(f"{__name__}.{module.name}"), "LANGUAGE", None)
        if language is None:  # the `language` module (the Language class): not a language
            continue
        if language.code != module.name:
            raise ValueError(
                f"{__name__}.{module.name} defines the language {language.code!r}: name the module by its code"
            )
        found[language.code] = language
    return {code: found[code] for code in sorted(found, key=lambda code: (code == FALLBACK, code))}


def prompt_languages() -> tuple[str, ...]:
    """The codes of the languages with texts of their own ('es', 'en')."""
    return tuple(_modules())


def _fallback(code: str, name: str, stemmer: str | None, stop_words: str | None) -> Language:
    """English's texts for a language without its own, recorded. Its chars_per_token stays English's
    (what a French run's contexts were cut with before languages were objects: another ratio would
    send other texts, and miss the cached answers)."""
    return replace(
        _modules()[FALLBACK],
        code=code,
        name=name,
        stemmer=stemmer,
        stop_words=stop_words,
        embedder=MULTILINGUAL_EMBEDDER,
        prompts_from=FALLBACK,
        fallback=_note(code),
    )


def _note(code: str) -> str:
    """What a run says of a language without texts of its own, naming the code as it was given."""
    return f"prompts in English for {code}: the prompts exist in {', '.join(prompt_languages())}"


@cache
def languages() -> dict[str, Language]:
    """Every registered language by code: the modules' (English last), then STEMMED's fallbacks."""
    registry = dict(_modules())
    for code, (stemmer, stop_words) in STEMMED.items():
        registry.setdefault(code, _fallback(code, stemmer, stemmer, stop_words))
    return registry


def get_language(code: str) -> Language:
    """The language of an ISO 639-1 code: its module's object, or a STEMMED language's fallback; a
    code neither knows is a UserError naming the valid codes."""
    registry = languages()
    language = registry.get(_code(code))
    if language is None:
        raise UserError(f"unknown language {code!r}; valid codes: {', '.join(registry)}")
    return language


@cache
def corpus_language(code: str | None) -> Language:
    """The language of a corpus, never an error: get_language's object, English for no code, and for
    a code no module or stemmer covers (the ingest's detector names 97 languages), English's texts
    with no stemming and no stop words, recorded as a fallback: such a corpus still runs."""
    if not code:
        return _modules()[FALLBACK]
    try:
        language = get_language(code)
    except UserError:
        language = _fallback(_code(code), _code(code), None, None)
    if language.fallback and code != language.code:  # 'fr-CA': the note names the code the run was given
        language = replace(language, fallback=_note(code))
    return language


_IDENTIFIER: list = []  # py3langid's identifier, loaded on the first `detect`


def detect(texts: list[str], max_chars: int = 20000) -> dict:
    """The language of `texts` by py3langid (its model ships inside the package; 97 languages),
    from an even sample of them: {"code": ISO 639-1, "probability"}. The one detector of the
    package: ingestion, helpers.evaluate and RAGAS's language check all call it (issue 63)."""
    if not _IDENTIFIER:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier  # a model file: loaded on first use

        _IDENTIFIER.append(LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True))
    step = max(1, len(texts) // 50)
    sample = " ".join(texts[::step])[:max_chars]
    code, probability = _IDENTIFIER[0].classify(sample)
    return {"code": code, "probability": round(float(probability), 4)}


def _clear() -> None:
    """Forget what was found (a test that adds a language module)."""
    for cached in (_modules, languages, corpus_language):
        cached.cache_clear()
