"""notebooks/08-explore.ipynb in a real browser: JupyterLab and Voila on 127.0.0.1 with a token,
Chromium driven by Playwright, on the smoke corpus. Asserts what a person sees; screenshots go to
build/test-artifacts/."""

import base64
import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest
import yaml

from browser import browser_page, jupyter_server, missing_browser
from runs import retrieval_runs

PROJECT = Path(__file__).resolve().parents[2]
NOTEBOOK = "08-explore.ipynb"
ARTIFACTS = Path(os.environ.get("HELPERS_TEST_ARTIFACTS", PROJECT / "build" / "test-artifacts"))
QUESTION = "¿Cuándo debe ser la primera visita prenatal?"
ARCHITECTURES = ["dense", "bm25", "hybrid", "hyde", "multi_query", "rerank"]
SECRET = "gsk_browser" + "5e1f" * 10  # typed into the run panel's key field

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing_browser() is not None, reason=str(missing_browser()))]


@pytest.fixture
def served(tmp_path):
    """A copy of the notebook (the servers must not save outputs into the project's), and the
    environment of a smoke session."""
    shutil.copy(PROJECT / "notebooks" / NOTEBOOK, tmp_path / NOTEBOOK)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    # results and figures inside the test's folder, so that every file the session writes is seen
    env = dict(os.environ, HELPERS_SMOKE="1")
    env.update(HELPERS_RESULTS_DIR=str(tmp_path / "results"), HELPERS_FIGURES_DIR=str(tmp_path / "figures"))
    # the configs the panels read: the project's two the notebook uses, and one that names a judge
    # LLM of the bundled 135M model with short replies, which the run panel's "judged by" offers: the
    # test pays for the wiring (answered by one LLM, judged by another), not for Qwen 1.5B's
    # 600-token verdicts, whose content tests/judges checks
    configs = tmp_path / "configs"
    configs.mkdir()
    for name in ("default.yaml", "smoke.yaml"):
        shutil.copy(PROJECT / "configs" / name, configs / name)
    judge = yaml.safe_load((configs / "smoke.yaml").read_text())
    judge |= {"name": "smoke-judge", "llms": [{"name": "judge", "provider": "local", "max_tokens": 64}]}
    (configs / "smoke-judge.yaml").write_text(yaml.safe_dump(judge, allow_unicode=True))
    env["HELPERS_CONFIGS_DIR"] = str(configs)
    return tmp_path, env


def _idle(page, timeout_ms=120_000):
    page.wait_for_function("document.body.innerText.includes('| Idle')", timeout=timeout_ms)


def _search(page, k=5):
    page.fill(".hx-question input", QUESTION)
    page.click("button.hx-search")
    page.wait_for_selector(".hx-column[data-architecture='rerank'] .hx-hit", timeout=300_000)
    columns = page.locator(".hx-results .hx-column")
    assert columns.count() == 6
    for i, architecture in enumerate(ARCHITECTURES):
        column = columns.nth(i)
        assert column.get_attribute("data-architecture") == architecture
        assert column.locator(".hx-hit").count() == k, column.inner_text()[:500]
    assert page.locator(".hx-results .hx-hit mark").count() >= 6  # the question's terms, highlighted
    assert page.locator(".hx-results .hx-shared").count() >= 1  # documents several found
    assert page.locator(".hx-column[data-architecture='rerank'] .hx-rank-change").count() == k
    assert "rewrites" in columns.nth(4).inner_text() or "fallback" in columns.nth(4).inner_text()
    assert "HyDE passage" in columns.nth(3).inner_text() or "fallback" in columns.nth(3).inner_text()


def test_jupyterlab_panels_in_a_browser(served):
    root, env = served
    trend_runs = retrieval_runs(root / "results")  # three earlier runs for the trends panel
    started = time.perf_counter()
    with jupyter_server("lab", root, NOTEBOOK, env, root / "lab.log") as url, browser_page(1920, 1080) as page:
        page.goto(url)
        page.wait_for_selector(".jp-Notebook", timeout=60_000)
        _idle(page)
        page.click(".lm-MenuBar-itemLabel:text-is('View')")  # the file browser away: room for six columns
        page.click("li[data-command='filebrowser:toggle-main']")
        page.click(".lm-MenuBar-itemLabel:text-is('Run')")
        page.click("li[data-command='runmenu:run-all']")
        page.wait_for_selector("button.hx-run", timeout=300_000)
        _idle(page, 300_000)
        with_news = page.locator(".jp-toast-button:text-is('No')")
        if with_news.count():
            with_news.first.click()

        # 1. query: six columns of k results, highlighted terms, overlap and reranker moves
        search_started = time.perf_counter()
        _search(page)
        print(f"first search (indexes built, LLM rewrites): {time.perf_counter() - search_started:.1f} s")
        page.locator(".hx-results").scroll_into_view_if_needed()
        page.screenshot(path=ARTIFACTS / "explore-query.png")

        # an empty question: a message in the panel, no traceback
        page.fill(".hx-question input", "  ")
        page.click("button.hx-search")
        page.wait_for_selector(".hx-error:has-text('the question is empty')", timeout=30_000)
        assert page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").count() == 0

        # 2. answer and judge: highlighted sentences and four cards
        page.fill(".hx-question input", QUESTION)
        page.click("button.hx-search")
        page.wait_for_selector(".hx-column[data-architecture='rerank'] .hx-hit", timeout=120_000)
        page.click("button.hx-answer")
        page.wait_for_selector(".hx-trace-cards .hx-card", timeout=300_000)
        cards = page.locator(".hx-trace-cards .hx-card")
        assert [cards.nth(i).get_attribute("data-metric") for i in range(cards.count())] == [
            "offline/relevance",
            "offline/utilization",
            "offline/completeness",
            "offline/adherence",
            "offline/average",  # the capstone's overall score
        ]
        # the offline judge is not backed by people's labels: no band, its agreement said instead
        assert not re.search(r"Excellent|Good|Fair|Poor", cards.first.inner_text())
        assert "People vs this judge" in cards.nth(3).inner_text()
        assert page.locator(".hx-sentences span[style*='background']").count() >= 2
        assert "Response:" in page.locator(".hx-sentences").inner_text()
        page.locator(".hx-trace-cards").scroll_into_view_if_needed()
        page.screenshot(path=ARTIFACTS / "explore-answer.png")

        # chat: two turns; the second is rewritten from the conversation before it is searched
        for question in ("¿Qué es la preeclampsia?", "¿Y cómo se trata?"):
            page.fill(".hx-chat-question input", question)
            page.click("button.hx-chat-send")
            page.wait_for_selector(f".hx-chat .hx-turn[data-turn='{1 if 'Qué' in question else 2}']", timeout=300_000)
        second = page.locator(".hx-chat .hx-turn[data-turn='2']")
        assert "¿Y cómo se trata?" in second.inner_text() and second.locator(".hx-citations li").count() >= 1
        assert second.locator(".hx-searched").count() + second.locator("text=the rewrite").count() >= 1
        assert second.locator(".hx-card").count() == 5
        page.locator(".hx-chat").scroll_into_view_if_needed()
        page.screenshot(path=ARTIFACTS / "explore-chat.png")

        # the run panel's new choices: a RAGBench subset fills its splits; a key kept in memory only
        page.locator(".hx-subset select").select_option("covidqa")
        page.wait_for_function(  # the split list follows the subset (the kernel answers the change)
            "document.querySelector('.hx-split select').innerText.includes('test')", timeout=30_000
        )
        page.locator(".hx-subset select").select_option(index=0)  # back to the config's dataset
        page.fill(".hx-key input", SECRET)
        page.click("button.hx-use-key")
        page.wait_for_selector("text=set for this session", timeout=30_000)
        assert page.locator(".hx-key input").input_value() == ""

        # 3. run: the smoke config on one question, judged by TRACe with an LLM other than the
        # answering one; a live log, cards, per-sample table, downloads
        page.fill(".hx-samples input", "1")
        page.locator(".hx-run-judge select").select_option(label="TRACe LLM judge")
        page.locator(".hx-judge-llm select").select_option(label="judge")
        page.click("button.hx-run")
        page.wait_for_selector(".hx-downloads a.hx-download", timeout=600_000)
        log = page.locator(".hx-log textarea").input_value()
        assert "model: local" in log and "vector store:" in log and "python -m helpers run" in log
        assert "trace_llm (judged by judge)" in log
        links = page.locator(".hx-downloads a.hx-download")
        assert links.count() == 4 and links.first.get_attribute("href").startswith("data:application/json;base64,")
        assert page.locator(".hx-downloads a[download$='-trace-llm.json']").count() == 1
        summary = json.loads(base64.b64decode(links.first.get_attribute("href").split(",", 1)[1]))
        assert {"local", "judge"} <= set(summary["llm_usage"])  # answered by one LLM, judged by the other
        assert page.locator(".hx-run-cards .hx-card").count() >= 4
        page.locator(".hx-downloads").scroll_into_view_if_needed()
        page.screenshot(path=ARTIFACTS / "explore-run.png")

        # 4. results: the run just made, its figure and intervals table
        page.click("button:has-text('Refresh')")
        page.wait_for_selector(".hx-intervals table", timeout=120_000)
        assert "ci_low" in page.locator(".hx-intervals").inner_text()
        summary_text = page.locator(".hx-summary").inner_text()  # the sections every report format shows
        assert "How far people agree with each judge" in summary_text and "Decisions" in summary_text
        page.wait_for_function("document.querySelector('img.hx-figure').naturalWidth > 100", timeout=30_000)
        page.locator(".hx-intervals").scroll_into_view_if_needed()
        page.screenshot(path=ARTIFACTS / "explore-results.png")

        # 6. trends: the three earlier runs and the smoke run, a metric over them, two configs compared
        page.click("button.hx-trends-refresh")
        # the refresh's handler ends by listing the smoke run's judge (trace_llm) metrics: wait for that,
        # else a choice made meanwhile is reset by it
        page.wait_for_function(
            "document.querySelector('.hx-trend-metric select').innerText.includes('adherence')", timeout=60_000
        )
        page.locator(".hx-trend-judge select").select_option("retrieval")
        page.wait_for_function(
            "document.querySelector('.hx-trend-metric select').innerText.includes('ndcg@3')", timeout=60_000
        )
        page.locator(".hx-trend-metric select").select_option("ndcg@3")
        page.click("button.hx-trend")
        page.wait_for_function("document.querySelector('img.hx-trend-figure').naturalWidth > 100", timeout=60_000)
        page.wait_for_function(  # a header and bm25 and hybrid in each earlier run (the table follows the figure)
            f"document.querySelectorAll('.hx-trend-table tr').length >= {1 + 2 * len(trend_runs)}", timeout=30_000
        )
        assert all(run_id in page.locator(".hx-trend-table").inner_text() for run_id in trend_runs)
        page.click("button.hx-config-diff")
        page.wait_for_selector(".hx-diff table", timeout=30_000)
        assert "dataset" in page.locator(".hx-diff").inner_text()
        page.locator(".hx-trend-table").scroll_into_view_if_needed()
        page.screenshot(path=ARTIFACTS / "explore-trends.png")
    # the key typed into the panel is in no file the session wrote (the notebook copy, results, logs)
    written = [path for path in root.rglob("*") if path.is_file()]
    assert [str(path) for path in written if SECRET.encode() in path.read_bytes()] == []
    print(f"JupyterLab browser test: {time.perf_counter() - started:.1f} s")


def test_voila_serves_the_panels_without_code(served):
    root, env = served
    started = time.perf_counter()
    with jupyter_server("voila", root, NOTEBOOK, env, root / "voila.log") as url, browser_page() as page:
        page.goto(url.split("?")[0])  # without the token: the login page, not the panels
        assert page.locator("button.hx-search").count() == 0
        page.goto(url, timeout=300_000)
        page.wait_for_selector("button.hx-run", timeout=300_000)
        assert "from helpers.explore import" not in page.inner_text("body")  # no code shown
        _search(page)
        page.screenshot(path=ARTIFACTS / "voila-query.png")
    print(f"Voila browser test: {time.perf_counter() - started:.1f} s")
