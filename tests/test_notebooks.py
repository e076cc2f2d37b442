"""Every notebook runs top to bottom on the smoke configuration (HELPERS_SMOKE=1), and is
committed thin: goals first, no function definitions, no outputs."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_thin_and_stripped(path):
    nb = nbformat.read(path, as_version=4)
    assert nb.cells[0].cell_type == "markdown" and "Goals" in nb.cells[0].source
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs, f"{path.name} is committed with outputs"
            assert "\ndef " not in "\n" + cell.source and "\nclass " not in "\n" + cell.source, (
                f"{path.name} defines a function or class: move it into the helpers package"
            )


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """One results folder for all notebooks, run in order: 07 redraws what 06 ran."""
    return tmp_path_factory.mktemp("notebook-outputs")


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_on_smoke_config(path, outputs, monkeypatch):
    tmp_path = outputs / path.stem
    monkeypatch.setenv("HELPERS_SMOKE", "1")
    monkeypatch.setenv("HELPERS_FIGURES_DIR", str(tmp_path / "figures"))
    monkeypatch.setenv("HELPERS_RESULTS_DIR", str(outputs / "results"))
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    if "save_figure(" in path.read_text():
        pngs = list((tmp_path / "figures").glob("*.png"))
        assert pngs and all(p.with_suffix(".json").exists() and p.with_suffix(".pdf").exists() for p in pngs)
