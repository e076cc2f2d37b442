"""Every API key value this process reads is remembered here, and `redact` removes them from any
text before it is logged or recorded (a server may echo the Authorization header in an error).
A module of its own, with no imports of the package: `import helpers` installs the log redaction
without loading the LLM layer."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from typing import Any

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


@functools.cache
def _redacted(record_class: type) -> type:
    """`record_class` with its message passed through `redact` (one subclass per record class)."""

    class Redacted(record_class):
        def getMessage(self) -> str:  # noqa: N802 - logging's name
            return redact(super().getMessage())

    Redacted.__name__ = Redacted.__qualname__ = f"Redacted{record_class.__name__}"
    return Redacted


class _RedactingFactory:
    """A log record factory that wraps `previous`; `redacts` marks it (a class attribute: a
    checker sees it, as it does not see one set on a function)."""

    redacts = True

    def __init__(self, previous: Callable[..., logging.LogRecord]) -> None:
        self.previous = previous

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.previous(*args, **kwargs)
        # typed `type`: mypy reads a type[LogRecord] as unhashable for the cache (a class is hashable)
        record_class: type = type(record)
        record.__class__ = _redacted(record_class)
        return record


def install_log_redaction() -> None:
    """Every log record's message passes through `redact`, whichever handler prints it. The factory
    in place (logging's, or another library's) is wrapped, not replaced: its records keep their
    class and attributes, and only their message is redacted. Installing twice wraps once."""
    previous = logging.getLogRecordFactory()
    if getattr(previous, "redacts", False):
        return
    logging.setLogRecordFactory(_RedactingFactory(previous))
