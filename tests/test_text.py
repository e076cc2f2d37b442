"""One word splitter for the package (issue 37): helpers.text holds every definition of a word,
and the modules that split words use it."""

import ast
from pathlib import Path

from helpers.text import WORD, Tokenizer, fold_accents, number_and_stem_tokens, words

SRC = Path(__file__).resolve().parents[1] / "src" / "helpers"


def test_words_are_lowercased_runs_of_letters_and_digits():
    assert words("¿Cuántas visitas? Diez [1], 2ª_vez.") == ["cuántas", "visitas", "diez", "1", "2ª_vez"]
    assert [m.group() for m in WORD.finditer("a b-c")] == ["a", "b", "c"]


def test_number_and_stem_tokens_fold_accents_and_normalise_numbers():
    assert number_and_stem_tokens("Cuántas 1,000 visitas; 3.5 kg.", 5) == ["cuant", "1000", "visit", "3.5", "kg"]
    assert number_and_stem_tokens("", 6) == [] and number_and_stem_tokens(None, 6) == []


def test_tokenizer_stems_and_drops_stop_words():
    assert Tokenizer("es")(["¿Cuándo son las visitas prenatales?"]) == [
        ["visit", "prenatal"]
    ]  # cuándo, son, las: stop words
    assert fold_accents("Cuál niño") == "Cual nino"


def test_no_module_compiles_its_own_word_pattern():
    """A regex of bare words (\\w+) compiled outside helpers.text is a second definition."""
    offenders = []
    for path in SRC.rglob("*.py"):
        if path.name == "text.py" and path.parent == SRC:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in (r"\w+", r"\d+(?:[.,]\d+)*|[^\W\d_]+"):
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert offenders == [], f"use helpers.text.words / WORD instead: {offenders}"
