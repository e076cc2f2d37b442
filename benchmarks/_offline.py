"""`import _offline` first in a benchmark script: the CLI's offline defaults (HF_HUB_OFFLINE,
TRANSFORMERS_OFFLINE, ... where the user has not set them; helpers.offline_defaults) before any hub
library reads them. Importing `helpers` does not set them (a user's own notebook keeps its hub
downloads), so a script that runs offline says so here, as `python -m helpers` does."""

from helpers.offline_defaults import apply_offline_defaults

APPLIED = apply_offline_defaults()
