"""The two base classes every layer raises: a user's mistake (a missing file, an unknown name, a bad
setting) and a model or LLM call that failed for good.

The command line prints such an error on one line and exits with status 2 (a traceback only
with --debug); anything else is a bug and keeps its traceback. Each message names the file,
field or setting and says how to fix it.
"""

from __future__ import annotations

from typing import Any


class UserError(ValueError):
    """Bad input from the user: the message says what is wrong and how to fix it."""


class LLMError(RuntimeError):
    """A model call failed for good (after retries, or not retryable), or the model to call is not
    there. Defined here, not in helpers.llm.llm_errors (which derives its kinds from it), so that the
    local-model workarounds below the LLM client (helpers.local_models) raise what its callers catch."""

    kind = "error"
    # the failed call's CallRecord (helpers.llm.call_records), attached by the LLM client; typed Any
    # because errors sits below every layer and imports none of them
    record: Any = None
