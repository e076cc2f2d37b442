"""The README's "Where things go" table, row by row: each test adds one of its kinds (an
architecture, a judge, a dataset, ...) the way the row says, touching nothing else, and checks that
the rest of the package takes it up. The last tests check the table itself: the files it names
exist, the language row names every per-language table, every command is listed."""

import ast
import re
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from helpers.data.contracts import Sample
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


# ---------------------------------------------------------------- an architecture


def test_an_architecture_is_one_registry_entry(monkeypatch):
    from pydantic import ValidationError

    from helpers.retrieval import registry
    from helpers.retrieval.architectures.options import Section
    from helpers.retrieval.architectures.sparse import BM25

    built = []

    class BM25K2Options(Section):  # its typed options, declared with it: no central field list
        architecture = "bm25_k2"
        k1: float = 2.0

    def _bm25_k2(language, llm, options, shared):  # BM25 with its own k1: a new architecture
        built.append((language, options.of(BM25K2Options).k1))
        return BM25(language, k1=options.of(BM25K2Options).k1)

    entry = registry.Architecture("bm25_k2", _bm25_k2, BM25K2Options)
    monkeypatch.setitem(registry.ARCHITECTURES, "bm25_k2", entry)
    config = ExperimentConfig(**dict(TINY, architectures=["bm25", "bm25_k2"], retrieval={"bm25_k2": {"k1": 3.0}}))
    assert config.architectures == ["bm25", "bm25_k2"] and config.retrieval.options.bm25_k2.k1 == 3.0
    assert ExperimentConfig(**TINY).retrieval.bm25_k2.k1 == 2.0  # its defaults where not given
    with pytest.raises(ValidationError, match=r"retrieval.bm25_k2\n.*unknown option 'k' for bm25_k2; valid: k1"):
        ExperimentConfig(**dict(TINY, retrieval={"bm25_k2": {"k": 3.0}}))
    corpus = {"d1": {"title": "", "text": "the cat sat"}, "d2": {"title": "", "text": "qubits compute"}}
    retriever = registry.build_retriever("bm25_k2", language="en", options=config.retrieval.options)
    ranked = retriever.index(corpus).retrieve({"q": "qubits"}, 1)
    assert list(ranked["q"]) == ["d2"] and built == [("en", 3.0)]
    assert not registry.needs_llm("bm25_k2")
    with pytest.raises(registry.RetrievalError, match=r"valid names: \[.*'bm25_k2'"):
        registry.architecture("bm25_k3")


# ---------------------------------------------------------------- a judge

WORD_COUNT = """
from helpers.judges.judge_base import Judge, Metric, register


@register
class WordCount(Judge):
    name, label = "word_count", "words in the answer"
    metrics = (Metric("words", low=0, high=None, higher_is_better=False),)

    def score_one(self, sample):
        return [("words", len(sample.answer.split()), "")], None
"""


def test_a_judge_module_is_found_with_no_list_edited(tmp_path, monkeypatch):
    import helpers.judges as judges
    from helpers.judges import JUDGES

    # the built-in judges keep the order reports list them in
    assert list(JUDGES)[:12] == [
        "offline",
        "ragas",
        "ragas_evidence",
        "evidence",
        "correctness",
        "context_recall",
        "ragchecker",
        "ragchecker_llm",
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
        judge = JUDGES["word_count"]()
        rows = judge.score([Sample("q1", "?", "three short words", architecture="bm25", llm="local")])
        assert [(r["judge"], r["metric"], r["value"]) for r in rows] == [("word_count", "words", 3)]
        config = ExperimentConfig(**dict(TINY, judges={**TINY["judges"], "word_count": {}}))
        assert "word_count" in [j.name for j in judges.active_judges(config)]
        assert judges.discover() == []  # imported once
    finally:
        JUDGES.pop("word_count", None)
        sys.modules.pop("helpers.judges.word_count", None)
        if hasattr(judges, "word_count"):
            delattr(judges, "word_count")


# ---------------------------------------------------------------- a dataset


def _toy_loader(n: int = 2, topic: str = "cats"):
    """A tiny dataset: `n` documents about `topic`, one question each."""
    from helpers.data.contracts import Dataset

    corpus = {f"d{i}": {"title": "", "text": f"{topic} fact number {i}."} for i in range(n)}
    queries = {f"q{i}": f"what is {topic} fact {i}?" for i in range(n)}
    qrels = {f"q{i}": {f"d{i}": 1} for i in range(n)}
    return Dataset(name="toy", language="en", corpus=corpus, queries=queries, qrels=qrels)


def test_a_dataset_is_a_loader_and_one_line(monkeypatch):
    from pydantic import BaseModel, ConfigDict

    from helpers import data

    class ToyOptions(BaseModel):
        model_config = ConfigDict(extra="forbid")
        n: int = 2
        topic: str = "cats"

    monkeypatch.setitem(data.DATASETS, "toy", data.DatasetEntry(_toy_loader, ToyOptions))
    loaded = data.load_dataset("toy", n=3, topic="dogs")
    assert len(loaded.corpus) == 3 and loaded.corpus["d1"]["text"] == "dogs fact number 1."
    assert data.dataset_options("toy") == ["n", "query_split", "topic"]
    with pytest.raises(data.DataError, match="option 'n' must be int"):
        data.load_dataset("toy", n="three")
    with pytest.raises(data.DataError, match="unknown option 'size'; valid: n, query_split, topic"):
        data.load_dataset("toy", size=3)
    config = ExperimentConfig(**dict(TINY, dataset={"name": "toy", "options": {"n": 4}}))
    assert config.dataset.name == "toy" and config.dataset.options == {"n": 4}
    assert data.DATASETS["toy"].summarized_apart is None  # `summary` loads it with its defaults


def test_every_datasets_options_are_its_loaders_keywords_with_their_defaults():
    """The typed Options of each DATASETS entry and its loader's signature (its `**chunk_options`
    are guideline_chunks's) say the same: a keyword added to a loader without its Options fails here."""
    import inspect

    from helpers import data
    from helpers.data.obstetrics import guideline_chunks

    def keywords(function) -> dict:
        found = {}
        for parameter in inspect.signature(function).parameters.values():
            if parameter.kind is parameter.VAR_KEYWORD:
                found |= keywords(guideline_chunks)
            else:
                found[parameter.name] = parameter.default
        return found

    for name, entry in data.DATASETS.items():
        fields = {f: info.default for f, info in entry.Options.model_fields.items()}
        assert fields == keywords(entry.loader), name


# ---------------------------------------------------------------- an embedder


class LetterCounts:
    """26 letter counts, unit length: an embedder of the contract in a dozen lines."""

    name = "letter-counts"

    def embed_documents(self, texts):
        rows = np.zeros((len(texts), 26), np.float32)
        for i, text in enumerate(texts):
            for char in text.lower():
                if "a" <= char <= "z":
                    rows[i, ord(char) - 97] += 1
        return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)

    embed_queries = embed_documents


def test_an_embedder_is_one_registry_line(tmp_path, monkeypatch):
    from helpers.retrieval import Dense
    from helpers.retrieval.embedders import models
    from helpers.retrieval.registry import parse_options

    monkeypatch.setitem(models.EMBEDDERS, "letters", LetterCounts)
    assert isinstance(models.build_embedder("letters"), LetterCounts)
    assert parse_options({"dense": {"embedder": "letters"}}).dense.embedder == "letters"
    corpus = {"d1": {"title": "", "text": "zzz zebra"}, "d2": {"title": "", "text": "aaa banana"}}
    cache = models.EmbeddingCache(tmp_path / "embeddings.sqlite")
    dense = Dense("letters", directory=tmp_path / "index", cache=cache).index(corpus)
    assert next(iter(dense.retrieve({"q": "a banana"}, 1)["q"])) == "d2"
    assert dense.embedder.name == "letter-counts"


# ---------------------------------------------------------------- a plot


def test_a_plot_named_in_run_figures_is_saved(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from helpers.experiment import figures_run

    def one_bar():
        fig, ax = plt.subplots()
        ax.bar(["a"], [1.0])
        return fig

    monkeypatch.setattr(figures_run, "run_figures", lambda scores, config=None: {"one-bar": one_bar})
    written = figures_run.save_run_figures("toy-run", None, out_dir=tmp_path)
    assert set(written) == {"one-bar"}
    assert {p.suffix for p in tmp_path.glob("toy-run-one-bar.*")} == {".png", ".pdf", ".json"}


# ---------------------------------------------------------------- a sweep axis


def _sweep(tmp_path: Path, axes: dict):
    import yaml

    from helpers.experiment.sweep import load_sweep

    (tmp_path / "base.yaml").write_text(yaml.safe_dump(TINY))
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump({"name": "grid", "base": "base.yaml", "axes": axes}, sort_keys=False))
    return load_sweep(path)


def test_a_sweep_axis_is_a_path_or_one_entry(tmp_path, monkeypatch):
    from helpers.experiment import sweep

    # a dotted path needs nothing
    runs = sweep.expand(*_sweep(tmp_path, {"retrieval.hybrid.candidates": [20, 40]}))
    assert [r["config"].retrieval.hybrid.candidates for r in runs] == [20, 40]
    assert runs[0]["run_id"] == "grid--candidates=20"

    # an axis that is not a path: one entry, how it changes the config and its label
    def depth(config, value):  # as deep in the ranking as the answer reads
        config.setdefault("retrieval", {})["k"] = value
        config["retrieval"].setdefault("hybrid", {})["candidates"] = 10 * value

    monkeypatch.setitem(sweep.SPECIAL_AXES, "depth", sweep.Axis(depth, label=lambda value: f"top{value}"))
    runs = sweep.expand(*_sweep(tmp_path, {"depth": [2, 4], "architectures": "bm25 hybrid".split()}))
    assert [r["run_id"] for r in runs] == [
        "grid--depth=top2--architectures=bm25",
        "grid--depth=top2--architectures=hybrid",
        "grid--depth=top4--architectures=bm25",
        "grid--depth=top4--architectures=hybrid",
    ]
    config = runs[3]["config"]
    assert (config.retrieval.k, config.retrieval.hybrid.candidates, config.architectures) == (4, 40, ["hybrid"])
    assert runs[3]["axes"] == {"depth": 4, "architectures": "hybrid"}


# ---------------------------------------------------------------- an LLM provider


@pytest.fixture
def toycloud():
    from helpers.llm import keys
    from helpers.llm.backends import OpenAICompatibleBackend
    from helpers.llm.providers import PROVIDERS, ProviderEntry, register_provider

    hosts = dict(keys.PROVIDER_HOSTS)
    entry = ProviderEntry(
        "toycloud",
        OpenAICompatibleBackend,
        key_variable="TOYCLOUD_API_KEY",
        default_url="http://127.0.0.1:9/v1",
        key_hosts=("api.toycloud.example",),
        json_mode="json_object",
        workers=lambda config: 3,
        key_fields=lambda config: {"region": "eu"},
    )
    yield register_provider(entry)
    PROVIDERS.pop("toycloud", None)
    keys.PROVIDER_HOSTS.clear()
    keys.PROVIDER_HOSTS.update(hosts)


def test_a_provider_is_one_entry(toycloud, monkeypatch):
    from helpers.llm.backends import OpenAICompatibleBackend, build_backend
    from helpers.llm.keys import check_destination
    from helpers.llm.llm_errors import KeyPolicyError
    from helpers.llm.llm_settings import LLMConfig, response_format

    config = LLMConfig(provider="toycloud", model="toy-1")
    assert config.resolved_api_key_env() == "TOYCLOUD_API_KEY"
    assert response_format(config, {"title": "x", "type": "object"}) == {"type": "json_object"}
    monkeypatch.delenv("HELPERS_KEY_HOSTS", raising=False)
    check_destination("TOYCLOUD_API_KEY", "https://api.toycloud.example/v1")  # its own host: allowed
    with pytest.raises(KeyPolicyError, match="TOYCLOUD_API_KEY is a key for api.toycloud.example"):
        check_destination("TOYCLOUD_API_KEY", "https://elsewhere.example/v1")
    monkeypatch.setenv("TOYCLOUD_API_KEY", "toy-key-for-the-test")
    backend = build_backend(config)
    assert isinstance(backend, OpenAICompatibleBackend) and backend.url == "http://127.0.0.1:9/v1"
    assert str(backend.client.base_url).startswith("http://127.0.0.1:9/v1")
    run = ExperimentConfig(**dict(TINY, llms=[{"name": "toy", "provider": "toycloud", "model": "toy-1"}]))
    assert run.llms[0].provider == "toycloud"
    # the client reads how many calls run at once and what enters the cache key from the entry:
    # no provider name is written in helpers/llm/client.py
    from helpers.llm.client import LLM

    toy = LLM(config, cache=None)
    assert toy.workers == 3 and toy._payload([], 0.0, 8, 0, 0, [])["region"] == "eu"
    assert "toycloud" not in (SRC / "helpers/llm/client.py").read_text()
    assert not re.search(r"provider\s*[!=]=", (SRC / "helpers/llm/client.py").read_text())
    with pytest.raises(
        ValidationError, match="unknown provider 'toycoud'; valid: local, groq, openai-compatible, toycloud"
    ):
        LLMConfig(provider="toycoud")


def test_the_built_in_providers_read_their_entries():
    from helpers.llm.llm_settings import LLMConfig, response_format

    schema = {"title": "x", "type": "object"}
    assert [LLMConfig(provider=p).resolved_api_key_env() for p in ("local", "groq", "openai-compatible")] == [
        None,
        "GROQ_API_KEY",
        "OPENAI_API_KEY",
    ]
    assert response_format(LLMConfig(provider="groq"), schema) == {"type": "json_object"}
    assert response_format(LLMConfig(provider="openai-compatible"), schema)["type"] == "json_schema"
    with pytest.raises(ValidationError, match="n_per_request must be 1 for provider groq"):
        LLMConfig(provider="groq", n_per_request=2)
    assert LLMConfig(provider="openai-compatible", n_per_request=2).n_per_request == 2


# ---------------------------------------------------------------- limits and prices


def test_limits_and_prices_are_one_entry_with_a_source(monkeypatch):
    from helpers.llm import presets
    from helpers.llm.llm_settings import LLMConfig

    assert all(price.source for price in presets.DEFAULT_PRICES.values())
    assert all(preset.source for preset in presets.LIMIT_PRESETS.values())
    toy = presets.LimitPreset("groq", "toy-1", 7, 7_000, None, None, 1, "a test")
    monkeypatch.setitem(presets.LIMIT_PRESETS, "toy-limits", toy)
    monkeypatch.setitem(presets.DEFAULT_PRICES, "toy-1", presets.Price(input_per_mtok=1, output_per_mtok=2, source="x"))
    config = LLMConfig(provider="groq", model="toy-1", limits="toy-limits")
    assert (config.requests_per_minute, config.concurrency, config.price().output_per_mtok) == (7, 1, 2)
    # the source is documentation: a config's resolved form (and so its run id) is the numbers
    assert presets.DEFAULT_PRICES["toy-1"].model_dump() == {"input_per_mtok": 1.0, "output_per_mtok": 2.0}


# ---------------------------------------------------------------- the table itself


def test_every_file_the_map_names_exists():
    rows = _map_rows()
    assert len(rows) >= 10
    for kind, cells in rows.items():
        for path in _named_files(" ".join(cells)):
            assert (ROOT / path).exists(), f"the row {kind!r} names {path}, which does not exist"
    tests = (Path(__file__)).read_text(encoding="utf-8")
    for kind, cells in rows.items():
        for name in re.findall(r"`(test_\w+)`", cells[-1]):
            assert f"def {name}(" in tests, f"the row {kind!r} names {name}, not a test here"


def _language_modules() -> set[str]:
    """Modules with a table keyed by language ({"es": ..., "en": ...}), a set of both, or a branch
    on one (a comparison or a conditional expression)."""
    found = set()
    for path in sorted((SRC / "helpers").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
                hit = {"es", "en"} <= keys
            elif isinstance(node, ast.Set):  # {"es", "en"} (issue 63)
                hit = {"es", "en"} <= {e.value for e in node.elts if isinstance(e, ast.Constant)}
            elif isinstance(node, ast.IfExp):  # "es" if ... else "en"
                hit = any(isinstance(v, ast.Constant) and v.value in ("es", "en") for v in (node.body, node.orelse))
            elif isinstance(node, ast.Compare):
                hit = any(
                    isinstance(c, ast.Constant) and c.value in ("es", "en") for c in [node.left, *node.comparators]
                )
            else:
                continue
            if hit:
                found.add(path.relative_to(ROOT).as_posix())
    return found


def test_the_language_row_names_every_per_language_table():
    named = _named_files(" ".join(_map_rows()["a language"]))
    assert named == _language_modules()


def test_every_command_is_listed():
    import argparse

    from helpers import __main__ as cli

    parser = cli.build_parser()
    commands = {name for a in parser._actions if isinstance(a, argparse._SubParsersAction) for name in a.choices}
    listed = set(re.findall(r"^  ([a-z][a-z-]+) ", cli.__doc__.split("Commands:", 1)[1], re.M))
    assert commands == listed
    page = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    missing = sorted(c for c in commands if not re.search(rf"helpers {c}\b|`{c}`", page))
    assert not missing, f"docs/commands.md has no row for {missing}"


def test_every_command_is_in_a_cli_module():
    """One way to add a command: every subcommand's function lives in a module of helpers/cli/, which
    `COMMAND_MODULES` lists, so `__main__` holds no command of its own."""
    import argparse

    from helpers import __main__ as cli

    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    homes = {name: p.get_default("func").__module__ for name, p in sub.choices.items()}
    assert set(homes.values()) == set(cli.COMMAND_MODULES)
    assert homes["run"] == "helpers.cli.experiment_commands" and homes["serve-llm"] == "helpers.cli.llm_commands"
