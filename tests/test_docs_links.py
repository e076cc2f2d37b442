"""The documentation holds together: README.md stays a short page for a user, every relative link in it
and in docs/ reaches a file, and every `python -m helpers COMMAND` it shows is a command the CLI accepts.

Fast: it reads Markdown and builds the argument parser; no model, no subcommand runs."""

from __future__ import annotations

import argparse
import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
MAX_README_LINES = 300

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`]+`")
# [text](target) and ![alt](target); the target may be <wrapped> and followed by a "title"
INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
HELPERS_COMMAND = re.compile(r"python\s+-m\s+helpers\s+([A-Za-z][\w-]*)")


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _prose(text: str) -> str:
    """The text without code: links are not read inside code blocks or `code spans`."""
    return INLINE_CODE.sub("code", FENCE.sub("", text))


def _code(text: str) -> list[str]:
    """Fenced code blocks and `code spans` (a span may wrap across lines)."""
    blocks = [m.group(0) for m in FENCE.finditer(text)]
    return blocks + INLINE_CODE.findall(FENCE.sub("", text))


def _links(text: str) -> list[str]:
    prose = _prose(text)
    return INLINE_LINK.findall(prose) + REFERENCE_LINK.findall(prose)


def _is_external(target: str) -> bool:
    return re.match(r"^(https?:|mailto:)", target, re.I) is not None


def test_pages_found():
    assert README.is_file()
    assert len(PAGES) > 5, "expected the docs/ pages beside README.md"


@pytest.mark.parametrize("page", PAGES, ids=_relative)
def test_relative_links_resolve(page: Path):
    broken = []
    for target in _links(page.read_text(encoding="utf-8")):
        path = target.split("#", 1)[0]
        if not path or _is_external(target):
            continue  # an anchor in the same page, or a web or mail address
        if not (page.parent / path).exists():
            broken.append(target)
    assert not broken, f"{_relative(page)}: links to missing files: {broken}"


def test_link_reader_reads_links():
    text = 'See [a](docs/a.md#x), ![b](b.png "t"), [c](https://x.org) and `[d](not-a-link.md)`.\n[e]: ../e.md\n'
    assert _links(text) == ["docs/a.md#x", "b.png", "https://x.org", "../e.md"]


def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines < MAX_README_LINES, f"README.md has {lines} lines; measurements and details go to docs/"


@functools.cache
def _cli_commands() -> frozenset[str]:
    from helpers.__main__ import build_parser

    parser = build_parser()
    commands = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            commands |= set(action.choices)
    return frozenset(commands)


def _shown_commands(page: Path) -> set[str]:
    return {m for block in _code(page.read_text(encoding="utf-8")) for m in HELPERS_COMMAND.findall(block)}


def test_readme_commands_exist():
    commands = _cli_commands()
    assert {"run", "judge", "ingest", "testset"} <= commands
    shown = _shown_commands(README)
    assert shown, "README.md shows no `python -m helpers COMMAND`"
    unknown = sorted(shown - commands)
    assert not unknown, f"README.md shows commands the CLI does not accept: {unknown} (it accepts {sorted(commands)})"


def test_docs_commands_exist():
    commands = _cli_commands()
    unknown = {_relative(page): sorted(_shown_commands(page) - commands) for page in PAGES[1:]}
    unknown = {page: names for page, names in unknown.items() if names}
    assert not unknown, f"docs/ pages show commands the CLI does not accept: {unknown}"
