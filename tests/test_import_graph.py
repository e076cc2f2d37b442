"""Issue 25, a house with no circles: the package's imports form no cycle and never point from a
lower layer up to a higher one (tools/import_graph.py declares the layers), in-function imports
included."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import import_graph  # noqa: E402


def test_no_import_cycle_and_no_upward_import():
    report = import_graph.Graph().report()
    assert report["cycles"] == [], report["cycles"]
    assert report["upward"] == [], report["upward"]
    assert report["package_cycles"] == [], report["package_cycles"]
    assert report["unplaced_modules"] == [], "give these modules a layer in tools/import_graph.py LAYERS"
    assert report["ghost_entries"] == [], "remove these entries of tools/import_graph.py LAYERS: no module is there"


def test_the_graph_sees_hidden_imports_and_cycles(tmp_path):
    package = tmp_path / "helpers"
    (package / "retrieval").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "retrieval" / "__init__.py").write_text("")
    (package / "errors.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from helpers.retrieval.sparse import Index  # a type named upward\n"
        "def f():\n    from helpers.retrieval import dense  # a hidden upward import\n"
    )
    (package / "retrieval" / "dense.py").write_text("from helpers import errors\n")
    (package / "retrieval" / "sparse.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from helpers import errors\n"
    )
    report = import_graph.Graph(tmp_path).report()
    # imports under TYPE_CHECKING are dependencies too (issue 37): sparse <-> errors is a circle
    assert report["cycles"] == [["helpers.errors", "helpers.retrieval.dense", "helpers.retrieval.sparse"]]
    assert report["cycles_at_import_time"] == []
    assert sorted((e["source"], e["target"], e["in_function"], e["typing_only"]) for e in report["upward"]) == [
        ("helpers.errors", "helpers.retrieval.dense", True, False),
        ("helpers.errors", "helpers.retrieval.sparse", False, True),
    ]
    assert report["in_function"]["internal"] == 1 and report["in_function"]["internal_commented"] == 1


def test_the_script_runs():
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "import_graph.py"), "--brief"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "import cycles: 0" in done.stdout and "upward imports (lower layer -> higher): 0" in done.stdout


def test_a_module_in_no_layer_and_a_ghost_entry_fail_the_check(tmp_path):
    """Issue 63: a new root module used to land in layer 1 through the `helpers` entry, and an entry
    for a package that no longer exists went unnoticed."""
    package = tmp_path / "helpers"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "errors.py").write_text("")
    (package / "brand_new.py").write_text("from helpers import errors\n")
    report = import_graph.Graph(tmp_path).report()
    assert report["unplaced_modules"] == ["helpers.brand_new"]
    assert "helpers.retrieval" in report["ghost_entries"] and "helpers.errors" not in report["ghost_entries"]


def test_a_module_named_cli_in_a_lower_package_is_not_exempt(tmp_path):
    """Issue 63: `cli` modules used to sit on top whatever their package, so retrieval/cli.py could
    import the experiments above it unseen; now its package places it, and the import is upward."""
    package = tmp_path / "helpers"
    for sub in ("retrieval", "experiment"):
        (package / sub).mkdir(parents=True)
        (package / sub / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "experiment" / "runner.py").write_text("")
    (package / "retrieval" / "cli.py").write_text("from helpers.experiment import runner\n")
    report = import_graph.Graph(tmp_path).report()
    assert import_graph.layer_of("helpers.retrieval.cli") == import_graph.LAYERS["helpers.retrieval"] == 2
    assert [(e["source"], e["target"]) for e in report["upward"]] == [
        ("helpers.retrieval.cli", "helpers.experiment.runner")
    ]


def test_the_layout_page_lists_every_module_as_the_code_has_it():
    """Issue 63: docs/layout.md's "Every module" table is generated from the package (every module,
    its layer, its docstring's first sentence); a module added, moved or redescribed without
    `python tools/module_map.py --write` fails here."""
    import module_map

    assert module_map.written() == module_map.table(), "run: python tools/module_map.py --write"
    rows = [line for line in module_map.table().splitlines() if line.startswith("| ") and "`helpers/" in line]
    assert len(rows) == len(import_graph.Graph().modules) and not [r for r in rows if r.startswith("| none ")]


def test_no_module_name_is_used_twice_and_a_judge_module_is_named_by_its_config_name():
    """Issue 63: a name finds its file. Eleven module names were used twice (`base`, `config`,
    `runner`, ...) and two judges registered under names their modules did not have."""
    from collections import Counter

    from helpers.judges import JUDGES

    names = Counter(p.stem for p in (ROOT / "src" / "helpers").rglob("*.py") if p.stem != "__init__")
    assert [n for n, c in names.items() if c > 1] == []
    assert {name: cls.__module__ for name, cls in JUDGES.items() if cls.__module__ != f"helpers.judges.{name}"} == {}
