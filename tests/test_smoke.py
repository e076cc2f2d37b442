"""The notebooks' smoke switch: one helper reads it, and '0' means off."""

import json
from pathlib import Path

import pytest

from helpers.smoke import is_smoke, notebook_settings

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize(
    "value, on",
    [("1", True), ("true", True), ("yes", True), ("0", False), ("", False), ("false", False), ("no", False)],
)
def test_smoke_switch(value, on, monkeypatch):
    monkeypatch.setenv("HELPERS_SMOKE", value)
    assert is_smoke() is on and notebook_settings()["smoke"] is on


def test_smoke_switch_unset_is_off(monkeypatch):
    monkeypatch.delenv("HELPERS_SMOKE", raising=False)
    assert not is_smoke()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_read_the_switch_through_the_helper(path):
    code = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
    assert "HELPERS_SMOKE" not in code, f"{path.name}: use helpers.smoke.is_smoke()"


def test_the_command_line_docstring_lists_every_command():
    import argparse

    import helpers.__main__ as cli

    parser = cli.build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    missing = [name for name in commands if f"\n  {name} " not in cli.__doc__]
    assert not missing, f"helpers/__main__.py's docstring does not list {missing}"
