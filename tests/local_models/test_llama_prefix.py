"""Prompt-prefix reuse in whole blocks (helpers.local_models.llama_prefix): which prompts a model answered
before must never change its next answer."""

import pytest

from helpers.local_models.llama_prefix import PromptStore, reusable_prefix


def small_model(store: PromptStore | None = None):
    """The bundled 135M model (Q8_0) on one thread, prompts in blocks of 16 tokens."""
    from helpers.local_models.llama_prefix import block_aligned_llama
    from helpers.local_models.local_weights import bundled_gguf, q8_0_copy

    return block_aligned_llama(
        model_path=str(q8_0_copy(bundled_gguf())),
        n_ctx=2048,
        n_threads=1,
        n_threads_batch=1,
        flash_attn=True,
        verbose=False,
        seed=0,
        block=16,
        store=store,
    )


def test_reusable_prefix_is_whole_blocks_of_the_shared_prompt_prefix():
    previous = list(range(100)) + [900, 901]  # a 100-token prompt, then 2 generated tokens
    assert reusable_prefix(previous, list(range(70)) + [5] * 30, 100, 16) == 64  # 70 shared -> 4 blocks
    assert reusable_prefix(previous, list(range(70)) + [5] * 30, 100, 64) == 64
    assert reusable_prefix(previous, list(range(70)) + [5] * 30, 100, 128) == 0
    # the generated tokens were evaluated one by one: never reused, even when the prompt repeats them
    assert reusable_prefix(previous, list(range(100)) + [900, 901, 7], 100, 34) == 68
    assert reusable_prefix(previous, list(range(100)) + [900, 901, 7], 102, 34) == 102
    # one token at least is left to evaluate: its logits give the first sample
    assert reusable_prefix(previous, list(range(64)), 100, 16) == 48
    assert reusable_prefix(previous, [1, 2, 3], 100, 16) == 0  # nothing shared
    assert reusable_prefix([], list(range(50)), 0, 16) == 0  # an empty context
    with pytest.raises(ValueError, match="block"):
        reusable_prefix(previous, previous, 100, 0)


def test_the_store_finds_the_prompt_sharing_most_whole_blocks_and_forgets_the_oldest():
    store = PromptStore(budget_mb=250 / 2**20)  # room for two 100-byte states
    store.add(list(range(40)), b"a" * 100)
    store.add(list(range(20)) + [7] * 20, b"b" * 100)
    assert store.best(list(range(50)), 16) == (32, b"a" * 100)  # 40 shared -> 2 blocks
    assert store.best(list(range(20)) + [7] * 30, 16) == (32, b"b" * 100)
    assert store.best(list(range(33)), 16) == (32, b"a" * 100)  # one token is left to evaluate
    assert store.best(list(range(32)), 16)[0] == 16
    assert store.best([9] * 50, 16) == (0, None)
    store.best(list(range(50)), 16)  # "a" used last: "b" is the least recently used
    store.add([5] * 40, b"c" * 100)
    assert len(store) == 2 and store.best(list(range(20)) + [7] * 30, 16) == (16, b"a" * 100)
    store.add([6] * 40, b"d" * 300)  # larger than the budget: not kept
    assert len(store) == 2
    with pytest.raises(ValueError, match="prompt_store_mb"):
        PromptStore(-1)


@pytest.mark.slow
def test_answers_after_other_prompts_are_the_answers_from_an_empty_context():
    """Prompts that share a long prefix (one context, four questions), answered in two orders by
    one model that keeps its KV between calls, give the answers each gets from an empty context,
    and the later calls do reuse blocks."""
    from helpers.generation.answering import build_messages

    context = (
        "Preeclampsia is high blood pressure after 20 weeks of pregnancy with protein in the urine. "
        "Low-dose aspirin from 12 weeks lowers the risk in women at high risk. Magnesium sulfate "
        "prevents seizures in severe preeclampsia. Delivery is the only cure. "
    ) * 3
    questions = [
        "When does preeclampsia start?",
        "What lowers the risk?",
        "What prevents seizures?",
        "What is the only cure?",
    ]
    prompts = [build_messages(q, [context], "en") for q in questions]
    model = small_model()

    def ask(messages):
        out = model.create_chat_completion(
            messages=messages, temperature=0.0, max_tokens=24, seed=0, repeat_penalty=1.1
        )
        return out["choices"][0]["message"]["content"]

    fresh = []
    for messages in prompts:
        model.reset()
        fresh.append(ask(messages))
        assert model.reused_tokens == 0
    reused, reused_tokens = {}, []
    for order in (prompts, prompts[::-1]):
        for messages in order:
            reused.setdefault(messages[1]["content"], []).append(ask(messages))
            reused_tokens.append(model.reused_tokens)
    assert all(t % 16 == 0 for t in reused_tokens) and sum(t > 100 for t in reused_tokens) >= 6
    for messages, answer in zip(prompts, fresh):
        assert reused[messages[1]["content"]] == [answer, answer], messages[1]["content"][-40:]


@pytest.mark.slow
def test_answers_from_another_models_stored_prompt_are_the_answers_from_an_empty_context():
    """Two models sharing a PromptStore: a prompt whose contexts another model's earlier prompt
    began with restores that prompt's KV (the whole blocks shared) and answers as from an empty
    context; the previous prompt alone would have shared only the system text."""
    from helpers.generation.answering import build_messages

    contexts = [
        "Preeclampsia is high blood pressure after 20 weeks of pregnancy with protein in the urine.",
        "Low-dose aspirin from 12 weeks lowers the risk in women at high risk of preeclampsia.",
        "Magnesium sulfate prevents seizures in severe preeclampsia; delivery is the only cure.",
        "Gestational diabetes is screened with a glucose tolerance test at 24 to 28 weeks.",
    ]
    first = build_messages("What lowers the risk of preeclampsia?", contexts[:3], "en")
    other = build_messages("When is diabetes screened?", contexts[3:], "en")
    again = build_messages("What lowers the risk of preeclampsia?", contexts[:3] + contexts[3:], "en")
    store = PromptStore(64)
    one, two = small_model(store), small_model(store)

    def ask(model, messages):
        out = model.create_chat_completion(
            messages=messages, temperature=0.0, max_tokens=24, seed=0, repeat_penalty=1.1
        )
        model.remember_prompt()
        return out["choices"][0]["message"]["content"]

    fresh = small_model()
    expected = ask(fresh, again)
    ask(one, first)
    ask(two, other)  # model two's previous prompt shares only the system text with `again`
    system_only = two.reused_tokens
    assert ask(two, again) == expected
    assert len(store) == 3 and two.reused_tokens >= 48 + system_only
