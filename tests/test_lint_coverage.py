"""Lint and format reach every module: `ruff check --show-files` over the folders `make lint` names
lists each Python file git tracks under them (an exclude pattern such as "data" once skipped the
whole of src/helpers/data)."""

import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
FOLDERS = ("src", "tests", "benchmarks", "tools")


def test_ruff_sees_every_tracked_python_file():
    tracked = subprocess.run(
        ["git", "ls-files", "--", *(f"{f}/*.py" for f in FOLDERS)],
        cwd=PROJECT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    if not tracked:  # not a git checkout (an unpacked archive): every .py under the folders
        tracked = [str(p.relative_to(PROJECT)) for f in FOLDERS for p in (PROJECT / f).rglob("*.py")]
    ruff = Path(sys.executable).with_name("ruff")
    shown = subprocess.run(
        [str(ruff), "check", "--show-files", *FOLDERS], cwd=PROJECT, capture_output=True, text=True, check=True
    ).stdout.split()
    seen = {str(Path(p).resolve().relative_to(PROJECT)) for p in shown if p.endswith(".py")}
    missing = sorted(set(tracked) - seen)
    assert not missing, f"ruff skips {len(missing)} file(s): {missing[:10]}"
    assert any(p.startswith("src/helpers/data/") for p in seen)


def test_test_folders_mirror_the_package():
    """A sub-package's tests live in tests/<sub-package>/ (tests of root modules and of the project
    as a whole at tests/'s top), so a module's tests are found where the module is."""
    folders = sorted(p.name for p in (PROJECT / "tests").iterdir() if p.is_dir() and p.name != "__pycache__")
    assert folders and all((PROJECT / "src" / "helpers" / name).is_dir() for name in folders), folders
    packages = {p.name for p in (PROJECT / "src" / "helpers").iterdir() if p.is_dir() and any(p.glob("*.py"))}
    top = {p.stem.removeprefix("test_") for p in (PROJECT / "tests").glob("test_*.py")}
    assert not top & packages, f"tests of a sub-package at tests/'s top: {sorted(top & packages)}"
