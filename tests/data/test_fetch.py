import pytest

from helpers.data.fetch import DataSourceError, SourceFile, load_sources, prepare_data, prepare_file, sha256_of


def test_manifest_covers_every_loader_file():
    sources = load_sources()
    relpaths = {f.relpath for files in sources.values() for f in files}
    assert "obstetrics/guia_embarazo_parto_2023.pdf" in relpaths
    assert all(len(f.sha256) == 64 for files in sources.values() for f in files)


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
    src = SourceFile("toy", "toy/b.txt", "0" * 64, None)
    with pytest.raises(DataSourceError, match=r"toy/b.txt \(dataset 'toy'\) is missing.*Put the file at"):
        prepare_file(src, tmp_path / "raw", tmp_path / "shared")


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
