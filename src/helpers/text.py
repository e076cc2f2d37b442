"""Words for matching, shared by BM25, the LLM verdict judge's sentence picker and the search
panel: lower-cased, accents folded, stop words removed and Snowball-stemmed (PyStemmer), for every
language both bm25s and PyStemmer cover (a user's own documents may be in any of them)."""

from __future__ import annotations

import unicodedata

# ISO 639-1 code -> (PyStemmer's Snowball stemmer, bm25s's stop-word list)
_LANGUAGES = {
    "en": ("english", "EN"),
    "es": ("spanish", "SPANISH"),
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


class _CombiningMarks(dict):
    """str.translate table that drops combining marks, filled as characters are first seen
    (a per-character generator was 2.6 s of a warm run's 3,500 chunks)."""

    def __missing__(self, code_point: int):
        self[code_point] = None if unicodedata.combining(chr(code_point)) else code_point
        return self[code_point]


_DROP_COMBINING = _CombiningMarks()


def fold_accents(text: str) -> str:
    """'Cuál' -> 'Cual': NFKD, combining marks dropped."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFKD", text).translate(_DROP_COMBINING)


class Tokenizer:
    """Text -> stemmed tokens for one language. Accents are folded so that 'Cuál' matches 'cual'."""

    def __init__(self, language: str = "en"):
        import bm25s
        import Stemmer

        self.language = language
        if language not in _LANGUAGES:
            # a language neither library covers: words lower-cased and accent-folded, no stemming,
            # no stop words (BM25 still works, with somewhat lower recall on inflected forms)
            self._stemmer, self.stopwords = None, []
            return
        stemmer_name, stop_name = _LANGUAGES[language]
        self._stemmer = Stemmer.Stemmer(stemmer_name)
        stopwords = getattr(bm25s.stopwords, f"STOPWORDS_{stop_name}")
        self.stopwords = sorted({fold_accents(w.lower()) for w in stopwords})

    def __call__(self, texts: list[str]) -> list[list[str]]:
        import bm25s

        folded = [fold_accents(t.lower()) for t in texts]
        tokens = bm25s.tokenize(
            folded,
            stopwords=self.stopwords,
            stemmer=self._stemmer and self._stemmer.stemWords,
            return_ids=False,
            show_progress=False,
        )
        return tokens
