"""A machine with no ../shared (issue 61): `prepare-data` fetches every raw file of sources.yaml
from its public URL, here rewritten by HELPERS_DATA_MIRROR to a copy served on 127.0.0.1 in the
public URLs' layout (host/path), unpacks the archive member, derives questions.json from the
spreadsheet, and verifies each; a corrupted file on the mirror is refused, named."""

import functools
import http.server
import shutil
import threading
import urllib.parse
import zipfile
from pathlib import Path

import pytest

from helpers import paths
from helpers.data.fetch import load_sources, sha256_of
from runs import cli_in_process


@pytest.fixture
def mirror(tmp_path):
    """A copy of every raw file where its public URL says, served on 127.0.0.1: (root, base URL)."""
    root = tmp_path / "mirror"
    for group in load_sources().values():
        for src in group:
            if src.derive or src.on_demand:  # made here from another file; fetched only when asked for
                continue
            where = urllib.parse.urlsplit(src.url)
            target = root / where.netloc / where.path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            shared = paths.SHARED_DATA_DIR / src.relpath
            if src.unpack:  # the published archive: the member in a folder, a README beside it
                with zipfile.ZipFile(target, "w") as archive:
                    archive.write(shared, f"breaking_nli/{src.unpack}")
                    archive.writestr("breaking_nli/README.txt", "The new NLI Test Set\n")
            else:
                shutil.copyfile(shared, target)
    handler = functools.partial(QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # the test's output stays the test's
        pass


def test_every_raw_file_is_fetched_from_the_mirror_and_verified(mirror, tmp_path):
    root, url = mirror
    env = {
        "HELPERS_SHARED_DATA": str(tmp_path / "no-shared"),  # as in a clone with no ../shared beside it
        "HELPERS_DATA_DIR": str(tmp_path / "data"),
        "HELPERS_DATA_MIRROR": url,
    }
    done = cli_in_process("prepare-data", env=env)
    assert done.returncode == 0, done.stderr
    files = [src for group in load_sources().values() for src in group if not src.on_demand]
    for src in files:
        assert sha256_of(tmp_path / "data" / "raw" / src.relpath) == src.sha256, src.relpath
    assert "obstetrics       4 file(s): derived, downloaded" in done.stdout
    # a file changed on the mirror is refused, named, and nothing is kept in its place
    changed = root / "raw.githubusercontent.com/google-deepmind/xquad/master/xquad.es.json"
    changed.write_bytes(changed.read_bytes() + b" ")
    (tmp_path / "data" / "raw" / "xquad" / "xquad.es.json").unlink()
    again = cli_in_process("prepare-data", "xquad", env=env)
    assert again.returncode == 1
    assert f"checksum mismatch for {tmp_path / 'data' / 'raw' / 'xquad' / 'xquad.es.json'} (from {url}/" in again.stderr
    assert not (tmp_path / "data" / "raw" / "xquad" / "xquad.es.json").exists()
    assert Path(tmp_path / "data" / "raw" / "xquad" / "xquad.en.json").exists()


def test_a_ragbench_subset_is_fetched_on_demand_and_verified_by_its_git_blob_id(tmp_path, monkeypatch):
    """Issue 61 (3): the twelve subsets are in the manifest; one not downloaded is fetched when a
    loader asks (git blob id checked, a progress bar), and offline it is one line naming the command."""
    import hashlib

    from helpers.data import DataError
    from helpers.data.fetch import SourceFile, digest_of, prepare_file
    from helpers.data.ragbench import fetch_split, load_ragbench, published

    assert sorted(published()) == [
        "covidqa", "cuad", "delucionqa", "emanual", "expertqa", "finqa",
        "hagrid", "hotpotqa", "msmarco", "pubmedqa", "tatqa", "techqa",
    ]  # fmt: skip
    finqa = {s.relpath: s for s in load_sources()["ragbench"] if "/finqa/" in s.relpath}
    test = finqa["ragbench/finqa/test-00000-of-00001.parquet"]
    assert test.on_demand and test.git_blob == "f15e5ed8c64c3484ffa8697d2ce72f793c748fa8" and test.sha256 is None
    # git's blob id of a known file: 'git hash-object' of b"hello\n"
    (tmp_path / "hello").write_bytes(b"hello\n")
    assert digest_of(tmp_path / "hello", "git blob") == "ce013625030ba8dba906f756967f9e9ca394464a"
    # a file fetched on demand is verified by its git blob id
    served = tmp_path / "mirror" / "example.org" / "f.parquet"
    served.parent.mkdir(parents=True)
    shutil.copyfile(paths.SHARED_DATA_DIR / "ragbench/covidqa/test-00000-of-00001.parquet", served)
    blob = hashlib.sha1(f"blob {served.stat().st_size}\0".encode() + served.read_bytes()).hexdigest()
    handler = functools.partial(QuietHandler, directory=str(tmp_path / "mirror"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("HELPERS_DATA_MIRROR", f"http://127.0.0.1:{server.server_address[1]}")
        src = SourceFile("ragbench", "ragbench/x/test-0.parquet", None, "https://example.org/f.parquet", git_blob=blob)
        assert prepare_file(src, tmp_path / "raw", tmp_path / "none") == "downloaded"
        assert load_ragbench("x", "test", tmp_path / "raw" / "ragbench").shape[0] > 0  # with the file in place it loads
        # offline (here: the mirror has no finqa), a subset not downloaded is one line naming the command
        with pytest.raises(DataError) as offline:
            fetch_split("finqa", "test")
    finally:
        server.shutdown()
    message = " ".join(str(offline.value).split())
    assert message.startswith("ragbench finqa/test: not downloaded, and fetching it failed (HTTP Error 404")
    assert message.endswith("fetch it where the internet is reachable: `python -m helpers prepare-data ragbench/finqa`")
    with pytest.raises(
        DataError, match=r"no such published subset and split.*'finqa': \['test', 'train', 'validation'\]"
    ):
        fetch_split("finqa", "dev")
