"""Cheap checks of a generated answer's form: repetition loops and invented follow-up questions.

    from helpers.generation.answer_checks import check_answer
    check_answer("Diez citas [1]. Pregunta: ¿Y después? Respuesta: ...")
    # {'repeated_4gram_share': 0.0, 'loop': None, 'invents_question': True}

These are symptoms of a small model decoding greedily without a repeat penalty or stop
sequences (see helpers.llm.llm_settings); they say nothing about whether an answer is right.
Words are lower-cased runs of letters and digits (`\\w+`, so citations like [1] count as "1").
"""

from __future__ import annotations

import re
from collections import Counter

from helpers.text import words

# A sentence ends at . ! ? or a line break (the Spanish ¿ ¡ open one and stay in it)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# List numbers at a line's start ("2. ", "3) ") and citations ("[1]", "[2, 3]")
_MARKERS = re.compile(r"^[ \t]*\d+[.)][ \t]*|\[\d+(?:[,;\s]*\d+)*\]", re.MULTILINE)
# A question/answer label starting a line or following a sentence's end: "Pregunta:",
# "Question 2:", "Respuesta:", "Answer:". The answer prompt ends with the answer label, so any
# such label after the answer's first character starts a new, invented exchange.
_LABEL = re.compile(
    r"(?:^|(?<=[.!?)\]»\"]))[ \t]*(?:pregunta|question|respuesta|answer)[ \t]*\d*[ \t]*:", re.IGNORECASE | re.MULTILINE
)


def strip_markers(text: str) -> str:
    """`text` without citations ("[1]", "[2, 3]") and list numbers at a line's start."""
    return _MARKERS.sub(" ", text or "")


def repeated_ngram_share(text: str, n: int = 4) -> float:
    """Share of the answer's word n-grams that repeat an earlier one: 1 - unique / total, the
    seq-rep-n of Welleck et al. 2019 ("Neural text generation with unlikelihood training").
    0.0 for text without repetition (or shorter than n words); a phrase looping k times in an
    otherwise fresh text approaches (k - 1) / k."""
    tokens = words(text)
    grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    if not grams:
        return 0.0
    return 1.0 - len(set(grams)) / len(grams)


def loop_phrase(
    text: str, *, n: int = 5, min_repeats: int = 3, long_n: int = 10, min_sentence_words: int = 4
) -> str | None:
    """The phrase the answer loops on, or None. A loop is any of: a sentence of
    `min_sentence_words` words or more that occurs twice; a span of `long_n` words (default 10)
    that occurs twice; a phrase of `n` words (default 5) that occurs `min_repeats` times or more.
    Plain prose almost never repeats a sentence, a 10-word span or a 5-word phrase three times; a
    degenerate greedy decode does all three. List numbers and citations are left out first, so
    "1. IMC pre-gestacional 2. IMC pre-gestacional ..." still counts (other numbers stay: "IMC
    entre 20 y 24,9" and "IMC entre 25 y 29,9" are different items)."""
    text = _MARKERS.sub(" ", text)
    sentences = Counter(" ".join(words(s)) for s in _SENTENCE_END.split(text))
    for sentence, count in sentences.most_common():
        if count < 2:
            break
        if len(sentence.split()) >= min_sentence_words:
            return sentence
    tokens = words(text)
    for size, needed in ((long_n, 2), (n, min_repeats)):
        grams = Counter(" ".join(tokens[i : i + size]) for i in range(len(tokens) - size + 1))
        if grams:
            phrase, count = grams.most_common(1)[0]
            if count >= needed:
                return phrase
    return None


def invents_question(text: str) -> bool:
    """True when the answer goes on into a new question/answer exchange of its own: a
    "Pregunta:"/"Question:"/"Respuesta:"/"Answer:" label at a line or sentence start anywhere
    after the answer's beginning (a label at the very start only echoes the prompt's own)."""
    body = text.strip()
    return any(match.start() > 0 for match in _LABEL.finditer(body))


def check_answer(text: str) -> dict:
    """All the checks of one answer."""
    return {
        "repeated_4gram_share": repeated_ngram_share(text, 4),
        "loop": loop_phrase(text),
        "invents_question": invents_question(text),
    }
