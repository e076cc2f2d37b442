"""Notebook settings: the full configuration, or the small smoke one when HELPERS_SMOKE=1 (the
test suite executes every notebook that way)."""

from __future__ import annotations

import os


def is_smoke() -> bool:
    return os.environ.get("HELPERS_SMOKE", "").lower() in {"1", "true", "yes"}


def notebook_settings() -> dict:
    """Sizes for notebooks. Smoke: the guideline's first clinical pages (section 1, where the
    answers to the first questions are) and 2 questions."""
    if is_smoke():
        return {"smoke": True, "pages": "124-150", "questions": ["q2", "q4"], "max_tokens": 48, "limit": 20}
    return {
        "smoke": False,
        "pages": None,
        "questions": [f"q{i}" for i in range(1, 11)],
        "max_tokens": 256,
        "limit": None,
    }
