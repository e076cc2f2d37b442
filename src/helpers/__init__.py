"""helpers: the shared package of the RAG research workbench.

Importing it makes every log message pass through the API-key redaction, and changes nothing
else in the process: the offline defaults (`helpers.offline_defaults.OFFLINE_DEFAULTS`: the Hugging Face
hub off, telemetry off) are applied by the command line (`python -m helpers`, `helpers`), the
Makefile's targets and the test suite, never by an import into someone else's notebook, where
they would switch off hub downloads in other libraries without asking.
"""

import importlib

from helpers.redaction import install_log_redaction

install_log_redaction()  # API keys never reach a log line (helpers.redaction)

__version__ = "0.1.0"


def __getattr__(name: str):
    """`helpers.evaluate(df, judges=[...])` (helpers.judges.evaluate) and `helpers.diagnose(df)`
    (helpers.experiment.frame_diagnosis), loaded on first use: importing the package stays light (no
    pandas, no judges' models)."""
    if name in ("evaluate", "Evaluation"):
        module = "helpers.judges.evaluate"
    elif name in ("diagnose", "Diagnosis"):
        module = "helpers.experiment.frame_diagnosis"
    else:
        raise AttributeError(f"module 'helpers' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
