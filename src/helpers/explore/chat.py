"""A conversation over one architecture and one LLM: each follow-up question is first rewritten
into a standalone question from the conversation (the standard condense-question step of
conversational retrieval, as LangChain's ConversationalRetrievalChain does it), then retrieved,
answered from its contexts and judged like the answer panel's (helpers.explore.answer), each
turn showing what was searched, its contexts as numbered citations and its TRACe verdicts.

    chat = Chat(bench, "hybrid", llm="local")
    chat.ask("¿Qué es la preeclampsia?")
    chat.ask("¿Cómo se trata?")          # searched as "¿Cómo se trata la preeclampsia?"

The bundled 135M model cannot rewrite questions (it answers them instead); the 1.5B model
(configs/local-qwen.yaml, LLM `local` there) or any hosted model can: choose it as `condense_llm`.
A rewrite that fails or comes back empty is recorded on the turn, and the follow-up is searched as
typed.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from helpers.explore.answer import AnswerView, answer_and_judge
from helpers.explore.workbench import ExploreError, Workbench, explain
from helpers.languages import Language, corpus_language, get_language, prompt_languages

HISTORY_TURNS = 3  # the last turns the rewrite sees: enough for a follow-up, short for a small model
CONDENSE_TOKENS = 64


@dataclass
class Turn:
    question: str  # as typed
    searched: str  # the standalone question retrieval and the answer used
    view: AnswerView
    citations: list[dict] = field(default_factory=list)  # [{n, doc_id, page, section}], the contexts
    note: str = ""  # the rewrite's failure, if any


class Chat:
    """A conversation: `ask(question)` -> Turn. `llm` answers, `condense_llm` (default: `llm`)
    rewrites follow-ups; `ragas_llm` (default None: off) judges each answer with RAGAS beside
    TRACe; all are names the Workbench knows (configs/*.yaml)."""

    def __init__(
        self,
        bench: Workbench,
        architecture: str = "hybrid",
        llm: str | None = None,
        *,
        condense_llm: str | None = None,
        max_tokens: int | None = None,
        ragas_llm: str | None = None,
    ):
        self.bench, self.architecture = bench, architecture
        self.ragas_llm = ragas_llm  # an LLM name: each turn's answer judged by RAGAS too
        self.llm = llm or bench.llm_name
        self.condense_llm = condense_llm or self.llm
        self.max_tokens = max_tokens
        self.turns: list[Turn] = []

    @property
    def language(self) -> Language:
        """The corpus's language: the condense prompt (LangChain's CONDENSE_QUESTION_PROMPT, tightened
        so a small model replies with the question only) and the speakers are its (helpers.languages)."""
        data = self.bench.data
        return corpus_language(data.language if data is not None else None)

    def history(self) -> str:
        user, assistant = self.language.speakers
        lines = []
        for turn in self.turns[-HISTORY_TURNS:]:
            lines += [f"{user}: {turn.question}", f"{assistant}: {(turn.view.answer or '').strip()}"]
        return "\n".join(lines)

    def condense(self, question: str) -> tuple[str, str]:
        """(standalone question, note): the question as typed for a first turn; otherwise the
        LLM's rewrite from the conversation, its first line without quotes or labels."""
        if not self.turns:
            return question, ""
        prompt = self.language.condense.format(history=self.history(), question=question)
        try:
            result = self.bench.llm(self.condense_llm).complete(
                [{"role": "user", "content": prompt}], max_tokens=CONDENSE_TOKENS, temperature=0.0
            )
        except Exception as exc:  # a server down, a missing key: the turn goes on with the question as typed
            return question, f"the rewrite failed ({explain(exc)}); searched as typed"
        text = (result.text or "").strip()
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        rewrite = lines[0] if lines else ""
        # the prompt's last line, the answer's label, in any language (a model may answer in another)
        for code in prompt_languages():
            rewrite = rewrite.removeprefix(get_language(code).condense.rsplit("\n", 1)[-1]).strip()
        rewrite = rewrite.strip("\"'«»“”").strip()
        if not rewrite:
            return question, "the rewrite came back empty; searched as typed"
        return rewrite, ""

    def ask(self, question: str) -> Turn:
        """Rewrite (after the first turn), retrieve with the chosen architecture, answer, judge."""
        if not question or not question.strip():
            raise ExploreError("the question is empty: type a question")
        searched, note = self.condense(question.strip())
        comparison = self.bench.search(searched, [self.architecture])
        column = comparison.columns[self.architecture]
        if column.error:
            raise ExploreError(f"{self.architecture} failed: {column.error}")
        view = answer_and_judge(
            self.bench, self.architecture, self.llm, max_tokens=self.max_tokens, ragas_llm=self.ragas_llm
        )
        citations = [
            {"n": i, "doc_id": hit.doc_id, "page": hit.page, "section": hit.section}
            for i, hit in enumerate(column.hits, 1)
        ]
        turn = Turn(question.strip(), searched, view, citations, note)
        self.turns.append(turn)
        return turn

    def reset(self) -> None:
        self.turns = []

    def html(self) -> str:
        """The conversation: each question (and what was searched), the answer, its citations and
        its TRACe cards."""
        parts = []
        for i, turn in enumerate(self.turns, 1):
            searched = (
                f"<div class='hx-searched' style='font-size:11px;color:#555'>searched as: "
                f"{html.escape(turn.searched)}</div>"
                if turn.searched != turn.question
                else ""
            )
            note = f"<div style='font-size:11px;color:#a33'>{html.escape(turn.note)}</div>" if turn.note else ""
            answer = html.escape(turn.view.answer or "") or f"<i>{html.escape(turn.view.error or 'no answer')}</i>"
            cites = "".join(
                f"<li>[{c['n']}] {html.escape(str(c['doc_id']))}"
                + (f", p. {html.escape(str(c['page']))}" if c["page"] not in (None, "") else "")
                + (f", {html.escape(c['section'])}" if c["section"] else "")
                + "</li>"
                for c in turn.citations
            )
            parts.append(
                f"<div class='hx-turn' data-turn='{i}' style='margin:6px 0;padding:6px;border-left:3px solid #4C72B0'>"
                f"<div><b>{i}. {html.escape(turn.question)}</b></div>{searched}{note}"
                f"<div class='hx-chat-answer' style='margin:4px 0'>{answer}</div>"
                f"<ul class='hx-citations' style='font-size:11px;margin:2px 0;list-style:none;padding-left:8px'>{cites}</ul>{turn.view.cards_html}{turn.view.ragas_cards_html}</div>"
            )
        return "".join(parts)
