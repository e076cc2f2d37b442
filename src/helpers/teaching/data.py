"""Chunking on a toy text (notebook 00): sentence-bounded chunks of at most `size` characters
that share at most `overlap` with the one before, as the guideline is chunked."""

from __future__ import annotations

import pandas as pd

from helpers.data.chunking import chunk_spans
from helpers.teaching.exercises import exercise

TOY_TEXT = (
    "La primera visita debe ser antes de la semana 10. Incluye una analítica de sangre. "
    "Las visitas siguientes son mensuales. El parto suele ocurrir entre las semanas 37 y 42."
)


def chunk_table(text: str = TOY_TEXT, size: int = 90, overlap: int = 40) -> pd.DataFrame:
    """Each chunk's character span, length, and how many characters it shares with the previous one."""
    spans = chunk_spans(text, size=size, overlap=overlap)
    rows, previous_end = [], None
    for i, span in enumerate(spans):
        start, end = span.start, span.end
        shared = max(0, previous_end - start) if previous_end is not None else 0
        rows.append(
            {
                "chunk": i,
                "start": start,
                "end": end,
                "length": end - start,
                "shared with previous": shared,
                "text": text[start:end],
            }
        )
        previous_end = end
    return pd.DataFrame(rows)


TOPIC = "00-data"
exercise(
    "chunks-count",
    TOPIC,
    "How many chunks does the toy text make with size 90 and overlap 40?",
    lambda: len(chunk_table()),
    "sentences are kept whole: count how many fit in 90 characters at a time",
)
exercise(
    "chunks-no-overlap",
    TOPIC,
    "And with size 90 and overlap 0?",
    lambda: len(chunk_table(overlap=0)),
    "without overlap no sentence is repeated",
)
