"""helpers.explore without a browser: highlighting, the side-by-side columns on a four-sentence
corpus with qrels, cards and their bands, errors said in the panel, the run panel's configs
(same choices, same run id; the command line resumes a panel's run) and its downloads."""

import base64
import json
import re

import pandas as pd
import pytest

from helpers.data.contracts import Dataset
from helpers.explore import ExploreError, Workbench
from helpers.explore.cards import card_html, diagnose, ragas_cards_html, summary_cards_html, trace_cards_html
from helpers.explore.views import comparison_html
from helpers.explore.workbench import Highlighter, known_llms
from helpers.interpretation import band
from runs import TINY

CORPUS = {
    "d1": {"title": "", "text": "The first prenatal visit should happen before week 12 of pregnancy."},
    "d2": {"title": "", "text": "Iron supplements are recommended when anaemia is diagnosed."},
    "d3": {"title": "", "text": "A prenatal visit includes blood pressure and weight checks."},
    "d4": {"title": "", "text": "Labour usually starts between weeks 37 and 42."},
}
QUERIES = {"q1": "When should the first prenatal visit happen?", "q2": "When does labour start?"}
QRELS = {"q1": {"d1": 1}, "q2": {"d4": 1}}


@pytest.fixture(scope="module")
def bench():
    data = Dataset("tiny", "en", {k: dict(v) for k, v in CORPUS.items()}, dict(QUERIES), QRELS)
    return Workbench.from_dataset(data, retrieval={"dense": {"embedder": "minilm"}, "rerank": {"base": "bm25"}})


def test_highlighter_marks_query_stems_not_stop_words():
    marker = Highlighter("¿Cuándo es la primera visita prenatal?", "es")
    html_text, marked = marker.snippet(
        "La primera visita del control prenatal se hace antes; las visitas siguientes cada mes."
    )
    assert re.findall(r"<mark>(.*?)</mark>", html_text) == ["primera", "visita", "prenatal", "visitas"]
    assert marked == 4
    long_text = "relleno " * 80 + "la visita prenatal"
    cut, _ = marker.snippet(long_text, width=60)
    assert cut.startswith("… ") and "<mark>visita</mark>" in cut  # the window moves to the matches


def test_columns_rank_overlap_qrels_and_reranker_moves(bench):
    comparison = bench.search(QUERIES["q1"], ["bm25", "dense", "rerank"], k=2)
    assert comparison.qid == "q1"  # a dataset question: its qrels apply
    for column in comparison.columns.values():
        assert not column.error, column.error
        assert [h.rank for h in column.hits] == [1, 2]
        assert column.hits[0].doc_id == "d1" and column.hits[0].relevant is True
        assert column.metrics["ndcg@10"] == pytest.approx(1.0) and column.metrics["recall@2"] == 1.0
        assert "<mark>prenatal</mark>" in column.hits[0].snippet
    assert set(comparison.columns["bm25"].hits[0].found_by) == {"bm25", "dense", "rerank"}
    # each reranked hit knows its rank in the first stage (hybrid, the rerank's default base): the
    # rank hybrid's own column gives that document, searched as deep as the reranker's candidates
    first_stage = [h.doc_id for h in bench.search(QUERIES["q1"], ["hybrid"], k=50).columns["hybrid"].hits]
    reranked = comparison.columns["rerank"].hits
    assert [h.first_stage_rank for h in reranked] == [first_stage.index(h.doc_id) + 1 for h in reranked]
    assert [h.rank_change for h in reranked] == [first_stage.index(h.doc_id) + 1 - h.rank for h in reranked]
    assert comparison.columns["bm25"].hits[0].rank_change is None
    page = comparison_html(comparison)
    assert page.count("class='hx-column'") == 3 and page.count("class='hx-hit'") == 6
    assert "hx-relevant" in page and "found by 3" in page and "hx-rank-change" in page


def test_a_typed_question_has_no_qrels_and_warm_search_is_fast(bench):
    bench.search("prenatal weight", ["bm25", "dense"], k=3)
    comparison = bench.search("prenatal weight checks", ["bm25", "dense"], k=3)
    assert comparison.qid is None
    assert all(h.relevant is None for c in comparison.columns.values() for h in c.hits)
    assert comparison.columns["bm25"].hits[0].doc_id == "d3"
    assert all(c.metrics == {} for c in comparison.columns.values())


def test_errors_say_what_to_do(bench):
    with pytest.raises(ExploreError, match="question is empty"):
        bench.search("   ", ["bm25"])
    with pytest.raises(ExploreError, match="no architecture selected"):
        bench.search("labour", [])
    with pytest.raises(ExploreError, match="no corpus loaded"):
        Workbench("obstetrics").retriever("bm25")
    with pytest.raises(ExploreError, match="no LLM named 'nope'.*local"):
        bench.llm("nope")
    from helpers.explore.answer import answer_and_judge

    fresh = Workbench.from_dataset(bench.data)
    with pytest.raises(ExploreError, match="search in the query panel first"):
        answer_and_judge(fresh, "bm25")


def test_an_llm_server_that_does_not_answer_is_said_in_its_column(bench):
    from browser import free_port

    dead = {
        "provider": "openai-compatible",
        "base_url": f"http://127.0.0.1:{free_port()}/v1",
        "model": "m",
        "api_key_env": "HELPERS_TEST_NO_SUCH_API_KEY",
        "max_retries": 0,
        "timeout_s": 2,
        "cache": "off",
    }
    offline = Workbench.from_dataset(bench.data, llm="dead", llms={"dead": dead})
    comparison = offline.search(QUERIES["q2"], ["bm25", "hyde"], k=2)
    assert comparison.columns["bm25"].hits[0].doc_id == "d4"  # the other columns still come
    hyde = comparison.columns["hyde"]
    assert hyde.error or hyde.note, "HyDE's failure must be said next to its column"
    assert "llm failed" in hyde.note or "did not answer" in hyde.error


def test_missing_api_key_is_said_with_where_to_put_it(bench, monkeypatch, tmp_path):
    from helpers import paths
    from helpers.explore.answer import answer_and_judge

    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    monkeypatch.setattr(paths, "ENV_FILE", tmp_path / "no.env")
    bench.search(QUERIES["q1"], ["bm25"], k=2)
    view = answer_and_judge(bench, "bm25", "groq")
    assert view.answer is None and "GROQ_API_KEY" in view.error and ".env" in view.error


@pytest.mark.slow
def test_answer_and_judge_with_the_local_model(bench):
    from helpers.explore.answer import answer_and_judge

    bench.search(QUERIES["q1"], ["bm25"], k=2)
    view = answer_and_judge(bench, "bm25", "local", max_tokens=24)
    assert view.answer and not view.error
    assert set(view.scores) == {"relevance", "utilization", "completeness", "adherence"}
    # the panel's TRACe scores are what a run's offline judge gives the same sample: its question,
    # bm25's two contexts as prompted, its answer
    from helpers.data.contracts import Sample
    from helpers.generation.answering import select_contexts
    from helpers.judges import JUDGES
    from helpers.judges.judge_base import JudgeContext

    ranking = {c["doc_id"]: c["score"] for c in bench.last.contexts["bm25"]}
    contexts, _ = select_contexts(ranking, bench.data.corpus, k=2, language=bench.data.language)
    judge = JUDGES["offline"](context=JudgeContext(language=bench.data.language))
    judge.prepare()
    rows, _ = judge.score_sample(Sample("q1", QUERIES["q1"], view.answer, [c["text"] for c in contexts]))
    assert view.scores == pytest.approx({m: v for m, v, _ in rows if m in view.scores}, nan_ok=True)
    assert view.cards_html.count("class='hx-card'") == 5 and "Response:" in view.sentences_html  # 4 + Average


def test_ragas_cards_per_answer_say_agreement_and_why_a_score_is_missing():
    """Issue 36 (5): RAGAS per answer beside TRACe's cards: RAGAS is not checked against people's
    labels here, so its cards carry no band and say so; a NaN says why."""
    page = ragas_cards_html(
        {"faithfulness": 0.75, "context_recall": float("nan")},
        {"faithfulness": "", "context_recall": "not computed: no reference answer"},
    )
    cards = re.findall(r"<div class='hx-card' data-metric='([^']+)'", page)
    assert cards == ["ragas/faithfulness", "ragas/context_recall"]
    assert "0.750" in page and "n/a" in page
    assert page.count("not checked against people") == 2 and "Excellent" not in page and "Good<" not in page
    assert "not computed: no reference answer" in page


def test_bands_meanings_and_diagnostic_patterns():
    assert [band("relevance", v).name for v in (0.8, 0.79, 0.6, 0.4, 0.39, 0.0, float("nan"), None)] == [
        "Excellent",
        "Good",
        "Good",
        "Fair",
        "Poor",
        "Poor",
        "n/a",
        "n/a",
    ]
    patterns = diagnose({"relevance": 0.1, "utilization": 0.1, "completeness": 0.9, "adherence": 1.0})
    assert patterns == ["Low utilization, low relevance: a greedy retriever returning irrelevant documents."]
    patterns = diagnose({"relevance": 0.7, "utilization": 0.7, "completeness": 0.2, "adherence": 0.0})
    assert any(p.startswith("Low completeness, high utilization") for p in patterns)
    assert any("hallucination" in p for p in patterns)
    assert any(
        "the ideal RAG system" in p
        for p in diagnose({"relevance": 0.9, "utilization": 0.8, "completeness": 0.9, "adherence": 1.0})
    )
    assert "If low:" in card_html("relevance", 0.2) and "If low:" not in card_html("relevance", 0.9)
    # a RAGAS metric reads on its own scale: 0.85 faithfulness is Good there (TRACe's scale: Excellent)
    faithfulness = card_html("ragas/faithfulness", 0.85, (0.80, 0.90), 20)
    assert ">Good<" in faithfulness and "Interpreting RAGAS Scores" in faithfulness
    assert "mostly faithful, minor unsupported details" in faithfulness
    assert ">Excellent<" in card_html("offline/adherence", 0.85)
    assert "n = 1, too few for an interval" in card_html("ragas/faithfulness", 0.5, (float("nan"),) * 2, 1)
    # the four TRACe cards and the capstone's Average of them
    cards = trace_cards_html({"relevance": 0.5, "utilization": 0.7, "completeness": 0.9, "adherence": 1.0})
    assert cards.count("class='hx-card'") == 5 and "data-metric='offline/average'" in cards and "0.775" in cards
    # the offline judge's TRACe scores are not backed by people's labels: no band, no pattern (issue 60:
    # "1.000 Excellent" for a judge that cannot tell), each card saying how far people agree
    assert not re.search(r">(Excellent|Good|Fair|Poor)<", cards) and "hx-diagnosis" not in cards
    assert cards.count("People vs this judge: ") == 5 and "cannot tell on hand-labelled answers" in cards


def test_summary_cards_name_patterns_only_where_the_intervals_support_them():
    rows = []
    for architecture, (low, high) in {"bm25": (0.85, 0.95), "dense": (0.75, 0.95)}.items():
        rows += [
            {
                "architecture": architecture,
                "metric": "ragas/context_precision",
                "mean": 0.9,
                "ci_low": low,
                "ci_high": high,
                "n": 30,
            },
            {
                "architecture": architecture,
                "metric": "ragas/context_recall",
                "mean": 0.4,
                "ci_low": 0.3,
                "ci_high": 0.5,
                "n": 30,
            },
        ]
    for metric, value in {"relevance": 0.5, "utilization": 0.7, "completeness": 0.9, "adherence": 1.0}.items():
        rows.append(
            {
                "architecture": "bm25",
                "metric": f"offline/{metric}",
                "mean": value,
                "ci_low": value - 0.05,
                "ci_high": min(value + 0.05, 1.0),
                "n": 30,
            }
        )
    html = summary_cards_html(pd.DataFrame(rows))
    bm25, dense = html.split("<b>dense</b>")
    assert "High precision, low recall</b> (named)" in bm25
    assert "High precision, low recall</b> (possible)" in dense  # its precision interval straddles 0.8
    assert "data-metric='offline/average'" in bm25 and "average" not in dense


def test_known_llms_come_from_the_configs():
    llms = known_llms()
    assert llms["local"] == {"provider": "local", "model": "smollm2"}
    # the default config's `local` is the 1.5B model: offered by its model's name, so a panel can pick it
    assert llms["qwen2.5-coder-1.5b"]["model"] == "qwen2.5-coder-1.5b"
    assert llms["groq"]["provider"] == "groq" and llms["server"]["provider"] == "openai-compatible"


def test_panel_choices_make_a_stable_run_the_command_line_resumes(tmp_path):
    from helpers.experiment.config import load_config
    from helpers.explore.runs import panel_config

    plain = panel_config("smoke")
    assert plain.resolved_run_id() == load_config("configs/smoke.yaml").resolved_run_id()  # same run as the CLI's
    chosen = panel_config("smoke", n_questions=1, llm="local", judge="offline")
    assert chosen.resolved_run_id() != plain.resolved_run_id()
    assert (
        panel_config("smoke", n_questions=1, llm="local", judge="offline").resolved_run_id() == chosen.resolved_run_id()
    )
    saved = tmp_path / "config.yaml"  # what the run directory keeps
    import yaml

    saved.write_text(yaml.safe_dump(chosen.model_dump(mode="json"), sort_keys=False, allow_unicode=True))
    assert load_config(saved).resolved_run_id() == chosen.resolved_run_id()
    with pytest.raises(ExploreError, match="no LLM named 'gpt-9'"):
        panel_config("smoke", llm="gpt-9")
    with pytest.raises(ExploreError, match="subset and split are RAGBench options"):
        panel_config("smoke", subset="covidqa")
    with pytest.raises(ExploreError, match="judge must be one of"):
        panel_config("smoke", judge="astrologer")
    ragbench = panel_config("smoke", dataset="ragbench", subset="covidqa", n_questions=3)
    assert ragbench.dataset.options == {"subset": "covidqa", "split": "test", "n": 3}  # n: the loader's sample
    assert ragbench.dataset.n_questions is None


@pytest.mark.slow
def test_run_from_the_panel_logs_progresses_and_resumes_from_the_cli(tmp_path):
    from helpers.experiment.config import load_config
    from helpers.experiment.runner import Experiment
    from helpers.explore.runs import download_links, run_experiment, sample_table, saved_runs
    from runs import write_config

    config = load_config(write_config(tmp_path, dict(TINY, architectures=["bm25"])))
    lines, ticks = [], []
    summary = run_experiment(
        config, log=lines.append, progress=lambda *t: ticks.append(t), results_dir=tmp_path / "results"
    )
    assert summary["ok"] and summary["answers"] == 3
    text = "\n".join(lines)
    assert "model: local (local, smollm2)" in text and "vector store:" in text and "embedder:" in text
    assert "bm25 indexed" in text and "python -m helpers run" in text
    # the timeline, printed as it goes and kept in summary.json
    steps = {s["step"]: s for s in summary["timeline"]}
    # TINY's questions have qrels: retrieval is scored before the first answer
    assert list(steps) == ["load dataset", "retrieval table", "index bm25", "answer bm25", "judge offline"]
    assert steps["answer bm25"]["samples"] == 3 and steps["judge offline"]["samples"] == 3
    assert steps["index bm25"]["embedded"] == 0 and all(s["seconds"] >= 0 for s in steps.values())
    assert "[timeline] answer bm25:" in text
    answered = [t for t in ticks if t[0] == "bm25: retrieve + answer"]
    assert [t[1] for t in answered] == [1, 2, 3] and all(t[2] == 3 for t in answered)
    # the command line resumes it: nothing is redone
    directory = tmp_path / "results" / summary["run_id"]
    before = (directory / "records.jsonl").read_text()
    again = Experiment(load_config(directory / "config.yaml"), results_dir=tmp_path / "results").run()
    assert again["run_id"] == summary["run_id"] and (directory / "records.jsonl").read_text() == before
    assert [s["step"] for s in again["timeline"]] == ["load dataset"]  # nothing left to do
    assert saved_runs(tmp_path / "results") == [summary["run_id"]]
    table = sample_table(summary["run_id"], tmp_path / "results")
    assert len(table) == 3 and list(table["qid"]) == ["q2", "q3", "q4"]  # natural order, not the config's
    assert {"question", "answer", "offline/adherence"} <= set(table.columns)
    links = download_links(summary["run_id"], tmp_path / "results")
    encoded = re.search(r"href='data:application/json;base64,([^']+)'", links).group(1)
    assert json.loads(base64.b64decode(encoded))["run_id"] == summary["run_id"]
    assert links.count("class='hx-download'") == 4  # summary, scores, answers, the offline judge's trace.json
    assert f"download='{summary['run_id']}-trace.json'" in links


@pytest.mark.parametrize(
    "answer, contexts, expected",
    [
        ("The first prenatal visit should happen before week 12.", ("d2", "d1"), ("correct", "")),
        ("Labour usually starts at week 40.", ("d2", "d1"), ("generation", "statement 1 in context [2]")),
        ("Labour usually starts at week 40.", ("d2", "d4"), ("retrieval", "not in the contexts: statement 1")),
    ],
)
def test_the_answer_card_heads_with_its_verdict_against_the_reference(answer, contexts, expected):
    """Real judges (correctness, context recall) on a hand-made answer to q1, whose reference is d1's
    sentence: right; wrong with d1 second among the contexts (the generator lost it); wrong without
    d1 (the retriever lost it)."""
    from helpers.explore.answer import AnswerView, verdict_for_answer

    data = Dataset("tiny", "en", CORPUS, dict(QUERIES), QRELS, answers={"q1": CORPUS["d1"]["text"]})
    view = AnswerView("bm25", "local", answer)
    verdict_for_answer(Workbench.from_dataset(data), view, QUERIES["q1"], "q1", [CORPUS[d]["text"] for d in contexts])
    assert view.verdict == expected[0] and expected[1] in view.verdict_evidence
    assert view.cards_html.startswith(f"<div class='hx-card hx-verdict' data-verdict='{expected[0]}'")
    untouched = AnswerView("bm25", "local", answer)
    verdict_for_answer(Workbench.from_dataset(data), untouched, QUERIES["q2"], "q2", [CORPUS["d4"]["text"]])
    assert untouched.verdict == "" and untouched.cards_html == ""  # q2 has no reference
