"""Errors of the LLM layer. Retryable ones are retried with backoff; the rest fail the call."""

from __future__ import annotations

from helpers.errors import LLMError, UserError

__all__ = ["LLMError", "RetryableError", "MissingKeyError", "KeyPolicyError", "CacheMissError"]


class RetryableError(LLMError):
    """Rate limit, server error, dropped connection or timeout: worth another try."""

    kind = "retryable"

    def __init__(self, message: str, *, retry_after: float | None = None, kind: str = "retryable"):
        super().__init__(message)
        self.retry_after = retry_after
        self.kind = kind


class MissingKeyError(LLMError, UserError):
    """No API key for a hosted provider: the user's to fix, so the command line reports it on one
    line (a UserError) while callers of the LLM layer still catch it as an LLMError."""

    kind = "missing_key"


class KeyPolicyError(LLMError, UserError):
    """A config names a key variable, or a destination for a key, that the user has not allowed
    (helpers.llm.keys): the user's to fix, said on one line."""

    kind = "key_policy"


class CacheMissError(LLMError):
    """Replay mode: the answer is not in the cache and calling out is refused."""

    kind = "cache_miss"
