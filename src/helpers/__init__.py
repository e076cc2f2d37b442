"""helpers: the shared package of the RAG research workbench.

Importing it sets safe offline defaults once (see `helpers.offline`), without overriding any
variable the user already set.
"""
from helpers.offline import apply_offline_defaults

apply_offline_defaults()

__version__ = "0.1.0"
