"""A user's own folder: every format read with provenance, every bad file reported (never fatal,
never lost), questions files with their errors, and a run over the folder end to end."""

import json
import shutil

import pandas as pd
import pytest

from documents_fixture import EXPECTED, make_folder, make_pdf
from helpers.data import load_dataset
from helpers.data.contracts import DataError
from helpers.data.documents import chunk_pieces, format_report, ingest, ingest_langchain
from helpers.data.questions import read_questions, relevant_doc_ids
from helpers.data.readers import html_sections, markdown_sections, read_document
from helpers.languages import detect as detect_language


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return make_folder(tmp_path_factory.mktemp("docs") / "mis documentos")


@pytest.fixture(scope="module")
def ingested(folder):
    return ingest(folder, progress=False)


def test_report_names_every_file_with_what_was_taken_or_why_not(ingested):
    by_file = {f.file: f for f in ingested.files}
    assert set(by_file) == set(EXPECTED)
    for name, (status, word) in EXPECTED.items():
        assert by_file[name].status == status, (name, by_file[name].reason)
        assert word.lower() in by_file[name].reason.lower(), (name, by_file[name].reason)
    assert by_file["guia.pdf"].pages == 3 and by_file["guia.pdf"].chunks >= 1
    assert "ocrmypdf" in by_file["escaneado.pdf"].reason and "qpdf" in by_file["cifrado.pdf"].reason
    assert "guia.pdf" in by_file["copia/guia-copia.pdf"].reason  # the copy names the file read instead
    text = format_report(ingested.report())
    assert all(name in text for name in EXPECTED) and "5 of 12 file(s) ingested, 7 skipped" in text


def test_chunks_keep_file_page_section_and_span(ingested, folder):
    sources = {doc["source"] for doc in ingested.corpus.values()}
    assert sources == {"guia.pdf", "notas.md", "pagina.html", "latin1.txt", "informe.docx"}
    pieces = read_document(folder / "guia.pdf")
    joined = "".join(p.text + "\n\n" for p in pieces)
    pdf_chunks = {d: doc for d, doc in ingested.corpus.items() if doc["source"] == "guia.pdf"}
    for doc_id, doc in pdf_chunks.items():
        assert doc_id.startswith(f"guia.pdf#p{doc['page']}_c")
        assert joined[doc["char_start"] : doc["char_end"]] == doc["text"]  # the span is exact
        assert 1 <= doc["page"] <= doc["page_end"] <= 3
    last = max(pdf_chunks.values(), key=lambda d: d["char_end"])
    assert last["page_end"] == 3 and last["section"] == "PARTO"
    md = [doc for doc in ingested.corpus.values() if doc["source"] == "notas.md"]
    assert {doc["section"] for doc in md} == {"Preeclampsia", "Preeclampsia > Tratamiento"}


def test_cleaning_per_format(ingested):
    text = {
        src: " ".join(d["text"] for d in ingested.corpus.values() if d["source"] == src)
        for src in ("guia.pdf", "notas.md", "pagina.html", "latin1.txt", "informe.docx")
    }
    assert "Guía de práctica clínica" not in text["guia.pdf"]  # running header
    assert "completa" in text["guia.pdf"] and "com-" not in text["guia.pdf"]  # hyphenation joined
    assert "**" not in text["notas.md"] and "example.org" not in text["notas.md"] and "title:" not in text["notas.md"]
    assert (
        "Inicio" not in text["pagina.html"]
        and "Copyright" not in text["pagina.html"]
        and "var x" not in text["pagina.html"]
    )
    assert "Fiebre mayor de 38 grados." in text["pagina.html"]
    assert "vacunación" in text["latin1.txt"]  # latin-1 decoded
    assert "0-6 meses | leche materna exclusiva" in text["informe.docx"]  # DOCX table row


def test_markdown_and_html_sections_on_known_inputs():
    md = markdown_sections("Intro line\n\nTitle\n=====\n\nBody *one*.\n\n```\n# not a heading\n```\n### Deep\n\ntext\n")
    assert [(p.section, p.text) for p in md] == [
        ("", "Intro line"),
        ("Title", "Body one.\n\n# not a heading"),
        ("Title > Deep", "text"),
    ]
    html = html_sections("<body><header>menu</header><h2>A</h2><p>one <b>two</b></p><div><p>three</p></div></body>")
    assert [(p.section, p.text) for p in html] == [("A", "one two\n\nthree")]


def test_language_is_detected_and_can_be_overridden(ingested, tmp_path):
    assert ingested.language == "es" and ingested.detected_language["probability"] > 0.9
    (tmp_path / "en.md").write_text("# Care\n\nPregnant women should take folic acid every day before conception.")
    english = ingest(tmp_path, progress=False)
    assert english.language == "en"
    assert ingest(tmp_path, language="es", progress=False).language == "es"
    assert detect_language(["Le suivi prénatal commence avant la douzième semaine de grossesse."])["code"] == "fr"


def test_no_usable_file_is_one_clear_error(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataError, match="no files found"):
        ingest(empty, progress=False)
    (empty / "x.bin").write_bytes(b"\x00\x01")
    (empty / "y.txt").write_bytes(b"")
    with pytest.raises(DataError, match=r"no document with text among 2 file\(s\).*x.bin: unsupported"):
        ingest(empty, progress=False)
    with pytest.raises(DataError, match="folder not found"):
        ingest(tmp_path / "missing", progress=False)


def test_a_file_over_the_size_limit_is_skipped_not_read(folder):
    small = ingest(folder, max_file_mb=0.0005, progress=False)  # about 500 bytes
    skipped = {f.file: f.reason for f in small.files if "max_file_mb" in f.reason}
    assert "guia.pdf" in skipped and "latin1.txt" not in skipped


def test_langchain_splitter_spans_are_exact(folder):
    pieces = read_document(folder / "guia.pdf")
    chunks = chunk_pieces(pieces, "guia.pdf", chunk_size=120, chunk_overlap=30, splitter="langchain")
    joined = "".join(p.text + "\n\n" for p in pieces)
    assert len(chunks) > 3 and all(joined[d["char_start"] : d["char_end"]] == d["text"] for d in chunks.values())
    with pytest.raises(DataError, match="unknown splitter; valid: workbench, langchain"):
        chunk_pieces(pieces, "guia.pdf", splitter="nltk")


def test_langchain_loader_documents_are_accepted(folder):
    from langchain_community.document_loaders import PyPDFLoader

    documents = PyPDFLoader(str(folder / "guia.pdf")).load()
    got = ingest_langchain(documents)
    pages = {d["page"] for d in got.corpus.values()} | {d["page_end"] for d in got.corpus.values()}
    assert pages == {1, 2, 3}  # PyPDFLoader's 0-based pages, +1
    assert got.files[0].file == "guia.pdf" and got.language == "es"
    with pytest.raises(DataError, match="not a LangChain Document"):
        ingest_langchain(["plain string"])


# --------------------------------------------------------------------------- questions files
def _write(path, rows):
    frame = pd.DataFrame(rows)
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    elif path.suffix == ".xlsx":
        frame.to_excel(path, index=False)
    else:
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".xlsx"])
def test_questions_file_formats(ingested, tmp_path, suffix):
    path = _write(
        tmp_path / f"q{suffix}",
        [
            {"id": "a", "question": "¿Cuántos controles?", "reference": "Ocho.", "relevant": "guia.pdf#1"},
            {
                "id": "b",
                "question": "¿Qué previene la eclampsia?",
                "reference": "",
                "relevant": "notas.md; pagina.html",
            },
        ],
    )
    asked = read_questions(path, ingested.corpus)
    assert asked.queries == {"a": "¿Cuántos controles?", "b": "¿Qué previene la eclampsia?"}
    assert asked.answers == {"a": "Ocho."}  # an empty reference is no reference
    assert all(ingested.corpus[d]["page"] == 1 for d in asked.qrels["a"])
    assert {ingested.corpus[d]["source"] for d in asked.qrels["b"]} == {"notas.md", "pagina.html"}
    assert asked.by_file == ["a", "b"]  # a page and whole files: a run narrows them to the reference's chunks


@pytest.mark.parametrize(
    "rows, message",
    [
        ([{"pregunta": "x"}], r"field 'question': no 'question' column"),
        ([{"id": "a", "question": "¿uno?"}, {"id": "b", "question": " "}], r"row 3, field 'question': empty question"),
        ([{"id": "a", "question": "¿uno?"}, {"id": "a", "question": "¿dos?"}], r"row 3, field 'id': duplicate id 'a'"),
        (
            [{"question": "¿uno?", "relevant": "otro.pdf"}],
            r"row 2, field 'relevant': 'otro.pdf' names no ingested file.*guia.pdf",
        ),
        ([{"question": "¿uno?", "relevant": "guia.pdf#9"}], r"row 2, field 'relevant': 'guia.pdf#9'"),
    ],
)
def test_questions_file_errors_name_file_row_and_column(ingested, tmp_path, rows, message):
    path = _write(tmp_path / "q.csv", rows)
    with pytest.raises(DataError, match=message) as error:
        read_questions(path, ingested.corpus)
    assert str(path) in str(error.value)


def test_questions_jsonl_and_format_errors(tmp_path):
    bad = tmp_path / "q.jsonl"
    bad.write_text('{"question": "¿uno?"}\n{not json}\n')
    with pytest.raises(DataError, match="line 2: invalid JSON"):
        read_questions(bad)
    (tmp_path / "q.txt").write_text("¿uno?")
    with pytest.raises(DataError, match="unsupported questions format '.txt'"):
        read_questions(tmp_path / "q.txt")


def test_relevant_spans_survive_a_change_of_chunking(folder):
    small = ingest(folder, chunk_size=120, chunk_overlap=20, progress=False).corpus
    large = ingest(folder, chunk_size=600, chunk_overlap=100, progress=False).corpus
    target = next(d for d in small.values() if d["source"] == "guia.pdf" and "oxitocina" in d["text"])
    span = f"guia.pdf@{target['char_start']}-{target['char_end']}"
    for corpus in (small, large):
        rels, unknown = relevant_doc_ids(span, corpus)
        assert not unknown and any("oxitocina" in corpus[d]["text"] for d in rels)


# --------------------------------------------------------------------------- end to end
@pytest.fixture(scope="module")
def documents_run(folder, tmp_path_factory):
    """A run over the mixed folder on the smoke configuration (the bundled model), via the CLI."""
    from helpers import paths
    from helpers.__main__ import main

    questions = _write(
        tmp_path_factory.mktemp("q") / "preguntas.csv",
        [
            {
                "id": "c1",
                "question": "¿Cuántos controles prenatales debe tener una gestante sana?",
                "reference": "Al menos ocho.",
                "relevant": "guia.pdf#1",
            },
            {"id": "c2", "question": "¿Cuánto dura el puerperio?", "reference": "", "relevant": "pagina.html"},
        ],
    )
    assert (
        main(["run", "--documents", str(folder), "--questions", str(questions), "--config", "configs/smoke.yaml"]) == 0
    )
    return next(paths.RESULTS_DIR.glob("documents-mis-documentos-*"))


@pytest.mark.slow
def test_run_over_the_folder_end_to_end(documents_run):
    run = documents_run
    report = json.loads((run / "ingest_report.json").read_text())
    assert report["totals"] == {
        "files": 12,
        "ingested": 5,
        "skipped": 7,
        "chunks": report["totals"]["chunks"],
        "chars": report["totals"]["chars"],
    }
    records = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]
    answers = [r for r in records if r.get("kind") == "answer"]
    assert len(answers) == 6 and all(r.get("answer") for r in answers)
    assert all(
        s.split(",")[0] in {"guia.pdf", "notas.md", "pagina.html", "latin1.txt", "informe.docx"}
        for r in answers
        for s in r["sources"]
    )  # each context cites its file
    scores = pd.read_parquet(run / "scores.parquet")
    assert {"retrieval/ndcg@3"} <= set(scores["judge"] + "/" + scores["metric"])  # qrels from `relevant`


@pytest.mark.slow
def test_labels_saved_reloaded_and_judges_scored_against_them(documents_run):
    from sklearn.metrics import cohen_kappa_score

    from helpers.experiment.label_format import COLUMNS
    from helpers.experiment.run_labels import RunLabels, judge_agreement
    from helpers.explore.label_panels import LabelPanel, parse_keys

    run_id = documents_run.name
    panel = LabelPanel(run_id)
    panel.keys.value = "yy" + ("p" if panel.item["qid"] in panel.store.references else "")  # typed, then Enter
    assert panel.keys.value == ""  # taken: the keys were read and the box cleared
    assert "annotator" in panel.status.value  # nobody's labels: refused, nothing written
    assert not (documents_run / "labels.csv").exists()
    panel.annotator.value = "ana"
    first = panel.item
    with pytest.raises(Exception, match="label the answer first"):
        panel.store.judges_revealed(first)  # no anchoring: hidden until labelled
    scores = pd.read_parquet(documents_run / "scores.parquet")
    adherence = scores[(scores["judge"] == "offline") & (scores["metric"] == "adherence_score")]
    value = {(r.architecture, r.qid): r.value for r in adherence.itertuples()}
    # the lowest-scored answers labelled "no" (at least two, up to a gap in the scores: rerank and
    # hybrid can give the same answer the same score), the rest "yes": the judge's AUROC is exactly 1
    ranked = sorted(value, key=value.get)
    cut = next(i for i in range(2, len(ranked)) if value[ranked[i]] > value[ranked[i - 1]])
    lowest = ranked[:cut]
    store = RunLabels(run_id, annotator="ana")
    for item in store.items:
        letter = "n" if (item["architecture"], item["qid"]) in lowest else "y"
        keys = letter + "y" + ("p" if item["qid"] in store.references else "")
        store.save(item, **parse_keys(keys, item["qid"] in store.references))
    assert store.next_item() is None and RunLabels(run_id, annotator="ana").progress() == (6, 6)  # reloaded
    assert RunLabels(run_id, annotator="ben").next_item() is not None  # per annotator
    saved = pd.read_csv(documents_run / "labels.csv", dtype=str, keep_default_na=False)
    assert tuple(saved.columns) == COLUMNS  # the one labels format (helpers.experiment.label_format)
    assert len(saved) == 6 and set(saved["annotator"]) == {"ana"} and saved["labelled_at"].str.len().min() > 0
    assert set(saved.loc[saved["qid"] == "c2", "correct"]) == {""}  # no reference: no 'correct'
    table = judge_agreement(run_id)
    row = table[(table["judge"] == "offline") & (table["positive"] == "no")].iloc[0]
    assert row["n"] == 6 and row["labelled_positive"] == len(lowest) and row["auroc"] == pytest.approx(1.0)
    label_supported = [0 if key in lowest else 1 for key in value]
    verdict = [int(value[key] >= 0.5) for key in value]
    assert row["kappa"] == pytest.approx(cohen_kappa_score(verdict, label_supported), nan_ok=True)
    assert RunLabels(run_id, annotator="ana").judges_revealed(first)["offline/adherence_score"] == pytest.approx(
        value[(first["architecture"], first["qid"])]
    )


@pytest.mark.slow
def test_judge_eval_labels_command(documents_run, capsys):
    from helpers.__main__ import main
    from helpers.experiment.run_labels import RunLabels
    from helpers.explore.label_panels import parse_keys

    # its own copy of the run, labelled here: xdist may run this before the labelling test above
    copy = documents_run.parent / f"{documents_run.name}-judge-eval"
    if not copy.exists():
        shutil.copytree(documents_run, copy, ignore=shutil.ignore_patterns("labels.csv"))
    store = RunLabels(copy.name, annotator="ana")
    for i, item in enumerate(store.items):  # one "no" per two answers: both classes present
        keys = ("n" if i % 2 else "y") + "y" + ("p" if item["qid"] in store.references else "")
        store.save(item, **parse_keys(keys, item["qid"] in store.references))
    assert main(["judge-eval", "--labels", copy.name]) == 0
    out = capsys.readouterr().out
    assert "labelled by 1 annotator(s)" in out and "adherence_score" in out
    assert main(["judge-eval", "--labels", "no-such-run"]) == 2


@pytest.mark.slow
def test_the_panel_proposes_whole_questions_balanced_and_redraws_the_intervals(documents_run):
    from helpers.experiment.run_labels import RunLabels
    from helpers.explore.label_panels import LabelPanel

    store = RunLabels(documents_run.name, annotator="cy")
    target = store.estimate_target()
    judge, metric = target[0].split("/", 1)
    scores = pd.read_parquet(documents_run / "scores.parquet")
    part = scores[(scores["judge"] == judge) & (scores["metric"] == metric)]
    doubt = {(r.architecture, r.qid): abs(r.value - 0.5) for r in part.itertuples()}
    proposed = []
    while (item := store.next_item()) is not None:
        proposed.append((item["architecture"], item["qid"]))
        store.save(item, supported="yes", answers="yes", correct="yes" if item["qid"] in store.references else "")
    qids = [q for _, q in proposed]
    assert qids == sorted(qids, key=qids.index)  # each question's answers together
    first = [p for p in proposed if p[1] == qids[0]]
    assert [doubt[p] for p in first] == sorted(doubt[p] for p in first)  # the judge's least sure first
    assert len(proposed) == 6 and len({a for a, _ in proposed[:3]}) == 3  # one per architecture a question
    panel = LabelPanel(documents_run.name, annotator="cy")
    assert "label at least 2 answers" in panel.estimate_box.value or "interval from 5" in panel.draw_estimates()


@pytest.mark.parametrize(
    "keys, reference, expected",
    [
        ("yyp", True, {"supported": "yes", "answers": "yes", "correct": "partly"}),
        ("p n", False, {"supported": "partly", "answers": "no"}),
        ("yynp", True, {"supported": "yes", "answers": "yes", "correct": "no", "reference_in_contexts": "partly"}),
    ],
)
def test_parse_keys(keys, reference, expected):
    from helpers.explore.label_panels import parse_keys

    assert parse_keys(keys, reference) == expected


@pytest.mark.parametrize(
    "keys, reference, message",
    [("yy", True, "type 3 or 4 letters"), ("yyy", False, "type 2 letters"), ("yp", False, "answers: 'p'")],
)
def test_parse_keys_errors(keys, reference, message):
    from helpers.errors import UserError
    from helpers.explore.label_panels import parse_keys

    with pytest.raises(UserError, match=message):
        parse_keys(keys, reference)


def test_review_panel_keeps_edits_and_drops(tmp_path):
    from helpers.data.questions import read_questions
    from helpers.explore.label_panels import ReviewPanel

    path = tmp_path / "t.jsonl"
    path.write_text(
        "".join(
            json.dumps(r, ensure_ascii=False) + "\n"
            for r in [
                {"id": "g1", "kind": "single", "question": "¿Uno?", "reference": "uno", "relevant": ""},
                {"id": "g2", "kind": "single", "question": "¿Dos?", "reference": "dos", "relevant": ""},
                {"id": "g3", "kind": "two", "question": "¿Tres?", "reference": "tres", "relevant": ""},
            ]
        )
    )
    panel = ReviewPanel(path)
    panel.decide("keep")
    panel.question.value = "¿Dos, corregida?"
    panel.decide("keep")
    panel.question.value = "no es pregunta"
    panel.decide("keep")
    assert "must be a question" in panel.status.value and panel.index == 2
    panel.decide("drop")
    reviewed = read_questions(tmp_path / "t.reviewed.jsonl")
    assert reviewed.queries == {"g1": "¿Uno?", "g2": "¿Dos, corregida?"}
    assert ReviewPanel(path).decisions["g3"]["decision"] == "drop"  # reopened: resumes


def test_run_documents_errors(folder, tmp_path, capsys):
    from helpers.__main__ import main

    assert (
        main(
            [
                "run",
                "--documents",
                str(folder),
                "--questions",
                str(tmp_path / "none.csv"),
                "--config",
                "configs/smoke.yaml",
            ]
        )
        == 2
    )
    assert "none.csv: questions file not found" in capsys.readouterr().err
    assert main(["run", "configs/smoke.yaml", "--documents", str(folder)]) == 2
    assert "not both" in capsys.readouterr().err
    with pytest.raises(DataError, match="option 'path' is required"):
        load_dataset("documents")


def test_ingest_command_prints_report_and_statistics(folder, capsys, tmp_path):
    from helpers.__main__ import main

    assert main(["ingest", str(folder), "--report", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "escaneado.pdf" in out and "chars_median" in out
    assert json.loads((tmp_path / "r.json").read_text())["totals"]["ingested"] == 5


def test_a_pdf_with_bookmarks_takes_its_sections_from_them(tmp_path):
    import pymupdf

    path = make_pdf(tmp_path / "plain.pdf", headings=False)
    doc = pymupdf.open(path)
    doc.set_toc([[1, "Primera parte", 1], [1, "Segunda parte", 3]])
    doc.saveIncr()
    doc.close()
    assert [p.section for p in read_document(path)] == ["Primera parte", "Primera parte", "Segunda parte"]
    assert [p.section for p in read_document(make_pdf(tmp_path / "headed.pdf"))] == [
        "CONTROL PRENATAL",
        "SUPLEMENTOS",
        "PARTO",
    ]


def test_the_two_splitters_compared_in_a_sweep(folder, tmp_path, session_dir):
    """splitter is a dataset option, so a sweep axis: workbench's sentence spans against LangChain's
    RecursiveCharacterTextSplitter on the same folder and questions (retrieval only)."""
    import yaml

    from helpers.experiment.sweep import run_sweep

    questions = _write(
        tmp_path / "q.csv", [{"id": "c1", "question": "¿Cuántos controles prenatales?", "relevant": "guia.pdf#1"}]
    )
    sweep = tmp_path / "splitters.yaml"
    sweep.write_text(
        yaml.safe_dump(
            {
                "name": "splitters",
                "base": {
                    "name": "splitters",
                    "generate": False,
                    "figures": False,
                    "architectures": ["bm25"],
                    "retrieval": {"k": 3},
                    "judges": {"ragas": None},
                    "dataset": {
                        "name": "documents",
                        "options": {
                            "path": str(folder),
                            "questions": str(questions),
                            "chunk_size": 120,
                            "chunk_overlap": 20,
                        },
                    },
                },
                "axes": {"dataset.options.splitter": ["workbench", "langchain"]},
            }
        )
    )
    index = run_sweep(sweep, progress=False)
    assert [r["status"] for r in index["runs"]] == ["finished", "finished"]
    reports = [
        json.loads((session_dir / "results" / r["run_id"] / "ingest_report.json").read_text()) for r in index["runs"]
    ]
    assert [r["settings"]["splitter"] for r in reports] == ["workbench", "langchain"]
    contexts = [
        [
            c["text"]
            for line in (session_dir / "results" / r["run_id"] / "records.jsonl").read_text().splitlines()
            for c in json.loads(line).get("contexts", [])
        ]
        for r in index["runs"]
    ]
    assert contexts[0] and contexts[1] and contexts[0] != contexts[1]  # two chunkings of one folder


def test_an_empty_questions_file_says_so(tmp_path):
    for name in ("q.jsonl", "q.csv"):
        (tmp_path / name).write_text("" if name.endswith("jsonl") else "question\n")
        with pytest.raises(DataError, match="the file has no questions"):
            read_questions(tmp_path / name)


def test_a_documents_run_takes_its_name_and_architectures_from_the_command_line_or_your_config(
    folder, tmp_path, capsys
):
    """Issue 60: `--architectures a,b` and `--name` replace the config's; a config of your own (not
    one of configs/) names a --documents run, a shipped one does not; a bad name is one line."""
    from helpers.__main__ import main

    questions = _write(tmp_path / "q.csv", [{"id": "c1", "question": "¿Cuánto dura el puerperio?"}])
    base = ["run", "--documents", str(folder), "--questions", str(questions), "--dry-run", "--dry-run-sample", "1"]
    assert main([*base, "--config", "configs/smoke.yaml", "--architectures", "bm25", "--name", "mi-manual"]) == 0
    out = capsys.readouterr().out
    assert "\ndry run of mi-manual-" in out and "answer bm25" in out and "answer hybrid" not in out
    import yaml

    own = tmp_path / "mine.yaml"
    own.write_text(yaml.safe_dump(yaml.safe_load(open("configs/smoke.yaml")) | {"name": "handbook"}))
    assert main([*base, "--config", str(own), "--architectures", "bm25"]) == 0
    assert "\ndry run of handbook-" in capsys.readouterr().out
    assert main([*base, "--config", "configs/smoke.yaml", "--architectures", "bm25"]) == 0
    assert "\ndry run of documents-mis-documentos-" in capsys.readouterr().out
    assert main([*base, "--config", "configs/smoke.yaml", "--architectures", "bm25,colbert"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1
        and "the command line (--architectures, --name): 'architectures': unknown architecture(s) ['colbert']" in err[0]
    )
