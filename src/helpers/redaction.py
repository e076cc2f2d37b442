"""Every API key value this process reads is remembered here, and `redact` removes them from any
text before it is logged or recorded (a server may echo the Authorization header in an error).
A module of its own, with no imports of the package: `import helpers` installs the log redaction
without loading the LLM layer."""

from __future__ import annotations

import logging
import threading

# shorter values are not redacted: they are not secrets ("not-needed") and would mangle text
MIN_SECRET_CHARS = 8

_SECRETS: set[str] = set()  # every key value read by this process
_LOCK = threading.Lock()


def remember_secret(value: str) -> None:
    if value and len(value) >= MIN_SECRET_CHARS:
        with _LOCK:
            _SECRETS.add(value)


def redact(text):
    """`text` with every key value this process has read replaced by [REDACTED]: a server that
    echoes the Authorization header in an error must not put the key into records or logs.
    Anything that is not a string is returned as it is."""
    if not isinstance(text, str) or not _SECRETS:
        return text
    for secret in sorted(_SECRETS, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, "[REDACTED]")
    return text


class _RedactedRecord(logging.LogRecord):
    def getMessage(self) -> str:  # noqa: N802 - logging's name
        return redact(super().getMessage())


def install_log_redaction() -> None:
    """Every log record's message passes through `redact`, whichever handler prints it."""
    if logging.getLogRecordFactory() is not _RedactedRecord:
        logging.setLogRecordFactory(_RedactedRecord)
