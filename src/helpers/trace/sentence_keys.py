"""Sentence keys as RAGBench (Friel et al. 2024, arXiv:2407.11005) uses them, and a splitter for new text.

Document sentences are keyed `<document index><letters>` ('0a', '0b', ..., '1a'), response
sentences `<letters>` ('a', 'b', ...). Past 26 sentences the letters continue in bijective base 26,
as in the shipped data: ..., 'z', 'aa', 'ab', ..., 'az', 'ba', ... (expertqa has '0tz', '0ua').
Annotator keys are sometimes malformed ('0b.', ' 1C ', '1as, 1av', 'supported_without_sentence');
`parse_keys` normalises what it can and reports the rest instead of failing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import blingfire

_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_KEY = re.compile(r"^(\d*)([a-z]+)$")
_LINE_BREAK = re.compile(r"\n\s*")


def letters(index: int) -> str:
    """0 -> 'a', 25 -> 'z', 26 -> 'aa', 27 -> 'ab', 701 -> 'zz', 702 -> 'aaa' (bijective base 26)."""
    if index < 0:
        raise ValueError(f"sentence index must be >= 0, got {index}")
    out, n = "", index + 1
    while n:
        n, rest = divmod(n - 1, 26)
        out = _LETTERS[rest] + out
    return out


def letters_index(text: str) -> int:
    """Inverse of `letters`: 'a' -> 0, 'aa' -> 26."""
    n = 0
    for char in text:
        n = n * 26 + _LETTERS.index(char) + 1
    return n - 1


def document_key(document_index: int, sentence_index: int) -> str:
    return f"{document_index}{letters(sentence_index)}"


def response_key(sentence_index: int) -> str:
    return letters(sentence_index)


def normalize_key(raw) -> str | None:
    """'0b.' -> '0b', ' 1C ' -> '1c', "'2a'" -> '2a'; None when nothing key-like remains."""
    if raw is None:
        return None
    text = str(raw).strip().lower().strip(" .,;:'\"()[]")
    return text if _KEY.match(text) else None


@dataclass
class ParsedKeys:
    keys: list[str] = field(default_factory=list)  # normalised, valid, first-seen order, unique
    invalid: list[str] = field(default_factory=list)  # raw entries that name no sentence


def parse_keys(raw_keys, valid_keys=None) -> ParsedKeys:
    """Normalise a list (or a comma-separated string) of keys; keys not in `valid_keys` (when
    given) or not key-like are reported in `.invalid`. Comma-joined entries ('1as, 1av') are split."""
    if raw_keys is None:
        raw_keys = []
    if isinstance(raw_keys, str):
        raw_keys = [raw_keys]
    valid = set(valid_keys) if valid_keys is not None else None
    parsed = ParsedKeys()
    for raw in raw_keys:
        for piece in str(raw).split(","):
            key = normalize_key(piece)
            if key is None or (valid is not None and key not in valid):
                parsed.invalid.append(str(raw))
            elif key not in parsed.keys:
                parsed.keys.append(key)
    return parsed


def split_sentences(text: str) -> list[str]:
    """Sentences of `text`, any length, English or Spanish (blingfire handles '¿…?', '¡…!' and
    abbreviations). Line breaks are boundaries too ('Title: …' / 'Passage: …' lines)."""
    sentences: list = []
    for line in _LINE_BREAK.split(text or ""):
        if not line.strip():
            continue
        _, offsets = blingfire.text_to_sentences_and_offsets(line)
        sentences.extend(line[a:b].strip() for a, b in offsets if line[a:b].strip())
    return sentences


def key_document(text: str, document_index: int) -> list[list[str]]:
    """[[key, sentence], ...] for one document, as in RAGBench's `documents_sentences`."""
    return [[document_key(document_index, i), s] for i, s in enumerate(split_sentences(text))]


def key_documents(documents: list[str]) -> list[list[list[str]]]:
    return [key_document(text, i) for i, text in enumerate(documents)]


def key_response(text: str) -> list[list[str]]:
    """[[key, sentence], ...] for a response, as in RAGBench's `response_sentences`."""
    return [[response_key(i), s] for i, s in enumerate(split_sentences(text))]


def as_documents_sentences(documents) -> list[list[list[str]]]:
    """Accept either raw document texts or already keyed documents_sentences."""
    documents = list(documents or [])
    if documents and not isinstance(documents[0], str):
        return [[[str(k), str(s)] for k, s in doc] for doc in documents]
    return key_documents(documents)


def as_response_sentences(response) -> list[list[str]]:
    if isinstance(response, str):
        return key_response(response)
    return [[str(k), str(s)] for k, s in (response or [])]


def all_keys(documents_sentences) -> list[str]:
    return [str(k) for doc in documents_sentences for k, _ in doc]
