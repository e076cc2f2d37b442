"""Trained scikit-learn artefacts (the LTR reranker, the offline TRACe judge), written and read
so that a shared models folder or a config's path cannot run code (SECURITY.md).

A pickle (joblib) runs whatever its author put in it when loaded. These artefacts are written with
skops (https://skops.readthedocs.io), which stores objects as data and rebuilds only the types it
is allowed to: the defaults skops trusts (numpy, scipy, scikit-learn estimators) plus the one
scikit-learn type listed in TRUSTED_TYPES. Beside each artefact, `<name>.json` is its card: what
it is, how it was trained, and the sha256 of the artefact, checked before loading, so a file
changed or swapped after training is refused by name.

    write_artefact(model, path, card={"trained_on": ...})   # path.skops + path.json
    model = read_artefact(path, what="reranker", retrain="python -m helpers train-reranker")
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from datetime import datetime, timezone
from pathlib import Path

from helpers.errors import UserError

FORMAT = "skops"
# Types beyond skops's defaults that our estimators hold (HistGradientBoosting's tree predictors);
# anything else in a file makes loading fail rather than run.
TRUSTED_TYPES = ["sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor"]


class ArtefactError(UserError):
    """An artefact that is missing, changed since training, in the old pickle format, or holding
    types this workbench never writes."""


def card_path(path: str | Path) -> Path:
    return Path(path).with_suffix(".json")


def sha256_of(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_artefact(obj, path: str | Path, card: dict | None = None) -> dict:
    """Write `obj` to `path` with skops (through a temporary file, so a kill mid-write leaves no
    half artefact) and its card with the sha256 beside it; returns the card."""
    import skops.io as sio

    path = Path(path)
    if path.suffix != ".skops":
        raise ArtefactError(
            f"{path}: artefacts are written as .skops files (a pickle would run code when "
            "loaded); give a path ending in .skops"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    sio.dump(obj, tmp, compression=zipfile.ZIP_DEFLATED)
    tmp.replace(path)
    card = {
        **(card or {}),
        "artefact": path.name,
        "format": FORMAT,
        "bytes": path.stat().st_size,
        "sha256": sha256_of(path),
        "written_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    card_path(path).write_text(json.dumps(card, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    return card


def read_card(path: str | Path) -> dict:
    sidecar = card_path(path)
    if not sidecar.is_file():
        raise ArtefactError(
            f"{path}: no card {sidecar.name} beside it (written at training time with the "
            "artefact's sha256); run the training command again, or copy the card with the artefact"
        )
    try:
        return json.loads(sidecar.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ArtefactError(f"{sidecar}: not a valid card ({exc}); retrain the artefact") from None


def read_artefact(path: str | Path, *, what: str = "artefact", retrain: str = "python -m helpers --help"):
    """The object in the .skops file at `path`, after checking its card's sha256. Each failure is
    an ArtefactError that names the file and the command that makes a good one (`retrain`)."""
    import skops.io as sio
    from skops.io.exceptions import UntrustedTypesFoundException

    path = Path(path)
    if path.suffix in {".joblib", ".pkl", ".pickle"}:
        raise ArtefactError(
            f"{path}: {what} in a pickle format, which runs code when loaded and is no "
            f"longer read; run `{retrain}` to write a .skops file"
        )
    if not path.is_file():
        raise ArtefactError(f"{path}: no {what}" + (" (a folder)" if path.is_dir() else "") + f"; run `{retrain}`")
    card = read_card(path)
    actual = sha256_of(path)
    if card.get("sha256") != actual:
        raise ArtefactError(
            f"{path}: sha256 {actual[:16]}... differs from its card's "
            f"{str(card.get('sha256'))[:16]}...: the file changed after training; run `{retrain}`"
        )
    try:
        return sio.load(path, trusted=TRUSTED_TYPES)
    except UntrustedTypesFoundException as exc:
        raise ArtefactError(
            f"{path}: holds types this workbench never writes ({exc}); not loaded. "
            f"run `{retrain}` to make one from your own data"
        ) from None
    except (zipfile.BadZipFile, KeyError, ValueError, TypeError) as exc:
        raise ArtefactError(f"{path}: not a readable {what} ({type(exc).__name__}: {exc}); run `{retrain}`") from None
