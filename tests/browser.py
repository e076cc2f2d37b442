"""Real servers and a real browser for the UI tests: JupyterLab or Voila on 127.0.0.1 with a
token on a free port, driven by Playwright through Debian's Chromium (Playwright cannot
download its own browser offline; `make test` installs Chromium where it can)."""

from __future__ import annotations

import contextlib
import http.client
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


def chromium_path() -> str | None:
    """HELPERS_CHROMIUM, else the first Chromium on PATH."""
    if os.environ.get("HELPERS_CHROMIUM"):
        return os.environ["HELPERS_CHROMIUM"]
    return next((found for name in CHROMIUM_CANDIDATES if (found := shutil.which(name))), None)


def missing_browser() -> str | None:
    """Why the browser tests cannot run here, with how to fix it; None when they can."""
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "the playwright package is not installed: pip install -r requirements/lock.txt"
    if chromium_path() is None:
        return (
            "no Chromium: `sudo apt-get install chromium` (Debian/Ubuntu; `make test` does it as root), "
            "or set HELPERS_CHROMIUM=/path/to/chrome"
        )
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def jupyter_server(kind: str, root: Path, notebook: str, env: dict, log_path: Path, timeout_s: float = 90):
    """Start `kind` ('lab' or 'voila') serving `root` on 127.0.0.1 with a token; yield the URL
    that opens `notebook`, and stop the server (and its kernels) on exit."""
    port, token = free_port(), secrets.token_hex(16)
    bin_dir = Path(sys.executable).parent
    if kind == "lab":
        command = [
            str(bin_dir / "jupyter"),
            "lab",
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
        ]
        url = f"http://127.0.0.1:{port}/lab/tree/{notebook}?token={token}"
    elif kind == "voila":
        command = [
            str(bin_dir / "voila"),
            str(root / notebook),
            "--no-browser",
            "--Voila.ip=127.0.0.1",
            f"--port={port}",
            f"--token={token}",
        ]
        url = f"http://127.0.0.1:{port}/?token={token}"
    else:
        raise ValueError(f"kind must be 'lab' or 'voila', got {kind!r}")
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=root, start_new_session=True
        )
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{kind} exited with {process.returncode}; log: {log_path.read_text()[-2000:]}")
            try:  # without the token: refused (or sent to the login page) once it is up
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                connection.request("GET", "/api/status" if kind == "lab" else "/")
                status = connection.getresponse().status
                connection.close()
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"{kind} did not start in {timeout_s} s; log: {log_path.read_text()[-2000:]}"
                    ) from None
                time.sleep(0.5)
                continue
            assert status in (302, 401, 403), f"{kind} answered {status} without its token"
            break
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 15)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)


@contextlib.contextmanager
def browser_page(width: int = 1500, height: int = 1000):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            yield page
        finally:
            browser.close()
