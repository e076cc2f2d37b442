"""An answer from contexts: the answer prompts by name (`answer_prompts`), the generator
(`answering`) and the checks of an answer's text (`answer_checks`)."""
