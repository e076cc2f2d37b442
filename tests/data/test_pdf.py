import pymupdf
import pytest

from helpers.data import DataError
from helpers.data.obstetrics import chunk_pdf
from helpers.data.pdf import parse_page_range, read_pdf, repair_text


def _make_pdf(path, pages):
    doc = pymupdf.open()
    for lines in pages:
        page = doc.new_page()
        y = 50
        for line in lines:
            page.insert_text((50, y), line, fontsize=10)
            y += 14
    doc.save(path)
    return path


@pytest.fixture
def guideline_pdf(tmp_path):
    pages = []
    topics = ["nutricion", "ecografia", "vacunas", "lactancia", "riesgo", "parto"]
    for n, topic in enumerate(topics, 1):
        body = [
            f"Sobre {topic}: el control prenatal de la gestante con embara-",
            "zo de curso normal. Se recomienda iniciar antes de la semana 10.",
            "",
        ]
        if n == 3:
            body = ["SECCION 2. ABORDAJE DE LAS COMPLICACIONES"] + body
        pages.append(["Guia de Practica Clinica - Ministerio de Salud", *body, "1++", str(n)])
    return _make_pdf(tmp_path / "guide.pdf", pages)


def test_headers_footers_page_numbers_removed(guideline_pdf):
    pages = read_pdf(guideline_pdf)
    assert [p.number for p in pages] == list(range(1, 7))
    for page in pages:
        assert "Ministerio de Salud" not in page.text  # running header on every page
        assert not page.text.rstrip().endswith(str(page.number))  # page number
        assert "1++" not in page.text  # margin evidence level
        assert "embarazo de curso normal" in page.text  # hyphenation repaired, lines unwrapped


def test_sections_carry_forward(guideline_pdf):
    pages = read_pdf(guideline_pdf)
    assert [p.section_number for p in pages] == [None, None, 2, 2, 2, 2]
    assert pages[3].section_title == "ABORDAJE DE LAS COMPLICACIONES"


def test_page_range_and_chunk_pages(guideline_pdf):
    assert [p.number for p in read_pdf(guideline_pdf, "2-3,5")] == [2, 3, 5]
    corpus = chunk_pdf(guideline_pdf, pages="2-4", chunk_size=120, chunk_overlap=30)
    pages = [doc["page"] for doc in corpus.values()]
    assert pages == sorted(pages) and set(pages) <= {2, 3, 4}
    assert all(doc["page"] <= doc["page_end"] for doc in corpus.values())
    assert all(len(doc["text"]) <= 120 for doc in corpus.values())
    with pytest.raises(DataError, match="outside 1-6"):
        read_pdf(guideline_pdf, "5-9")


def test_repair_text():
    assert (
        repair_text("embara-\nzo de  curso\nnormal.\n\nOtro  párrafo.") == "embarazo de curso normal.\n\nOtro párrafo."
    )


def test_corrupt_and_empty_pdfs(tmp_path):
    corrupt = tmp_path / "corrupt.pdf"
    corrupt.write_bytes(b"%PDF-1.5 this is not really a pdf")
    with pytest.raises(DataError, match="corrupt.pdf.*cannot be opened"):
        read_pdf(corrupt)
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(b"")
    with pytest.raises(DataError, match="empty.pdf"):
        read_pdf(empty)
    blank = _make_pdf(tmp_path / "blank.pdf", [[], []])
    with pytest.raises(DataError, match="blank.pdf: no text"):
        read_pdf(blank)
    with pytest.raises(DataError, match="missing.pdf: file not found"):
        read_pdf(tmp_path / "missing.pdf")


def test_bad_page_range():
    with pytest.raises(DataError, match="bad page range"):
        parse_page_range("1-x", 10)
