"""An example "your documents" folder for notebook 09 and the README, built from the prepared raw
data (never committed): the guideline PDF (or, for the smoke configuration, a few of its pages), the
seed's questions as a questions file, and a Markdown note, an HTML page and an unsupported file, so
that the ingest report has something to say.

    folder, questions = example_folder(pages="124-150")   # data/examples/obstetrics[-124-150]/
"""

from __future__ import annotations

import csv
from pathlib import Path

from helpers import paths
from helpers.data.fetch import raw_path
from helpers.data.obstetrics import GUIDELINE_PDF, load_questions
from helpers.data.pdf import parse_page_range

NOTE_MD = """# Notas del servicio

## Control prenatal
Cada control prenatal registra la presión arterial, el peso y la altura uterina.

## Suplementos
El ácido fólico se indica desde antes de la concepción.
"""
PAGE_HTML = """<html><head><title>Signos de alarma</title></head><body><nav>Inicio · Servicios</nav>
<main><h1>Signos de alarma en el embarazo</h1><p>Consulte de inmediato ante sangrado vaginal, dolor de cabeza
intenso, visión borrosa o disminución de los movimientos fetales.</p></main><footer>© Hospital</footer></body></html>
"""


def example_folder(pages: str | None = None, root: Path | None = None) -> tuple[Path, Path]:
    """(the folder, its questions CSV beside it). `pages`: keep only these guideline pages."""
    import pymupdf

    name = "obstetrics" + (f"-{pages.replace(',', '_')}" if pages else "")
    folder = Path(root or paths.DATA_DIR / "examples") / name
    documents = folder / "documents"
    documents.mkdir(parents=True, exist_ok=True)
    pdf = documents / "guia_embarazo_parto_2023.pdf"
    if not pdf.exists():
        with pymupdf.open(raw_path(GUIDELINE_PDF)) as source:
            if pages:
                selected = [n - 1 for n in parse_page_range(pages, source.page_count)]
                source.select(selected)
            source.save(pdf)
    (documents / "notas.md").write_text(NOTE_MD, encoding="utf-8")
    (documents / "signos.html").write_text(PAGE_HTML, encoding="utf-8")
    (documents / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n")  # an unsupported file: reported, skipped
    queries, answers = load_questions()
    questions = folder / "questions.csv"
    with open(questions, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "question", "reference"])
        for qid, question in queries.items():
            writer.writerow([qid, question, answers.get(qid, "")])
    return documents, questions
