"""Self-checking exercises: a question, a solution computed by the package (never typed in), a
tolerance and a hint. `check(id, answer)` says right or wrong in the notebook."""

from __future__ import annotations

import importlib
import math
import pkgutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

EXERCISES: dict[str, "Exercise"] = {}


@dataclass(frozen=True)
class Exercise:
    id: str
    topic: str  # the notebook it belongs to, e.g. "01-architectures"
    question: str
    solution: Callable[[], Any]  # computed when checked, from the same code the notebook shows
    hint: str
    tolerance: float = 0.005  # numbers: absolute tolerance; other answers compare equal

    def expected(self):
        return self.solution()


@dataclass(frozen=True)
class Verdict:
    exercise: str
    right: bool | None  # None: not answered yet
    message: str

    def __bool__(self):
        return bool(self.right)

    def _repr_html_(self):
        colour = {True: "#2b8a3e", False: "#c92a2a", None: "#1864ab"}[self.right]
        return f"<div style='color:{colour};font-family:sans-serif'><b>{self.exercise}</b>: {self.message}</div>"

    def __repr__(self):
        return f"{self.exercise}: {self.message}"


def exercise(
    id: str, topic: str, question: str, solution: Callable[[], Any], hint: str, tolerance: float = 0.005
) -> Exercise:
    """Register an exercise (ids are unique: a second registration of an id is an error)."""
    if id in EXERCISES:
        raise ValueError(f"exercise {id!r} is registered twice")
    EXERCISES[id] = Exercise(id, topic, question, solution, hint, tolerance)
    return EXERCISES[id]


def _same(answer, expected, tolerance: float) -> bool:
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        try:
            return math.isclose(float(answer), float(expected), abs_tol=tolerance)
        except (TypeError, ValueError):
            return False
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(answer, (list, tuple))
            and len(answer) == len(expected)
            and all(_same(a, e, tolerance) for a, e in zip(answer, expected))
        )
    if isinstance(expected, str):
        return isinstance(answer, str) and answer.strip().lower() == expected.strip().lower()
    return answer == expected


def check(id: str, answer) -> Verdict:
    """Right or wrong (with the hint); `answer` None (or ...) means not answered yet."""
    _load_topics()
    if id not in EXERCISES:
        raise KeyError(f"no exercise {id!r}; exercises: {sorted(EXERCISES)}")
    item = EXERCISES[id]
    if answer is None or answer is Ellipsis:
        return Verdict(id, None, f"not answered yet. {item.question}")
    if _same(answer, item.expected(), item.tolerance):
        return Verdict(id, True, "right ✔")
    return Verdict(id, False, f"not quite ✘ — hint: {item.hint}")


def exercises_of(topic: str) -> list[Exercise]:
    _load_topics()
    return [e for e in EXERCISES.values() if e.topic == topic]


def _load_topics() -> None:
    """Import every topic module, which registers its exercises."""
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):  # the modules of helpers.teaching
        if module.name != "exercises":
            importlib.import_module(f"helpers.teaching.{module.name}")
