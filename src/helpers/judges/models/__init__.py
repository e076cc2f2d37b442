"""What the registered judges run (the judges themselves are the modules one level up):

- TRACe: the offline trees over lexical features (`trace_trees`; the features `trace_features`,
  per example `trace_examples`), RAGBench's annotator prompt for an LLM (`trace_annotator`), P(yes)
  verdicts from a GGUF model's logits (`llm_verdicts`);
- the evidence model, a cross-encoder that reads (claim, evidence): the model (`evidence`), its
  training pairs (`evidence_pairs`) and fine-tuning (`evidence_training`), and RAGAS faithfulness
  with it as the verdict step (`evidence_faithfulness`).

TRACe's definitions (sentence keys, gold scores) stay in `helpers.trace`, which they all read."""
