"""Checks on what comes from files and people: names that become paths, YAML, question text.

Configs and sweeps are shared between researchers, so they are read as untrusted data
(SECURITY.md): a name never leaves its folder, YAML cannot expand itself, and a question has a
length that retrieval can afford.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml

from helpers.errors import UserError

# letters, digits and _ . + = - (sweep run ids use `axis=value` and `--`), never starting with a
# dot: no `..`, no hidden files, no separators, nothing a shell or a file system reads specially
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+=-]{0,199}")
# A question is a sentence or a paragraph; a megabyte of text costs about a minute of CPU on the
# dense path (tokenised whole before truncation) and is never a question.
MAX_QUESTION_CHARS = 4000
# Configs are a few kilobytes; a YAML file this large is a mistake or an attack.
MAX_YAML_BYTES = 2_000_000


def safe_name(value: str, what: str = "name") -> str:
    """`value` if it is a safe single path component, else a one-line UserError naming `what`."""
    if not isinstance(value, str) or not SAFE_NAME.fullmatch(value):
        raise UserError(
            f"{what} {value!r} is not a safe name: use 1-200 letters, digits and _ . + = - "
            "(not starting with '.', no '/')"
        )
    return value


def inside(root: str | Path, *names: str, what: str = "name") -> Path:
    """root/names..., each name checked by `safe_name`, and the result checked to stay in root
    once resolved (a symlink inside root that points out is refused too)."""
    root = Path(root)
    path = root.joinpath(*(safe_name(name, what) for name in names))
    if not path.resolve().is_relative_to(root.resolve()):
        raise UserError(f"{what} {'/'.join(names)!r} resolves outside {root} (a link?); remove the link or rename")
    return path


class _NoAliasLoader(yaml.SafeLoader):
    """yaml.SafeLoader without anchors and aliases: `&a [*a, *a, ...]` nested ten deep expands to
    billions of nodes once traversed (the 'billion laughs'), and no config here needs them."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"YAML aliases (*{event.anchor}) are not accepted in configs; write the value out",
                event.start_mark,
            )
        return super().compose_node(parent, index)


def load_yaml(path: str | Path, what: str = "config"):
    """The parsed YAML file (None when empty); a UserError naming the file when it is too large,
    uses aliases, or is not valid YAML."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: {what} file not found" + (" (it is a folder)" if path.is_dir() else ""))
    size = path.stat().st_size
    if size > MAX_YAML_BYTES:
        raise UserError(f"{path}: {what} file of {size:,} bytes; the limit is {MAX_YAML_BYTES:,}")
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:
        raise UserError(f"{path}: not valid YAML ({exc})") from None


TRUST_CODE_SETTING = "HELPERS_TRUST_CODE"  # modules a config may import and run (SECURITY.md)


def require_trusted_code(module: str, what: str) -> None:
    """Raise unless the person running the command allowed `module` to be imported: a config (or a
    sweep, or anything else shared) runs no code of its own unless the user says so, as
    `trust_remote_code` is for the hub. `--trust-code MODULE` on the command line (repeatable) or
    HELPERS_TRUST_CODE=MODULE[,MODULE...] in the environment; `*` trusts every module."""
    trusted = {m.strip() for m in os.environ.get(TRUST_CODE_SETTING, "").split(",") if m.strip()}
    if module in trusted or "*" in trusted:
        return
    raise UserError(
        f"{what} would import and run the Python module {module!r}: a config runs no code unless you say so; "
        f"if you trust it, run with `--trust-code {module}` (or set {TRUST_CODE_SETTING}={module}); nothing was imported"
    )
