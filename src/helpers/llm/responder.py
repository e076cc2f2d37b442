"""A fast, deterministic stand-in for a model: it answers any chat request in microseconds.

Two jobs: `serve-llm --responder fast` (throughput tests of the hosted path, where the model's
speed must not be what is measured) and `helpers run --dry-run` (every prompt of a sample of the
run is built and counted, and no provider is called). Its answers are well-formed, not good:

- a request whose `response_format` carries a JSON schema, or whose prompt embeds one (ragas's
  prompts say "...as specified in JSON Schema:\\n{...}"), gets a JSON instance of that schema:
  lists within their minItems/maxItems, 0/1 verdicts, strings taken from the prompt, and fields
  named `*keys*` filled with RAGBench sentence keys ("0a", "1b") found in the prompt;
- any other request gets one or two sentences of the prompt's last message.

The same request always gets the same answer (the choice is seeded by the request's digest).
"""

from __future__ import annotations

import hashlib
import json
import random
import re

from helpers.llm.protocol import Completion, cut_at_stop

SCHEMA_MARKER = "JSON Schema:"  # ragas's PydanticPrompt._generate_output_signature
_SENTENCE = re.compile(r"[^.!?\n]{12,200}[.!?]")
_SENTENCE_KEY = re.compile(r"\b(\d{1,2}[a-z]{1,2})\.? ", re.I)  # RAGBench's "0a. text" sentence labels
_TOKEN = re.compile(r"\w+|[^\w\s]")


def estimate_tokens(text: str) -> int:
    """Tokens of `text` for a BPE tokenizer of ~100k entries (Llama 3, GPT-4o): one per word of up
    to 8 characters, one more per further 8, one per punctuation mark. Within ~15 % of those
    tokenizers on English and Spanish prose; exact counts need the model's own tokenizer."""
    return sum(1 + (len(t) - 1) // 8 if t[0].isalnum() or t[0] == "_" else 1 for t in _TOKEN.findall(text))


def message_tokens(messages: list[dict], count=estimate_tokens) -> int:
    """Prompt tokens of a chat: its texts (`count`: a tokenizer's length function) plus the chat
    template's few tokens per message (role markers; 4 + 3 in ChatML, which Llama 3's matches)."""
    return sum(count(m.get("content") or "") + 4 for m in messages) + 3


def embedded_schema(text: str) -> dict | None:
    """The JSON schema a prompt spells out after "JSON Schema:" (ragas's prompts), if any."""
    at = text.find(SCHEMA_MARKER)
    if at < 0:
        return None
    start = text.find("{", at)
    try:
        schema, _ = json.JSONDecoder().raw_decode(text, start)
    except ValueError:
        return None
    return schema if isinstance(schema, dict) else None


class SchemaResponder:
    """A backend (helpers.llm.protocol.Backend) with no model behind it.
    `count`: the token counter its usage reports (default: estimate_tokens)."""

    def __init__(self, count=estimate_tokens):
        self.count = count

    def chat(
        self,
        messages,
        *,
        temperature=0.0,
        max_tokens=256,
        seed=0,
        timeout=None,
        stop=(),
        repeat_penalty=None,
        response_format=None,
        n=1,
    ) -> Completion:
        """`n` choices, each as `answer` gives it for seed, seed + 1, ... (defaults for every
        option: the tests and benchmarks ask it directly, with a prompt alone)"""
        options = {
            "temperature": temperature,
            "max_tokens": max_tokens,
            "timeout": timeout,
            "stop": stop,
            "repeat_penalty": repeat_penalty,
            "response_format": response_format,
        }
        if n <= 1:
            return self.answer(messages, seed=seed, **options)
        choices = [self.answer(messages, seed=seed + i, **options) for i in range(n)]
        return Completion(
            choices[0].text, choices[0].input_tokens, sum(c.output_tokens for c in choices), [c.text for c in choices]
        )

    def answer(
        self,
        messages,
        *,
        temperature=0.0,
        max_tokens=256,
        seed=0,
        timeout=None,
        stop=(),
        repeat_penalty=None,
        response_format=None,
    ) -> Completion:
        prompt = "\n".join(m.get("content") or "" for m in messages)
        digest = hashlib.sha256(json.dumps([messages, seed, temperature], ensure_ascii=False).encode()).digest()
        rng = random.Random(digest)
        schema = ((response_format or {}).get("json_schema") or {}).get("schema") or embedded_schema(prompt)
        if schema is not None:
            text = json.dumps(_Filler(schema, prompt, rng).instance(schema), ensure_ascii=False)
        elif (response_format or {}).get("type") == "json_object":
            text = "{}"
        else:
            text = cut_at_stop(_sentences(messages[-1].get("content") or prompt, rng, 2), stop)
            words = text.split()
            if self.count(text) > max_tokens:  # as a model cut short by max_tokens
                text = " ".join(words[: max(1, max_tokens * 3 // 4)])
        return Completion(text, message_tokens(messages, self.count), self.count(text))


_NOT_PROSE = str.maketrans("", "", '{}[]"\\')  # JSON's own characters: a naive brace matcher trips on them


def _sentences(text: str, rng: random.Random, n: int) -> str:
    """`n` sentences of `text` from a seeded place; of its input part where it has one (ragas's
    prompts end with "input: {...}" after their instructions and examples)."""
    text = text[text.rfind("input:") + 6 :] if "input:" in text else text
    found = _SENTENCE.findall(text) or [text.strip()[:200] or "No answer."]
    start = rng.randrange(len(found))
    return " ".join(s.strip() for s in found[start : start + n]).translate(_NOT_PROSE).strip() or "No answer."


class _Filler:
    """A JSON instance of a (pydantic-made) schema, its strings drawn from the prompt."""

    def __init__(self, schema: dict, prompt: str, rng: random.Random):
        self.defs = schema.get("$defs") or schema.get("definitions") or {}
        self.prompt, self.rng = prompt, rng
        self.keys = sorted(set(_SENTENCE_KEY.findall(prompt)))

    def instance(self, node: dict, name: str = "", depth: int = 0):
        if "$ref" in node:
            return self.instance(self.defs.get(node["$ref"].rsplit("/", 1)[-1], {}), name, depth)
        for combo in ("anyOf", "oneOf", "allOf"):
            if combo in node:
                options = [o for o in node[combo] if o.get("type") != "null"] or node[combo]
                return self.instance(options[0], name, depth)
        if "enum" in node:
            return self.rng.choice(node["enum"])
        if "const" in node:
            return node["const"]
        kind = node.get("type", "object")
        if kind == "object":
            return {key: self.instance(sub, key, depth + 1) for key, sub in (node.get("properties") or {}).items()}
        if kind == "array":
            low = node.get("minItems", 1 if depth < 3 else 0)
            high = max(low, min(node.get("maxItems", 3), 3))
            if "key" in name.lower() and self.keys:  # RAGBench sentence keys: some of the prompt's own
                count = min(len(self.keys), self.rng.randint(max(low, 1), max(high, 1)))
                return sorted(self.rng.sample(self.keys, count))
            return [self.instance(node.get("items") or {}, name, depth + 1) for _ in range(self.rng.randint(low, high))]
        if kind == "integer":
            return self.rng.randint(node.get("minimum", 0), node.get("maximum", 1))
        if kind == "number":
            return round(self.rng.uniform(node.get("minimum", 0.0), node.get("maximum", 1.0)), 3)
        if kind == "boolean":
            return self.rng.random() < 0.7
        if "key" in name.lower() and self.keys:
            return self.rng.choice(self.keys)
        text = _sentences(self.prompt, self.rng, 1)
        return text[: node.get("maxLength", 200)].ljust(node.get("minLength", 0), ".")
