"""`make lint`'s type check (tools/typecheck.py): a module over its baseline fails, a new module
with an error fails, fewer errors pass and are reported to be written down."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import typecheck  # noqa: E402


def test_a_new_error_fails_and_a_fixed_one_is_reported():
    baseline = {"src/helpers/a.py": 2, "src/helpers/b.py": 1}
    worse, better = typecheck.against({"src/helpers/a.py": 3, "src/helpers/c.py": 1}, baseline)
    assert worse == {"src/helpers/a.py": (3, 2), "src/helpers/c.py": (1, 0)}
    assert better == {"src/helpers/b.py": (0, 1)}
    assert typecheck.against(baseline, baseline) == ({}, {})


def test_the_baseline_only_names_modules_that_exist():
    baseline = typecheck.json.loads(typecheck.BASELINE.read_text())
    assert all((typecheck.ROOT / module).is_file() for module in baseline)
