"""English: RAGBench's and SciFact's language, and the texts every language without a module of its
own gets (helpers.languages says so in the run's `prompt_fallback`)."""

from __future__ import annotations

from helpers.languages.language import AnswerTexts, Language

NO_ANSWER = "I cannot find the answer in the provided documents."

# cite-sentences: the Spanish prompt's instructions (helpers.languages.es says why this wording)
CITE = (
    "You are an assistant that answers questions using only the numbered contexts "
    "given to you. Answer in English with one or two complete sentences that give what "
    "is asked, and end each sentence with the number of the context that supports it in "
    'square brackets, e.g.: "It is recommended ... [2]." If the contexts do not contain '
    'the answer, reply: "I cannot find the answer in the provided documents." Do not '
    "make anything up."
)
CONTEXTS_FIRST = "Contexts:\n{contexts}\n\nQuestion: {question}\nAnswer:"

ANSWER_PROMPTS = {
    "cite-sentences": AnswerTexts(CITE, CONTEXTS_FIRST, (NO_ANSWER,)),
    "quote-then-answer": AnswerTexts(
        CITE + " First copy, word for word, the sentence of a context that answers THIS question (not "
        'another that shares its words), as: Quote: "..." [n]. Then write "Answer:" and answer '
        "from that sentence.",
        "Contexts:\n{contexts}\n\nQuestion: {question}\nQuote:",
        (NO_ANSWER,),
        answer_label="Answer:",
    ),
    "question-first": AnswerTexts(
        CITE,
        "Question: {question}\n\nContexts:\n{contexts}\n\nAnswer the question: {question}\nAnswer:",
        (NO_ANSWER,),
    ),
    "say-no-se": AnswerTexts(
        CITE.replace(
            'If the contexts do not contain the answer, reply: "I cannot find the answer in the provided documents."',
            'If no context answers this question, reply only: "I don\'t know."',
        ),
        CONTEXTS_FIRST,
        ("I don't know", "I do not know"),
    ),
}

TESTSET = {
    "system": "You are an expert writing exam questions about documents. Reply with JSON only.",
    "single": "Passage:\n{passages}\n\nWrite ONE specific question, in your own words (do not copy sentences "
    "of the passage nor mention it), that the passage answers, and its short answer taken from the passage. "
    'JSON: {{"question": "...", "answer": "..."}}',
    "two": "Passage A:\n{passage_a}\n\nPassage B:\n{passage_b}\n\nWrite ONE question, in your own words, whose "
    "answer needs information from BOTH passages, and its short answer. "
    'JSON: {{"question": "...", "answer": "..."}}',
    "unanswerable": "Passage:\n{passages}\n\nWrite ONE question on the same topic that a reader might ask but "
    "that the passage does NOT answer (e.g. a fact it does not give). "
    'JSON: {{"question": "...", "answer": "not given"}}',
    "check": "Passages:\n{passages}\n\nQuestion: {question}\n\nDo the passages answer the question? If they "
    "do, give the short answer taken from them. "
    'JSON: {{"answered": true, "answer": "..."}} or {{"answered": false, "answer": ""}}',
}

LANGUAGE = Language(
    code="en",
    name="english",
    stemmer="english",
    stop_words="EN",
    embedder="minilm",  # all-MiniLM-L6-v2: English-only, small and fast
    # SmolLM2's tokenizer gives 4.72 on 200 covidqa documents; the usual rule of thumb, 4, is kept
    # (a little over-estimated: the budget errs on the safe side)
    chars_per_token=4.0,
    no_answer=NO_ANSWER,
    answer_prompts=ANSWER_PROMPTS,
    answer_stops=("\nQuestion:", "\nContexts:"),
    no_context="(no context was retrieved)",
    hyde="Write a short passage (3-4 sentences) of a reference document that answers the question.\n"
    "Question: {query}\nPassage:",
    multi_query="Rewrite the question in {n} different ways, with other words, for searching documents. "
    "Write one question per line, no numbering, nothing else.\nQuestion: {query}",
    # LangChain's CONDENSE_QUESTION_PROMPT, tightened so a small model replies with the question only
    condense=(
        "Rewrite the follow-up question as a standalone question that can be understood without the "
        "conversation. Reply with the question only.\n\nConversation:\n{history}\n\n"
        "Follow-up question: {question}\nStandalone question:"
    ),
    speakers=("User", "Assistant"),
    testset=TESTSET,
    not_in_documents="The documents do not contain this information.",
    unanswered_reference=(
        r"(the )?(documents?|texts?|sources?|handbook|guidelines?|manual|corpus|contexts?|passages?)"
        r"( provided)? (do|does|did) ?(not|n t) (say|answer|contain|mention|cover|state|specify|include|address)"
        r"|not (stated |mentioned |answered |given |found )?in the (documents?|texts?|sources?|handbook|guidelines?)"
        r"|(unanswerable|no answer|not answerable|unknown|n a)$"
    ),
    judge_refusal=r"I'?m sorry|I am sorry|I can(?:no|')t (?:help|assist|comply|provide)|as an AI",
    negatable=r"\b(is|are|was|were|can|will|should|does|do|did|has|have|had|must|may)\b",
    negated=r"\b(is|are|was|were|can|will|should|does|do|did|has|have|had|must|may) not\b",
    negate="{} not",
    abstention=(
        r"(?:does|do|did) not (?:\w+ )?(?:mention|provide|specify|contain|state|include|say)|"
        r"not (?:explicitly )?(?:mentioned|provided|specified|stated|found|available)|no (?:specific )?"
        r"(?:information|mention|details?)|cannot be (?:determined|answered)|unable to (?:determine|find)"
    ),
    number_words={
        **dict(zip("two three four five six seven eight nine ten".split(), range(2, 11))),
        **dict(
            zip("eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split(), range(11, 20))
        ),
        **dict(zip("twenty thirty forty fifty sixty seventy eighty ninety".split(), range(20, 91, 10))),
        "hundred": 100,
    },
    # ragas: none, its prompts are English
)
