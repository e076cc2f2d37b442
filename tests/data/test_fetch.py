import hashlib
import json

import pytest

from helpers.data.fetch import DataSourceError, SourceFile, load_sources, prepare_data, prepare_file, sha256_of


def test_manifest_covers_every_loader_file():
    sources = load_sources()
    relpaths = {f.relpath for files in sources.values() for f in files}
    assert "obstetrics/guia_embarazo_parto_2023.pdf" in relpaths
    # a sha256 for every file, but those fetched on demand: theirs is the published git blob id
    assert all(len(f.sha256) == 64 for files in sources.values() for f in files if not f.on_demand)
    assert all(len(f.git_blob) == 40 and not f.sha256 for files in sources.values() for f in files if f.on_demand)


def test_copy_verify_and_present(tmp_path):
    shared, raw = tmp_path / "shared", tmp_path / "raw"
    (shared / "toy").mkdir(parents=True)
    (shared / "toy" / "a.txt").write_text("hola")
    src = SourceFile("toy", "toy/a.txt", sha256_of(shared / "toy" / "a.txt"), None)
    assert prepare_file(src, raw, shared) == "copied"
    assert prepare_file(src, raw, shared) == "present"
    assert (raw / "toy" / "a.txt").read_text() == "hola"


def test_checksum_mismatch_names_file(tmp_path):
    shared, raw = tmp_path / "shared", tmp_path / "raw"
    (shared / "toy").mkdir(parents=True)
    (shared / "toy" / "a.txt").write_text("tampered")
    src = SourceFile("toy", "toy/a.txt", "0" * 64, None)
    with pytest.raises(DataSourceError, match=r"checksum mismatch for .*toy/a.txt"):
        prepare_file(src, raw, shared)


def test_missing_source_says_where_to_put_it(tmp_path):
    src = SourceFile("toy", "toy/b.txt", "0" * 64, "http://127.0.0.1:9/toy/b.txt")  # nothing listens on port 9
    with pytest.raises(DataSourceError, match=r"toy/b.txt \(dataset 'toy'\) is missing.*Put the file at"):
        prepare_file(src, tmp_path / "raw", tmp_path / "shared")


def test_no_file_of_the_manifest_lacks_a_public_source():
    """Issue 61: every raw file is downloaded, unpacked from a downloaded archive, or derived by
    code from one that is; none needs ../shared."""
    files = [f for group in load_sources().values() for f in group]
    assert all(f.url for f in files)
    derived = {f.relpath: f.derive for f in files if f.derive}
    assert derived == {"obstetrics/questions.json": ("obstetrics/preguntas.xlsx", "obstetrics_questions")}
    assert {f.relpath: f.unpack for f in files if f.unpack} == {"nli/breaking_nli/dataset.jsonl": "dataset.jsonl"}


def test_the_questions_are_derived_from_the_spreadsheet_byte_for_byte():
    """questions.json made from preguntas.xlsx (questions 5 and 6 swapped back) is the shared copy."""
    from helpers.data.derived import obstetrics_questions
    from helpers.data.fetch import raw_path

    made = obstetrics_questions(raw_path("obstetrics/preguntas.xlsx"))
    assert hashlib.sha256(made).hexdigest() == "113b39700c33b39b148cfd3bdf9f96389faf80bb12003386500f620c51c361eb"
    questions = json.loads(made)["questions"]
    assert questions[4]["ground_truth"].endswith("escala de Herrera & Hurtado")  # q5: which tool
    assert questions[5]["ground_truth"].startswith("Se recomienda que las gestantes de bajo riesgo")  # q6: when


def test_missing_dataset_reported_without_stopping_others(tmp_path):
    # an empty shared dir and no network: every file is reported, none raises mid-way
    report = prepare_data(
        ["xquad", "beir_scifact"], raw_dir=tmp_path / "raw", shared_dir=tmp_path / "shared", strict=False
    )
    assert set(report) == {"xquad", "beir_scifact"}
    assert all(status.startswith("missing") for files in report.values() for status in files.values())


def test_unknown_raw_dataset():
    with pytest.raises(ValueError, match="valid names"):
        prepare_data(["nope"])
