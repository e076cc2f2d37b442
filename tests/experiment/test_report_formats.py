"""Reports people open (`python -m helpers report RUN_ID --format md|csv|html|json`) and the run's
figures: on a run directory built by hand (fast), and on one real small run (slow)."""

import base64
import json
import re

import numpy as np
import pandas as pd
import pytest
import yaml

from helpers.errors import UserError
from helpers.experiment import analysis, figures_run
from helpers.experiment.config import ExperimentConfig
from helpers.experiment.report_formats import FORMATS, write_report
from helpers.experiment.report_tables import collect
from runs import TINY, cli_in_process, run_env, write_config

ARCHITECTURES = ("bm25", "dense", "hybrid")
QIDS = [f"q{i}" for i in range(1, 13)]  # q1..q12: natural order is not the string order
QUALITY = (
    [("ragas", m) for m in ("faithfulness", "answer_relevancy", "context_precision", "context_recall")]
    + [("offline", m) for m in ("relevance", "utilization", "completeness", "adherence")]
    + [("retrieval", "ndcg@3")]
)
EMPTY = "ragas/context_recall"  # every value NaN: no reference answers
EXTERNAL = r"(src|href)\s*=\s*['\"]?\s*(https?:)?//"  # a reference to anything outside the file
REASON = "2 of 3 claims supported | one unsupported\nsecond line"


def _score_rows(rng):
    rows = []
    for a, architecture in enumerate(ARCHITECTURES):
        for qid in QIDS:
            for judge, metric in QUALITY:
                value = np.nan if f"{judge}/{metric}" == EMPTY else float(np.clip(rng.random() * 0.6 + 0.2 * a, 0, 1))
                reason = (
                    REASON
                    if (judge, metric) == ("ragas", "faithfulness")
                    else "no reference answer"
                    if f"{judge}/{metric}" == EMPTY
                    else ""
                )
                rows.append((architecture, judge, qid, metric, value, reason))
            for metric, value in (("latency_s", 0.5 + a), ("cost_usd", 0.001 * (a + 1)), ("output_tokens", 20.0 + a)):
                rows.append((architecture, "system", qid, metric, value, ""))
    frame = pd.DataFrame(rows, columns=["architecture", "judge", "qid", "metric", "value", "reason"])
    return frame.assign(run_id="hand", dataset="obstetrics", llm="local")


def _records():
    rows = []
    for architecture in ARCHITECTURES:
        for qid in QIDS:
            contexts = [
                {"doc_id": f"p1_c{r}", "rank": r, "score": 1.0 / r, "text": f"context {r} of {qid}"} for r in (1, 2)
            ]
            rows.append(
                {
                    "kind": "answer",
                    "architecture": architecture,
                    "llm": "local",
                    "qid": qid,
                    "question": f"question {qid}?",
                    "answer": f"answer of {architecture} to {qid}",
                    "contexts": str(contexts),
                    "error": None,
                    "input_tokens": 100,
                    "output_tokens": 20,
                    "cost_usd": 0.001,
                    "latency_s": 0.5,
                }
            )
    return pd.DataFrame(rows)


def build_run(root, run_id="hand"):
    """results/<run_id>/ as the runner writes it: config, summary, records and scores."""
    directory = root / run_id
    directory.mkdir(parents=True)
    scores = _score_rows(np.random.default_rng(3))
    scores.to_parquet(directory / "scores.parquet")
    _records().to_parquet(directory / "records.parquet")
    config = {"name": "hand", "dataset": {"name": "obstetrics"}, "statistics": {"baseline": "bm25", "n_resamples": 200}}
    (directory / "config.yaml").write_text(yaml.safe_dump(config))
    config = ExperimentConfig(**config)  # as the report reads it back: typed
    (directory / "summary.json").write_text(json.dumps({"run_id": run_id, "answers": len(ARCHITECTURES) * len(QIDS)}))
    return scores, config


@pytest.fixture(scope="module")
def hand(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    scores, config = build_run(root)
    return root, scores, config


# ---- the formats


def test_csv_has_one_row_per_answer_in_natural_order_and_the_summary_beside_it(hand, tmp_path):
    root, scores, _ = hand
    table_path, summary_path, sections_path = write_report("hand", "csv", out=tmp_path / "report.csv", results_dir=root)
    assert (summary_path, sections_path) == (tmp_path / "report.summary.csv", tmp_path / "report.sections.csv")
    table = pd.read_csv(table_path)
    assert len(table) == len(ARCHITECTURES) * len(QIDS)
    assert list(table[table.architecture == "bm25"]["qid"]) == QIDS
    assert {
        "question",
        "answer",
        "contexts",
        "ragas/faithfulness",
        "ragas/faithfulness reason",
        "offline/relevance",
        "system/cost_usd",
    } <= set(table.columns)
    assert "offline/relevance reason" not in table  # no reason given by that judge: no empty column
    assert table["ragas/faithfulness reason"].iloc[0] == REASON and "context 1 of q1" in table["contexts"].iloc[0]
    summary = pd.read_csv(summary_path)
    assert {"architecture", "metric", "mean", "ci_low", "ci_high", "n", "confidence"} <= set(summary.columns)


def test_json_round_trips_and_holds_every_score_row(hand, tmp_path):
    root, scores, _ = hand
    (path,) = write_report("hand", "json", out=tmp_path / "r.json", results_dir=root)
    document = json.loads(path.read_text())  # strict JSON: NaN was written as null
    assert {"summary", "comparisons", "difference_intervals", "records", "seed_table", "trace"} <= set(document)
    rows = [(r["architecture"], r["qid"], s["judge"], s["metric"]) for r in document["records"] for s in r["scores"]]
    assert len(rows) == len(set(rows)) == len(scores)
    first = document["records"][0]
    assert first["qid"] == "q1" and first["contexts"][0]["doc_id"] == "p1_c1"
    faithfulness = next(s for s in first["scores"] if s["metric"] == "faithfulness")
    assert faithfulness["reason"] == REASON
    assert next(s for s in first["scores"] if s["metric"] == "context_recall")["value"] is None
    assert {row["metric"] for row in document["summary"]} >= {"ragas/faithfulness", "retrieval/ndcg@3"}
    assert document["comparisons"][0]["baseline"] == "bm25" and "p_holm" in document["comparisons"][0]
    assert [s["qid"] for s in document["trace"]["bm25"]["individual_scores"]] == QIDS


def test_markdown_is_one_document_with_every_part(hand, tmp_path):
    root, _, _ = hand
    (path,) = write_report("hand", "md", out=tmp_path, results_dir=root)  # a folder: report.md in it
    assert path == tmp_path / "report.md"
    text = path.read_text()
    for heading in (
        "# Run hand",
        "## Headline: the metrics people's labels back, mean [95% CI] and band",
        "## Judges people do not back",
        "## Paired comparisons",
        "## RAGAS (seed benchmark form)",
        "## TRACe (seed guide JSON)",
        "## Per question",
    ):
        assert heading in text
    assert re.findall(r"^### (q\d+):", text, flags=re.M) == QIDS
    assert "2 of 3 claims supported \\| one unsupported<br>second line" in text  # a cell stays one cell
    assert "`p1_c1` (rank 1" in text and "answer of hybrid to q10" in text


def test_html_is_self_contained_without_figures(hand, tmp_path):
    root, _, _ = hand
    from helpers.experiment.report_formats import to_html

    text = to_html(collect("hand", results_dir=root), figures=False)
    assert "<style>" in text and "<script" not in text and "<link" not in text
    assert not re.search(EXTERNAL, text)
    assert text.count("<details>") == len(ARCHITECTURES) * len(QIDS) + 1  # every answer, and the TRACe JSON


@pytest.mark.slow
def test_html_embeds_every_figure_as_base64_png(hand, tmp_path):
    root, _, _ = hand
    (path,) = write_report("hand", "html", out=tmp_path / "r.html", results_dir=root)
    text = path.read_text()
    assert not re.search(r"https?://", text)
    images = re.findall(r"src='data:image/png;base64,([^']+)'", text)
    assert len(images) == 8  # every figure of build_figures
    assert all(base64.b64decode(i)[:8] == b"\x89PNG\r\n\x1a\n" for i in images)
    assert len(re.findall(r"<img ", text)) == len(images)


@pytest.fixture(scope="module")
def diagnosed(tmp_path_factory):
    """The hand-built run with correctness and context recall for three of bm25's answers: q1
    right, q2 wrong with the reference's statement in context 2, q3 wrong with it nowhere."""
    root = tmp_path_factory.mktemp("diagnosed")
    scores, _ = build_run(root, "diag")
    extra = []
    for qid, correctness, recall, reason in (
        ("q1", 0.9, 0.99, "statement 1: in context [1] (0.99)"),
        ("q2", 0.1, 0.99, "statement 1: in context [2] (0.99)"),
        ("q3", 0.1, 0.2, "statement 1: not found (0.20)"),
    ):
        extra += [
            ("bm25", "correctness", qid, "correctness", correctness, ""),
            ("bm25", "context_recall", qid, "context_recall", recall, reason),
        ]
    extra = pd.DataFrame(extra, columns=["architecture", "judge", "qid", "metric", "value", "reason"])
    scores = pd.concat([scores, extra.assign(run_id="diag", dataset="obstetrics", llm="local")], ignore_index=True)
    scores.to_parquet(root / "diag" / "scores.parquet")
    return root


def test_every_format_gives_each_answer_its_verdict(diagnosed, tmp_path):
    report = collect("diag", results_dir=diagnosed)
    assert report.verdicts == {
        ("bm25", "local", "q1"): ("correct", "correctness 0.90"),
        ("bm25", "local", "q2"): (
            "generation",
            "wrong (correctness 0.10) although statement 1 in context [2] (context recall 0.99)",
        ),
        ("bm25", "local", "q3"): (
            "retrieval",
            "wrong (correctness 0.10); not in the contexts: statement 1 (context recall 0.20)",
        ),
    }
    (csv, _, _) = write_report("diag", "csv", out=tmp_path / "r.csv", results_dir=diagnosed)
    table = pd.read_csv(csv, keep_default_na=False).set_index(["architecture", "qid"])
    assert table.loc[("bm25", "q2"), "verdict"] == "generation" and table.loc[("hybrid", "q2"), "verdict"] == ""
    (md,) = write_report("diag", "md", out=tmp_path / "r.md", results_dir=diagnosed)
    text = md.read_text()
    assert "## Why answers fail" in text and "bm25: 1 of 2 wrong answers had the fact in their contexts" in text
    assert "**Verdict:** retrieval: wrong (correctness 0.10); not in the contexts: statement 1" in text
    (js,) = write_report("diag", "json", out=tmp_path / "r.json", results_dir=diagnosed)
    document = json.loads(js.read_text())
    bm25 = {r["verdict"]: r["count"] for r in document["diagnosis"]["architectures"] if r["architecture"] == "bm25"}
    assert (bm25["correct"], bm25["generation"], bm25["retrieval"]) == (1, 1, 1)
    assert [r["verdict"] for r in document["records"] if r["architecture"] == "bm25"][:3] == [
        "correct",
        "generation",
        "retrieval",
    ]
    from helpers.experiment.report_formats import to_html

    page = to_html(report, figures=False)
    assert page.count("<p class='verdict'>") == 3 and "<h2>Why answers fail</h2>" in page


def test_every_format_shows_every_section_of_the_summary(diagnosed, tmp_path):
    """The terminal's summary, every report format and the results panel: the same five sections
    (helpers.experiment.run_summary), each with its title and its lines, in the same order."""
    import html

    from helpers.experiment.run_summary import SECTION_KEYS, as_html, as_text, report, run_sections
    from helpers.judges import validity
    from helpers.ragas_eval import RAGAS_METRICS

    sections = run_sections("diag", diagnosed)
    # the five of every run, and the RAGAS framework's reading: this run has RAGAS scores
    assert [s.key for s in sections] == [*SECTION_KEYS, "seed_ragas"]
    by_key = {s.key: s for s in sections}
    # what each section must say on this run: adherence is no evidence, correctness is
    assert any(line.startswith("correctness/correctness: AUROC") for line in by_key["agreement"].lines)
    assert any(line.startswith("offline/adherence: cannot tell") for line in by_key["agreement"].lines)
    assert "offline/adherence" in by_key["unbacked"].table.columns
    assert "offline/adherence" not in by_key["headline"].table.columns
    assert by_key["diagnosis"].lines[-2].startswith("bm25: 1 of 2 wrong answers had the fact in their contexts")
    # the seed's reading: its bands on the RAGAS means and its patterns, each line with the judge's agreement
    seed = by_key["seed_ragas"]
    assert list(seed.table.columns) == [f"ragas/{m}" for m in sorted(RAGAS_METRICS)]
    assert seed.lines[1].startswith("High precision, low recall (context_precision > 0.8 and context_recall < 0.6): ")
    assert seed.lines[-1] == "ragas/faithfulness: " + validity.note("ragas/faithfulness")
    written = {fmt: write_report("diag", fmt, out=tmp_path / f"r.{fmt}", results_dir=diagnosed) for fmt in FORMATS}
    texts = {
        "terminal": as_text(sections),
        "text report": report("diag", diagnosed),
        "md": written["md"][0].read_text(),
        "html": html.unescape(written["html"][0].read_text()),
        "json": "\n".join(
            line for s in json.loads(written["json"][0].read_text())["sections"] for line in [s["title"], *s["lines"]]
        ),
        "csv": "\n".join(pd.read_csv(written["csv"][2]).drop_duplicates("title")["title"])
        + "\n"
        + "\n".join(pd.read_csv(written["csv"][2])["text"]),
        "panel": html.unescape(as_html(sections)),
    }
    for where, text in texts.items():
        positions = [text.find(s.title) for s in sections]
        assert -1 not in positions and positions == sorted(positions), where
        for s in sections:
            assert all(line in text for line in s.lines), (where, s.key)
        assert "docs/glossary.md" in text, where


def test_bad_format_and_unknown_run_are_one_line_errors(hand, tmp_path, monkeypatch, capsys):
    root, _, _ = hand
    with pytest.raises(UserError, match=r"unknown report format 'pdf': use --format md, csv, html, json"):
        write_report("hand", "pdf", results_dir=root)
    with pytest.raises(UserError, match=r"no-such-run/scores.parquet: no scores.*runs with scores in .*: hand"):
        write_report("no-such-run", "md", results_dir=root)
    from helpers import paths
    from helpers.__main__ import main

    monkeypatch.setattr(paths, "RESULTS_DIR", root)
    for argv, message in (
        (["report", "hand", "--format", "docx"], "unknown report format 'docx'"),
        (["report", "nope", "--format", "md"], "nope/scores.parquet: no scores"),
        (["report", "hand", "--out", str(tmp_path / "x.md")], "needs --format"),
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and message in err[0]
    assert main(["report", "hand", "--format", "csv", "--out", str(tmp_path / "a.csv")]) == 0
    assert "summary (csv: means and intervals): " + str(tmp_path / "a.summary.csv") in capsys.readouterr().out


# ---- the figures


def test_metric_bars_are_a_grid_and_leave_out_the_empty_metric(hand, tmp_path):
    import matplotlib.pyplot as plt
    from PIL import Image

    _, scores, config = hand
    table = analysis.summary(scores, config)
    fig = figures_run.metric_bars(table, confidence=0.95)
    shown = [ax for ax in fig.axes if ax.get_visible()]
    assert len(shown) == 8 and EMPTY not in [ax.get_title() for ax in shown]
    assert len({ax.get_position().y0 for ax in shown}) == 2  # two rows of four
    assert any(EMPTY in t.get_text() and "nothing scored" in t.get_text() for t in fig.texts)
    assert fig._suptitle.get_text() == "Mean per architecture with 95% bootstrap intervals"
    width, height = Image.open(figures_run.save_figure(fig, "bars", out_dir=tmp_path)["png"]).size
    plt.close(fig)
    assert width <= 2 * height, (width, height)  # was 3825 x 538 for 8 metrics in one strip


def test_distributions_and_differences_leave_out_the_empty_metric(hand):
    import matplotlib.pyplot as plt

    _, scores, config = hand
    for draw in (figures_run.distributions, lambda s: figures_run.run_figures(s, config)["paired-differences"]()):
        fig = draw(scores)
        titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
        assert len(titles) == 8 and EMPTY not in titles
        assert any(EMPTY in t.get_text() for t in fig.texts)
        plt.close(fig)


def test_difference_intervals_are_paired_bootstrap_means(hand):
    from helpers.inference.classical import bootstrap_ci

    _, scores, config = hand
    table = analysis.difference_intervals(scores, config)
    row = table[(table.metric == "offline/relevance") & (table.architecture == "hybrid")].iloc[0]
    q = analysis.quality_scores(scores)
    q = q[q.metric == "offline/relevance"].pivot(index="qid", columns="architecture", values="value")
    expected = bootstrap_ci((q["hybrid"] - q["bm25"]).to_numpy(), n_resamples=200, seed=0)
    assert (row["mean_diff"], row["ci_low"], row["ci_high"]) == pytest.approx(expected)
    assert row["baseline"] == "bm25" and row["n_pairs"] == len(QIDS) and EMPTY not in set(table.metric)


def test_questions_sort_naturally_in_the_heatmap(hand):
    import matplotlib.pyplot as plt

    _, scores, _ = hand
    assert analysis.natural_sorted(["q10", "q2", "q1", "a"]) == ["a", "q1", "q2", "q10"]
    fig = figures_run.question_heatmap(scores)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == QIDS
    plt.close(fig)


def test_pareto_labels_do_not_collide_and_the_axis_says_dollars_or_tokens():
    import matplotlib.pyplot as plt

    names = ["bm25", "dense", "hybrid", "rerank", "hybrid_rerank"]  # five points almost on top of each other
    rows = []
    for i, architecture in enumerate(names):
        rows += [
            {
                "architecture": architecture,
                "llm": "local",
                "judge": "offline",
                "qid": "q1",
                "metric": "relevance",
                "value": 0.5 + 0.002 * i,
                "reason": "",
            },
            {
                "architecture": architecture,
                "llm": "local",
                "judge": "system",
                "qid": "q1",
                "metric": "output_tokens",
                "value": 30.0 + 0.01 * i,
                "reason": "",
            },
            {
                "architecture": architecture,
                "llm": "local",
                "judge": "system",
                "qid": "q1",
                "metric": "cost_usd",
                "value": 0.0,
                "reason": "",
            },
        ]
    scores = pd.DataFrame(rows)
    metric, label = figures_run.cost_axis(scores)
    assert metric == "output_tokens" and "tokens, not USD" in label
    assert figures_run.cost_axis(scores.assign(value=0.01))[0] == "cost_usd"
    fig = figures_run.pareto(scores, "offline/relevance", metric, cost_label=label)
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ax.texts if t.get_text() in names]
    assert len(boxes) == len(names) and ax.get_xlabel() == label
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])
    plt.close(fig)


# ---- one real run (in this process: the local model is loaded once per session), every format;
# html, the one with the most parts, through the command line as a user runs it


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    from helpers.experiment.config import load_config
    from helpers.experiment.runner import Experiment

    tmp = tmp_path_factory.mktemp("real")
    env = run_env(tmp, OMP_NUM_THREADS="1")
    config = load_config(write_config(tmp, dict(TINY, name="formats", architectures=["bm25"])))
    summary = Experiment(config, results_dir=tmp / "results").run()
    assert summary["ok"], summary
    return tmp, env, summary["run_id"]


@pytest.mark.slow
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_on_a_real_run(real_run, fmt):
    tmp, env, run_id = real_run
    out = tmp / f"out.{fmt}"
    if fmt == "html":
        done = cli_in_process("report", run_id, "--format", fmt, "--out", out, env=env)
        assert done.returncode == 0, done.stderr[-2000:]
        assert f"report ({fmt}): {out}" in done.stdout
    else:
        write_report(run_id, fmt, out=out, results_dir=tmp / "results")
    assert out.stat().st_size > 0
    scores = pd.read_parquet(tmp / "results" / run_id / "scores.parquet")
    answers = scores[["architecture", "llm", "qid"]].drop_duplicates()
    if fmt == "csv":
        assert len(pd.read_csv(out)) == len(answers) and out.with_name("out.summary.csv").exists()
    elif fmt == "json":
        assert sum(len(r["scores"]) for r in json.loads(out.read_text())["records"]) == len(scores)
    elif fmt == "html":
        text = out.read_text()  # (a guideline's text may mention a web address: only references count)
        assert "data:image/png;base64," in text and not re.search(EXTERNAL, text)
    else:
        assert re.findall(r"^### (q\d+):", out.read_text(), flags=re.M) == ["q2", "q3", "q4"]
