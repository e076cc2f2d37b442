"""A mixed folder of documents, built by the tests themselves: every supported format, and every
kind of bad input the ingestion must report rather than stop on (or lose silently)."""

from __future__ import annotations

import shutil
from pathlib import Path

# three pages on prenatal care, with a running header and footer and a hyphenated line break
PDF_PAGES = [
    (
        "Control prenatal",
        "La gestante sana debe tener al menos ocho controles prenatales durante el embarazo. "
        "El primer control se hace antes de la semana doce de gestación, con historia clínica com-\npleta.",
    ),
    (
        "Suplementos",
        "Se recomienda ácido fólico, 400 microgramos al día, desde tres meses antes de la "
        "concepción hasta la semana doce. El hierro se da a las gestantes con anemia.",
    ),
    (
        "Parto",
        "Durante el periodo expulsivo se recomienda no hacer episiotomía de rutina. La oxitocina "
        "se usa en el alumbramiento para prevenir la hemorragia posparto.",
    ),
]
EXPECTED = {  # file -> status in the ingest report, and a word of its reason when skipped
    "guia.pdf": ("ok", ""),
    "notas.md": ("ok", ""),
    "pagina.html": ("ok", ""),
    "latin1.txt": ("ok", ""),
    "informe.docx": ("ok", ""),
    "roto.pdf": ("skipped", "PDF"),
    "vacio.txt": ("skipped", "empty"),
    "escaneado.pdf": ("skipped", "OCR"),
    "cifrado.pdf": ("skipped", "encrypted"),
    "copia/guia-copia.pdf": ("skipped", "duplicate"),
    "basura.txt": ("skipped", "binary"),
    "foto.png": ("skipped", "unsupported"),
}


def make_pdf(path: Path, pages=PDF_PAGES, header: str = "Guía de práctica clínica 2023", headings: bool = True) -> Path:
    import pymupdf

    doc = pymupdf.open()
    for number, (title, body) in enumerate(pages, 1):
        page = doc.new_page()
        page.insert_text((72, 40), header, fontsize=8)
        if headings:
            page.insert_text((72, 90), f"SECCIÓN {number}. {title.upper()}", fontsize=12)
        y = 120
        for line in _wrap(body, 80):
            page.insert_text((72, y), line, fontsize=10)
            y += 14
        page.insert_text((300, 800), str(number), fontsize=8)
    doc.save(path)
    return path


def _wrap(text: str, width: int) -> list[str]:
    lines, line = [], ""
    for paragraph in text.split("\n"):
        for word in paragraph.split():
            if len(line) + len(word) + 1 > width:
                lines.append(line)
                line = ""
            line = f"{line} {word}".strip()
        lines.append(line)
        line = ""
    return [l for l in lines if l]


def make_docx(path: Path) -> Path:
    import docx

    document = docx.Document()
    document.add_heading("Informe de lactancia", level=1)
    document.add_paragraph("La lactancia materna exclusiva se recomienda durante los primeros seis meses.")
    document.add_heading("Contraindicaciones", level=2)
    document.add_paragraph("La infección por VIH contraindica la lactancia donde hay alternativas seguras.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Edad", "Alimentación"
    table.cell(1, 0).text, table.cell(1, 1).text = "0-6 meses", "leche materna exclusiva"
    document.save(path)
    return path


def make_folder(root: Path) -> Path:
    import pymupdf

    root.mkdir(parents=True, exist_ok=True)
    make_pdf(root / "guia.pdf")
    (root / "notas.md").write_text(
        "---\ntitle: notas\n---\n# Preeclampsia\n\nLa **preeclampsia** se define por hipertensión después de la "
        "semana 20 con proteinuria. Ver [la guía](http://example.org).\n\n## Tratamiento\n\n- Sulfato de magnesio "
        "para prevenir la eclampsia.\n- Antihipertensivos si la presión es severa.\n",
        encoding="utf-8",
    )
    (root / "pagina.html").write_text(
        "<html><head><title>Puerperio</title><script>var x = 1;</script></head><body><nav>Inicio | Contacto</nav>"
        "<main><h1>Puerperio</h1><p>El puerperio dura seis semanas después del parto.</p><h2>Signos de alarma</h2>"
        "<ul><li>Fiebre mayor de 38 grados.</li><li>Sangrado abundante.</li></ul></main>"
        "<footer>Copyright 2023 Ministerio</footer></body></html>",
        encoding="utf-8",
    )
    (root / "latin1.txt").write_bytes(
        "La vacunación contra la influenza está indicada en la gestación, "
        "en cualquier trimestre, según la campaña anual.".encode("latin-1")
    )
    make_docx(root / "informe.docx")
    (root / "roto.pdf").write_bytes(b"%PDF-1.7\nthis is not really a pdf\n%%EOF")
    (root / "vacio.txt").write_bytes(b"")
    scanned = pymupdf.open()  # a page that is only an image: no text layer
    page = scanned.new_page()
    pixmap = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 64, 64), False)
    pixmap.clear_with(200)
    page.insert_image(pymupdf.Rect(72, 72, 272, 272), pixmap=pixmap)
    scanned.save(root / "escaneado.pdf")
    locked = pymupdf.open(root / "guia.pdf")
    locked.save(root / "cifrado.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="o", user_pw="secreto")
    (root / "copia").mkdir(exist_ok=True)
    shutil.copy(root / "guia.pdf", root / "copia" / "guia-copia.pdf")
    (root / "basura.txt").write_bytes(bytes(range(256)) * 16)
    (root / "foto.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    return root
