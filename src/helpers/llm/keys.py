"""API keys: which variables may hold one, and which hosts may receive it (SECURITY.md); each
value read is handed to helpers.redaction, which keeps it out of anything logged or recorded.

A config is shared data: it may name the variable a key comes from (`api_key_env`) and the
server it goes to (`base_url`). Both are checked here, against the user's own settings (the
environment or the project's gitignored .env), never against the config:
- a key variable is `*_API_KEY`, or one listed in HELPERS_KEY_VARIABLES (comma-separated);
- a provider's key (GROQ_API_KEY, OPENAI_API_KEY, ...) goes only to that provider's hosts or to
  this machine (loopback); any other key, or any other host, needs the host listed in
  HELPERS_KEY_HOSTS (the `--allow-key-host HOST` flag of `python -m helpers run` sets it).
"""

from __future__ import annotations

import ipaddress
import os
import re
from urllib.parse import urlparse

from helpers import paths
from helpers.llm.llm_errors import KeyPolicyError
from helpers.redaction import remember_secret

KEY_VARIABLE = re.compile(r"[A-Z][A-Z0-9_]*_API_KEY")
VARIABLES_SETTING = "HELPERS_KEY_VARIABLES"
HOSTS_SETTING = "HELPERS_KEY_HOSTS"
# Hosts of the providers whose key variables are well known (from each provider's API docs);
# a key of one of these variables is never sent anywhere else without the user's say-so. A
# registered provider adds its key's hosts here (helpers.llm.providers.register_provider).
PROVIDER_HOSTS: dict[str, tuple[str, ...]] = {
    "GROQ_API_KEY": ("api.groq.com",),
    "OPENAI_API_KEY": ("api.openai.com",),
    "ANTHROPIC_API_KEY": ("api.anthropic.com",),
    "MISTRAL_API_KEY": ("api.mistral.ai",),
    "TOGETHER_API_KEY": ("api.together.xyz", "api.together.ai"),
    "OPENROUTER_API_KEY": ("openrouter.ai",),
    "DEEPSEEK_API_KEY": ("api.deepseek.com",),
    "FIREWORKS_API_KEY": ("api.fireworks.ai",),
    "GEMINI_API_KEY": ("generativelanguage.googleapis.com",),
}


def user_setting(name: str) -> list[str]:
    """A comma-separated setting of the user's own: the environment, else the project's .env."""
    value = os.environ.get(name)
    if value is None and paths.ENV_FILE.exists():
        from dotenv import dotenv_values

        value = dotenv_values(paths.ENV_FILE).get(name)
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def add_key_host_option(parser, *, default) -> None:
    """`--allow-key-host HOST` on a command line (repeatable): the same as listing HOST in
    HELPERS_KEY_HOSTS. `allow_extra_key_hosts` applies it before the command runs."""
    parser.add_argument(
        "--allow-key-host",
        action="append",
        metavar="HOST",
        default=default,
        help=(
            "send API keys to HOST too (a server that is neither the key's provider nor this machine); "
            f"repeatable; the same as listing it in {HOSTS_SETTING} (SECURITY.md)"
        ),
    )


def allow_extra_key_hosts(hosts: list[str]) -> None:
    """Add `--allow-key-host` hosts to HELPERS_KEY_HOSTS in the environment, where this process and
    its Ray workers (HELPERS_* variables travel) read it."""
    if hosts:
        merged = [*user_setting(HOSTS_SETTING), *hosts]
        os.environ[HOSTS_SETTING] = ",".join(dict.fromkeys(merged))


def check_key_variable(variable: str, where: str = "llm.api_key_env") -> str:
    """`variable` if it may hold a key: `*_API_KEY` or listed in HELPERS_KEY_VARIABLES."""
    if KEY_VARIABLE.fullmatch(variable or "") or variable in user_setting(VARIABLES_SETTING):
        return variable
    raise KeyPolicyError(
        f"{where} {variable!r} is not an API-key variable: name one ending in _API_KEY, or "
        f"list it in {VARIABLES_SETTING} in your environment or .env (a config cannot "
        "send other variables, e.g. cloud credentials, to a server)"
    )


def is_loopback(host: str | None) -> bool:
    """localhost, 127.0.0.0/8 or ::1 (brackets allowed): this machine, whatever DNS says."""
    host = (host or "").strip("[]").lower()
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _matches(host: str, allowed: str) -> bool:
    allowed = allowed.lower().strip()
    return host == allowed or host.endswith("." + allowed)


def check_destination(variable: str, url: str | None, where: str = "llm.base_url") -> None:
    """Refuse to send the key in `variable` to `url`'s host unless it is loopback, one of the
    variable's provider hosts, or listed by the user in HELPERS_KEY_HOSTS."""
    host = (urlparse(url or "").hostname or "").lower()
    if not host:
        raise KeyPolicyError(
            f"{where} {url!r} has no host; give a URL such as https://api.groq.com or http://127.0.0.1:11434/v1"
        )
    if is_loopback(host) or any(_matches(host, h) for h in PROVIDER_HOSTS.get(variable, ())):
        return
    if any(_matches(host, h) for h in user_setting(HOSTS_SETTING)):
        return
    owner = (
        f"{variable} is a key for {', '.join(PROVIDER_HOSTS[variable])}"
        if variable in PROVIDER_HOSTS
        else f"{variable} has no known provider"
    )
    raise KeyPolicyError(
        f"{where}: refusing to send {variable} to {host} ({owner}). If you trust {host} "
        f"with it, run with `--allow-key-host {host}` or set {HOSTS_SETTING}={host} "
        "in your environment or .env"
    )


# keys typed into a panel's key field: this process's memory only, never the environment (which
# child processes inherit) nor a file
_SESSION_KEYS: dict[str, str] = {}


def set_session_key(variable: str, value: str) -> None:
    """Use `value` as `variable` (e.g. GROQ_API_KEY) in this process only, before the environment
    and .env: the run panel's key field. An empty value forgets it. Redacted from every text."""
    check_key_variable(variable, where="key field")
    value = (value or "").strip()
    if not value:
        _SESSION_KEYS.pop(variable, None)
        return
    remember_secret(value)
    _SESSION_KEYS[variable] = value


def session_key_variables() -> list[str]:
    """The variables a key was typed for in this process (their names only)."""
    return sorted(_SESSION_KEYS)


def read_api_key(variable: str) -> str | None:
    """The key typed into a panel in this process, else the environment's, else the project's
    gitignored .env file's; remembered so that `redact` removes it from any text."""
    value = _SESSION_KEYS.get(variable) or os.environ.get(variable)
    if not value and paths.ENV_FILE.exists():
        from dotenv import dotenv_values

        value = dotenv_values(paths.ENV_FILE).get(variable)
    if value:
        remember_secret(value)
    return value or None
