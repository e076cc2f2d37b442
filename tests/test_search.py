"""`python -m helpers search` (helpers.experiment.search, helpers.inference.sequential.eliminate): successive
elimination with anytime-valid confidence sequences, worked on known values, then on a tiny real
grid (XQuAD-es, BM25 cells), whose chosen config `run` reproduces; and each bad input's error."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from helpers.errors import UserError
from helpers.inference.sequential import confidence_sequence, eliminate
from runs import scripted_llms


def test_an_arm_is_eliminated_exactly_when_its_interval_against_the_leader_leaves_zero():
    rng = np.random.default_rng(1)
    qids = [f"q{i}" for i in range(60)]
    good = {q: float(v) for q, v in zip(qids, rng.random(60) < 0.9)}
    bad = {q: float(v) for q, v in zip(qids, rng.random(60) < 0.2)}
    close = {q: min(1.0, good[q]) for q in qids}  # the same values as the leader: never separable
    arms, done = eliminate({"good": good, "bad": bad, "close": close}, ["good", "bad", "close"], delta=0.05)
    by = {a.name: a for a in arms}
    assert by["good"].status == "leader"
    # delta split over the K - 1 = 2 pairs with the best arm (Bonferroni), each end one-sided: at 0.05 / 2
    low, high = confidence_sequence(np.array([good[q] - bad[q] for q in qids]), alpha=0.05 / 2, one_sided=True)
    assert (by["bad"].low, by["bad"].high) == (low[-1], high[-1]) and low[-1] > 0
    assert by["bad"].status == "eliminated" and by["close"].status == "open"
    assert not done  # close's interval reaches below -epsilon (0): not settled
    # within epsilon: the tie is declared and the search done
    arms, done = eliminate({"good": good, "close": close}, ["good", "close"], delta=0.05, epsilon=0.5)
    assert done and [a.status for a in arms] == ["leader", "open"]


def test_audited_values_are_unbiased_for_the_labels_whatever_the_judge():
    from helpers.inference.sequential import audit_scale, audited

    assert audited(0.8, None, 0.25) == 0.8 and audited(0.8, 0.0, 0.25) == pytest.approx(0.8 - 3.2)
    assert audit_scale(0.25) == 7.0 and audit_scale(1.0) == 1.0  # labels on every question: the labels
    rng = np.random.default_rng(0)
    truth = (rng.random(200_000) < 0.6).astype(float)
    judge = np.where(rng.random(200_000) < 0.3, 1.0, truth)  # a judge that says "right" too often
    seen = rng.random(200_000) < 0.2
    values = [audited(f, y if s else None, 0.2) for f, y, s in zip(judge, truth, seen)]
    assert judge.mean() == pytest.approx(0.72, abs=0.01) and np.mean(values) == pytest.approx(0.6, abs=0.01)
    assert min(values) >= 1 - 1 / 0.2 and max(values) <= 1 / 0.2


def test_eliminate_on_a_wider_range_scales_its_intervals():
    qids = [f"q{i}" for i in range(40)]
    rng = np.random.default_rng(2)
    values = {a: {q: float(rng.random() < p) for q in qids} for a, p in (("a", 0.9), ("b", 0.3))}
    doubled = {a: {q: 2 * v for q, v in vs.items()} for a, vs in values.items()}
    plain, _ = eliminate(values, ["a", "b"], delta=0.05)
    wide, _ = eliminate(doubled, ["a", "b"], delta=0.05, scale=2.0)
    assert [a.status for a in plain] == [a.status for a in wide]
    assert (wide[1].low, wide[1].high) == (2 * plain[1].low, 2 * plain[1].high)


SWEEP = {
    "name": "tiny-search",
    "base": {
        "name": "tiny-search",
        "dataset": {"name": "xquad-es", "options": {"query_split": "test"}, "n_questions": 40},
        "generate": False,
        "llms": [{"name": "local", "provider": "local"}],
        "figures": False,
    },
    "axes": {"retrieval.bm25.k1": [0.0, 1.5], "retrieval.k": [10], "architectures": [["bm25"]]},
}


def test_a_tiny_grid_is_searched_and_its_choice_reproduced(tmp_path):
    from helpers.experiment.config import load_config
    from helpers.experiment.runner import Experiment
    from helpers.experiment.search import search
    from helpers.experiment.search_report import format_table

    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(SWEEP))
    summary = search(path, epsilon=0.0, delta=0.05, batch=10, results_dir=tmp_path, log=lambda _: None)
    statuses = {c["axes"]["retrieval.bm25.k1"]: c for c in summary["cells"]}
    assert set(statuses) == {0.0, 1.5}
    assert summary["chosen"]["axes"]["retrieval.bm25.k1"] == 1.5  # k1 = 0 ignores term frequency
    assert summary["evaluations"] <= summary["full_grid_evaluations"] == 2 * 40
    assert "chosen config:" in format_table(summary)
    trace = json.loads((tmp_path / "search" / "tiny-search" / "search.json").read_text())
    stage = trace["trace"][0]
    assert [t["stage"] for t in trace["trace"]] == ["retrieval"] and stage["rounds"][0]["questions"] == 10
    # `run chosen.yaml` reproduces the chosen arm's values on the questions the search used
    chosen = load_config(summary["chosen_config"])
    assert chosen.architectures == ["bm25"] and chosen.retrieval.options.bm25.k1 == 1.5
    result = Experiment(chosen, results_dir=tmp_path).run()
    scores = pd.read_parquet(tmp_path / result["run_id"] / "scores.parquet")
    ndcg = scores[scores["metric"] == "ndcg@10"].set_index("qid")["value"]
    seen = stage["order"][: statuses[1.5]["questions"]]  # the questions the chosen arm was scored on
    assert summary["chosen"]["estimate"] == pytest.approx(ndcg.loc[seen].mean())


def test_arms_that_do_the_same_retrieval_are_evaluated_once(tmp_path):
    """k (the generator's contexts) is no retrieval axis: four arms, two retrievals."""
    from helpers.experiment.search import search

    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(SWEEP | {"axes": SWEEP["axes"] | {"retrieval.k": [3, 5]}}))
    summary = search(path, epsilon=0.0, results_dir=tmp_path, log=lambda _: None)
    assert len(summary["cells"]) == 4 and summary["full_grid_evaluations"] == 2 * 40
    by_k = {(c["axes"]["retrieval.bm25.k1"], c["axes"]["retrieval.k"]): c["estimate"] for c in summary["cells"]}
    assert by_k[(1.5, 3)] == by_k[(1.5, 5)] and by_k[(0.0, 3)] == by_k[(0.0, 5)]


def test_bad_searches_are_one_line_errors(tmp_path):
    from helpers.experiment.search import search

    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(SWEEP))
    with pytest.raises(
        UserError, match="metric 'bleu' is not one the retrieval stage measures; valid: ndcg, recall, mrr"
    ):
        search(path, metric="bleu", results_dir=tmp_path)
    with pytest.raises(
        UserError, match=r"epsilon in \[0, 1\), delta in \(0, 1\), batch >= 1, at >= 1; got 0.02, 0.05, 0, 10"
    ):
        search(path, batch=0, results_dir=tmp_path)
    path.write_text(yaml.safe_dump(SWEEP | {"axes": {}}))
    with pytest.raises(UserError, match="every axis needs at least one value"):
        search(path, results_dir=tmp_path)
    path.write_text(yaml.safe_dump(SWEEP | {"axes": {"retrieval.bm25.kone": [1.0]}}))
    with pytest.raises(UserError, match="kone"):
        search(path, results_dir=tmp_path)
    path.write_text(yaml.safe_dump(SWEEP | {"axes": {"architectures": [["hyde"]]}}))
    with pytest.raises(UserError, match="retrieves with the LLM \\(hyde\\) and the sweep does not generate"):
        search(path, results_dir=tmp_path)


ANSWERING = {
    "name": "tiny-answers",
    "base": SWEEP["base"] | {"generate": True, "dataset": SWEEP["base"]["dataset"] | {"n_questions": 16}},
    "axes": {
        "retrieval.bm25.k1": [0.0, 1.5],
        "llm": [
            {"name": "good", "provider": "local", "model": "good", "cache": "off", "max_tokens": 32},
            {"name": "bad", "provider": "local", "model": "bad", "cache": "off", "max_tokens": 32},
        ],
        "architectures": [["bm25"]],
    },
}


def test_the_answer_stage_drops_the_arm_whose_answers_are_wrong_and_resumes_for_free(tmp_path, monkeypatch):
    """Two stages: retrieval (bm25's k1, no LLM call), then answers scored by correctness for the arms
    retrieval kept; the LLM that answers with the reference wins, the one that never knows is
    dropped before the questions run out; a second search answers nothing again; `run chosen.yaml`
    reuses the search's run."""
    from helpers.data import load_dataset
    from helpers.experiment.config import load_config
    from helpers.experiment.runner import Experiment
    from helpers.experiment.search import search

    data = load_dataset("xquad-es", query_split="test")
    calls = scripted_llms(monkeypatch, {data.queries[q]: data.answers[q] for q in data.queries})
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(ANSWERING))
    summary = search(path, epsilon=0.1, delta=0.05, batch=4, results_dir=tmp_path, log=lambda _: None)
    assert summary["stages"] == ["retrieval", "answers"] and summary["metric"] == "correctness/correctness"
    assert summary["delta"] == 0.025  # each stage at delta / 2
    assert summary["chosen"]["axes"]["llm"]["name"] == "good"
    bad = [c for c in summary["cells"] if c["axes"]["llm"]["name"] == "bad" and c["stage"] == "answers"]
    assert bad and all(c["status"] == "eliminated" and c["questions"] < 16 for c in bad)
    assert all(c["estimate"] < 0.1 < 0.9 < summary["chosen"]["estimate"] for c in bad), (bad, summary["chosen"])
    good_calls, bad_calls = len(calls["good"]), len(calls["bad"])
    answering = [c for c in summary["cells"] if c["stage"] == "answers"]
    assert summary["llm_calls"] == good_calls + bad_calls == sum(c["questions"] for c in answering)
    assert summary["llm_calls"] < summary["full_grid_llm_calls"] == 4 * 16
    # each arm's run is a plain run over the questions it answered: `report` and `compare` read it
    for cell in answering:
        written = pd.read_parquet(tmp_path / cell["run"] / "scores.parquet")
        assert written.query("metric == 'correctness'")["value"].mean() == pytest.approx(cell["estimate"])
    # resumed: the same search again asks the LLMs nothing and chooses the same
    again = search(path, epsilon=0.1, delta=0.05, batch=4, results_dir=tmp_path, log=lambda _: None)
    assert (len(calls["good"]), len(calls["bad"])) == (good_calls, bad_calls)
    assert again["chosen"] == summary["chosen"]
    # `run chosen.yaml`: the search's own run, its answers reused, the rest of the questions answered
    chosen = load_config(summary["chosen_config"])
    assert chosen.resolved_run_id() == next(c["run"] for c in answering if c["status"] == "chosen")
    result = Experiment(chosen, results_dir=tmp_path).run()
    scores = pd.read_parquet(tmp_path / result["run_id"] / "scores.parquet")
    correctness = scores[scores["metric"] == "correctness"].set_index("qid")["value"]
    trace = json.loads((tmp_path / "search" / "tiny-answers" / "search.json").read_text())["trace"][-1]
    used = trace["order"][: max(c["questions"] for c in answering)]
    assert summary["chosen"]["estimate"] == pytest.approx(correctness.loc[used].mean())
    assert len(calls["good"]) == good_calls + 16 - len(used)  # only the questions the search left


def test_an_arm_whose_answers_all_fail_is_recorded_and_the_search_goes_on(tmp_path, monkeypatch):
    import helpers.experiment.runner as runner
    from helpers.experiment.search import search
    from helpers.experiment.until_decided import Budget
    from helpers.llm import LLM, LLMError
    from helpers.llm.scripted import ScriptedBackend

    backends = {"good": ScriptedBackend("Sí."), "bad": ScriptedBackend(LLMError("the server is down"))}
    monkeypatch.setattr(
        runner, "LLM", lambda settings: LLM(settings | {"max_retries": 0}, backend=backends[settings["model"]])
    )
    sweep = ANSWERING | {"axes": ANSWERING["axes"] | {"retrieval.bm25.k1": [1.5]}}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    summary = search(path, epsilon=0.1, batch=4, results_dir=tmp_path, log=lambda _: None)
    by_llm = {c["axes"]["llm"]["name"]: c for c in summary["cells"]}
    assert by_llm["bad"]["status"] == "failed" and "the server is down" in by_llm["bad"]["error"]
    # the failure leaves one arm after the first look: chosen there
    assert by_llm["good"]["status"] == "chosen" and by_llm["good"]["questions"] == 4
    assert summary["stopped"] == "one arm left"
    path.write_text(yaml.safe_dump(sweep | {"axes": sweep["axes"] | {"llm": [sweep["axes"]["llm"][1]]}}))
    with pytest.raises(UserError, match=r"search \(answers\): every arm failed \(.*the server is down"):
        search(path, batch=4, results_dir=tmp_path / "again", log=lambda _: None)
    with pytest.raises(UserError, match="--budget 0 min leaves nothing to spend"):
        search(path, budget=Budget("minutes", 0), results_dir=tmp_path)
    with pytest.raises(
        UserError,
        match="--answer-metric 'correctness/bleu' is not an answer metric a judge produces; valid: .*correctness/correctness",
    ):
        search(path, answer_metric="correctness/bleu", results_dir=tmp_path)


def test_the_command_searches_a_folder_of_documents_and_prints_one_json_object(tmp_path):
    """`search SWEEP --documents DIR --questions FILE --json`: the sweep's axes over the folder; the
    summary's keys as issue 62 names them; the figure written beside search.json."""
    from runs import cli_in_process, run_env

    docs = tmp_path / "docs"
    docs.mkdir()
    topics = {
        "magnesio": "El sulfato de magnesio previene las convulsiones en la preeclampsia grave.",
        "hierro": "El hierro oral corrige la anemia ferropénica del embarazo en pocas semanas.",
        "oxitocina": "La oxitocina tras el parto reduce la hemorragia posparto.",
    }
    for name, text in topics.items():
        (docs / f"{name}.md").write_text(f"# {name}\n\n{text}\n")
    questions = tmp_path / "preguntas.csv"
    pd.DataFrame(
        [
            {"question": "¿Qué previene las convulsiones en la preeclampsia?", "relevant": "magnesio.md"},
            {"question": "¿Qué corrige la anemia ferropénica?", "relevant": "hierro.md"},
            {"question": "¿Qué reduce la hemorragia posparto?", "relevant": "oxitocina.md"},
        ]
    ).to_csv(questions, index=False)
    sweep = SWEEP | {"axes": {"dataset.options.chunk_size": [200, 400], "architectures": [["bm25"]]}}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    env = run_env(tmp_path)
    done = cli_in_process("search", path, "--documents", docs, "--questions", questions, "--json", env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)
    assert set(summary) >= {"metric", "epsilon", "delta", "chosen", "cells", "evaluations", "llm_calls"}
    assert set(summary) >= {"full_grid_evaluations", "full_grid_llm_calls", "seconds"}
    assert set(summary["chosen"]) == {"axes", "estimate", "low", "high"}
    assert {c["stage"] for c in summary["cells"]} == {"retrieval"} and summary["full_grid_evaluations"] == 2 * 3
    chosen = yaml.safe_load(Path(summary["chosen_config"]).read_text())
    assert chosen["dataset"]["name"] == "documents" and chosen["dataset"]["options"]["path"] == str(docs)
    assert Path(summary["chosen_config"]).with_name("search.png").stat().st_size > 10_000
    half = cli_in_process("search", path, "--documents", docs, env=env)
    assert half.returncode == 2
    assert half.stderr.strip() == (
        "error: search: --documents DIR and --questions FILE go together (the grid's axes over your folder) "
        "(--debug for the traceback)"
    )


def test_a_labelled_search_stops_for_labels_and_races_the_audited_values(tmp_path, monkeypatch):
    """--label-rate: the questions drawn for labelling (a seeded draw per question id) need a person's
    `correct` label for every racing cell's answer; the search writes them into each run's labels.csv
    and stops (exit 3 from the command); filled in and rerun, it goes on, and each drawn answer's value
    is judge + (label - judge) / rate (helpers.inference.sequential.audited)."""
    from helpers.data import load_dataset
    from helpers.experiment.label_format import read_answer_labels
    from helpers.experiment.search import search
    from helpers.experiment.search_labels import LabelsNeeded, SearchLabels
    from helpers.experiment.search_report import format_table
    from helpers.inference.sequential import audited

    data = load_dataset("xquad-es", query_split="test")
    scripted_llms(monkeypatch, {data.queries[q]: data.answers[q] for q in data.queries})
    sweep = ANSWERING | {"axes": ANSWERING["axes"] | {"retrieval.bm25.k1": [1.5]}}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    from runs import cli_in_process, run_env

    stopped = cli_in_process("search", path, "--label-rate", 0.5, "--batch", 4, env=run_env(tmp_path / "cli"))
    assert stopped.returncode == 3 and "drawn for labelling need a person's label" in stopped.stderr
    draw = SearchLabels(0.5, "correct", seed=0)
    rounds, labelled = 0, {}
    while True:
        try:
            summary = search(path, epsilon=0.1, batch=4, label_rate=0.5, results_dir=tmp_path, log=lambda _: None)
            break
        except LabelsNeeded as needed:
            rounds += 1
            for file in needed.files:  # a person labels: the good LLM's answers right, the bad one's wrong
                frame = read_answer_labels(file)
                assert frame["correct"].eq("").any() and all(draw.drawn(q) for q in frame["qid"])
                frame["correct"] = frame["model"].map({"good": "yes", "bad": "no"})
                frame.to_csv(file, index=False)
                labelled.update({(m, q): c for m, q, c in zip(frame["model"], frame["qid"], frame["correct"])})
        assert rounds < 10
    assert rounds >= 1 and summary["labels"]["rate"] == 0.5 and summary["labels"]["labelled"] > 0
    assert summary["chosen"]["axes"]["llm"]["name"] == "good"
    assert f"{summary['labels']['labelled']} answers labelled" in format_table(summary)
    # the chosen cell's estimate: the mean of its audited values on the questions it used
    cell = next(c for c in summary["cells"] if c["status"] == "chosen")
    scores = pd.read_parquet(tmp_path / cell["run"] / "scores.parquet").query("metric == 'correctness'")
    judged = dict(zip(scores["qid"], scores["value"]))
    trace = json.loads((tmp_path / "search" / "tiny-answers" / "search.json").read_text())["trace"][-1]
    used = trace["order"][: cell["questions"]]
    expected = [audited(judged[q], 1.0 if labelled.get(("good", q)) == "yes" else None, 0.5) for q in used]
    assert [draw.drawn(q) for q in used] == [("good", q) in labelled for q in used]
    assert cell["estimate"] == pytest.approx(np.mean(expected))


def test_active_rates_follow_the_judges_doubt_between_the_floor_and_the_rate():
    from helpers.inference.sequential import active_rate

    assert active_rate(0.5, 0.6, 0.2) == pytest.approx(0.6)  # least sure: the full rate
    assert active_rate(0.0, 0.6, 0.2) == active_rate(1.0, 0.6, 0.2) == pytest.approx(0.2)  # sure: the floor
    assert active_rate(0.9, 0.6, 0.2) == pytest.approx(0.2 + 0.4 * 2 * 0.3)  # sqrt(0.9 * 0.1) = 0.3
    with pytest.raises(ValueError, match="need 0 < floor <= rate <= 1; got floor 0.7, rate 0.6"):
        active_rate(0.5, 0.6, 0.7)


def test_active_labels_are_given_in_the_panel_and_raced_at_each_answers_own_rate(tmp_path, monkeypatch):
    """--label-floor: each answer drawn at its own rate (the judge's doubt); a search stopped for labels
    leaves its queue in labels-needed.json, which LabelPanel.for_search shows question by question and
    saves into each cell's run; rerun, the search goes on, each drawn answer's value is audited at that
    answer's rate."""
    from helpers.data import load_dataset
    from helpers.experiment.search import search
    from helpers.experiment.search_labels import LabelsNeeded, SearchLabels
    from helpers.explore.label_panels import LabelPanel
    from helpers.inference.sequential import active_rate, audited

    data = load_dataset("xquad-es", query_split="test")
    scripted_llms(monkeypatch, {data.queries[q]: data.answers[q] for q in data.queries})
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(ANSWERING | {"axes": ANSWERING["axes"] | {"retrieval.bm25.k1": [1.5]}}))
    settings = {"epsilon": 0.1, "batch": 4, "label_rate": 0.9, "label_floor": 0.3, "results_dir": tmp_path}
    rounds, given = 0, {}
    while True:
        try:
            summary = search(path, log=lambda _: None, **settings)
            break
        except LabelsNeeded as needed:
            rounds += 1
            queue = json.loads((tmp_path / "search" / "tiny-answers" / "labels-needed.json").read_text())["rows"]
            assert len(queue) == sum(needed.files.values())
            qids = [r["qid"] for r in queue]
            assert qids == sorted(qids, key=qids.index)  # each question's answers together
            panel = LabelPanel.for_search("tiny-answers", annotator="ana", results_dir=tmp_path)
            proposed = []
            while panel.item is not None:  # a person: the good LLM's answers right, the bad one's wrong
                item = panel.item
                proposed.append((item["run"], item["architecture"], item["llm"], item["qid"]))
                panel.keys.value = "yyy" if item["llm"] == "good" else "ynn"
                given[(item["llm"], item["qid"])] = 1.0 if item["llm"] == "good" else 0.0
            assert proposed == [(r["run"], r["architecture"], r["model"], r["qid"]) for r in queue]
            assert "rerun the same `python -m helpers search` command" in panel.item_box.value
        assert rounds < 10
    assert rounds >= 1 and summary["labels"]["floor"] == 0.3 and summary["chosen"]["axes"]["llm"]["name"] == "good"
    draw = SearchLabels(0.9, "correct", seed=0, floor=0.3)
    cell = next(c for c in summary["cells"] if c["status"] == "chosen")
    scores = pd.read_parquet(tmp_path / cell["run"] / "scores.parquet").query("metric == 'correctness'")
    judged = dict(zip(scores["qid"], scores["value"]))
    trace = json.loads((tmp_path / "search" / "tiny-answers" / "search.json").read_text())["trace"][-1]
    used = trace["order"][: cell["questions"]]
    rates = {q: active_rate(judged[q], 0.9, 0.3) for q in used}
    assert [draw.drawn(q, rates[q]) for q in used] == [("good", q) in given for q in used]
    assert len(set(rates.values())) > 1  # the judge's doubt differs between answers: so do their rates
    expected = [audited(judged[q], given.get(("good", q)), rates[q]) for q in used]
    assert cell["estimate"] == pytest.approx(np.mean(expected))
