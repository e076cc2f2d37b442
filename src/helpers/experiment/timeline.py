"""A run's timeline: each step (load, index, answer, judge) with its seconds and what the caches
saved, printed as it goes (`make run` shows it) and kept in summary.json."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any


class Timeline:
    def __init__(self, echo: Callable[..., object] = print) -> None:
        self.steps: list[dict] = []
        self.echo = echo

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[dict[str, Any]]:
        """Time the block; the block may add details to the yielded dict (e.g. cache hits)."""
        record: dict[str, Any] = {"step": name}
        start = time.perf_counter()
        try:
            yield record
        finally:
            record["seconds"] = round(time.perf_counter() - start, 2)
            self.steps.append(record)
            details = ", ".join(f"{k} {v}" for k, v in record.items() if k not in ("step", "seconds"))
            self.echo(
                f"[timeline] {name}: {record['seconds']:.1f} s" + (f" ({details})" if details else ""), flush=True
            )


def embedded_so_far(shared: dict) -> int:
    """Texts embedded for real (not from the cache) by the dense parts built so far."""
    return sum(getattr(getattr(part, "embedder", None), "computed", 0) for part in shared.values())
