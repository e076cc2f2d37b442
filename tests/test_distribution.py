"""The distribution: a wheel built from this checkout installs into a fresh venv with the lock as
constraints, and its core (no extras) runs the command line and scores a 3-row file; a judge that
needs an extra says which one to install."""

import csv
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ANSWERS = [
    ("q1", "When should the first prenatal visit happen?", "Before week 10 of pregnancy.", "Before week 10."),
    ("q2", "Which vitamin is recommended before conception?", "Folic acid.", "Folic acid."),
    ("q3", "How many prenatal visits are ideal?", "I cannot find the answer in the provided documents.", "Eight."),
]


@pytest.mark.slow
def test_the_wheel_installs_in_a_fresh_venv_and_scores_a_file(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheels),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = wheels.glob("rag_workbench-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "helpers/py.typed" in names and "helpers/judges/validity.csv" in names
    assert "Name: rag-workbench" in metadata and "Provides-Extra: local" in metadata
    assert 'Requires-Dist: ragas==0.4.3; extra == "ragas"' in metadata

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HELPERS_", "VIRTUAL_ENV", "PYTHONPATH"))}
    install = subprocess.run(
        [
            str(venv / "bin" / "pip"),
            "install",
            "--quiet",
            "--no-compile",
            "-c",
            str(ROOT / "requirements" / "lock.txt"),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert install.returncode == 0, install.stderr[-3000:]

    work = tmp_path / "work"  # an installed wheel writes results/ under the folder it runs in
    work.mkdir()
    with (work / "answers.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "question", "answer", "contexts", "reference"])
        for qid, question, answer, reference in ANSWERS:
            writer.writerow(
                [qid, question, answer, json.dumps([f"{reference} is what the guideline says."]), reference]
            )
    helpers = str(venv / "bin" / "helpers")
    shown = subprocess.run([helpers, "--help"], capture_output=True, text=True, timeout=120, env=env, cwd=work)
    assert shown.returncode == 0 and "judge" in shown.stdout, shown.stderr[-2000:]
    judged = subprocess.run(
        [helpers, "judge", "answers.csv", "--judges", "refusal,correctness"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=work,
    )
    assert judged.returncode == 0, judged.stderr[-2000:]
    with (work / "results" / "judged" / "answers.scores.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    false_refusals = {r["id"]: r["value"] for r in rows if r["metric"] == "false_refusal"}
    assert false_refusals == {"q1": "0.0", "q2": "0.0", "q3": "1.0"}  # q3 refuses an answerable question
    correctness = [r for r in rows if r["judge"] == "correctness"]
    assert correctness and all(r["value"] == "" for r in correctness)  # no torch in the core: NaN, and why
    assert correctness[0]["reason"] == (
        'judge failed: torch is not installed: pip install "rag-workbench[local]" (the lock: -c requirements/lock.txt)'
    )
