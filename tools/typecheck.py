"""`make lint`'s type check (issue 63): mypy over src/helpers (settings in pyproject.toml), held to a
baseline that may only shrink.

mypy found 295 errors in 93 modules when it was first run over the package (2026-12-07; 267 in 83
after the first fixes, the same day): code written for eight months with no type checker. Until
they are fixed, `tools/mypy-baseline.json`
holds each module's count; this check fails when a module has more errors than its baseline (a new
module: none), and says which ones; it prints where the count went down, so that the baseline is
lowered with `--update` in the same commit. The goal is an empty baseline.

    python tools/typecheck.py            # the check (exit 1 on a new error)
    python tools/typecheck.py --update   # write the current counts as the baseline (only lower them)
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "tools" / "mypy-baseline.json"
ERROR = re.compile(r"^(src/helpers/[^:]+\.py):\d+: error: ")


def counts() -> tuple[dict[str, int], list[str]]:
    """({module path: errors}, every error line) of mypy over src/helpers."""
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "src/helpers"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if done.returncode not in (0, 1):  # 2: mypy itself failed (a crash, a bad setting)
        raise SystemExit(f"mypy failed to run:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    lines = [line for line in done.stdout.splitlines() if ERROR.match(line)]
    return dict(collections.Counter(ERROR.match(line)[1] for line in lines)), lines


def against(found: dict[str, int], baseline: dict[str, int]) -> tuple[dict, dict]:
    """({module: (errors, allowed)} over their baseline, {module: (errors, baseline)} under it)."""
    worse = {m: (n, baseline.get(m, 0)) for m, n in found.items() if n > baseline.get(m, 0)}
    better = {m: (n, b) for m, b in baseline.items() if (n := found.get(m, 0)) < b}
    return worse, better


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true", help="write the current counts as the baseline")
    args = parser.parse_args()
    found, lines = counts()
    if args.update:
        BASELINE.write_text(json.dumps(dict(sorted(found.items())), indent=1) + "\n")
        print(f"baseline: {sum(found.values())} errors in {len(found)} modules")
        return 0
    baseline = json.loads(BASELINE.read_text())
    worse, better = against(found, baseline)
    for module, (n, allowed) in sorted(worse.items()):
        print(f"{module}: {n} type errors, the baseline allows {allowed}:")
        print("\n".join(f"  {line}" for line in lines if line.startswith(module + ":")))
    print(
        f"mypy: {sum(found.values())} errors in {len(found)} modules (baseline {sum(baseline.values())}); "
        f"{len(worse)} modules over their baseline, {len(better)} under it"
        + (" (lower it: python tools/typecheck.py --update)" if better and not worse else "")
    )
    return 1 if worse else 0


if __name__ == "__main__":
    raise SystemExit(main())
