"""Split text into overlapping chunks that keep exact character spans.

Written here rather than using LangChain's RecursiveCharacterTextSplitter because that splitter
does not return spans under overlap, and every chunk must map back to its pages and section.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import blingfire

from helpers.errors import UserError

_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Span:
    start: int
    end: int


def sentence_spans(text: str) -> list[Span]:
    """Sentence spans of `text` (blingfire: rule-based, handles Spanish ¿…? and abbreviations)."""
    _, offsets = blingfire.text_to_sentences_and_offsets(text)
    return [Span(start, end) for start, end in offsets if text[start:end].strip()]


def _word_windows(text: str, span: Span, size: int) -> list[Span]:
    """Cut a span longer than `size` at word boundaries (a single word longer than size is cut)."""
    pieces, start = [], span.start
    for match in _WORD.finditer(text, span.start, span.end):
        if match.end() - start > size and match.start() > start:
            pieces.append(Span(start, _rstrip(text, start, match.start())))
            start = match.start()
        while match.end() - start > size:  # one enormous token
            pieces.append(Span(start, start + size))
            start += size
    if start < span.end:
        # trailing spaces after the last word may take a piece past `size` (a real PDF's dot-leader
        # table of contents did): they are dropped then, so that no unit is longer than a chunk
        end = span.end if span.end - start <= size else _rstrip(text, start, span.end)
        pieces.append(Span(start, min(end, start + size)))
    return pieces


def _rstrip(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


def chunk_spans(text: str, *, size: int = 500, overlap: int = 100, boundary: str = "sentence") -> list[Span]:
    """Chunk spans of at most `size` characters; consecutive chunks share at most `overlap`.

    boundary="sentence" packs whole sentences (a sentence longer than `size` is cut at words) and
    starts each next chunk at the earliest sentence of the previous one that fits in `overlap`;
    boundary="word" slides a window of `size` characters by `size - overlap`, cut at words.
    Defaults match the seed benchmark (500 characters, 100 overlap).
    """
    if size <= 0:
        raise UserError(f"chunk_size must be > 0, got {size}")
    if not 0 <= overlap < size:
        raise UserError(f"chunk_overlap must be in [0, size={size}), got {overlap}")
    if boundary not in {"sentence", "word"}:
        raise UserError(f"boundary must be 'sentence' or 'word', got {boundary!r}")
    if not text.strip():
        return []
    if boundary == "word":
        units = [Span(m.start(), m.end()) for m in _WORD.finditer(text)]
    else:
        units = [piece for s in sentence_spans(text) for piece in _word_windows(text, s, size)]
    chunks: list[Span] = []
    i = 0
    while i < len(units):
        j = i
        while j + 1 < len(units) and units[j + 1].end - units[i].start <= size:
            j += 1
        chunks.append(Span(units[i].start, units[j].end))
        if j + 1 >= len(units):
            break
        # next chunk: the earliest unit after i whose start leaves <= overlap chars shared
        nxt = j + 1
        while nxt - 1 > i and units[j].end - units[nxt - 1].start <= overlap:
            nxt -= 1
        # ...but never a chunk that would not reach past the previous one
        while nxt < j + 1 and units[j + 1].end - units[nxt].start > size:
            nxt += 1
        i = nxt
    return chunks
