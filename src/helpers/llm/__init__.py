"""The LLM layer: one small, cached, rate-limited, retried and accounted way to call any LLM.

from helpers.llm import LLM
llm = LLM({"provider": "local"})            # or groq / openai-compatible
llm.complete([{"role": "user", "content": "Hola"}]).text
"""

from helpers.llm.cache import ResponseCache
from helpers.llm.client import LLM, CallRecord, LLMResult
from helpers.llm.llm_errors import CacheMissError, LLMError, MissingKeyError, RetryableError
from helpers.llm.llm_settings import LLMConfig, Price
from helpers.llm.structured import StructuredResult, complete_json, extract_json

__all__ = [
    "LLM",
    "LLMConfig",
    "LLMResult",
    "CallRecord",
    "Price",
    "ResponseCache",
    "LLMError",
    "RetryableError",
    "MissingKeyError",
    "CacheMissError",
    "StructuredResult",
    "complete_json",
    "extract_json",
]
