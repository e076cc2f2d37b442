"""helpers: the shared package of the RAG research workbench.

Importing it sets safe offline defaults once (see `helpers.offline`), without overriding any
variable the user already set, and makes every log message pass through the API-key redaction.
"""

from helpers.offline import apply_offline_defaults
from helpers.redaction import install_log_redaction

apply_offline_defaults()
install_log_redaction()  # API keys never reach a log line (helpers.redaction)

__version__ = "0.1.0"
