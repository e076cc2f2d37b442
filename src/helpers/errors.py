"""The one base class of a user's mistake (a missing file, an unknown name, a bad setting).

The command line prints such an error on one line and exits with status 2 (a traceback only
with --debug); anything else is a bug and keeps its traceback. Each message names the file,
field or setting and says how to fix it.
"""

from __future__ import annotations


class UserError(ValueError):
    """Bad input from the user: the message says what is wrong and how to fix it."""
