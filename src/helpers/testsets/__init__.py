"""A test set written from a corpus by the LLM (`writer`), with the lexical filters its questions
pass (`question_checks`)."""
