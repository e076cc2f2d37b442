"""ragas's metrics (`ragas.metrics.collections`, ragas 0.4) with the workbench's judge and embeddings.

    llm = WorkbenchRagasLLM(LLM({...}))                      # a ragas InstructorBaseRagasLLM
    embeddings = WorkbenchEmbeddings(default_embedder("es"))  # a ragas BaseRagasEmbedding

ragas's metrics call `llm.agenerate(prompt, OutputModel)` and take back the parsed pydantic object.
ragas's own `llm_factory` does that with the instructor library over a provider's client; this
adapter does it over the workbench's `LLM` (or any LangChain chat model), so every judge call is
cached, rate limited, retried and accounted like the rest of the workbench, and it adds:
  * the output model's JSON schema, bounded (`prompts.judge_schema`), as the call's `json_schema`:
    a llama.cpp judge is constrained by a grammar, a server gets it as `response_format`;
  * n samples drawn together where a prompt is asked n times (answer relevancy's `strictness`
    questions: ragas calls agenerate n times with one prompt). The first call draws all n with
    `sample=0..n-1` (`LLM.complete_samples`: independent, each cached under its own key, in one
    request where the provider takes n > 1) at ragas's multi-sample temperature, 0.3; the next
    calls take the rest;
  * one repair call after an output that does not parse, as ragas's legacy prompts did
    (`parse_retries`);
  * a trace of every call and parsed output of the (sample, metric) being scored, for its reason.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import typing as t
from dataclasses import dataclass, field

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import HumanMessage
from pydantic import BaseModel, ValidationError
from ragas.embeddings import BaseRagasEmbedding
from ragas.llms import InstructorBaseRagasLLM
from ragas.prompt.utils import extract_json

from helpers.llm import LLM
from helpers.llm.structured import RESPONSE_SCHEMA, normalise_json
from helpers.retrieval.embedders.models import CachedEmbedder, build_embedder

# ragas's temperatures (its legacy `BaseRagasLLM.get_temperature`): near-greedy for one
# completion, 0.3 where several independent samples of one prompt are wanted
ONE_SAMPLE_TEMPERATURE, MULTI_SAMPLE_TEMPERATURE = 0.01, 0.3

# ragas's legacy repair prompt (ragas.prompt.pydantic_prompt.FixOutputFormat), in its prompt format
REPAIR_INSTRUCTION = (
    "The output string did not satisfy the constraints given in the prompt. Fix the output string and return it."
)


@dataclass
class Trace:
    """What the judge was asked and said for one (sample, metric): `calls` ({"n", "temperature",
    "texts"} per request), `outputs` ((role, parsed dict) per parsed output), `prompts` (prompt
    text -> (traced prompt, its input), filled by the prompts' `to_string`) and `pending` (prompt
    text -> samples drawn but not yet taken)."""

    calls: list[dict] = field(default_factory=list)
    outputs: list[tuple[str, dict]] = field(default_factory=list)
    prompts: dict[str, tuple[t.Any, BaseModel]] = field(default_factory=dict)
    pending: dict[str, list[str]] = field(default_factory=dict)

    def texts(self) -> list[str]:
        return [text for call in self.calls for text in call["texts"]]


# the trace of the (sample, metric) being scored, per asyncio task (set by the runner); None elsewhere
TRACE: contextvars.ContextVar[Trace | None] = contextvars.ContextVar("ragas_trace", default=None)

# ragas's 0/1 fields, typed int in its output models
_BINARY_FIELDS = {"verdict", "attributed", "noncommittal"}


def judge_schema(
    schema: dict, *, counts: dict[str, int] | None = None, max_string: int = 160, max_items: int = 8
) -> dict:
    """ragas's output schema, bounded for a grammar: 0/1 fields can only be 0 or 1, lists hold 1 to
    `max_items` entries (exactly `counts[name]` where the input has a list of that name: one verdict
    per input statement) and strings 2 to `max_string` characters, so a small judge can neither
    answer with an empty list nor ramble past max_tokens and leave its JSON unfinished."""
    counts = counts or {}
    top = {name for name, node in schema.get("properties", {}).items() if node.get("type") == "array"}

    def bound(node, name=None):
        if isinstance(node, dict):
            node = {k: bound(v, k) for k, v in node.items()}
            if node.get("type") == "integer" and name in _BINARY_FIELDS:
                node["enum"] = [0, 1]
            elif node.get("type") == "string":
                node.setdefault("minLength", 2)
                node.setdefault("maxLength", max_string)
            elif node.get("type") == "array":
                exact = counts.get(name) if name in top else None
                node.setdefault("minItems", exact or 1)
                node.setdefault("maxItems", exact or max_items)
            return node
        if isinstance(node, list):
            return [bound(v, name) for v in node]
        return node

    return bound(schema)


class UnparsedOutput(ValueError):
    """The judge's output (after the repair attempts) is not the JSON the prompt asked for."""

    def __init__(self, text: str, error: Exception):
        super().__init__(f"judge output was not the expected JSON ({type(error).__name__}): {text[:200]!r}")
        self.text = text


def parse_output(text: str, output_model: type[BaseModel]) -> BaseModel:
    """`text`'s first JSON value as `output_model` (ValidationError / ValueError when it is not)."""
    return output_model.model_validate_json(extract_json(text))


def repair_prompt(prompt: str, output: str, output_model: type[BaseModel]) -> str:
    data = json.dumps({"output_string": output, "prompt_value": prompt}, ensure_ascii=False, indent=4)
    return (
        f"{REPAIR_INSTRUCTION}\nPlease return the output in a JSON format that complies with the following "
        f"schema as specified in JSON Schema:\n{json.dumps(output_model.model_json_schema())}\n\n"
        f"-----------------------------\n\nNow perform the same with the following input\ninput: {data}\nOutput: "
    )


class WorkbenchRagasLLM(InstructorBaseRagasLLM):
    """A ragas judge LLM over a workbench `LLM` or any LangChain chat model (e.g. a scripted judge
    in tests). max_tokens: per judge call (default: the LLM's config). parse_retries: repair calls
    after an output that does not parse (default 1)."""

    def __init__(self, judge: LLM | BaseChatModel, *, max_tokens: int | None = None, parse_retries: int = 1):
        if not isinstance(judge, (LLM, BaseChatModel)):
            raise TypeError(f"a RAGAS judge is a helpers.llm.LLM or a LangChain chat model, not {type(judge).__name__}")
        self.judge, self.max_tokens, self.parse_retries = judge, max_tokens, parse_retries

    async def _draw(self, prompt: str, n: int, temperature: float, schema: dict | None) -> list[str]:
        if isinstance(self.judge, LLM):
            results = await asyncio.to_thread(
                self.judge.complete_samples,
                [{"role": "user", "content": prompt}],
                n,
                temperature=temperature,
                max_tokens=self.max_tokens,
                json_schema=schema,
            )
            texts: list[str] = []
            for r in results:
                assert r.text is not None, "LLM.complete raises rather than answer with no text"
                texts.append(normalise_json(r.text) if schema is not None else r.text)
        else:  # a LangChain chat model: n as a keyword, as ragas's LangChain wrapper passed it
            token = RESPONSE_SCHEMA.set(schema)  # read by WorkbenchChatModel
            # else the model's own; to agenerate's **kwargs (Any), which the chat model reads
            limit: dict[str, t.Any] = {} if self.max_tokens is None else {"max_tokens": self.max_tokens}
            try:
                result = await self.judge.agenerate(
                    [[HumanMessage(content=prompt)]], n=n, temperature=temperature, **limit
                )
            finally:
                RESPONSE_SCHEMA.reset(token)
            texts = [g.text for g in result.generations[0]]
        trace = TRACE.get()
        if trace is not None:
            trace.calls.append({"n": n, "temperature": temperature, "texts": texts})
        return texts

    async def agenerate(self, prompt: str, response_model: type[BaseModel]) -> t.Any:
        trace = TRACE.get() or Trace()
        traced, data = trace.prompts.get(prompt, (None, None))
        role, samples = getattr(traced, "role", "output"), getattr(traced, "samples", 1)
        counts = {k: len(v) for k, v in data.model_dump().items() if isinstance(v, list)} if data is not None else {}
        schema = judge_schema(response_model.model_json_schema(), counts=counts)
        pending = trace.pending.get(prompt)
        if not pending:
            temperature = MULTI_SAMPLE_TEMPERATURE if samples > 1 else ONE_SAMPLE_TEMPERATURE
            pending = trace.pending[prompt] = list(await self._draw(prompt, samples, temperature, schema))
        text = pending.pop(0)
        for attempt in range(self.parse_retries + 1):
            try:
                output = parse_output(text, response_model)
                break
            except (ValidationError, ValueError) as exc:
                if attempt == self.parse_retries:
                    raise UnparsedOutput(text, exc) from exc
                text = (
                    await self._draw(repair_prompt(prompt, text, response_model), 1, ONE_SAMPLE_TEMPERATURE, schema)
                )[0]
        trace.outputs.append((role, output.model_dump()))
        return output

    def generate(self, prompt: str, response_model: type[BaseModel]) -> t.Any:
        """Synchronous, for callers outside an event loop (ragas's metrics use `agenerate`)."""
        return asyncio.run(self.agenerate(prompt, response_model))


class WorkbenchEmbeddings(BaseRagasEmbedding):
    """ragas embeddings over a workbench embedder (`CachedEmbedder(build_embedder(...))` or any
    object with `embed_queries` / `embed_documents` returning arrays).

    ragas embeds one text with `embed_text` and several with `embed_texts`. `symmetric=True` (the
    default) embeds both as queries: answer relevancy compares the user's question with questions
    the judge generated, question against question, a symmetric task, for which e5 models want the
    same "query: " prefix on both sides (Wang et al. 2022, multilingual-e5 model card)."""

    def __init__(self, embedder, *, symmetric: bool = True):
        super().__init__(cache=None)  # CachedEmbedder caches on disk already
        self.embedder, self.symmetric = embedder, symmetric
        self.model = getattr(embedder, "name", type(embedder).__name__)

    def embed_texts(self, texts: list[str], **kwargs) -> list[list[float]]:
        if not texts:
            return []
        fn = self.embedder.embed_queries if self.symmetric else self.embedder.embed_documents
        return [list(map(float, v)) for v in fn(list(texts))]

    def embed_text(self, text: str, **kwargs) -> list[float]:
        return list(map(float, self.embedder.embed_queries([text])[0]))

    async def aembed_texts(self, texts: list[str], **kwargs) -> list[list[float]]:
        return await asyncio.to_thread(self.embed_texts, texts)

    async def aembed_text(self, text: str, **kwargs) -> list[float]:
        return await asyncio.to_thread(self.embed_text, text)


def default_embedder(language: str = "en"):
    """The cached bundled embedder for a language: MiniLM for English, multilingual e5 otherwise."""
    return CachedEmbedder(build_embedder(None, language=language))


__all__: t.Sequence[str] = [
    "Trace",
    "TRACE",
    "UnparsedOutput",
    "WorkbenchRagasLLM",
    "WorkbenchEmbeddings",
    "default_embedder",
    "judge_schema",
    "parse_output",
]
