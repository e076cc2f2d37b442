"""environment.yml (conda) and the pip lock describe the same environment."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _pins(path):
    pins = {}
    for line in path.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s;]+)", line.strip())
        if match:
            pins[match[1].lower().replace("_", "-")] = match[2]
    return pins


def test_environment_yml_wraps_the_lock():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = env["dependencies"]
    assert "python=3.11" in deps
    pip_deps = next(d["pip"] for d in deps if isinstance(d, dict))
    assert "-r requirements/lock.txt" in pip_deps
    lock = _pins(ROOT / "requirements" / "lock.txt")
    torch_pin = next(d for d in pip_deps if d.startswith("torch=="))
    # the lock's version, as the CPU build from PyTorch's CPU index (PyPI's Linux torch is CUDA's)
    assert torch_pin == f"torch=={lock['torch']}+cpu" == "torch==2.13.0+cpu"
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in pip_deps
    makefile = (ROOT / "Makefile").read_text()
    assert "TORCH_SPEC  ?= $(if $(filter Linux,$(shell uname -s)),torch==2.13.0+cpu,torch==2.13.0)" in makefile


def test_lock_pins_every_direct_dependency():
    lock = _pins(ROOT / "requirements" / "lock.txt")
    direct = [
        re.split(r"[<>=\[]", l.strip())[0].lower().replace("_", "-")
        for l in (ROOT / "requirements" / "base.in").read_text().splitlines()
        if l.strip() and not l.startswith("#")
    ]
    missing = [name for name in direct if name not in lock]
    assert not missing, f"requirements/base.in names packages the lock does not pin: {missing}"
    for name, version in _pins(ROOT / "requirements" / "base.in").items():
        assert lock[name] == version, name
