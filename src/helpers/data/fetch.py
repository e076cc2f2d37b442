"""Fill data/raw/ from ../shared/data (offline copy) or the public sources, verifying SHA-256.

Raw data is immutable: files are copied read-only and never edited; everything derived from
them goes to data/processed/. A file reaches its place in data/raw/ only once verified: it is
copied or downloaded to a temporary file beside it, checked, then renamed into place (atomic), so
a failed checksum or an interrupted copy leaves nothing there, and `raw_path` checks the checksum
again before it hands a path out.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
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


def _mismatch(path: Path, expected: str, actual: str, origin: str) -> DataSourceError:
    return DataSourceError(
        f"checksum mismatch for {path} (from {origin}): expected sha256 {expected}, got {actual}. "
        "Nothing was kept; replace the source with the published file and run `make data` again."
    )


def _open_url(url: str, timeout: float = 60):
    return urllib.request.urlopen(url, timeout=timeout)


def _install_verified(fill, dest: Path, expected: str, origin: str) -> None:
    """Write a temporary file beside `dest` with `fill(fileobj)`, verify its sha256, then rename it
    onto `dest` read-only. On any failure the temporary file is removed and `dest` is untouched."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            fill(out)
        actual = sha256_of(tmp)
        if actual != expected:
            raise _mismatch(dest, expected, actual, origin)
        tmp.chmod(0o444)
        os.replace(tmp, dest)  # same folder: atomic, and it replaces a read-only file too
    finally:
        tmp.unlink(missing_ok=True)


def _copy(shared: Path, dest: Path, expected: str) -> None:
    def fill(out):
        with open(shared, "rb") as source:
            shutil.copyfileobj(source, out)

    _install_verified(fill, dest, expected, str(shared))


def _download(url: str, dest: Path, expected: str, timeout: float = 60) -> None:
    def fill(out):
        with _open_url(url, timeout) as response:
            shutil.copyfileobj(response, out)

    _install_verified(fill, dest, expected, url)


def _stale_note(dest: Path, expected: str) -> str:
    """A word on a file already at `dest` that fails its checksum (never used, never deleted)."""
    if not dest.exists():
        return ""
    return (
        f" The file already at {dest} fails its checksum (expected sha256 {expected}, got "
        f"{sha256_of(dest)}): it is not used."
    )


def prepare_file(src: SourceFile, raw_dir: Path, shared_dir: Path) -> str:
    """Make `raw_dir/relpath` present and verified; return how ('present', 'copied', 'downloaded')."""
    dest = raw_dir / src.relpath
    if dest.exists() and sha256_of(dest) == src.sha256:
        return "present"
    shared = shared_dir / src.relpath
    if shared.exists():
        _copy(shared, dest, src.sha256)
        return "copied"
    if src.url is None:
        raise DataSourceError(
            f"{src.relpath} (dataset '{src.dataset}') is missing: it is not in {shared_dir} and has no "
            f"direct public download (the shared copy carries a correction or was unpacked from an archive). "
            f"Put the file at {shared} or {dest}.{_stale_note(dest, src.sha256)}"
        )
    try:
        _download(src.url, dest, src.sha256)
    except OSError as exc:
        raise DataSourceError(
            f"{src.relpath} (dataset '{src.dataset}') is missing: not in {shared_dir}, and the download "
            f"from {src.url} failed ({exc}). Put the file at {shared} or {dest}.{_stale_note(dest, src.sha256)}"
        ) from exc
    return "downloaded"


def prepare_data(
    datasets: list[str] | None = None,
    *,
    raw_dir: Path | None = None,
    shared_dir: Path | None = None,
    strict: bool = True,
) -> dict[str, dict[str, str]]:
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


def _source(relpath: str) -> SourceFile:
    sources = load_sources()
    dataset = relpath.split("/", 1)[0]
    if dataset not in sources:
        raise DataSourceError(f"unknown raw dataset {dataset!r} (from {relpath!r}); valid names: {sorted(sources)}")
    for src in sources[dataset]:
        if src.relpath == relpath:
            return src
    raise DataSourceError(
        f"{relpath!r} is not in the manifest {SOURCES_FILE}; its files: {[f.relpath for f in sources[dataset]]}"
    )


# (path) -> (inode, size, mtime) of the file when its sha256 last matched: hashed again only when
# the file changed, so a process that loads a dataset many times reads its files once
_VERIFIED: dict[Path, tuple] = {}


def _stamp(path: Path) -> tuple:
    info = path.stat()
    return info.st_ino, info.st_size, info.st_mtime_ns


def raw_path(relpath: str, raw_dir: Path | None = None) -> Path:
    """Path of a raw file whose sha256 matches the manifest, checked whenever the file changed
    since its last check. A missing or failing file is prepared first, with its dataset; if no
    verified copy can be had, the error names the file, the expected and the actual sha256."""
    raw_dir = raw_dir or paths.RAW_DIR
    src = _source(relpath)
    path = raw_dir / relpath
    if path.exists() and (_VERIFIED.get(path) == _stamp(path) or sha256_of(path) == src.sha256):
        _VERIFIED[path] = _stamp(path)
        return path
    prepare_data([src.dataset], raw_dir=raw_dir)
    actual = sha256_of(path) if path.exists() else None
    if actual != src.sha256:  # only verified files are ever put there; this guards that promise
        raise _mismatch(path, src.sha256, actual or "no file", "data/raw")
    return path
