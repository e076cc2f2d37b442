"""A real `chroma run` server on a free port of 127.0.0.1 for the tests, stopped afterwards."""

import contextlib
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest


@contextlib.contextmanager
def chroma_run(path: Path):
    """Start `chroma run` with its data in `path`; yields the port once it answers a heartbeat."""
    import chromadb

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    chroma = Path(sys.executable).with_name("chroma")
    server = subprocess.Popen(
        [str(chroma), "run", "--host", "127.0.0.1", "--port", str(port), "--path", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 60
    while True:
        try:
            chromadb.HttpClient(host="127.0.0.1", port=port).heartbeat()
            break
        except Exception:
            if time.time() > deadline or server.poll() is not None:
                server.kill()
                pytest.fail("chroma run did not start")
            time.sleep(0.3)
    try:
        yield port
    finally:
        server.terminate()
        server.wait(timeout=30)
