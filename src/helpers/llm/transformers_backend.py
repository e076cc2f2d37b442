"""The local model through transformers' GGUF loader (dequantised to fp32; no compiler needed): the
`local` provider's backend when `llm.local_backend: transformers` (helpers.llm.backends)."""

from __future__ import annotations

import os
import threading

from helpers.llm.llm_settings import LLMConfig
from helpers.llm.protocol import Completion, cut_at_stop
from helpers.local_models.local_weights import resolve_local_model

# The repeat penalty looks at the last 64 tokens: llama.cpp's default window (`--repeat-last-n`,
# llama-cpp-python's `Llama(last_n_tokens_size=64)`). The transformers backend uses the same window
# so that both local backends sample alike.
REPEAT_LAST_N = 64

# tokenizer and model by file, loaded once per process and shared by every backend of that file
_MODELS: dict[str, tuple] = {}
_MODELS_LOCK = threading.Lock()


class TransformersBackend:
    """transformers' GGUF loader (dequantises to fp32; no compiler needed)."""

    def __init__(self, config: LLMConfig):
        self.path = resolve_local_model(config.model)
        self.repeat_penalty = config.repeat_penalty
        self._lock = threading.Lock()

    def _model(self):
        with _MODELS_LOCK:
            if self.path not in _MODELS:
                from transformers import AutoModelForCausalLM, AutoTokenizer

                folder, name = os.path.dirname(self.path), os.path.basename(self.path)
                tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
                model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)
                model.eval()
                _MODELS[self.path] = (tokenizer, model)
            return _MODELS[self.path]

    def chat(
        self,
        messages,
        *,
        temperature,
        max_tokens,
        seed,
        timeout,
        stop=(),
        repeat_penalty=None,
        response_format=None,
        n=1,
    ) -> Completion:
        """repeat_penalty: None = the config's. Stops: generate's `stop_strings` ends the
        generation at one; the text is then cut before it, as llama.cpp does. response_format is
        not enforced here (transformers has no grammar sampler): the prompt asks for the JSON and
        the layer validates and repairs it as for any unconstrained model. n: one choice, as
        for llama.cpp."""
        import torch
        from transformers import LogitsProcessorList

        tokenizer, model = self._model()
        penalty = float(self.repeat_penalty if repeat_penalty is None else repeat_penalty)
        processors = LogitsProcessorList([WindowedRepetitionPenalty(penalty)] if penalty != 1.0 else [])
        with self._lock, torch.inference_mode():
            inputs = tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
            )
            torch.manual_seed(seed)
            sampling = {"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False}
            stops = {"stop_strings": list(stop), "tokenizer": tokenizer} if stop else {}
            output = model.generate(
                **inputs,
                max_new_tokens=max_tokens,
                pad_token_id=tokenizer.eos_token_id,
                logits_processor=processors,
                **stops,
                **sampling,
            )
        new_tokens = output[0, inputs["input_ids"].shape[1] :]
        return Completion(
            cut_at_stop(tokenizer.decode(new_tokens, skip_special_tokens=True), stop),
            int(inputs["input_ids"].shape[1]),
            int(new_tokens.shape[0]),
        )


class WindowedRepetitionPenalty:
    """The CTRL repetition penalty (Keskar et al. 2019, as in transformers'
    RepetitionPenaltyLogitsProcessor and llama.cpp's penalties sampler) over the last `last_n`
    tokens only, as llama.cpp applies it. transformers' own `repetition_penalty` covers the whole
    prompt, which in RAG penalises the very context words an answer should quote."""

    def __init__(self, penalty: float, last_n: int = REPEAT_LAST_N):
        from transformers import RepetitionPenaltyLogitsProcessor

        self.last_n, self._penalty = last_n, RepetitionPenaltyLogitsProcessor(float(penalty))

    def __call__(self, input_ids, scores):
        return self._penalty(input_ids[:, -self.last_n :], scores)
