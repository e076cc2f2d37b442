"""Fill data/raw/ from ../shared/data (offline copy) or the public sources, verifying SHA-256.

Raw data is immutable: files are copied read-only and never edited; everything derived from
them goes to data/processed/.
"""
from __future__ import annotations

import hashlib
import shutil
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

from helpers import paths
from helpers.errors import UserError

SOURCES_FILE = Path(__file__).with_name("sources.yaml")


class DataSourceError(UserError, RuntimeError):
    """A raw data file is missing, or its checksum does not match."""


@dataclass(frozen=True)
class SourceFile:
    dataset: str
    relpath: str
    sha256: str
    url: str | None


def load_sources() -> dict[str, list[SourceFile]]:
    spec = yaml.safe_load(SOURCES_FILE.read_text(encoding="utf-8"))
    return {
        name: [SourceFile(name, rel, f["sha256"], f.get("url")) for rel, f in entry["files"].items()]
        for name, entry in spec.items()
    }


def sha256_of(path: Path, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk_size), b""):
            digest.update(block)
    return digest.hexdigest()


def _verify(path: Path, expected: str, origin: str) -> None:
    actual = sha256_of(path)
    if actual != expected:
        raise DataSourceError(
            f"checksum mismatch for {path} (from {origin}): expected sha256 {expected}, got {actual}. "
            "Delete the file and run `make data` again, or replace it with the published file."
        )


def _download(url: str, dest: Path, timeout: float = 60) -> None:
    tmp = dest.with_suffix(dest.suffix + ".part")
    with urllib.request.urlopen(url, timeout=timeout) as response, open(tmp, "wb") as out:
        shutil.copyfileobj(response, out)
    tmp.replace(dest)


def prepare_file(src: SourceFile, raw_dir: Path, shared_dir: Path) -> str:
    """Make `raw_dir/relpath` present and verified; return how ('present', 'copied', 'downloaded')."""
    dest = raw_dir / src.relpath
    if dest.exists() and sha256_of(dest) == src.sha256:
        return "present"
    dest.parent.mkdir(parents=True, exist_ok=True)
    shared = shared_dir / src.relpath
    if shared.exists():
        if dest.exists():
            dest.chmod(0o644)
        shutil.copyfile(shared, dest)
        dest.chmod(0o444)
        _verify(dest, src.sha256, str(shared))
        return "copied"
    if src.url is None:
        raise DataSourceError(
            f"{src.relpath} (dataset '{src.dataset}') is missing: it is not in {shared_dir} and has no "
            f"direct public download (the shared copy carries a correction or was unpacked from an archive). Put the file at {shared} or {dest}."
        )
    try:
        _download(src.url, dest)
    except OSError as exc:
        raise DataSourceError(
            f"{src.relpath} (dataset '{src.dataset}') is missing: not in {shared_dir}, and the download "
            f"from {src.url} failed ({exc}). Put the file at {shared} or {dest}."
        ) from exc
    _verify(dest, src.sha256, src.url)
    dest.chmod(0o444)
    return "downloaded"


def prepare_data(datasets: list[str] | None = None, *, raw_dir: Path | None = None,
                 shared_dir: Path | None = None, strict: bool = True) -> dict[str, dict[str, str]]:
    """Prepare every file of `datasets` (all by default).

    Returns {dataset: {relpath: status}}; a status is 'present', 'copied', 'downloaded' or
    'missing: <reason>'. With strict=True a missing file raises after all others were tried, so
    one missing dataset never stops the others from being prepared.
    """
    raw_dir = raw_dir or paths.RAW_DIR
    shared_dir = shared_dir or paths.SHARED_DATA_DIR
    sources = load_sources()
    unknown = sorted(set(datasets or []) - set(sources))
    if unknown:
        raise DataSourceError(f"unknown raw dataset(s) {unknown}; valid names: {sorted(sources)}")
    report: dict[str, dict[str, str]] = {}
    errors = []
    for name in datasets or sorted(sources):
        report[name] = {}
        for src in sources[name]:
            try:
                report[name][src.relpath] = prepare_file(src, raw_dir, shared_dir)
            except DataSourceError as exc:
                report[name][src.relpath] = f"missing: {exc}"
                errors.append(str(exc))
    if strict and errors:
        raise DataSourceError("some raw data could not be prepared:\n- " + "\n- ".join(errors))
    return report


def raw_path(relpath: str, raw_dir: Path | None = None) -> Path:
    """Path of a raw file, preparing its dataset first if it is not there yet."""
    raw_dir = raw_dir or paths.RAW_DIR
    path = raw_dir / relpath
    if not path.exists():
        prepare_data([relpath.split("/", 1)[0]], raw_dir=raw_dir)
    return path
