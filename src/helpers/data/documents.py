"""A user's own documents as a corpus: a folder (or glob) of PDF, Markdown, HTML, text and DOCX
files, or any LangChain loader's documents, chunked with provenance, with a report on every file.

    ingested = ingest("my_docs/")              # every file read, chunked, reported
    print(ingested.format_report())             # what was taken from each file, or why not
    ingested.corpus["guide.pdf#p3_c1"]          # {"title", "text", "source", "page", "page_end",
                                                #  "section", "char_start", "char_end"}
    ds = load_documents("my_docs/", questions="questions.csv")   # the `documents` dataset

A file that cannot be read (unsupported type, empty, binary, encrypted or damaged, a scan with no
text layer, too large, a duplicate of another by checksum) is skipped with its reason; the corpus
is built from the rest. Only when no file has text is it an error. Chunks never cross files; a
PDF's chunks may cross pages (`page` where a chunk starts, `page_end` where it ends) and the
character span is in the file's extracted text.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tqdm import tqdm

from helpers import paths
from helpers.data.chunking import chunk_spans
from helpers.data.contracts import DataError, Dataset
from helpers.data.questions import read_questions
from helpers.data.readers import KIND, READERS, Piece, read_document
from helpers.languages import detect

SPLITTERS = ("workbench", "langchain")
INGEST_VERSION = 1  # bump when a reader or the chunking changes: invalidates the per-file chunk cache
MAX_FILE_MB = 200.0  # a larger file is skipped (memory stays bounded); the option raises it


@dataclass
class FileEntry:
    """One file of the folder and what became of it."""

    file: str  # path relative to the folder
    kind: str
    status: str  # "ok" or "skipped"
    reason: str = ""  # why skipped (with the fix), or a note on an ok file
    bytes: int = 0
    sha256: str = ""
    pages: int | None = None
    sections: int = 0
    chars: int = 0
    chunks: int = 0
    language: str = ""  # detected on this file alone (the corpus language is detected on all of them)


@dataclass
class Ingested:
    corpus: dict[str, dict]
    files: list[FileEntry]
    language: str
    detected_language: dict = field(default_factory=dict)  # {"code", "probability"} of the detector
    settings: dict = field(default_factory=dict)

    def report(self) -> dict:
        """The ingest report as plain data (kept in a run folder as ingest_report.json)."""
        ok = [f for f in self.files if f.status == "ok"]
        return {
            "files": [asdict(f) for f in self.files],
            "language": self.language,
            "detected_language": self.detected_language,
            "settings": self.settings,
            "totals": {
                "files": len(self.files),
                "ingested": len(ok),
                "skipped": len(self.files) - len(ok),
                "chunks": len(self.corpus),
                "chars": sum(f.chars for f in ok),
            },
        }

    def format_report(self) -> str:
        return format_report(self.report())


def format_report(report: dict) -> str:
    """An ingest report (Ingested.report(), or a run's ingest_report.json) as text: one line per
    file, what was taken from it or why it was skipped, then the totals."""
    files = report["files"]
    width = max([len(f["file"]) for f in files] + [4])
    lines = [f"{'file':{width}s}  {'kind':9s} {'lang':4s} {'status':7s}  taken / reason"]
    for f in files:
        if f["status"] == "ok":
            what = (
                f"{f['pages']} page(s), " if f["pages"] else ""
            ) + f"{f['sections']} section(s), {f['chars']:,} chars, {f['chunks']} chunks"
            what += f"; {f['reason']}" if f["reason"] else ""
        else:
            what = f["reason"]
        lines.append(f"{f['file']:{width}s}  {f['kind']:9s} {f.get('language', ''):4s} {f['status']:7s}  {what}")
    totals, detected = report["totals"], report.get("detected_language")
    lines.append(
        f"{totals['ingested']} of {totals['files']} file(s) ingested, {totals['skipped']} skipped; "
        f"{totals['chunks']} chunks, {totals['chars']:,} chars; language {report['language']}"
        + (f" (detected {detected['code']}, p={detected['probability']:.2f})" if detected else "")
    )
    languages = sorted({f.get("language") for f in files if f.get("language")})
    if len(languages) > 1:
        lines.append(
            f"mixed languages ({', '.join(languages)}): prompts, stemmer and embedder follow {report['language']}; "
            "run each language as its own folder, or set `language:` to choose"
        )
    return "\n".join(lines)


def cite(doc: dict) -> str:
    """Where a chunk comes from, as an answer's citation shows it: 'guide.pdf, p. 3-4, § Dosis'."""
    where = str(doc.get("source") or doc.get("title") or "")
    if doc.get("page") is not None:
        end = doc.get("page_end")
        where += f", p. {doc['page']}" + (f"-{end}" if end and end != doc["page"] else "")
    if doc.get("section"):
        where += f", § {doc['section']}"
    return where


# --------------------------------------------------------------------------- chunking
def chunk_pieces(
    pieces: list[Piece],
    source: str,
    *,
    chunk_size: int = 500,
    chunk_overlap: int = 100,
    boundary: str = "sentence",
    splitter: str = "workbench",
) -> dict[str, dict]:
    """Chunks of one file's pieces, keyed `<source>#p<page>_c<n>` (PDF) or `<source>#c<n>`.
    Pieces are joined so chunks may cross pages of one PDF, never sections of other formats
    (a section boundary is a topic boundary; PDF pages are not)."""
    if splitter not in SPLITTERS:
        raise DataError(f"splitter={splitter!r}", f"unknown splitter; valid: {', '.join(SPLITTERS)}")
    paged = any(p.page is not None for p in pieces)
    groups = [pieces] if paged else [[p] for p in pieces]
    corpus: dict = {}
    offset = 0
    counts: dict = {}
    for group in groups:
        text, starts = "", []
        for piece in group:
            starts.append(len(text))
            text += piece.text + "\n\n"
        for start, end in _spans(text, chunk_size, chunk_overlap, boundary, splitter):
            first = max(i for i, s in enumerate(starts) if s <= start)
            last = max(i for i, s in enumerate(starts) if s < end)
            piece = group[first]
            prefix = f"p{piece.page}_" if piece.page is not None else ""
            counts[prefix] = counts.get(prefix, 0) + 1
            corpus[f"{source}#{prefix}c{counts[prefix]}"] = {
                "title": piece.section or Path(source).name,
                "text": text[start:end],
                "source": source,
                "page": piece.page,
                "page_end": group[last].page,
                "section": piece.section,
                "char_start": offset + start,
                "char_end": offset + end,
            }
        offset += len(text)
    return corpus


def _spans(text: str, size: int, overlap: int, boundary: str, splitter: str) -> list[tuple[int, int]]:
    if splitter == "workbench":
        return [(s.start, s.end) for s in chunk_spans(text, size=size, overlap=overlap, boundary=boundary)]
    # the seed benchmark's chunking; add_start_index gives each chunk's offset in the text
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    if not 0 <= overlap < size:
        raise DataError("chunk_overlap", f"must be in [0, chunk_size={size}), got {overlap}")
    cutter = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap, add_start_index=True)
    return [
        (doc.metadata["start_index"], doc.metadata["start_index"] + len(doc.page_content))
        for doc in cutter.create_documents([text])
        if doc.page_content.strip()
    ]


# --------------------------------------------------------------------------- ingestion
def list_files(path: str | Path) -> tuple[Path, list[Path]]:
    """(the root that file names are relative to, every file of a folder or a glob, sorted)."""
    text = str(path)
    if any(ch in text for ch in "*?["):
        files = sorted(Path(p) for p in glob.glob(os.path.expanduser(text), recursive=True) if Path(p).is_file())
        root = Path(os.path.commonpath([str(f.parent) for f in files])) if files else Path(text).parent
    else:
        root = Path(text).expanduser()
        if not root.exists():
            raise DataError(
                str(root), "folder not found", fix="Give a folder of documents or a glob such as 'docs/**/*.pdf'"
            )
        # shallow files first: of two identical files, the one nearer the top is read, the copy skipped
        files = (
            [root]
            if root.is_file()
            else sorted(
                (p for p in root.rglob("*") if p.is_file()), key=lambda p: (len(p.relative_to(root).parts), str(p))
            )
        )
        root = root.parent if root.is_file() else root
    if not files:
        raise DataError(text, "no files found", fix=f"Put documents ({', '.join(sorted(READERS))}) in it")
    return root, files


def _cached_pieces(path: Path, digest: str) -> list[Piece]:
    """A file's pieces, cached in data/processed/documents/ by content checksum (a rerun or a
    sweep over chunk sizes reads each PDF once)."""
    cache = (
        paths.PROCESSED_DIR / "documents" / f"{digest[:24]}-{path.suffix.lower().lstrip('.')}-v{INGEST_VERSION}.json"
    )
    if cache.exists():
        return [Piece(**p) for p in json.loads(cache.read_text(encoding="utf-8"))]
    pieces = read_document(path)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps([asdict(p) for p in pieces], ensure_ascii=False), encoding="utf-8")
    tmp.replace(cache)
    return pieces


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:  # in blocks: a large file never sits in memory whole
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def ingest(
    path: str | Path,
    *,
    chunk_size: int = 500,
    chunk_overlap: int = 100,
    boundary: str = "sentence",
    splitter: str = "workbench",
    language: str = "auto",
    max_file_mb: float = MAX_FILE_MB,
    progress: bool = True,
    exclude: tuple[str | Path, ...] = (),
) -> Ingested:
    """Read, clean and chunk every file under `path` (a folder, a file or a glob).

    chunk_size / chunk_overlap (characters; the seed's 500 / 100), boundary ('sentence' or 'word',
    the workbench splitter only), splitter ('workbench': sentence-packed spans; 'langchain':
    RecursiveCharacterTextSplitter, the seed's), language ('auto': detected; or an ISO code),
    max_file_mb (larger files are skipped, so memory stays bounded), exclude (files that are not
    documents, e.g. the questions file kept in the same folder: reported, never read)."""
    root, files = list_files(path)
    excluded = {Path(p).expanduser().resolve() for p in exclude}
    entries: list = []
    corpus: dict = {}
    seen: dict = {}
    for file in tqdm(files, desc="ingest", unit="file", disable=not progress):
        name = file.relative_to(root).as_posix() if file.is_relative_to(root) else file.name
        entry = FileEntry(
            name,
            KIND.get(file.suffix.lower(), file.suffix.lower().lstrip(".") or "?"),
            "skipped",
            bytes=file.stat().st_size,
        )
        entries.append(entry)
        if file.resolve() in excluded:
            entry.reason = "the questions file: not a document"
            continue
        if file.suffix.lower() not in READERS:
            entry.reason = (
                f"unsupported type {file.suffix or '(no extension)'!r}; supported: "
                f"{', '.join(sorted(READERS))} (convert it, or pass it through a LangChain loader)"
            )
            continue
        if entry.bytes == 0:
            entry.reason = "empty file (0 bytes)"
            continue
        if entry.bytes > max_file_mb * 2**20:
            entry.reason = (
                f"{entry.bytes / 2**20:.0f} MB, over max_file_mb={max_file_mb:g}: split the file or "
                "raise the dataset option max_file_mb"
            )
            continue
        entry.sha256 = _sha256(file)
        if entry.sha256 in seen:
            entry.reason = f"duplicate of {seen[entry.sha256]} (same sha256); read once"
            continue
        seen[entry.sha256] = name
        try:
            pieces = _cached_pieces(file, entry.sha256)
        except DataError as exc:  # the reader's reason, with its fix, without repeating the path
            entry.reason = str(exc).removeprefix(f"{file}: ")
            continue
        except Exception as exc:  # a reader library failing on a damaged file: recorded, never fatal
            entry.reason = f"could not be read ({type(exc).__name__}: {exc})"
            continue
        if not pieces:
            entry.reason = "no text in it"
            continue
        try:
            chunks = chunk_pieces(
                pieces, name, chunk_size=chunk_size, chunk_overlap=chunk_overlap, boundary=boundary, splitter=splitter
            )
        except DataError:  # a bad setting (unknown splitter, overlap >= size): every file would fail
            raise
        except Exception as exc:  # a bug met on one file's text: that file is reported, the rest go on
            entry.reason = f"read, but chunking failed ({type(exc).__name__}: {exc}); please report it"
            continue
        _taken(entry, pieces, chunks)
        corpus.update(chunks)
    settings = {
        "path": str(path),
        "chunk_size": chunk_size,
        "chunk_overlap": chunk_overlap,
        "boundary": boundary,
        "splitter": splitter,
        "language": language,
        "max_file_mb": max_file_mb,
    }
    return _finish(corpus, entries, language, settings, source=str(path))


def _taken(entry: FileEntry, pieces: list[Piece], chunks: dict) -> None:
    """Record on `entry` what was taken from its file."""
    entry.status, entry.reason, entry.chunks = "ok", "", len(chunks)
    entry.chars = sum(len(p.text) for p in pieces)
    entry.pages = len({p.page for p in pieces if p.page is not None}) or None
    entry.sections = len({p.section for p in pieces if p.section})
    entry.language = detect([p.text for p in pieces], max_chars=5000)["code"]


def _finish(corpus: dict, entries: list[FileEntry], language: str, settings: dict, source: str) -> Ingested:
    if not corpus:
        reasons = "; ".join(f"{e.file}: {e.reason}" for e in entries[:5])
        raise DataError(
            source,
            f"no document with text among {len(entries)} file(s) ({reasons})",
            fix="Add PDF, Markdown, HTML, text or DOCX files with a text layer",
        )
    detected = detect([doc["text"] for doc in corpus.values()])
    chosen = detected["code"] if language in (None, "auto") else language
    return Ingested(corpus, entries, chosen, detected, settings)


def ingest_langchain(
    documents,
    *,
    chunk_size: int = 500,
    chunk_overlap: int = 100,
    boundary: str = "sentence",
    splitter: str = "workbench",
    language: str = "auto",
) -> Ingested:
    """Any LangChain loader's output (a list of langchain_core Documents) as a corpus: documents
    are grouped by metadata['source'], with metadata['page'] (0-based in PyPDFLoader, so +1)
    as the page and metadata['section'] or ['title'] as the section."""
    groups: dict[str, list[Piece]] = {}
    for i, doc in enumerate(documents):
        if not hasattr(doc, "page_content"):
            raise DataError(
                "documents",
                f"item {i} is a {type(doc).__name__}, not a LangChain Document",
                fix="Pass loader.load()'s list",
            )
        meta = doc.metadata or {}
        page = meta.get("page")
        page = int(page) + 1 if isinstance(page, int) or (isinstance(page, str) and page.isdigit()) else None
        source = Path(str(meta.get("source") or f"document-{i}")).name
        groups.setdefault(source, []).append(
            Piece(doc.page_content, page, str(meta.get("section") or meta.get("title") or ""))
        )
    entries, corpus = [], {}
    for source, pieces in groups.items():
        pieces = [p for p in pieces if p.text.strip()]
        entry = FileEntry(source, "langchain", "skipped", reason="no text in it")
        entries.append(entry)
        if pieces:
            chunks = chunk_pieces(
                pieces, source, chunk_size=chunk_size, chunk_overlap=chunk_overlap, boundary=boundary, splitter=splitter
            )
            _taken(entry, pieces, chunks)
            corpus.update(chunks)
    settings = {
        "path": "langchain documents",
        "chunk_size": chunk_size,
        "chunk_overlap": chunk_overlap,
        "boundary": boundary,
        "splitter": splitter,
        "language": language,
    }
    return _finish(corpus, entries, language, settings, source="langchain documents")


def load_documents(
    path: str | Path | None = None,
    questions: str | Path | None = None,
    *,
    language: str = "auto",
    chunk_size: int = 500,
    chunk_overlap: int = 100,
    boundary: str = "sentence",
    splitter: str = "workbench",
    max_file_mb: float = MAX_FILE_MB,
) -> Dataset:
    """The `documents` dataset: the files under `path` as the corpus, and the questions of
    `questions` (CSV, JSONL or XLSX: helpers.data.questions) with their references and qrels.
    Without a questions file, write a test set first: `python -m helpers testset DIR`."""
    if path is None:
        raise DataError(
            "dataset 'documents'",
            "option 'path' is required",
            fix="Set dataset.options.path to a folder or glob of documents",
        )
    ingested = ingest(
        path,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        boundary=boundary,
        splitter=splitter,
        language=language,
        max_file_mb=max_file_mb,
        progress=False,
        exclude=(questions,) if questions else (),
    )
    if questions is None:
        raise DataError(
            "dataset 'documents'",
            "option 'questions' is required for a run",
            fix=f"Give a questions file (CSV, JSONL or XLSX with a 'question' column), or write a "
            f"test set: `python -m helpers testset {path}`",
        )
    asked = read_questions(questions, ingested.corpus)
    return Dataset(
        "documents",
        ingested.language,
        ingested.corpus,
        asked.queries,
        asked.qrels,
        asked.answers,
        source=str(path),
        notes={"ingest_report": ingested.report(), "questions": str(questions), "qrels_by_file": asked.by_file},
        unanswerable=asked.unanswerable,
    )
