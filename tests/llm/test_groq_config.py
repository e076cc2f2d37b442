"""configs/groq.yaml end to end (issue 61): the seed's settings (llama-3.1-8b-instant, 1,024 answer
tokens, k = 5), run through the Groq SDK against a local stand-in that speaks Groq's API on
127.0.0.1 (helpers serve-llm's schema responder), so that the first run with a real key works; the
run's summary ends with the RAGAS framework's reading of its RAGAS scores."""

import re
import threading

import pandas as pd
import pytest
import yaml

from helpers import paths
from helpers.llm.responder import SchemaResponder
from helpers.llm.server import build_server
from helpers.llm.simulate import Simulation
from runs import cli_in_process, run_env

pytestmark = pytest.mark.slow


def test_the_groq_config_runs_end_to_end_against_a_stand_in(tmp_path):
    raw = yaml.safe_load((paths.CONFIGS_DIR / "groq.yaml").read_text())
    llm = raw["llms"][0]
    assert (llm["provider"], llm["model"], llm["max_tokens"], raw["retrieval"]["k"]) == (
        "groq",
        "llama-3.1-8b-instant",
        1024,
        5,
    )
    server = build_server(SchemaResponder(), "stand-in", port=0, simulation=Simulation())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        host, port = server.server_address[:2]
        # the stand-in, and no free-plan pacing (it has no limits to respect); the rest as shipped
        llm |= {"base_url": f"http://{host}:{port}", "requests_per_minute": 100_000, "tokens_per_minute": 10**8}
        raw |= {"architectures": ["bm25", "hybrid"], "figures": False}
        raw["dataset"] = {"name": "obstetrics", "options": {"pages": "124-135"}, "questions": ["q2", "q4"]}
        path = tmp_path / "groq.yaml"
        path.write_text(yaml.safe_dump(raw))
        done = cli_in_process("run", path, env=run_env(tmp_path) | {"GROQ_API_KEY": "gsk-test-stand-in"})
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 0, done.stderr[-3000:]
    # every call (4 answers, the TRACe and RAGAS judges') through the Groq client, none failed
    assert re.search(r"LLM groq: [\d,]+ calls \([\d,]+ from the cache, 0 retried", done.stdout)
    records = pd.read_parquet(next((tmp_path / "results").glob("obstetrics-groq-*/records.parquet")))
    assert len(records) == 4 and set(records["provider"]) == {"groq"} and records["answer"].str.len().gt(0).all()
    # the summary's sections, and the seed's reading of RAGAS (judged by groq) at its end
    for title in ("Headline:", "Decisions:", "Why answers fail:", "The RAGAS framework's reading"):
        assert title in done.stdout
    seed = done.stdout.split("The RAGAS framework's reading", 1)[1]
    assert "High precision, low recall (context_precision > 0.8 and context_recall < 0.6): " in seed
    assert "ragas/faithfulness: not checked against people's labels" in seed
