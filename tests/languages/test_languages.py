"""A language is one object (issue 47): every registered language fills every field, with English's
placeholders; a language without texts of its own gets English's and says so; an unknown code is a
UserError naming the valid ones; and a new language is one module, found by being there."""

import dataclasses
import importlib
import re
import string
import sys

import pytest

import helpers.languages as registry
from helpers.errors import UserError
from helpers.languages import Language, corpus_language, get_language, languages, prompt_languages
from helpers.languages.en import LANGUAGE as ENGLISH

STEMMED_CODES = ("fr", "de", "it", "pt", "nl", "da", "sv", "no", "ru", "tr")
FALLBACK_NOTE = "prompts in English for fr: the prompts exist in es, en"
SET_BY_THE_REGISTRY = {"prompts_from", "fallback"}
OPTIONAL = {"ragas"}  # empty: RAGAS's own English prompts


def placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def format_strings(language: Language) -> dict[str, str]:
    """Every text of `language` that is formatted, by where it is."""
    texts = {"hyde": language.hyde, "multi_query": language.multi_query, "condense": language.condense}
    texts["negate"] = language.negate
    for name, prompt in language.answer_prompts.items():
        texts[f"answer_prompts.{name}.system"] = prompt.system
        texts[f"answer_prompts.{name}.user"] = prompt.user
    texts.update({f"testset.{kind}": text for kind, text in language.testset.items()})
    return texts


@pytest.mark.parametrize("code", list(languages()))
def test_every_language_fills_every_field_with_englishs_placeholders(code):
    import bm25s
    import Stemmer

    language = get_language(code)
    assert language.code == code
    for field in dataclasses.fields(Language):
        if field.name in SET_BY_THE_REGISTRY | OPTIONAL:
            continue
        value = getattr(language, field.name)
        assert value, f"{code}: {field.name} is empty"
        if isinstance(value, (tuple, list)):
            assert all(value), f"{code}: {field.name} has an empty entry"
    assert language.stemmer in Stemmer.algorithms()
    assert getattr(bm25s.stopwords, f"STOPWORDS_{language.stop_words}")
    assert language.chars_per_token > 0 and len(language.speakers) == 2 and len(language.answer_stops) <= 4
    # the same prompts, texts and labels as English's, each with the same placeholders
    assert set(language.answer_prompts) == set(ENGLISH.answer_prompts)
    assert set(language.testset) == set(ENGLISH.testset)
    english, own = format_strings(ENGLISH), format_strings(language)
    assert set(own) == set(english)
    for where, text in own.items():
        assert text.strip(), f"{code}: {where} is empty"
        assert placeholders(text) == placeholders(english[where]), f"{code}: {where}"
    for name, prompt in language.answer_prompts.items():
        assert prompt.refusals and all(prompt.refusals), f"{code}: {name} has no refusal phrase"
        assert bool(prompt.answer_label) == bool(ENGLISH.answer_prompts[name].answer_label)
    assert language.condense.rsplit("\n", 1)[-1].endswith(":")  # the label chat removes from a reply
    for pattern in (language.negatable, language.negated):
        assert re.compile(pattern).groups == 1
    re.compile(language.judge_refusal)
    if language.ragas:  # the roles Spanish adjusts, each (instruction, example input, example output)
        assert set(language.ragas) == set(get_language("es").ragas)
        assert all(
            sentence and example_in and example_out for sentence, example_in, example_out in language.ragas.values()
        )


def test_a_language_without_a_module_gets_englishs_texts_and_says_so():
    french = get_language("fr")
    assert french.fallback == FALLBACK_NOTE
    assert (french.prompt_code, french.stemmer, french.stop_words, french.embedder) == ("en", "french", "FRENCH", "e5")
    assert format_strings(french) == format_strings(ENGLISH)
    assert (french.no_answer, french.no_context, french.not_in_documents) == (
        ENGLISH.no_answer,
        ENGLISH.no_context,
        ENGLISH.not_in_documents,
    )
    # what a French run has always had: English's budget ratio, so its contexts (and cached answers) stay
    assert french.chars_per_token == ENGLISH.chars_per_token
    assert prompt_languages() == ("es", "en")
    assert set(languages()) == {"es", "en", *STEMMED_CODES}  # the 12 the BM25 tokeniser covers
    assert all(get_language(code).fallback is None for code in prompt_languages())
    assert get_language("ES") is get_language("es-CO") is get_language("es")  # case and region ignored


def test_an_unknown_code_is_an_error_naming_the_valid_ones():
    with pytest.raises(UserError) as raised:
        get_language("xx")
    assert str(raised.value) == "unknown language 'xx'; valid codes: es, en, fr, de, it, pt, nl, da, sv, no, ru, tr"


def test_a_corpus_in_any_language_still_runs():
    """The ingest's detector names 97 languages: one no stemmer covers gets English's texts, no
    stemming and no stop words, and the same note as a stemmed one (the code as it was given)."""
    from helpers.text import Tokenizer

    catalan = corpus_language("ca")
    assert (catalan.stemmer, catalan.stop_words, catalan.prompt_code) == (None, None, "en")
    assert catalan.fallback == "prompts in English for ca: the prompts exist in es, en"
    assert corpus_language("fr-CA").fallback == "prompts in English for fr-CA: the prompts exist in es, en"
    assert corpus_language(None) is corpus_language("") is get_language("en")
    assert Tokenizer("ca")(["Les cases grans"]) == [["les", "cases", "grans"]]


LANGUAGE_MODULE = '''"""Italian, with texts of its own: in a test, English's under another code."""

import dataclasses

from helpers.languages.en import LANGUAGE as ENGLISH

LANGUAGE = dataclasses.replace(ENGLISH, code="it", name="italian", stemmer="italian", stop_words="ITALIAN")
'''


@pytest.fixture
def language_folder(tmp_path, monkeypatch):
    """A second folder of the helpers.languages package, where a test writes a language module; the
    registry forgets it afterwards."""
    monkeypatch.setattr(registry, "__path__", [*registry.__path__, str(tmp_path)])
    registry._clear()
    yield tmp_path
    monkeypatch.undo()
    for name in [m for m in sys.modules if m.startswith("helpers.languages.") and m.split(".")[-1] in ("it", "xy")]:
        del sys.modules[name]
    registry._clear()


def test_a_language_module_registers_by_being_a_file(language_folder):
    """Adding a language is one file `helpers/languages/<code>.py`: no list to edit. Italian, a
    fallback until then, becomes a language with its own texts, and the others' note names it."""
    assert get_language("it").fallback is not None
    registry._clear()
    (language_folder / "it.py").write_text(LANGUAGE_MODULE, encoding="utf-8")
    importlib.invalidate_caches()  # the import system saw the folder empty
    assert get_language("it").fallback is None and get_language("it").stemmer == "italian"
    assert prompt_languages() == ("es", "it", "en")  # English last: the one the others fall back to
    assert get_language("fr").fallback == "prompts in English for fr: the prompts exist in es, it, en"


def test_a_module_named_for_another_code_is_refused(language_folder):
    (language_folder / "xy.py").write_text(LANGUAGE_MODULE, encoding="utf-8")
    importlib.invalidate_caches()
    with pytest.raises(ValueError, match=r"helpers\.languages\.xy defines the language 'it': name the module"):
        languages()
