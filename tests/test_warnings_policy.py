"""The suite's warning policy (pyproject `filterwarnings`): a DeprecationWarning raised on a call
from our code, or by our code, fails the test instead of hiding in the summary."""

import warnings

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel


def test_a_call_into_a_deprecated_library_api_fails():
    from ragas.llms import LangchainLLMWrapper  # deprecated by ragas 0.4 for llm_factory

    with pytest.raises(DeprecationWarning, match="LangchainLLMWrapper is deprecated"):
        LangchainLLMWrapper(FakeListChatModel(responses=["x"]))


def test_our_own_deprecation_warning_fails():
    with pytest.raises(DeprecationWarning, match="old name"):
        warnings.warn("old name", DeprecationWarning, stacklevel=1)
