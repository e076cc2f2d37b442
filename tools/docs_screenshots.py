"""Redraw the explore panel's screenshots in docs/ with the default model (issue 60: the chat
screenshot showed the smoke config's 135M model, its broken Spanish graded with bands), from
notebook 08 in JupyterLab on 127.0.0.1, driven by Chromium: the answer panel and a two-turn chat,
answered by Qwen2.5-Coder-1.5B (configs/default.yaml) over the whole guideline.

    .venv/bin/python tools/docs_screenshots.py          # writes docs/explore-chat.png (and explore-answer.png)

The browser test (tests/explore/test_explore_browser.py) checks the same panels on the smoke config;
this script only draws what docs/explore.md shows. Minutes on 2 cores (the indexes are cached after
`make run`).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "tests"))  # the browser helpers the tests use

from browser import browser_page, jupyter_server  # noqa: E402

NOTEBOOK = "08-explore.ipynb"
QUESTION = "¿Cuándo debe ser la primera visita prenatal?"
CHAT = ("¿Qué es la preeclampsia?", "¿Y cómo se trata?")
MODEL = "qwen2.5-coder-1.5b"  # configs/default.yaml's `local` (helpers.explore.workbench.known_llms)


def main() -> int:
    root = Path(tempfile.mkdtemp(prefix="screenshots-"))
    shutil.copy(PROJECT / "notebooks" / NOTEBOOK, root / NOTEBOOK)
    env = {k: v for k, v in os.environ.items() if k != "HELPERS_SMOKE"}  # the default config, not smoke
    started = time.perf_counter()
    with jupyter_server("lab", root, NOTEBOOK, env, root / "lab.log") as url, browser_page(1920, 1080) as page:
        page.goto(url)
        page.wait_for_selector(".jp-Notebook", timeout=60_000)
        page.click(".lm-MenuBar-itemLabel:text-is('Run')")
        page.click("li[data-command='runmenu:run-all']")
        page.wait_for_selector("button.hx-search", timeout=600_000)
        page.wait_for_function("document.body.innerText.includes('| Idle')", timeout=600_000)
        # the default config's model in the answer panel and the chat (both LLM choices of each)
        for dropdown in page.locator(
            ".widget-dropdown:has(label:text-is('LLM')) select, "
            ".widget-dropdown:has(label:text-is('rewrites by')) select"
        ).all():
            dropdown.select_option(label=MODEL)
        page.fill(".hx-question input", QUESTION)
        page.click("button.hx-search")
        page.wait_for_selector(".hx-column[data-architecture='rerank'] .hx-hit", timeout=600_000)
        page.click("button.hx-answer")
        page.wait_for_selector(".hx-trace-cards .hx-card", timeout=900_000)
        page.locator(".hx-trace-cards").scroll_into_view_if_needed()
        page.screenshot(path=PROJECT / "docs" / "explore-answer.png")
        for turn, question in enumerate(CHAT, 1):
            page.fill(".hx-chat-question input", question)
            page.click("button.hx-chat-send")
            page.wait_for_selector(f".hx-chat .hx-turn[data-turn='{turn}']", timeout=900_000)
        page.locator(".hx-chat").scroll_into_view_if_needed()
        page.screenshot(path=PROJECT / "docs" / "explore-chat.png")
    print(f"docs/explore-answer.png, docs/explore-chat.png in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
