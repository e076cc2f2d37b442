"""PDF ingestion: page text with running headers, footers and page numbers removed, hyphenation
and whitespace repaired, and the section each page belongs to (PyMuPDF)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from helpers.data.contracts import DataError

# A line that is only a page number or a margin evidence level (SIGN levels: 1++, 2+, 3, 4, 1-).
_NUMBER_LINE = re.compile(r"^\s*(\d{1,4}|[1-4](\+\+|\+|-))\s*$")
_SECTION = re.compile(r"^SECCI[ÓO]N\s+(\d+)\.\s*(.*)$")
_DOT_LEADER = re.compile(r"\.{4,}|\s\.\s\.\s")
_HYPHEN_BREAK = re.compile(r"(\w)-\n(\w)")


@dataclass(frozen=True)
class Page:
    number: int  # 1-based page number in the PDF
    text: str
    section_number: int | None
    section_title: str


def parse_page_range(pages: str | None, page_count: int, source: str = "pages") -> list[int]:
    """'1-10,15' -> [1..10, 15] (1-based, inclusive); None or 'all' -> every page."""
    if pages is None or str(pages).strip().lower() in {"", "all"}:
        return list(range(1, page_count + 1))
    selected: list[int] = []
    for part in str(pages).split(","):
        match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not match:
            raise DataError(source, f"bad page range {part!r}", fix="Write it like '1-10,15'")
        first, last = int(match[1]), int(match[2] or match[1])
        if not 1 <= first <= last <= page_count:
            raise DataError(source, f"page range {part.strip()} is outside 1-{page_count}")
        selected.extend(range(first, last + 1))
    return sorted(set(selected))


def _normalise(line: str) -> str:
    return re.sub(r"\d+", "#", line.strip())


def _repeated_edge_lines(page_lines: list[list[str]], edge: int = 2, min_share: float = 0.3) -> set[str]:
    """Lines (digits folded) that open or close at least `min_share` of the pages: running
    headers and footers."""
    counts: Counter[str] = Counter()
    for lines in page_lines:
        counts.update({_normalise(l) for l in lines[:edge] + lines[-edge:]})
    threshold = max(3, int(min_share * len(page_lines)))
    return {line for line, n in counts.items() if n >= threshold and line not in {"", "#"}}


def repair_text(text: str) -> str:
    """Join hyphenated line breaks, unwrap lines inside paragraphs, squeeze whitespace."""
    text = _HYPHEN_BREAK.sub(r"\1\2", text)
    paragraphs = re.split(r"\n\s*\n", text)
    out = []
    for paragraph in paragraphs:
        joined = re.sub(r"\s*\n\s*", " ", paragraph)
        joined = re.sub(r"[ \t\u00a0]+", " ", joined).strip()
        if joined:
            out.append(joined)
    return "\n\n".join(out)


def read_pdf(path: str | Path, pages: str | None = None) -> list[Page]:
    """Clean text of the selected pages of a PDF. Raises DataError on a missing, corrupt or
    text-less PDF."""
    import pymupdf

    path = Path(path)
    if not path.is_file():
        raise DataError(
            str(path),
            "is a folder, not a PDF file" if path.is_dir() else "file not found",
            fix="Run `make data` or pass the path of a PDF file",
        )
    try:
        doc = pymupdf.open(path)
    except Exception as exc:  # pymupdf raises its own FileDataError / RuntimeError kinds
        raise DataError(str(path), f"cannot be opened as a PDF ({exc})", fix="Check the file is a valid PDF") from exc
    with doc:
        if doc.needs_pass:
            raise DataError(
                str(path),
                "the PDF is encrypted (it needs a password)",
                fix="Save a decrypted copy first, e.g. `qpdf --password=PW --decrypt in.pdf out.pdf`",
            )
        if doc.page_count == 0:
            raise DataError(str(path), "the PDF has no pages")
        numbers = parse_page_range(pages, doc.page_count, source=f"{path} pages")
        raw = {n: doc[n - 1].get_text() for n in numbers}
        has_images = any(doc[n - 1].get_images() for n in numbers[:50])
        toc = doc.get_toc()  # [[level, title, page], ...]: the bookmarks, where the PDF has them
    page_lines = {n: [l.rstrip() for l in raw[n].split("\n") if l.strip()] for n in numbers}
    repeated = _repeated_edge_lines(list(page_lines.values()))

    result, section_number, section_title = [], None, ""
    for n in numbers:
        lines = page_lines[n]
        keep = []
        for i, line in enumerate(lines):
            if _NUMBER_LINE.match(line):
                continue
            if (i < 2 or i >= len(lines) - 2) and _normalise(line) in repeated:
                continue
            keep.append(line)
        for i, line in enumerate(keep):
            match = _SECTION.match(line.strip())
            if match and not _DOT_LEADER.search(line):
                title = match[2].strip()
                if i + 1 < len(keep) and keep[i + 1].strip().isupper():  # heading wrapped on 2 lines
                    title += " " + keep[i + 1].strip()
                section_number, section_title = int(match[1]), title.rstrip(". ")
                break
        # keep blank-line paragraph breaks from the raw text, drop removed lines
        kept = set(keep)
        body = "\n".join(
            l if l.rstrip() in kept else "" for l in raw[n].split("\n") if l.strip() == "" or l.rstrip() in kept
        )
        result.append(Page(n, repair_text(body), section_number, section_title))
    if not any(page.text for page in result):
        what = "no text layer (a scanned PDF: its pages are images)" if has_images else "no text could be extracted"
        raise DataError(str(path), what, fix="Run OCR first, e.g. `ocrmypdf in.pdf out.pdf`, and give the OCR'd file")
    if toc and all(page.section_number is None for page in result):
        # no 'SECCIÓN n.' headings (the guideline's): sections from the PDF's bookmarks instead
        result = [Page(page.number, page.text, None, _toc_title(toc, page.number)) for page in result]
    return result


def _toc_title(toc: list, page_number: int) -> str:
    """The title of the last bookmark starting on or before `page_number` ('' before the first)."""
    title = ""
    for _level, entry_title, entry_page in toc:
        if 0 < entry_page <= page_number:
            title = entry_title.strip()
    return title
