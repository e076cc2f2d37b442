"""The README's "Where things go" table, row by row: each test adds one of its kinds (an
architecture, a judge, a dataset, ...) the way the row says, touching nothing else, and checks that
the rest of the package takes it up. The last tests check the table itself: the files it names
exist, the language row names every per-language table, every command is listed."""

import re
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

from helpers.experiment.config import ExperimentConfig
from runs import TINY

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
README = ROOT / "README.md"


def _map_rows() -> dict[str, list[str]]:
    """{what is added: [cells]} of the README's "Where things go" table."""
    text = README.read_text(encoding="utf-8").split("## Where things go", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| to add")]
    return {cells[0]: cells[1:] for cells in ([c.strip() for c in row.strip("|").split(" | ")] for row in rows)}


def _named_files(cell: str) -> set[str]:
    """The repository paths a cell names (`helpers/...` is under src/)."""
    paths = re.findall(r"`((?:helpers|docs|configs|tests)/[^`*]+\.(?:py|yaml|md))`", cell)
    return {f"src/{p}" if p.startswith("helpers/") else p for p in paths}


# ---------------------------------------------------------------- a judge

WORD_COUNT = """
from helpers.judges.base import Judge, Metric, register


@register
class WordCount(Judge):
    name, label = "word_count", "words in the answer"
    metrics = (Metric("words", low=0, high=None, higher_is_better=False),)

    def score_one(self, answer):
        return [("words", len(answer["answer"].split()), "")], None
"""


def test_a_judge_module_is_found_with_no_list_edited(tmp_path, monkeypatch):
    import helpers.judges as judges
    from helpers.judges import JUDGES

    # the built-in judges keep the order reports list them in
    assert list(JUDGES)[:10] == [
        "offline",
        "ragas",
        "ragas_evidence",
        "evidence",
        "correctness",
        "context_recall",
        "citations",
        "refusal",
        "retrieval",
        "trace_llm",
    ]
    # every module discovery imports holds a judge (NOT_JUDGES leaves out exactly the others)
    for module in judges.judge_modules():
        assert any(judge.__module__ == f"helpers.judges.{module}" for judge in JUDGES.values()), module
    # a module dropped into a folder of the package: found, imported, registered, last
    (tmp_path / "word_count.py").write_text(textwrap.dedent(WORD_COUNT), encoding="utf-8")
    monkeypatch.setattr(judges, "__path__", [*judges.__path__, str(tmp_path)])
    try:
        assert "word_count" in judges.judge_modules()
        assert judges.discover() == ["word_count"]
        assert list(JUDGES)[-1] == "word_count"
        judge = JUDGES["word_count"](SimpleNamespace(config=None), None)
        rows = judge.score([{"architecture": "bm25", "llm": "local", "qid": "q1", "answer": "three short words"}])
        assert [(r["judge"], r["metric"], r["value"]) for r in rows] == [("word_count", "words", 3)]
        config = ExperimentConfig(**dict(TINY, judges={**TINY["judges"], "word_count": {}}))
        assert "word_count" in [j.name for j in judges.active_judges(config)]
        assert judges.discover() == []  # imported once
    finally:
        JUDGES.pop("word_count", None)
        sys.modules.pop("helpers.judges.word_count", None)
        if hasattr(judges, "word_count"):
            delattr(judges, "word_count")
