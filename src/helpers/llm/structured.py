"""Structured output: parse JSON from model text robustly, validate it against a schema, one
repair attempt, then a recorded failure (never an exception that stops a run)."""

from __future__ import annotations

import contextvars
import json
import re
from dataclasses import dataclass, field

from pydantic import BaseModel, ValidationError

from helpers.llm.client import LLM, CallRecord
from helpers.llm.llm_errors import LLMError

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)


# The JSON schema the current call's answer must follow, set by callers that cannot pass it down
# (ragas's prompts, through LangChain): `WorkbenchChatModel` reads it. None: free text.
RESPONSE_SCHEMA: contextvars.ContextVar[dict | None] = contextvars.ContextVar("response_schema", default=None)


class JSONParseError(ValueError):
    pass


def extract_json(text: str):
    """The first JSON object or array in `text`: inside a code fence, after leading prose, or
    followed by trailing prose."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for candidate in candidates:
        decoder = json.JSONDecoder(strict=False)  # raw newlines inside strings (grammar-made JSON has them)
        for match in re.finditer(r"[\[{]", candidate):
            try:
                value, _ = decoder.raw_decode(candidate, match.start())
                return value
            except json.JSONDecodeError:
                continue
    raise JSONParseError(f"no JSON object or array found in: {text[:120]!r}")


def normalise_json(text: str) -> str:
    """`text` re-serialised as strict JSON when it holds one JSON value (a grammar lets a small
    model put raw control characters inside strings, which strict parsers such as pydantic's
    reject); unchanged otherwise."""
    try:
        return json.dumps(json.loads(text, strict=False), ensure_ascii=False)
    except ValueError:
        return text


@dataclass
class StructuredResult:
    value: object | None
    raw_texts: list[str] = field(default_factory=list)
    records: list[CallRecord | None] = field(default_factory=list)  # None: a failed call that carried no record
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _validate(text: str, schema: type[BaseModel] | None):
    value = extract_json(text)
    return schema.model_validate(value) if schema is not None else value


def complete_json(llm: LLM, messages: list[dict], schema: type[BaseModel] | None = None, **params) -> StructuredResult:
    """Ask for JSON (constrained to `schema` where the backend can: `LLMConfig.structured_output`);
    on a parse or schema error, send the error back once and ask for a fix."""
    result = StructuredResult(None)
    conversation = list(messages)
    if schema is not None:
        params.setdefault("json_schema", schema.model_json_schema())
    for attempt in range(2):
        try:
            response = llm.complete(conversation, **params)
        except LLMError as exc:
            result.error = f"call failed: {exc}"
            result.records.append(getattr(exc, "record", None))
            return result
        text = response.text
        assert text is not None, "LLM.complete raises rather than answer with no text"
        result.raw_texts.append(text)
        result.records.append(response.record)
        try:
            result.value = _validate(text, schema)
            result.error = None
            return result
        except (JSONParseError, ValidationError) as exc:
            result.error = f"invalid JSON output after {attempt + 1} attempt(s): {str(exc)[:300]}"
            conversation = conversation + [
                {"role": "assistant", "content": response.text},
                {
                    "role": "user",
                    "content": "Your answer was not valid JSON for the requested format "
                    f"({str(exc)[:200]}). Reply with the corrected JSON only.",
                },
            ]
    return result
