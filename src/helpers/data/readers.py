"""One reader per file format: a file in, its text as pieces (page, section, text) out.

    pieces = read_document("guide.pdf")    # [Piece(page=1, section="...", text="..."), ...]

PDF: the guideline's cleaning (running headers and footers, page numbers, hyphenation;
helpers.data.pdf), one piece per page, sections from 'SECCIÓN n.' headings or the bookmarks.
Markdown and HTML: one piece per section, headings kept as section titles, markup and page
boilerplate (navigation, scripts, footers) dropped. Plain text: the encoding detected
(charset-normalizer). DOCX: paragraphs and tables, Heading styles as sections (python-docx).
A reader that cannot take a file raises DataError with the reason and the fix; the ingestion
records it in its report and goes on with the other files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from helpers.data.contracts import DataError
from helpers.data.pdf import read_pdf


@dataclass(frozen=True)
class Piece:
    text: str
    page: int | None = None  # 1-based, where the format has pages (PDF)
    section: str = ""


class _Sections:
    """Text gathered under a stack of headings: a heading closes the section before it and
    replaces the headings of its level and below; a section's title is its heading path."""

    def __init__(self, joiner: str = "\n\n"):
        self.pieces: list[Piece] = []
        self.heads: list[tuple[int, str]] = []
        self.body: list[str] = []
        self.joiner = joiner

    def flush(self) -> None:
        content = self.joiner.join(self.body).strip()
        if content:
            self.pieces.append(Piece(re.sub(r"\n{3,}", "\n\n", content), None, " > ".join(h for _, h in self.heads)))
        self.body.clear()

    def heading(self, level: int, title: str) -> None:
        self.flush()
        self.heads[:] = [h for h in self.heads if h[0] < level] + ([(level, title)] if title else [])

    def add(self, text: str) -> None:
        self.body.append(text)

    def done(self) -> list[Piece]:
        self.flush()
        return self.pieces


# --------------------------------------------------------------------------- PDF
def read_pdf_pieces(path: Path) -> list[Piece]:
    return [Piece(page.text, page.number, page.section_title) for page in read_pdf(path) if page.text]


# --------------------------------------------------------------------------- plain text
def decode_text(path: Path, data: bytes | None = None) -> str:
    """The text of a file in whatever common encoding it is in (UTF-8, latin-1, cp1252, UTF-16 ...),
    detected by charset-normalizer; binary content is refused."""
    from charset_normalizer import from_bytes

    data = path.read_bytes() if data is None else data
    if not data.startswith((b"\xff\xfe", b"\xfe\xff")) and data[:8192].count(b"\x00") > 0:
        raise DataError(
            str(path),
            "binary content, not text (it holds NUL bytes)",
            fix="Give the document in a supported format or remove it from the folder",
        )
    best = from_bytes(data).best()
    if best is None:
        raise DataError(
            str(path),
            "no text encoding fits its bytes (binary or damaged)",
            fix="Save it as UTF-8 text, or remove it from the folder",
        )
    text = str(best)
    printable = sum(ch.isprintable() or ch.isspace() for ch in text[:20000])
    if text and printable / min(len(text), 20000) < 0.9:
        raise DataError(
            str(path),
            f"decoded as {best.encoding} but mostly unprintable (binary?)",
            fix="Give the document in a supported format or remove it from the folder",
        )
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_text_pieces(path: Path) -> list[Piece]:
    text = decode_text(path).strip()
    return [Piece(text)] if text else []


# --------------------------------------------------------------------------- Markdown
_FENCE = re.compile(r"^\s*(```|~~~)")
_ATX = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_MD_INLINE = [
    (re.compile(r"<!--.*?-->", re.S), ""),  # comments
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)"), r"\1"),  # images -> alt text
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),  # links -> their text
    (re.compile(r"`([^`]+)`"), r"\1"),  # inline code
    (re.compile(r"(\*\*|__)(.+?)\1"), r"\2"),  # bold
    (re.compile(r"(?<![\w*])[*_](?!\s)(.+?)(?<!\s)[*_](?![\w*])"), r"\1"),  # italics
    (re.compile(r"<[^>\n]+>"), ""),  # inline HTML tags
]
_MD_LINE = re.compile(r"^\s{0,3}(>\s?|[-*+]\s+|\d+[.)]\s+)")  # quote and list markers


def markdown_sections(text: str) -> list[Piece]:
    """Sections of a Markdown text: (heading path, body) with markup stripped; a front matter
    block is dropped; code blocks are kept as text."""
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[0].strip() == "---":  # YAML front matter
        end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() in {"---", "..."}), None)
        if end is not None:
            lines = lines[end + 1 :]
    sections, fenced = _Sections("\n"), False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            match = _ATX.match(line)
            setext = i + 1 < len(lines) and line.strip() and _SETEXT.match(lines[i + 1]) and not _MD_LINE.match(line)
            if match or setext:
                level = len(match[1]) if match else (1 if lines[i + 1].strip().startswith("=") else 2)
                sections.heading(level, _strip_markdown(match[2] if match else line.strip()))
                continue
            if _SETEXT.match(line) and i > 0 and lines[i - 1].strip():
                continue  # the underline of a setext heading
            line = _MD_LINE.sub("", _strip_markdown(line))
        sections.add(line)
    return sections.done()


def _strip_markdown(line: str) -> str:
    for pattern, replacement in _MD_INLINE:
        line = pattern.sub(replacement, line)
    return line


def read_markdown_pieces(path: Path) -> list[Piece]:
    return markdown_sections(decode_text(path))


# --------------------------------------------------------------------------- HTML
# page furniture, not content: dropped before the text is read
_HTML_BOILERPLATE = (
    "script",
    "style",
    "noscript",
    "nav",
    "header",
    "footer",
    "aside",
    "form",
    "iframe",
    "svg",
    "template",
    "button",
    "select",
)
_HTML_BLOCKS = ("p", "li", "pre", "blockquote", "td", "th", "dt", "dd", "figcaption", "caption")
_HTML_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")


def html_sections(markup: str) -> list[Piece]:
    """Sections of an HTML page: headings as section titles, the text of block elements as body;
    navigation, headers, footers, asides, scripts and styles dropped; <main> or <article> when
    the page has one."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(markup, "lxml")
    for tag in soup(list(_HTML_BOILERPLATE)):
        tag.decompose()
    root = soup.find("main") or soup.find("article") or soup.body or soup
    sections = _Sections()

    for element in root.find_all(list(_HTML_HEADINGS + _HTML_BLOCKS)):
        if element.find_parent(list(_HTML_BLOCKS)):
            continue  # its text is read with the enclosing block
        text = " ".join(element.get_text(" ", strip=True).split())
        if element.name in _HTML_HEADINGS:
            sections.heading(int(element.name[1]), text)
        elif text:
            sections.add(text)
    pieces = sections.done()
    if not pieces:  # no block elements at all: the page's loose text
        text = " ".join(root.get_text(" ", strip=True).split())
        title = soup.title.get_text(strip=True) if soup.title else ""
        pieces = [Piece(text, None, title)] if text else []
    return pieces


def read_html_pieces(path: Path) -> list[Piece]:
    return html_sections(decode_text(path))


# --------------------------------------------------------------------------- DOCX
def read_docx_pieces(path: Path) -> list[Piece]:
    import docx  # python-docx
    from docx.opc.exceptions import PackageNotFoundError

    try:
        document = docx.Document(str(path))
    except (PackageNotFoundError, KeyError, ValueError, OSError) as exc:
        raise DataError(
            str(path),
            f"not a readable DOCX ({type(exc).__name__}: {exc})",
            fix="Open and save it again in Word or LibreOffice; old .doc files must be saved as .docx",
        ) from exc
    except Exception as exc:  # zipfile.BadZipFile, lxml errors: a damaged package
        raise DataError(
            str(path),
            f"damaged DOCX ({type(exc).__name__}: {exc})",
            fix="Open and save it again in Word or LibreOffice",
        ) from exc
    sections = _Sections()
    for paragraph in document.paragraphs:
        text = paragraph.text.strip()
        style = (paragraph.style.name if paragraph.style is not None else "") or ""
        match = re.match(r"(Heading|Title)\s*(\d*)", style)
        if match and text:
            sections.heading(int(match[2] or 1) if match[1] == "Heading" else 0, text)
        elif text:
            sections.add(text)
    for table in document.tables:  # tables after the running text, one line per row
        for row in table.rows:
            cells = [cell.text.strip() for cell in row.cells]
            line = " | ".join(dict.fromkeys(c for c in cells if c))  # merged cells repeat their text
            if line:
                sections.add(line)
    return sections.done()


# --------------------------------------------------------------------------- registry
READERS: dict[str, Callable[[Path], list[Piece]]] = {
    ".pdf": read_pdf_pieces,
    ".md": read_markdown_pieces,
    ".markdown": read_markdown_pieces,
    ".html": read_html_pieces,
    ".htm": read_html_pieces,
    ".xhtml": read_html_pieces,
    ".txt": read_text_pieces,
    ".text": read_text_pieces,
    ".rst": read_text_pieces,
    ".docx": read_docx_pieces,
}
KIND = {
    ".pdf": "pdf",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".docx": "docx",
}


def read_document(path: str | Path) -> list[Piece]:
    """The pieces of one file, by its extension; DataError naming the file when it cannot be read."""
    path = Path(path)
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise DataError(
            str(path),
            f"unsupported file type {path.suffix or '(no extension)'!r}",
            fix=f"Supported: {', '.join(sorted(READERS))}; convert it, or load it in Python "
            "with any LangChain loader and pass the documents",
        )
    return [piece for piece in reader(path) if piece.text.strip()]
