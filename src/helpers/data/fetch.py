"""Fill data/raw/ from ../shared/data (offline copy) or the public sources, verifying SHA-256.

Each file of sources.yaml comes from one of: its `url` (downloaded as it is); its `url` with
`unpack: NAME` (an archive, from which the member named NAME, in whatever folder, is taken); or
`derive: {from: RELPATH, by: NAME}` (made by code from another raw file, helpers.data.derived; its
`url` says where that one comes from). Whichever, the result must match the manifest's sha256.
`HELPERS_DATA_MIRROR=http://HOST:PORT` fetches every URL from a mirror instead: the URL's host and
path under the mirror's root (https://raw.githubusercontent.com/a/b/f.pdf ->
http://HOST:PORT/raw.githubusercontent.com/a/b/f.pdf), for a machine behind a proxy, and for the
test that sets a clone up with no ../shared from a copy served on 127.0.0.1.

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
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from helpers import paths
from helpers.errors import UserError

SOURCES_FILE = Path(__file__).with_name("sources.yaml")


class DataSourceError(UserError, RuntimeError):
    """A raw data file is missing, or its checksum does not match."""


MIRROR_VARIABLE = "HELPERS_DATA_MIRROR"


@dataclass(frozen=True)
class SourceFile:
    dataset: str
    relpath: str
    sha256: str | None
    url: str | None
    unpack: str | None = None  # the archive member at `url` this file is
    derive: tuple[str, str] | None = None  # (the raw file it is made from, helpers.data.derived's name)
    # a file nobody here has hashed: its published git blob id (`git hash-object`), in place of sha256
    git_blob: str | None = None
    on_demand: bool = False  # not part of `make data`: fetched when a loader or `prepare-data DATASET/PART` asks

    @property
    def check(self) -> tuple[str, str]:
        """(kind, hex digest) the file must match: its sha256, else its git blob id."""
        if self.sha256:
            return "sha256", self.sha256
        if not self.git_blob:  # no file could ever match (tests/data/test_fetch.py checks the manifest)
            raise DataSourceError(f"{self.relpath}: sources.yaml gives it neither a sha256 nor a git_blob")
        return "git blob", self.git_blob


def load_sources() -> dict[str, list[SourceFile]]:
    spec = yaml.safe_load(SOURCES_FILE.read_text(encoding="utf-8"))
    return {
        name: [
            SourceFile(
                name,
                rel,
                f.get("sha256"),
                f.get("url"),
                f.get("unpack"),
                (f["derive"]["from"], f["derive"]["by"]) if f.get("derive") else None,
                f.get("git_blob"),
                bool(f.get("on_demand")),
            )
            for rel, f in entry["files"].items()
        ]
        for name, entry in spec.items()
    }


def source_url(url: str) -> str:
    """`url`, or its copy on the mirror HELPERS_DATA_MIRROR names (the module's docstring)."""
    mirror = os.environ.get(MIRROR_VARIABLE, "").strip()
    if not mirror:
        return url
    parts = urllib.parse.urlsplit(url)
    return f"{mirror.rstrip('/')}/{parts.netloc}{parts.path}"


def sha256_of(path: Path, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk_size), b""):
            digest.update(block)
    return digest.hexdigest()


def digest_of(path: Path, kind: str = "sha256") -> str:
    """The file's sha256, or its git blob id (SHA-1 of b'blob SIZE\\0' + the bytes: `git hash-object`)."""
    if kind == "sha256":
        return sha256_of(path)
    digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())  # noqa: S324 - git's id, not a security hash
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _mismatch(path: Path, check: tuple[str, str], actual: str, origin: str) -> DataSourceError:
    return DataSourceError(
        f"checksum mismatch for {path} (from {origin}): expected {check[0]} {check[1]}, got {actual}. "
        "Nothing was kept; replace the source with the published file and run `make data` again."
    )


def _open_url(url: str, timeout: float = 60):
    return urllib.request.urlopen(url, timeout=timeout)


def _install_verified(fill, dest: Path, check: tuple[str, str], origin: str) -> None:
    """Write a temporary file beside `dest` with `fill(fileobj)`, verify it (SourceFile.check), then
    rename it onto `dest` read-only. On any failure the temporary file is removed and `dest` is untouched."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            fill(out)
        actual = digest_of(tmp, check[0])
        if actual != check[1]:
            raise _mismatch(dest, check, actual, origin)
        tmp.chmod(0o444)
        os.replace(tmp, dest)  # same folder: atomic, and it replaces a read-only file too
    finally:
        tmp.unlink(missing_ok=True)


def _copy(shared: Path, dest: Path, expected: tuple[str, str]) -> None:
    def fill(out):
        with open(shared, "rb") as source:
            shutil.copyfileobj(source, out)

    _install_verified(fill, dest, expected, str(shared))


def _stream(response, out, progress: str | None) -> None:
    """Copy a response to `out`, with a progress bar named `progress` (None: none)."""
    if progress is None:
        shutil.copyfileobj(response, out)
        return
    from tqdm import tqdm  # tqdm: loaded only when this runs

    total = int(response.headers.get("Content-Length") or 0) or None
    with tqdm(total=total, unit="B", unit_scale=True, desc=progress) as bar:
        for block in iter(lambda: response.read(1 << 16), b""):
            out.write(block)
            bar.update(len(block))


def _download(
    url: str,
    dest: Path,
    expected: tuple[str, str],
    timeout: float = 60,
    unpack: str | None = None,
    progress: str | None = None,
) -> None:
    """Download `url` to `dest`; with `unpack`, `url` is a zip archive and `dest` its member of
    that name (in whatever folder), the archive itself kept only in a temporary file."""
    if unpack is None:

        def fill(out):
            with _open_url(url, timeout) as response:
                _stream(response, out, progress)

        _install_verified(fill, dest, expected, url)
        return
    with tempfile.TemporaryFile() as archive:
        with _open_url(url, timeout) as response:
            shutil.copyfileobj(response, archive)
        archive.seek(0)
        with zipfile.ZipFile(archive) as zipped:
            members = [m for m in zipped.namelist() if Path(m).name == unpack and not m.endswith("/")]
            if len(members) != 1:
                raise DataSourceError(
                    f"{url} holds {len(members)} member(s) named {unpack!r} ({members[:3]}): expected one; "
                    f"the archive has {zipped.namelist()[:8]}"
                )

            def fill(out):
                with zipped.open(members[0]) as member:
                    shutil.copyfileobj(member, out)

            _install_verified(fill, dest, expected, f"{url} ({members[0]})")


def _derive(src: SourceFile, dest: Path, raw_dir: Path, shared_dir: Path) -> None:
    """Make `dest` from the raw file it derives from (prepared first), by helpers.data.derived."""
    from helpers.data.derived import DERIVERS  # openpyxl behind it: loaded only when a file is derived

    assert src.derive is not None  # prepare_file calls this only for a derived file
    origin, by = src.derive
    prepare_file(_source(origin), raw_dir, shared_dir)
    made = DERIVERS[by](raw_dir / origin)
    _install_verified(lambda out: out.write(made), dest, src.check, f"{origin} by {by}")


def _stale_note(dest: Path, check: tuple[str, str]) -> str:
    """A word on a file already at `dest` that fails its checksum (never used, never deleted)."""
    if not dest.exists():
        return ""
    return (
        f" The file already at {dest} fails its checksum (expected {check[0]} {check[1]}, got "
        f"{digest_of(dest, check[0])}): it is not used."
    )


def prepare_file(src: SourceFile, raw_dir: Path, shared_dir: Path) -> str:
    """Make `raw_dir/relpath` present and verified; return how ('present', 'copied', 'derived',
    'downloaded'). A file fetched on demand (a large one) shows a progress bar."""
    dest = raw_dir / src.relpath
    if dest.exists() and digest_of(dest, src.check[0]) == src.check[1]:
        return "present"
    shared = shared_dir / src.relpath
    if shared.exists():
        _copy(shared, dest, src.check)
        return "copied"
    if src.derive:
        _derive(src, dest, raw_dir, shared_dir)
        return "derived"
    if src.url is None:
        raise DataSourceError(
            f"{src.relpath} (dataset '{src.dataset}') is missing: it is not in {shared_dir}, and sources.yaml gives "
            f"it no url nor derive. Put the file at {shared} or {dest}.{_stale_note(dest, src.check)}"
        )
    url = source_url(src.url)
    try:
        _download(url, dest, src.check, unpack=src.unpack, progress=src.relpath if src.on_demand else None)
    except (OSError, zipfile.BadZipFile) as exc:
        raise DataSourceError(
            f"{src.relpath} (dataset '{src.dataset}') is missing: not in {shared_dir}, and the download "
            f"from {url} failed ({exc}). Put the file at {shared} or {dest}.{_stale_note(dest, src.check)}"
        ) from exc
    return "downloaded"


def prepare_data(
    datasets: list[str] | None = None,
    *,
    raw_dir: Path | None = None,
    shared_dir: Path | None = None,
    strict: bool = True,
) -> dict[str, dict[str, str]]:
    """Prepare every file of `datasets` (all by default), but those fetched on demand; a name
    `DATASET/PART` (`ragbench/finqa`) prepares that part's files, on demand or not.

    Returns {dataset: {relpath: status}}; a status is 'present', 'copied', 'derived', 'downloaded'
    or 'missing: <reason>'. With strict=True a missing file raises after all others were tried, so
    one missing dataset never stops the others from being prepared.
    """
    raw_dir = raw_dir or paths.RAW_DIR
    shared_dir = shared_dir or paths.SHARED_DATA_DIR
    sources = load_sources()
    parts = {f"{src.dataset}/{src.relpath.split('/')[1]}" for group in sources.values() for src in group}
    unknown = sorted(set(datasets or []) - set(sources) - parts)
    if unknown:
        raise DataSourceError(
            f"unknown raw dataset(s) {unknown}; valid names: {sorted(sources)}, or a part: "
            f"{', '.join(sorted(p for p in parts if p.startswith('ragbench/')))}"
        )
    report: dict[str, dict[str, str]] = {}
    errors = []
    for name in datasets or sorted(sources):
        report[name] = {}
        dataset, _, part = name.partition("/")
        chosen = [s for s in sources[dataset] if s.relpath.startswith(f"{name}/")] if part else sources[dataset]
        for src in chosen:
            if src.on_demand and not part:
                continue
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
    kind, expected = src.check
    if path.exists() and (_VERIFIED.get(path) == _stamp(path) or digest_of(path, kind) == expected):
        _VERIFIED[path] = _stamp(path)
        return path
    if src.on_demand:  # this file alone (a large one), with a progress bar
        prepare_file(src, raw_dir, paths.SHARED_DATA_DIR)
    else:
        prepare_data([src.dataset], raw_dir=raw_dir)
    actual = digest_of(path, kind) if path.exists() else None
    if actual != expected:  # only verified files are ever put there; this guards that promise
        raise _mismatch(path, src.check, actual or "no file", "data/raw")
    return path
