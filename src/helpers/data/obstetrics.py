"""The obstetrics reference case: the guideline PDF as chunks, its 10 questions with passage
qrels marked by hand (obstetrics_qrels.yaml), MaternaQA-es, and the Spanish retrieval benchmark
built from the two (`obstetrics-es`)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from helpers import paths
from helpers.data.chunking import chunk_spans
from helpers.data.contracts import DataError, Dataset, read_jsonl
from helpers.data.fetch import raw_path
from helpers.data.pdf import read_pdf
from helpers.data.questions import read_questions
from helpers.data.quote_qrels import read_quote_labels, resolve_quote_qrels

GUIDELINE_PDF = "obstetrics/guia_embarazo_parto_2023.pdf"
QUESTIONS_JSON = "obstetrics/questions.json"
SEED_CHUNKS_JSON = "obstetrics/chunks_final.json"  # the seed benchmark's own chunks
QRELS_YAML = Path(__file__).with_name("obstetrics_qrels.yaml")  # the 10 questions' passages, as quotes
CHUNKINGS = ("ours", "seed")
MATERNAQA_JSONL = "maternaqa_es/validation.jsonl"
MATERNAQA_FIELDS = ("qa_id", "pregunta", "respuesta", "contexto_fuente")
CHUNKER_VERSION = 1  # bump when chunking or PDF cleaning changes, to invalidate cached chunks


def chunk_pdf(
    pdf_path: str | Path,
    *,
    pages: str | None = None,
    chunk_size: int = 500,
    chunk_overlap: int = 100,
    boundary: str = "sentence",
) -> dict[str, dict]:
    """Chunk a PDF into a BEIR corpus; each chunk keeps its pages and section.

    Pages are joined into one text so chunks can cross page breaks; `page` is where a chunk
    starts and `page_end` where it ends. doc_ids are `p<page>_c<n>` (n counts within the page).
    """
    pdf_pages = read_pdf(pdf_path, pages)
    text, starts = "", []
    for page in pdf_pages:
        starts.append(len(text))
        text += page.text + "\n\n"
    corpus: dict[str, dict] = {}
    per_page: dict[int, int] = {}
    page_idx = 0
    for span in chunk_spans(text, size=chunk_size, overlap=chunk_overlap, boundary=boundary):
        while page_idx + 1 < len(starts) and starts[page_idx + 1] <= span.start:
            page_idx += 1
        end_idx = page_idx
        while end_idx + 1 < len(starts) and starts[end_idx + 1] < span.end:
            end_idx += 1
        page = pdf_pages[page_idx]
        per_page[page.number] = per_page.get(page.number, 0) + 1
        doc_id = f"p{page.number}_c{per_page[page.number]}"
        corpus[doc_id] = {
            "title": page.section_title,
            "text": text[span.start : span.end],
            "page": page.number,
            "page_end": pdf_pages[end_idx].number,
            "section_number": page.section_number,
            "section_title": page.section_title,
            "char_start": span.start,
            "char_end": span.end,
        }
    if not corpus:
        raise DataError(str(pdf_path), "chunking produced no chunks (no text in the selected pages)")
    return corpus


def seed_chunks(path: str | Path | None = None) -> dict[str, dict]:
    """The seed benchmark's 2,364 chunks (chunks_final.json, from JhonHander/mcp-vs-rag: 500 chars /
    100 overlap over a cleaned 401-page version of the guideline, so `page` numbers that version,
    not our PDF) as a BEIR corpus keyed by the seed's chunk_id."""
    path = Path(path) if path else raw_path(SEED_CHUNKS_JSON)
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(str(path), f"not a readable JSON file ({exc})") from exc
    if not isinstance(items, list) or not items:
        raise DataError(str(path), "expected a non-empty JSON list of chunks")
    corpus: dict[str, dict] = {}
    for i, item in enumerate(items):
        for name, kind in (("chunk_id", str), ("content", str), ("page_number", int)):
            value = item.get(name) if isinstance(item, dict) else None
            if not isinstance(value, kind) or isinstance(value, bool) or (isinstance(value, str) and not value.strip()):
                raise DataError(
                    str(path),
                    f"missing, empty or not {kind.__name__}",
                    record=f"#{i}",
                    field_name=name,
                    fix="Each chunk needs chunk_id, content and page_number",
                )
        if item["chunk_id"] in corpus:
            raise DataError(str(path), "duplicate chunk_id", record=f"#{i}", field_name="chunk_id")
        corpus[item["chunk_id"]] = {
            "title": item.get("section_title") or "",
            "text": item["content"],
            "page": item["page_number"],
            "section_number": item.get("section_number"),
            "section_title": item.get("section_title"),
        }
    return corpus


def guideline_chunks(
    *,
    pdf_path: str | Path | None = None,
    pages: str | None = None,
    chunk_size: int = 500,
    chunk_overlap: int = 100,
    boundary: str = "sentence",
    use_cache: bool = True,
    chunks: str = "ours",
) -> dict[str, dict]:
    """Chunks of the guideline, cached in data/processed/ per (pdf checksum, settings).
    `chunks`: "ours" (the PDF chunked here, default) or "seed" (the seed benchmark's own chunks,
    seed_chunks(); the chunking settings do not apply to them)."""
    if chunks not in CHUNKINGS:
        raise DataError(f"chunks={chunks!r}", f"unknown chunking; valid: {', '.join(CHUNKINGS)}")
    if chunks == "seed":
        if pdf_path or pages or (chunk_size, chunk_overlap, boundary) != (500, 100, "sentence"):
            raise DataError(
                "chunks='seed'",
                "the seed's chunks are fixed (500 / 100 over its own cleaned "
                "PDF): pdf_path, pages and the chunking settings do not apply",
            )
        return seed_chunks()
    pdf_path = Path(pdf_path) if pdf_path else raw_path(GUIDELINE_PDF)
    if not pdf_path.is_file():
        raise DataError(
            str(pdf_path),
            "is a folder, not a PDF file" if pdf_path.is_dir() else "file not found",
            fix="Run `make data` or pass the path of a PDF file",
        )
    key = hashlib.sha256(pdf_path.read_bytes()).hexdigest()[:16]
    settings = f"{key}-{pages}-{chunk_size}-{chunk_overlap}-{boundary}-v{CHUNKER_VERSION}"
    cache = paths.PROCESSED_DIR / f"chunks-{hashlib.sha256(settings.encode()).hexdigest()[:16]}.json"
    if use_cache and cache.exists():
        return json.loads(cache.read_text(encoding="utf-8"))
    corpus = chunk_pdf(pdf_path, pages=pages, chunk_size=chunk_size, chunk_overlap=chunk_overlap, boundary=boundary)
    if use_cache:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(".tmp")
        tmp.write_text(json.dumps(corpus, ensure_ascii=False), encoding="utf-8")
        tmp.replace(cache)  # atomic: a killed run never leaves a half-written cache
    return corpus


def load_questions(path: str | Path | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """The 10 obstetrics questions and their ground truths: (queries, answers), qids 'q1'..'q10'."""
    path = Path(path) if path else raw_path(QUESTIONS_JSON)
    try:
        items = json.loads(Path(path).read_text(encoding="utf-8"))["questions"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise DataError(
            str(path),
            f"not a questions file ({exc!r})",
            fix="Expected {'questions': [{'id', 'question', 'ground_truth'}]}",
        ) from exc
    queries, answers = {}, {}
    for i, item in enumerate(items):
        for name in ("id", "question", "ground_truth"):
            if not item.get(name) and item.get(name) != 0:
                raise DataError(str(path), "missing or empty", record=f"#{i}", field_name=name)
        qid = f"q{item['id']}"
        queries[qid], answers[qid] = item["question"], item["ground_truth"]
    return queries, answers


def load_obstetrics(extra_questions: str | Path | None = None, **chunk_options) -> Dataset:
    """Guideline chunks + the 10 questions with ground truths and graded qrels: the passages marked
    by hand in obstetrics_qrels.yaml (as quotes), resolved to the chunks of these options.
    extra_questions (default None): a questions file (helpers.data.questions: CSV, JSONL or XLSX)
    whose questions are asked beside the 10, with their references, `relevant` passages and
    `answerable` column (questions the guideline does not answer: the refusal judge)."""
    queries, answers = load_questions()
    seed = chunk_options.get("chunks") == "seed"
    corpus = guideline_chunks(**chunk_options)
    labels = read_quote_labels(QRELS_YAML)
    unknown = sorted({label.qid for label in labels} - set(queries))
    if unknown:
        raise DataError(str(QRELS_YAML), f"labels for questions that do not exist: {unknown}")
    # Every quote must land on the full guideline. A page subset keeps what it holds (a question
    # whose passages lie outside has no qrels there); another PDF likewise. The seed's chunks are
    # a cleaned re-extraction of the text, so a quote may not match them verbatim: that question
    # then has no qrels there rather than an error.
    strict = not seed and not chunk_options.get("pages") and not chunk_options.get("pdf_path")
    qrels = resolve_quote_qrels(labels, corpus, source=str(QRELS_YAML), strict=strict)
    source = SEED_CHUNKS_JSON if seed else GUIDELINE_PDF
    unanswerable = []
    if extra_questions:
        asked = read_questions(extra_questions, corpus)
        clash = sorted(set(asked.queries) & set(queries))
        if clash:
            raise DataError(
                str(extra_questions),
                f"ids {clash} are the benchmark's own questions",
                field_name="id",
                fix="Give the extra questions other ids (e.g. x1, x2, ...)",
            )
        queries, answers = {**queries, **asked.queries}, {**answers, **asked.answers}
        qrels, unanswerable = {**qrels, **asked.qrels}, asked.unanswerable
    return Dataset("obstetrics", "es", corpus, queries, qrels, answers, source=source, unanswerable=unanswerable)


def read_maternaqa(path: str | Path | None = None) -> list[dict]:
    """Records of a MaternaQA-es JSONL file (any split), each checked for the fields we use."""
    path = Path(path) if path else raw_path(MATERNAQA_JSONL)
    if not path.exists():
        raise DataError(str(path), "file not found", fix="Pass the path of a MaternaQA-es JSONL file")
    records = []
    for line_no, record in read_jsonl(path):
        for name in MATERNAQA_FIELDS:
            value = record.get(name)
            if not isinstance(value, str) or not value.strip():
                raise DataError(
                    str(path),
                    "missing or empty",
                    record=f"line {line_no}",
                    field_name=name,
                    fix=f"Each line needs the fields {list(MATERNAQA_FIELDS)}",
                )
        records.append(record)
    if not records:
        raise DataError(str(path), "the file has no records")
    return records


def _passage_text(record: dict) -> str:
    # gold passages are quoted excerpts: drop the surrounding quotes
    return record["contexto_fuente"].strip().strip('"“”').strip()


def load_maternaqa(path: str | Path | None = None) -> Dataset:
    """MaternaQA-es: questions, reference answers, and their gold passages as the corpus."""
    records = read_maternaqa(path)
    corpus: dict = {}
    by_text: dict = {}
    queries: dict = {}
    qrels: dict = {}
    answers: dict = {}
    for record in records:
        text = _passage_text(record)
        doc_id = by_text.setdefault(text, f"mqa_{record['qa_id']}")
        corpus.setdefault(
            doc_id,
            {
                "title": record.get("section", ""),
                "text": text,
                "source_pdf": record.get("source_pdf"),
                "pages": record.get("pages"),
            },
        )
        queries[record["qa_id"]] = record["pregunta"]
        answers[record["qa_id"]] = record["respuesta"]
        qrels[record["qa_id"]] = {doc_id: 1}
    return Dataset("maternaqa", "es", corpus, queries, qrels, answers, source=str(path or MATERNAQA_JSONL))


def load_obstetrics_es(qa_file: str | Path | None = None, **chunk_options) -> Dataset:
    """Spanish retrieval benchmark: guideline chunks + MaternaQA gold passages (deduplicated by
    text) as the corpus, MaternaQA questions as queries, each question's gold passage as qrel."""
    materna = load_maternaqa(qa_file)
    corpus = dict(guideline_chunks(**chunk_options))
    seen = {" ".join(doc["text"].split()): doc_id for doc_id, doc in corpus.items()}
    remap = {}
    for doc_id, doc in materna.corpus.items():
        key = " ".join(doc["text"].split())
        if key in seen:
            remap[doc_id] = seen[key]
        else:
            corpus[doc_id] = doc
            seen[key] = doc_id
    qrels = {qid: {remap.get(d, d): g for d, g in rels.items()} for qid, rels in materna.qrels.items()}
    return Dataset(
        "obstetrics-es", "es", corpus, materna.queries, qrels, materna.answers, source=str(qa_file or MATERNAQA_JSONL)
    )
