"""One registry maps `provider` names in configs to what the LLM layer needs of each provider, as
helpers.retrieval.registry does for architectures and helpers.judges for judges:

    register_provider(ProviderEntry(
        "mycloud",
        build=OpenAICompatibleBackend,             # config -> a backend with `chat` (helpers.llm.backends)
        key_variable="MYCLOUD_API_KEY",            # where its key is read when the config names none
        default_url="https://api.mycloud.example/v1",
        workers=lambda config: config.concurrency, # optional: how many calls run at once
        key_fields=None,                           # optional: what else enters the cache key
    ))
    # config: llms: [{name: m, provider: mycloud, model: ...}]

The config's validation (helpers.llm.llm_settings), its default key variable, the hosts that key may go
to (helpers.llm.keys.check_destination), the default server, the JSON mode a schema call gets and
`build_backend` all read the entry, and so does the client (helpers.llm.client: calls at once,
the response cache's key), which names no provider. The built-in providers (local, groq,
openai-compatible) are registered in helpers.llm.backends, next to their backend classes:
importing helpers.llm (which every config import does first) registers them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal
from urllib.parse import urlparse

from helpers.llm.keys import PROVIDER_HOSTS
from helpers.llm.llm_errors import LLMError


@dataclass(frozen=True)
class ProviderEntry:
    """A registry entry.

    build: LLMConfig -> a backend (an object with `chat(messages, ...) -> Completion`);
    key_variable: the API key's variable when the config names none (None: no key, e.g. local);
    default_url: the server when the config gives no base_url (None: the config must give one);
    url_variable: an environment variable read for the server before default_url;
    key_hosts: where its key may be sent (helpers.llm.keys; default: default_url's host);
    keyless_on_loopback: a server on this machine gets no key unless the config names its variable;
    json_mode: what `structured_output: auto` sends for a schema call (json_object: JSON mode only,
    for APIs that reject a schema); single_choice: why n_per_request must be 1 (None: any n);
    local: the model runs in this process (no price, no rate limit of a provider);
    workers: config -> how many calls the client runs at once (None: the config's `concurrency`);
    key_fields: config -> what else, beyond the model and the request, determines a reply: entered
    in the response cache's key (None: nothing else; an entry's fields must stay the same once
    replies are cached under them, or every cached reply of that provider is lost)."""

    name: str
    build: Callable[[Any], Any]
    key_variable: str | None = None
    default_url: str | None = None
    url_variable: str | None = None
    key_hosts: tuple[str, ...] = ()
    keyless_on_loopback: bool = False
    json_mode: Literal["json_schema", "json_object"] = "json_schema"
    single_choice: str | None = None
    local: bool = False
    workers: Callable[[Any], int] | None = None
    key_fields: Callable[[Any], dict] | None = None
    description: str = ""

    @property
    def hosts(self) -> tuple[str, ...]:
        if self.key_hosts:
            return self.key_hosts
        host = urlparse(self.default_url or "").hostname
        return (host,) if host else ()


PROVIDERS: dict[str, ProviderEntry] = {}


def register_provider(entry: ProviderEntry) -> ProviderEntry:
    """Add `entry` under its name; its key may then go to its hosts (helpers.llm.keys)."""
    PROVIDERS[entry.name] = entry
    if entry.key_variable and entry.hosts:
        known = PROVIDER_HOSTS.get(entry.key_variable, ())
        PROVIDER_HOSTS[entry.key_variable] = known + tuple(h for h in entry.hosts if h not in known)
    return entry


def provider(name: str) -> ProviderEntry:
    """The entry of `name`; an unknown name is an error listing the valid ones."""
    if name not in PROVIDERS:
        raise LLMError(f"unknown provider {name!r}; valid: {', '.join(PROVIDERS)}")
    return PROVIDERS[name]
