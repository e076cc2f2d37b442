"""Trained scikit-learn artefacts (the LTR reranker, the offline TRACe judge), written and read
so that a shared models folder or a config's path cannot run code (SECURITY.md).

A pickle (joblib) runs whatever its author put in it when loaded. These artefacts are written with
skops (https://skops.readthedocs.io), which stores objects as data and rebuilds only the types it
is allowed to: the defaults skops trusts (numpy, scipy, scikit-learn estimators) plus the one
scikit-learn type listed in TRUSTED_TYPES. Beside each artefact, `<name>.json` is its card: what
it is, how it was trained, and the sha256 of the artefact, checked before loading, so a file
changed or swapped after training is refused by name.

The same model gives the same bytes, so the same sha256 on every run and machine (`canonical`):
skops alone names its files and references after memory addresses and dates each entry.

    write_artefact(model, path, card={"trained_on": ...})   # path.skops + path.json
    model = read_artefact(path, what="reranker", retrain="python -m helpers train-reranker")
"""

from __future__ import annotations

import hashlib
import io
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


# every entry of a canonical archive carries this date (the earliest a zip can hold)
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


def canonical(archive: bytes) -> bytes:
    """A skops archive rewritten so that its bytes depend on the object alone. skops names each
    array file and object reference after id() (a memory address, new every run) and dates each
    entry with the time of writing; here references and files are numbered in the order the
    schema meets them (from 1: skops ignores a reference of 0), every entry is dated ZIP_EPOCH
    and stored uncompressed (zlib builds differ between machines, and so would deflated bytes).
    Loading is unchanged: skops reads the files the schema names."""
    with zipfile.ZipFile(io.BytesIO(archive)) as source:
        names = set(source.namelist())
        ids: dict[int, int] = {}
        files: dict[str, str] = {}

        def renumber(node):
            if isinstance(node, list):
                return [renumber(item) for item in node]
            if not isinstance(node, dict):
                return node
            out = {}
            for key, value in node.items():
                if key == "__id__" and isinstance(value, int):
                    out[key] = ids.setdefault(value, len(ids) + 1)
                elif key == "file" and isinstance(value, str) and value in names:
                    out[key] = files.setdefault(value, f"{len(files) + 1}.{value.rpartition('.')[2]}")
                else:
                    out[key] = renumber(value)
            return out

        schema = renumber(json.loads(source.read("schema.json")))
        entries = {"schema.json": json.dumps(schema, indent=2).encode("utf-8")}
        entries.update({new: source.read(old) for old, new in files.items()})
    unread = names - set(files) - {"schema.json"}
    if unread:  # a skops that writes entries by other means: refuse rather than drop them
        raise ArtefactError(f"skops wrote entries its schema does not name ({sorted(unread)[:3]}); cannot canonicalise")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as out:
        for name, data in entries.items():
            info = zipfile.ZipInfo(name, date_time=ZIP_EPOCH)
            info.create_system, info.external_attr = 3, 0o644 << 16  # as written on Unix, whatever the OS
            out.writestr(info, data)
    return buffer.getvalue()


def write_artefact(obj, path: str | Path, card: dict | None = None) -> dict:
    """Write `obj` to `path` with skops, in canonical form (through a temporary file, so a kill
    mid-write leaves no half artefact), and its card with the sha256 beside it; returns the card."""
    import skops.io as sio

    path = Path(path)
    if path.suffix != ".skops":
        raise ArtefactError(
            f"{path}: artefacts are written as .skops files (a pickle would run code when "
            "loaded); give a path ending in .skops"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(canonical(sio.dumps(obj)))
    tmp.replace(path)
    card = {
        **(card or {}),
        "artefact": path.name,
        "format": FORMAT,
        "bytes": path.stat().st_size,
        "sha256": sha256_of(path),
        "written_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    return write_card(path, card)


def write_card(path: str | Path, card: dict) -> dict:
    """Write `card` beside the artefact at `path` (<name>.json); returns it."""
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


def verified_card(path: str | Path, *, what: str = "artefact", retrain: str = "python -m helpers --help") -> dict:
    """The card of the artefact at `path`, once the file's sha256 is the card's (the file is not
    loaded); an ArtefactError naming the file and `retrain` otherwise."""
    path = Path(path)
    if not path.is_file():
        raise ArtefactError(f"{path}: no {what}" + (" (a folder)" if path.is_dir() else "") + f"; run `{retrain}`")
    card = read_card(path)
    actual = sha256_of(path)
    if card.get("sha256") != actual:
        raise ArtefactError(
            f"{path}: sha256 {actual[:16]}... differs from its card's "
            f"{str(card.get('sha256'))[:16]}...: the file changed after training; run `{retrain}`"
        )
    return card


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
    verified_card(path, what=what, retrain=retrain)
    try:
        return sio.load(path, trusted=TRUSTED_TYPES)
    except UntrustedTypesFoundException as exc:
        raise ArtefactError(
            f"{path}: holds types this workbench never writes ({exc}); not loaded. "
            f"run `{retrain}` to make one from your own data"
        ) from None
    except (zipfile.BadZipFile, KeyError, ValueError, TypeError) as exc:
        raise ArtefactError(f"{path}: not a readable {what} ({type(exc).__name__}: {exc}); run `{retrain}`") from None
