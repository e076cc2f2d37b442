"""Teaching material: the mechanisms on toy cases small enough to follow by hand, and exercises
that check a student's answer in the notebook.

    from helpers.teaching import check
    check("bm25-idf", 0.47)        # prints right, or wrong with a hint; returns True / False / None

Each topic module (retrieval, ragas_steps, trace_steps, judges, statistics, data) computes its toy
case and registers its exercises with `exercise(...)`; notebooks only call them.
"""

from helpers.teaching.exercises import EXERCISES, Verdict, check, exercise, exercises_of

__all__ = ["EXERCISES", "Verdict", "check", "exercise", "exercises_of"]
