"""Chroma for dense retrieval (helpers.retrieval.architectures.dense): a server's settings
(dense.chroma) checked, its token read from the environment into a header, what went wrong
reaching it said with the setting that fixes it, the embedding-function protocol over our
embedder, and chromadb imported without a slow optional checker."""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path

from helpers.retrieval.architectures.retriever_base import RetrievalError

# a Chroma server's settings (dense.chroma). The token stays in the environment variable named by
# token_env, never in a config or a run record; Chroma's token convention is either header.
CHROMA_DEFAULTS = {
    "host": "127.0.0.1",
    "port": 8000,
    "ssl": False,
    "token_env": None,
    "token_header": "Authorization",
    "verify": True,
}
TOKEN_HEADERS = {"authorization": "Authorization", "x-chroma-token": "X-Chroma-Token"}
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _is_loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def chroma_settings(chroma: dict) -> dict:
    """dense.chroma with its defaults, checked: {host, port, ssl, token_env, token_header, verify}."""
    unknown = sorted(set(chroma) - set(CHROMA_DEFAULTS))
    if unknown:
        raise RetrievalError(f"dense.chroma: unknown option {unknown[0]!r}; valid: {', '.join(CHROMA_DEFAULTS)}")
    out = {**CHROMA_DEFAULTS, **{k: v for k, v in chroma.items() if v is not None}}
    if out["token_env"] is not None and not _ENV_NAME.fullmatch(str(out["token_env"])):
        raise RetrievalError(
            "dense.chroma.token_env must name an environment variable (e.g. CHROMA_AUTH_TOKEN) "
            "that holds the token, not the token itself; got a value that is no variable name"
        )
    if not isinstance(out["ssl"], bool):
        raise RetrievalError(f"dense.chroma.ssl must be true or false, not {out['ssl']!r}")
    if str(out["token_header"]).lower() not in TOKEN_HEADERS:
        raise RetrievalError(
            f"dense.chroma.token_header must be one of {sorted(TOKEN_HEADERS.values())}, not {out['token_header']!r}"
        )
    out["token_header"] = TOKEN_HEADERS[str(out["token_header"]).lower()]
    if not isinstance(out["verify"], (bool, str)):
        raise RetrievalError("dense.chroma.verify must be true, false or the path of a CA certificate file")
    if out["verify"] is not True and not out["ssl"]:
        raise RetrievalError("dense.chroma.verify only applies to TLS: set dense.chroma.ssl: true, or drop verify")
    if isinstance(out["verify"], str):
        out["verify"] = str(Path(out["verify"]).expanduser())
        if not Path(out["verify"]).exists():
            raise RetrievalError(f"dense.chroma.verify: no CA certificate file at {out['verify']}")
    # a token sent in clear over a network is anyone's on the way: only TLS or this machine
    if out["token_env"] and not out["ssl"] and not _is_loopback_host(str(out["host"])):
        raise RetrievalError(
            f"dense.chroma: the token in ${out['token_env']} would cross the network to "
            f"{out['host']} unencrypted; put the server behind TLS and set dense.chroma.ssl: true"
        )
    return out


def chroma_headers(server: dict) -> dict[str, str] | None:
    """The auth header, the token read from the environment now (never stored on the retriever)."""
    if not server["token_env"]:
        return None
    token = os.environ.get(server["token_env"], "").strip()
    if not token:
        raise RetrievalError(
            f"dense.chroma.token_env names {server['token_env']}, which is not set: "
            f"export {server['token_env']}=<the Chroma server's token>"
        )
    return {server["token_header"]: f"Bearer {token}" if server["token_header"] == "Authorization" else token}


def http_status(exc: BaseException) -> int | None:
    """The HTTP status behind a chromadb error (it wraps 401s of a proxy in other exceptions)."""
    seen = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        status = getattr(getattr(current, "response", None), "status_code", None)
        if status:
            return status
        code = getattr(current, "code", None)
        if callable(code) and type(current).__module__.startswith("chromadb"):
            return code()
        current = current.__cause__ or current.__context__
    return None


def is_tls_error(exc: BaseException) -> bool:
    import ssl

    seen = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ssl.SSLError) or "[SSL" in str(current):  # httpx keeps only the message
            return True
        current = current.__cause__ or current.__context__
    return False


class ChromaEmbeddingFunction:
    """Chroma's embedding-function protocol over our (cached) embedder."""

    def __init__(self, embedder):
        self.embedder = embedder

    def __call__(self, input):  # noqa: A002 - chroma's parameter name
        return [v for v in self.embedder.embed_documents(list(input))]

    def embed_query(self, input):  # noqa: A002
        return [v for v in self.embedder.embed_queries(list(input))]

    @staticmethod
    def name() -> str:
        return "helpers-embedder"

    def is_legacy(self) -> bool:
        return False

    def get_config(self) -> dict:
        return {"model": self.embedder.name}

    @staticmethod
    def build_from_config(config: dict) -> "ChromaEmbeddingFunction":
        # chroma rebuilds the function on reopen; we always pass ours explicitly, so this copy
        # only has to exist (and never load a model: chroma calls it on every add and query)
        return ChromaEmbeddingFunction(None)

    def default_space(self) -> str:
        return "cosine"

    def supported_spaces(self) -> list[str]:
        return ["cosine"]


def import_chromadb():
    """chromadb, imported without jsonschema's optional IRI format checker (rfc3987-syntax, there for
    jupyter-events): its 39 lark grammars took 1.9 s of every process that opens an index, for a
    format chromadb never checks. Only while jsonschema is not loaded yet; the block is lifted at
    once, so a later `import rfc3987_syntax` in the same process works."""
    import sys

    block = "jsonschema" not in sys.modules and "rfc3987_syntax" not in sys.modules
    if block:
        sys.modules["rfc3987_syntax"] = None  # import machinery: None means "not installed"
    try:
        import chromadb
    finally:
        if block and sys.modules.get("rfc3987_syntax", False) is None:
            del sys.modules["rfc3987_syntax"]
    return chromadb


def server_error(server: dict, exc: Exception) -> RetrievalError:
    """What went wrong reaching the server (dense.chroma: `server`), and the setting that fixes it."""
    where = f"{'https' if server['ssl'] else 'http'}://{server['host']}:{server['port']}"
    status = http_status(exc)
    if status in (401, 403):
        fix = (
            f"check the token in ${server['token_env']} and dense.chroma.token_header ({server['token_header']})"
            if server["token_env"]
            else "set dense.chroma.token_env to the environment variable that holds its token"
        )
        return RetrievalError(f"dense.chroma: the Chroma server at {where} refused the request (HTTP {status}): {fix}")
    if server["ssl"] and is_tls_error(exc):
        return RetrievalError(
            f"dense.chroma: TLS with {where} failed ({type(exc).__name__}): set "
            "dense.chroma.verify to the CA certificate file that signed the server's "
            "certificate, or check that the server speaks TLS"
        )
    return RetrievalError(
        f"dense.chroma: no Chroma server at {server['host']}:{server['port']} "
        f"({type(exc).__name__}); start one with `chroma run --host "
        f"{server['host']} --port {server['port']} --path DIR`"
    )
