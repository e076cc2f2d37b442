"""Issue 26, the chat panel's logic: a follow-up question is rewritten into a standalone question
from the conversation (the condense-question step), then retrieved, answered, cited and judged."""

import pytest

from helpers import paths
from helpers.data.contracts import Dataset
from helpers.explore import Workbench
from helpers.explore.chat import Chat
from helpers.explore.workbench import ExploreError

CORPUS = {
    "d1": {
        "title": "Preeclampsia",
        "text": "Preeclampsia is high blood pressure with protein in the urine after week 20.",
    },
    "d2": {"title": "Preeclampsia treatment", "text": "Preeclampsia is treated with antihypertensives and delivery."},
    "d3": {"title": "Flu vaccine", "text": "The flu vaccine is recommended in any trimester during flu season."},
    "d4": {"title": "Whooping cough", "text": "The whooping cough vaccine is given between weeks 27 and 36."},
}
QWEN = paths.DERIVED_MODELS_DIR / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
LLMS = {
    "qwen": {"provider": "local", "model": "qwen2.5-coder-1.5b", "max_tokens": 64, "temperature": 0.0},
    "dead": {
        "provider": "openai-compatible",
        "model": "x",
        "base_url": "http://127.0.0.1:9/v1",
        "max_retries": 0,
        "timeout_s": 2,
    },
}


@pytest.fixture(scope="module")
def bench():
    data = Dataset("chat", "en", {k: dict(v) for k, v in CORPUS.items()}, {}, {})
    return Workbench.from_dataset(data, retrieval={"rerank": {"base": "bm25"}}, llms=LLMS)


def test_the_first_turn_is_searched_as_typed_and_a_follow_up_goes_through_the_rewrite(bench):
    chat = Chat(bench, "bm25", llm="local", max_tokens=24)
    first = chat.ask("What is preeclampsia?")
    assert first.searched == "What is preeclampsia?" and not first.note
    assert {c["doc_id"] for c in first.citations[:2]} == {"d1", "d2"}  # the two preeclampsia passages first
    assert [c["n"] for c in first.citations] == [1, 2]  # BM25 returns the passages that share a term
    assert first.view.answer and first.view.cards_html.count("class='hx-card'") == 5  # TRACe 4 + Average
    calls = len(bench.llm("local").calls)
    second = chat.ask("How is it treated?")
    rewrite = bench.llm("local").calls[calls]  # the first call of the turn is the rewrite
    assert rewrite.provider == "local" and second.searched and "\n" not in second.searched
    assert "User: What is preeclampsia?" in chat.history() and "Assistant:" in chat.history()
    assert len(chat.turns) == 2 and "data-turn='2'" in chat.html() and "hx-citations" in chat.html()


def test_a_failed_rewrite_is_said_and_the_follow_up_is_searched_as_typed(bench):
    chat = Chat(bench, "bm25", llm="local", condense_llm="dead", max_tokens=24)
    chat.ask("What is preeclampsia?")
    turn = chat.ask("How is it treated?")
    assert turn.searched == "How is it treated?" and turn.note.startswith("the rewrite failed")
    assert turn.view.answer and "the rewrite failed" in chat.html()
    with pytest.raises(ExploreError, match="empty"):
        chat.ask("  ")
    chat.reset()
    assert chat.turns == [] and chat.ask("Flu vaccine?").searched == "Flu vaccine?"


@pytest.mark.slow
@pytest.mark.skipif(not QWEN.exists(), reason=f"{QWEN} not assembled: `make qwen`")
def test_a_follow_up_that_depends_on_the_first_question_is_resolved_by_the_rewrite(bench):
    """The 1.5B model rewrites "How is it treated?" into a question about preeclampsia, and the
    retrieval then finds the treatment passage; "And the whooping cough one?" after the flu vaccine
    becomes a question about the whooping cough vaccine."""
    chat = Chat(bench, "bm25", llm="local", condense_llm="qwen", max_tokens=24)
    chat.ask("What is preeclampsia?")
    turn = chat.ask("How is it treated?")
    assert "preeclampsia" in turn.searched.lower() and not turn.note, turn.searched
    assert turn.citations[0]["doc_id"] == "d2"  # the treatment passage first
    chat.reset()
    chat.ask("When is the flu vaccine recommended in pregnancy?")
    turn = chat.ask("And the whooping cough one?")
    assert "whooping cough" in turn.searched.lower() and "vaccine" in turn.searched.lower(), turn.searched
    assert turn.citations[0]["doc_id"] == "d4"
