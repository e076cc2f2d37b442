"""A tiny experiment config shared by the run tests: 3 questions on 12 guideline pages, two
architectures without an LLM in retrieval, the local model with short answers."""
from pathlib import Path

import yaml

TINY = {
    "name": "tiny",
    "dataset": {"name": "obstetrics", "options": {"pages": "124-135"}, "questions": ["q2", "q4", "q3"]},
    "architectures": ["bm25", "hybrid"],
    "retrieval": {"k": 3},
    "llms": [{"name": "local", "provider": "local", "max_tokens": 24}],
    "judges": {"offline": True, "trace_llm": None, "ragas": None},
    "statistics": {"baseline": "bm25", "n_resamples": 200},
    "figures": False,
}


def write_config(tmp_path: Path, config: dict, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config))
    return path
