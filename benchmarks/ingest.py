"""Ingestion speed and memory, side by side in one run: the whole guideline PDF through the
workbench's ingestion (PyMuPDF, cleaning on: running headers and footers, page numbers,
hyphenation; sentence-packed chunks with provenance) and through LangChain's PyPDFLoader (pypdf) +
RecursiveCharacterTextSplitter (the seed benchmark's way; no cleaning). Target: at least their speed.

  python benchmarks/ingest.py --repeats 3 --out results/benchmarks/ingest.json

Each repeat of each side runs in a fresh process (spawned), so its peak RSS is its own and no
cache (ours keeps pieces per file checksum; bypassed here) or import is shared; sides alternate.
Reported: median seconds and pages/s, chunks, peak RSS of the process, and the speed ratio.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import statistics
import time
from pathlib import Path


def _ours(pdf: str, queue) -> None:
    from helpers.data.documents import chunk_pieces
    from helpers.data.readers import read_document

    start = time.perf_counter()
    pieces = read_document(pdf)  # the reader itself, never the per-file cache
    chunks = chunk_pieces(pieces, Path(pdf).name, chunk_size=500, chunk_overlap=100)
    seconds = time.perf_counter() - start
    queue.put(
        {
            "seconds": seconds,
            "pages": len(pieces),
            "chunks": len(chunks),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }
    )


def _langchain(pdf: str, queue) -> None:
    from langchain_community.document_loaders import PyPDFLoader
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    start = time.perf_counter()
    pages = PyPDFLoader(pdf).load()
    chunks = RecursiveCharacterTextSplitter(chunk_size=500, chunk_overlap=100).split_documents(pages)
    seconds = time.perf_counter() - start
    queue.put(
        {
            "seconds": seconds,
            "pages": len(pages),
            "chunks": len(chunks),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }
    )


def _measure(target, pdf: str) -> dict:
    context = mp.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=target, args=(pdf, queue))
    process.start()
    result = queue.get()
    process.join()
    return result


def main() -> int:
    from helpers.data.fetch import raw_path
    from helpers.data.obstetrics import GUIDELINE_PDF

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pdf", default=None, help="default: the obstetrics guideline (data/raw)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default="results/benchmarks/ingest.json")
    args = parser.parse_args()
    pdf = str(args.pdf or raw_path(GUIDELINE_PDF))
    sides = {
        "workbench (PyMuPDF, cleaned)": _ours,
        "langchain (PyPDFLoader + RecursiveCharacterTextSplitter)": _langchain,
    }
    runs = {name: [] for name in sides}
    for _ in range(args.repeats):
        for name, target in sides.items():  # alternating: drift on a shared machine hits both
            runs[name].append(_measure(target, pdf))
    summary = {}
    for name, results in runs.items():
        seconds = statistics.median(r["seconds"] for r in results)
        summary[name] = {
            "median_s": round(seconds, 2),
            "pages": results[0]["pages"],
            "pages_per_s": round(results[0]["pages"] / seconds, 1),
            "chunks": results[0]["chunks"],
            "peak_rss_mb": round(max(r["peak_rss_mb"] for r in results)),
            "runs_s": [round(r["seconds"], 2) for r in results],
        }
    ours, theirs = summary.values()
    out = {
        "pdf": pdf,
        "repeats": args.repeats,
        "sides": summary,
        "speed_ratio_ours_over_langchain": round(ours["pages_per_s"] / theirs["pages_per_s"], 2),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2), encoding="utf-8")
    for name, s in summary.items():
        print(
            f"{name:58s} {s['median_s']:7.2f} s  {s['pages_per_s']:7.1f} pages/s  {s['chunks']:5d} chunks  "
            f"{s['peak_rss_mb']:5d} MB peak RSS"
        )
    print(f"speed ratio (ours / langchain): {out['speed_ratio_ours_over_langchain']}x; {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
