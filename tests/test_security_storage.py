"""Issue 24, findings 6 and 8: what this project opens to the network and leaves on disk.

- Ray: the local instance that helpers.ray_cluster starts listens on 127.0.0.1 only.
- Chroma server mode sends the auth token (taken from an environment variable) and can use TLS.
- Raw data: a file that fails its checksum never lands at its final path.
- Shared caches (prompts and answers, embeddings): a private folder (0700) and files (0600).
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from chroma_server import chroma_run as start_chroma
from ray_heads import start_head, stop_head

PROJECT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- Ray on loopback


def _is_loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip)
    return (getattr(address, "ipv4_mapped", None) or address).is_loopback  # '::ffff:127.0.0.1' too


# Started in its own process: a fresh Ray, and a HOME of its own, because a local ray.init writes an
# authentication token to ~/.ray/auth_token (Ray 2.60), and `ray start` on this machine would then
# turn token authentication on for every later head. ray is imported before helpers starts it, as
# in a notebook that imported it first.
RAY_PROBE = textwrap.dedent("""
    import json, psutil, ray
    from helpers import ray_cluster

    ray_ = ray_cluster.ray_init(None)
    pids = ray_.get([ray_.remote(lambda: __import__("os").getpid()).remote() for _ in range(2)])
    me = psutil.Process()
    sockets = []
    for proc in [me, *me.children(recursive=True)]:
        try:
            sockets += [(proc.name(), c.laddr.ip, c.laddr.port) for c in proc.net_connections(kind="inet")
                        if c.status == psutil.CONN_LISTEN]
        except psutil.Error:
            pass
    token = __import__("pathlib").Path.home() / ".ray" / "auth_token"
    mode = oct(token.stat().st_mode & 0o777) if token.exists() else None
    print("PROBE" + json.dumps({"node": ray_.util.get_node_ip_address(), "sockets": sockets, "token_mode": mode}))
    ray_.shutdown()
""")


@pytest.mark.xdist_group("ray")  # a Ray head takes every core it is given: one at a time
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_the_local_ray_instance_listens_on_loopback_only():
    with tempfile.TemporaryDirectory(prefix="ray", dir="/tmp") as temp:  # Ray's socket paths: < 108 bytes
        env = {
            **os.environ,
            "RAY_USAGE_STATS_ENABLED": "0",
            "HOME": temp,
            "RAY_TMPDIR": temp,
            "PYTHONPATH": str(PROJECT / "src"),
        }
        env.pop("RAY_ADDRESS", None)
        env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
        done = subprocess.run([sys.executable, "-c", RAY_PROBE], env=env, capture_output=True, text=True, timeout=200)
    line = next((l for l in done.stdout.splitlines() if l.startswith("PROBE")), None)
    assert line, done.stdout[-2000:] + done.stderr[-3000:]
    probe = json.loads(line[len("PROBE") :])
    names = {name for name, _, _ in probe["sockets"]}
    assert {"gcs_server", "raylet"} <= names, probe  # the probe saw Ray's own servers
    open_ = [s for s in probe["sockets"] if not _is_loopback(s[1])]
    assert not open_, f"Ray listens beyond loopback: {open_}"
    assert probe["node"] == "127.0.0.1"
    # loopback is open to every user of the machine: Ray's token (on by default) must be the owner's alone
    assert probe["token_mode"] in (None, "0o600"), probe["token_mode"]


RAY_DRIVER = textwrap.dedent("""
    import json, sys, psutil
    from helpers import ray_cluster

    ray_ = ray_cluster.ray_init(sys.argv[1])
    assert ray_.get(ray_.remote(lambda: 1).remote()) == 1
    me = psutil.Process()
    listening = [c.laddr.ip for c in me.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
    print("PROBE" + json.dumps({"node": ray_.util.get_node_ip_address(), "driver": listening}))
""")


@pytest.mark.xdist_group("ray")  # a Ray head takes every core it is given: one at a time
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_head_started_as_the_readme_says_stays_on_loopback_with_its_token():
    """`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 ray start --head --node-ip-address=127.0.0.1`, with a
    token in ~/.ray (so token authentication is on): every port on loopback, and a sweep's driver
    joins it by '127.0.0.1:PORT' with no more settings."""
    import psutil

    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="ray", dir="/tmp") as temp:
        (Path(temp) / ".ray").mkdir()
        (Path(temp) / ".ray" / "auth_token").write_text("0123456789abcdef" * 4)
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "HOME": temp, "PYTHONPATH": str(PROJECT / "src")}
        for name in ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"):
            env.pop(name, None)
        try:
            started = start_head(temp, port, num_cpus=1, env=env)
            assert started.returncode == 0, started.stderr[-2000:]
            assert "Token authentication is enabled" in started.stderr + started.stdout
            head = []
            for p in psutil.process_iter(["cmdline"]):
                if not any(temp in a for a in p.info["cmdline"] or []):
                    continue
                try:  # a process may end (or be a zombie) between the listing and this
                    head += [
                        (p.name(), c.laddr.ip) for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN
                    ]
                except psutil.Error:
                    pass
            assert head and not [h for h in head if not _is_loopback(h[1])], head
            driver = subprocess.run(
                [sys.executable, "-c", RAY_DRIVER, f"127.0.0.1:{port}"],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            line = next((l for l in driver.stdout.splitlines() if l.startswith("PROBE")), None)
            assert line, driver.stdout[-2000:] + driver.stderr[-3000:]
            probe = json.loads(line[len("PROBE") :])
            assert probe["node"] == "127.0.0.1" and all(_is_loopback(ip) for ip in probe["driver"]), probe
        finally:
            stop_head(temp, port)


def test_ray_addresses_on_loopback_are_recognised():
    from helpers.llm.keys import is_loopback
    from helpers.ray_cluster import _host

    def loopback(address):
        return is_loopback(_host(address))

    assert _host("127.0.0.1:6379") == "127.0.0.1" and _host("ray://10.0.0.5:10001") == "10.0.0.5"
    assert _host("[::1]:6379") == "::1"
    assert loopback("127.0.0.1:6379") and loopback("localhost:6379") and loopback("[::1]:6379")
    assert not loopback("10.0.0.5:6379") and not loopback("head.example:6379") and not loopback("auto")


# ---------------------------------------------------------------- Chroma server: token and TLS


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def chroma_run(tmp_path_factory):
    """A real `chroma run` on 127.0.0.1. Chroma 1.x's server checks no token itself (its auth
    settings are gone from the Rust server), so tokens and TLS are a reverse proxy's job, as below."""
    with start_chroma(tmp_path_factory.mktemp("chroma-server")) as port:
        yield port


def _self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 (its own CA) and its key, as PEM files."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "server.pem", directory / "server.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_file, key_file


class _AuthProxy:
    """A reverse proxy on 127.0.0.1 in front of `chroma run`: answers 401 (plain text, as nginx does)
    unless `header` carries `expected`, else forwards; optionally behind TLS. Counts what it saw."""

    def __init__(self, upstream: int, header: str, expected: str, tls: tuple[Path, Path] | None = None):
        import http.client
        import ssl
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        proxy = self
        self.authorised = self.refused = 0

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _forward(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get(header) != expected:
                    proxy.refused += 1
                    self.send_response(401)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", "12")
                    self.end_headers()
                    self.wfile.write(b"unauthorized")
                    return
                proxy.authorised += 1
                conn = http.client.HTTPConnection("127.0.0.1", upstream, timeout=30)
                conn.request(
                    self.command,
                    self.path,
                    body=body or None,
                    headers={k: v for k, v in self.headers.items() if k.lower() in ("content-type",)},
                )
                answer = conn.getresponse()
                data = answer.read()
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.getheader("Content-Type") or "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                conn.close()

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*map(str, tls))
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class _ToyEmbedder:
    """Deterministic letter-count vectors: the transport is under test here, not a model."""

    name = "toy-letters"

    def _vectors(self, texts):
        import numpy as np

        out = np.zeros((len(texts), 26), dtype=np.float32)
        for row, text in enumerate(texts):
            for ch in text.lower():
                if "a" <= ch <= "z":
                    out[row, ord(ch) - 97] += 1
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

    embed_queries = embed_documents = _vectors


TOY_CORPUS = {
    "d1": {"title": "", "text": "cats and mats"},
    "d2": {"title": "", "text": "quantum qubits"},
    "d3": {"title": "", "text": "zebra jazz"},
}
TOKEN = "s3cr3t-token-for-tests"


@pytest.fixture
def toy_dense(monkeypatch, tmp_path):
    from helpers.retrieval.architectures import dense
    from helpers.retrieval.embedders.models import EmbeddingCache

    monkeypatch.setattr(dense, "build_embedder", lambda name, language="en": _ToyEmbedder())
    return lambda chroma: dense.Dense("toy", chroma=chroma, cache=EmbeddingCache(tmp_path / "emb.sqlite"))


def test_chroma_server_behind_tls_and_a_token(chroma_run, toy_dense, tmp_path, monkeypatch):
    from helpers.retrieval import RetrievalError

    tls = _self_signed(tmp_path)
    proxy = _AuthProxy(chroma_run, "Authorization", f"Bearer {TOKEN}", tls=tls)
    try:
        server = {
            "host": "127.0.0.1",
            "port": proxy.port,
            "ssl": True,
            "verify": str(tls[0]),
            "token_env": "TEST_CHROMA_TOKEN",
        }
        monkeypatch.delenv("TEST_CHROMA_TOKEN", raising=False)
        with pytest.raises(RetrievalError, match=r"token_env names TEST_CHROMA_TOKEN, which is not set"):
            toy_dense(server).index(TOY_CORPUS)
        monkeypatch.setenv("TEST_CHROMA_TOKEN", TOKEN)
        dense = toy_dense(server).index(TOY_CORPUS)
        assert next(iter(dense.retrieve({"q": "a jazz zebra"}, 2)["q"])) == "d3"
        assert proxy.authorised > 0 and proxy.refused == 0  # every request carried the token
        assert TOKEN not in repr(dense.describe()) and TOKEN not in repr(vars(dense))
        # a wrong token, and a server whose certificate is not trusted: errors that name the fix
        monkeypatch.setenv("TEST_CHROMA_TOKEN", "wrong")
        with pytest.raises(
            RetrievalError, match=r"refused the request \(HTTP 401\): check the token in \$TEST_CHROMA_TOKEN"
        ):
            toy_dense(server).index(TOY_CORPUS)
        monkeypatch.setenv("TEST_CHROMA_TOKEN", TOKEN)
        with pytest.raises(RetrievalError, match=r"TLS with https://127.0.0.1:\d+ failed .*dense.chroma.verify"):
            toy_dense({**server, "verify": True}).index(TOY_CORPUS)
    finally:
        proxy.close()


def test_chroma_token_in_the_x_chroma_token_header_on_loopback(chroma_run, toy_dense, monkeypatch):
    from helpers.retrieval import RetrievalError

    proxy = _AuthProxy(chroma_run, "X-Chroma-Token", TOKEN)
    try:
        server = {"host": "127.0.0.1", "port": proxy.port}
        with pytest.raises(RetrievalError, match=r"HTTP 401\): set dense.chroma.token_env"):
            toy_dense(server).index(TOY_CORPUS)
        monkeypatch.setenv("TEST_CHROMA_TOKEN", TOKEN)
        dense = toy_dense({**server, "token_env": "TEST_CHROMA_TOKEN", "token_header": "x-chroma-token"})
        assert next(iter(dense.index(TOY_CORPUS).retrieve({"q": "qubits"}, 1)["q"])) == "d2"
    finally:
        proxy.close()


def test_chroma_settings_are_checked():
    from helpers.retrieval import RetrievalError
    from helpers.retrieval.architectures.chroma import chroma_settings

    assert chroma_settings({"host": "h", "port": 1}) == {
        "host": "h",
        "port": 1,
        "ssl": False,
        "token_env": None,
        "token_header": "Authorization",
        "verify": True,
    }
    with pytest.raises(RetrievalError, match=r"unknown option 'token'; valid: host, port, ssl, token_env"):
        chroma_settings({"host": "h", "token": TOKEN})
    with pytest.raises(RetrievalError, match=r"must name an environment variable .* not the token itself"):
        chroma_settings({"token_env": TOKEN})
    with pytest.raises(RetrievalError, match=r"would cross the network to 10.0.0.5 unencrypted.*ssl: true"):
        chroma_settings({"host": "10.0.0.5", "token_env": "CHROMA_AUTH_TOKEN"})
    with pytest.raises(RetrievalError, match=r"verify only applies to TLS"):
        chroma_settings({"verify": False})
    with pytest.raises(RetrievalError, match=r"no CA certificate file at /nonexistent/ca.pem"):
        chroma_settings({"ssl": True, "verify": "/nonexistent/ca.pem"})
    with pytest.raises(RetrievalError, match=r"token_header must be one of"):
        chroma_settings({"token_header": "Cookie"})


# ---------------------------------------------------------------- raw data: verified before it lands


@pytest.fixture
def toy_sources(tmp_path, monkeypatch):
    """A manifest of one file, toy/a.txt (published content b'published'), a shared folder in
    tmp_path and a raw folder; downloads only ever go to 127.0.0.1."""
    import hashlib

    from helpers import paths
    from helpers.data import fetch

    shared, raw = tmp_path / "shared", tmp_path / "raw"
    (shared / "toy").mkdir(parents=True)
    good = hashlib.sha256(b"published").hexdigest()
    source = fetch.SourceFile("toy", "toy/a.txt", good, None)
    monkeypatch.setattr(fetch, "load_sources", lambda: {"toy": [source]})
    monkeypatch.setattr(paths, "SHARED_DATA_DIR", shared)
    for proxy in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(proxy, raising=False)
    return source, shared, raw


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_a_copy_that_fails_its_checksum_is_never_kept_nor_returned(toy_sources):
    from helpers.data import fetch

    source, shared, raw = toy_sources
    (shared / "toy" / "a.txt").write_bytes(b"tampered")
    actual = fetch.sha256_of(shared / "toy" / "a.txt")
    with pytest.raises(
        fetch.DataSourceError,
        match=rf"checksum mismatch for .*toy/a.txt .*expected sha256 "
        rf"{source.sha256}, got {actual}",
    ):
        fetch.prepare_file(source, raw, shared)
    assert _leftovers(raw / "toy") == []  # nothing at the final path, no temporary file
    # later, a loader asks for it: an error naming file and sums, never the unverified file
    with pytest.raises(fetch.DataSourceError, match=rf"toy/a.txt.*expected sha256 {source.sha256}, got {actual}"):
        fetch.raw_path("toy/a.txt", raw_dir=raw)
    assert _leftovers(raw / "toy") == []


def test_raw_path_never_returns_a_file_that_fails_its_checksum(toy_sources):
    from helpers.data import fetch

    source, shared, raw = toy_sources
    (raw / "toy").mkdir(parents=True)
    (raw / "toy" / "a.txt").write_bytes(b"edited by hand")  # e.g. left by an older version
    bad = fetch.sha256_of(raw / "toy" / "a.txt")
    with pytest.raises(fetch.DataSourceError, match=rf"toy/a.txt.*expected sha256 {source.sha256}, got {bad}"):
        fetch.raw_path("toy/a.txt", raw_dir=raw)
    (shared / "toy" / "a.txt").write_bytes(b"published")  # a good copy appears: it replaces the bad one
    path = fetch.raw_path("toy/a.txt", raw_dir=raw)
    assert path.read_bytes() == b"published" and stat.S_IMODE(path.stat().st_mode) == 0o444
    assert _leftovers(raw / "toy") == ["a.txt"]


def test_a_download_is_verified_before_it_lands(toy_sources, tmp_path):
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    from helpers.data import fetch

    source, shared, raw = toy_sources
    served = tmp_path / "served"
    served.mkdir()

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(served)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        remote = fetch.SourceFile("toy", "toy/a.txt", source.sha256, f"http://127.0.0.1:{server.server_port}/a.txt")
        (served / "a.txt").write_bytes(b"corrupted in transit")
        with pytest.raises(
            fetch.DataSourceError,
            match=rf"checksum mismatch for .*toy/a.txt \(from http://127"
            rf".*expected sha256 {source.sha256}",
        ):
            fetch.prepare_file(remote, raw, shared)
        assert _leftovers(raw / "toy") == []
        (served / "a.txt").write_bytes(b"published")
        assert fetch.prepare_file(remote, raw, shared) == "downloaded"
        assert (raw / "toy" / "a.txt").read_bytes() == b"published"
        assert _leftovers(raw / "toy") == ["a.txt"]
    finally:
        server.shutdown()
        server.server_close()


# ---------------------------------------------------------------- shared caches: owner-only


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def shared_cache(tmp_path, monkeypatch):
    """paths.SHARED_CACHE_DIR and CACHE_DIR moved to a fresh folder (they are read at call time),
    under the usual umask 022 so that the modes below are the code's doing, not the umask's."""
    from helpers import paths

    folder = tmp_path / "xdg" / "rag-workbench"
    monkeypatch.setattr(paths, "SHARED_CACHE_DIR", folder)
    monkeypatch.setattr(paths, "CACHE_DIR", folder)
    old = os.umask(0o022)
    yield folder
    os.umask(old)


def _side_files_while_open(db_path: Path) -> dict[str, int]:
    """Modes of the database and the -wal/-shm files SQLite creates while a connection reads it."""
    import sqlite3

    db = sqlite3.connect(db_path)
    db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    modes = {p.name: _mode(p) for p in sorted(db_path.parent.glob(db_path.name + "*"))}
    db.close()
    return modes


def test_new_caches_are_private(shared_cache):
    import numpy as np

    from helpers.llm.cache import ResponseCache
    from helpers.retrieval.embedders.models import EmbeddingCache

    llm = ResponseCache()
    llm.put("k", provider="p", model="m", text="a private answer", input_tokens=1, output_tokens=1)
    EmbeddingCache().put_many("model", {"h": np.ones(3, dtype=np.float32)})
    assert _mode(shared_cache) == 0o700
    for name in ("llm.sqlite", "embeddings.sqlite"):
        modes = _side_files_while_open(shared_cache / name)
        assert {f"{name}-wal", f"{name}-shm"} <= set(modes), modes
        assert set(modes.values()) == {0o600}, modes


def test_existing_loose_caches_are_tightened_when_opened(shared_cache):
    import sqlite3

    from helpers.llm.cache import ResponseCache

    shared_cache.mkdir(parents=True, mode=0o755)
    shared_cache.chmod(0o755)
    loose = shared_cache / "llm.sqlite"
    db = sqlite3.connect(loose)  # as an older version left it: 0644, with a write-ahead log
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE t (a)")
    db.commit()
    wal = loose.with_name("llm.sqlite-wal")
    assert _mode(loose) == 0o644 and _mode(wal) == 0o644
    ResponseCache()
    db.close()
    assert _mode(shared_cache) == 0o700 and _mode(loose) == 0o600
    assert all(_mode(p) == 0o600 for p in shared_cache.glob("llm.sqlite*"))


def test_a_folder_the_caller_chose_keeps_its_mode_but_the_file_is_private(tmp_path):
    from helpers import paths
    from helpers.retrieval.embedders.models import EmbeddingCache

    chosen = tmp_path / "results"
    chosen.mkdir(mode=0o755)
    chosen.chmod(0o755)
    EmbeddingCache(chosen / "emb.sqlite")
    assert _mode(chosen) == 0o755 and _mode(chosen / "emb.sqlite") == 0o600
    sticky = tmp_path / "tmp-like"  # like /tmp: shared by design, never chmod-ed
    sticky.mkdir()
    sticky.chmod(0o1777)
    paths.private_dir(sticky)
    assert stat.S_IMODE(sticky.stat().st_mode) == 0o1777
