"""The `judges` section of an experiment config: which registered judges score a run, each with its
own options (the judge's `Options` model, helpers.judges), in one form for every judge:

    judges:
      offline: {}                                  # on, with its defaults
      ragas: {llm: local, metrics: [faithfulness], timeout_s: 900}
      trace_llm: {llm: groq}
      correctness: {}
      ragas_evidence: false                        # off

`NAME: {}` (or `true`) turns a judge on with its defaults, `NAME: false` (or `null`) off; a saved
config writes `false`. One exception, kept from configs before issue 47: `ragas_evidence: null`
means "on when an evidence model is trained", as an absent `ragas_evidence` does. A judge
that calls an LLM takes its name as a shorthand: `ragas: local` is `ragas: {llm: local}`. Three
built-in judges are on unless a config turns them off: `offline`, `ragas` (judged by `local`) and
`ragas_evidence` (on when an evidence model is trained, `make evidence-model`).

Configs written before issue 47 set the built-in judges by flat keys (`ragas_metrics`,
`ragas_questions`, `ragas_architectures`, `ragas_timeout_s`, `ragas_evidence_statements`, and
`other` for the rest): they are read into their judge's options, and a run id digests the judges in
that earlier form (`id_form`), so every config keeps the run id it had.
"""

from __future__ import annotations

from typing import Literal

from pydantic import RootModel, model_validator

from helpers.ragas_eval import RAGAS_METRICS

# on unless a config turns them off, with these options
DEFAULT_ON: dict[str, dict] = {"offline": {}, "ragas": {"llm": "local"}, "ragas_evidence": {}}
# the flat keys of configs before issue 47 -> (judge, option)
FLAT_KEYS = {
    "ragas_metrics": ("ragas", "metrics"),
    "ragas_questions": ("ragas", "questions"),
    "ragas_architectures": ("ragas", "architectures"),
    "ragas_timeout_s": ("ragas", "timeout_s"),
    "ragas_evidence_statements": ("ragas_evidence", "statements"),
}
BUILT_IN = ("offline", "trace_llm", "ragas", "ragas_evidence")


def _section(name: str, value, takes_llm: bool = False):
    """One judge's setting as options (a dict) or False (off). `takes_llm`: the judge's `Options` has
    an `llm` field, so a string names its LLM (`ragas: local`): read from the judge, no list to edit."""
    if name == "ragas_evidence" and value is None:  # before issue 47, null meant "on when trained"
        return {}
    if name == "ragas_evidence" and value is True:
        return {"enabled": True}
    if value is True:
        return {}
    if value is None or value is False:
        return False
    if isinstance(value, str) and takes_llm:
        return {"llm": value}
    if not isinstance(value, dict):
        raise ValueError(
            f"judges.{name}: {value!r} is not a setting; give the judge's options as a mapping "
            f"({{}} for its defaults), or null to turn it off"
        )
    return dict(value)


class JudgesConfig(RootModel[dict[str, dict | Literal[False]]]):
    """{judge name: its options, or False when off} (see the module's docstring)."""

    root: dict[str, dict | Literal[False]]

    @model_validator(mode="before")
    @classmethod
    def _one_form(cls, data):
        from helpers.judges import JUDGES  # the judges load pandas, scipy: config stays light

        if isinstance(data, JudgesConfig):
            return data.root
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ValueError(f"judges: a mapping of judge names to their options, not {type(data).__name__}")
        data = {**(data.get("other") or {}), **{k: v for k, v in data.items() if k != "other"}}
        flat = {key: data.pop(key) for key in list(data) if key in FLAT_KEYS}
        unknown = sorted(k for k in data if k not in JUDGES)
        if unknown:
            raise ValueError(
                f"unknown key 'judges.{unknown[0]}' (check its spelling): not a registered judge "
                f"(valid names: {sorted(JUDGES)})"
            )
        sections = {
            name: _section(name, value, "llm" in JUDGES[name].Options.model_fields) for name, value in data.items()
        }
        for name, options in DEFAULT_ON.items():
            sections.setdefault(name, dict(options))
        for key, value in flat.items():
            judge, option = FLAT_KEYS[key]
            if sections.get(judge):
                sections[judge].setdefault(option, value)  # the judge's own section wins
        return {
            name: False if options is False else JUDGES[name].Options(**options).model_dump(mode="json")
            for name, options in sections.items()
        }

    def on(self, name: str) -> bool:
        """Whether the config turns judge `name` on (ragas_evidence may still wait for its model)."""
        return self.root.get(name, False) is not False

    def options(self, name: str) -> dict:
        """Judge `name`'s options ({} when off or not named): what its `Options` model takes."""
        return dict(self.root.get(name) or {})

    def id_form(self) -> dict:
        """The judges as a run id digests them: the flat form of configs before issue 47 (built-in
        judges by flat keys, the others under `other`, left out when empty), so ids stay the same."""
        ragas, trace, evidence = (self.root.get(name) or None for name in ("ragas", "trace_llm", "ragas_evidence"))
        form = {
            "offline": self.on("offline"),
            "trace_llm": trace["llm"] if trace else None,
            "ragas": ragas["llm"] if ragas else None,
            "ragas_metrics": (ragas or {}).get("metrics", list(RAGAS_METRICS)),
            "ragas_questions": (ragas or {}).get("questions"),
            "ragas_architectures": (ragas or {}).get("architectures"),
            "ragas_timeout_s": (ragas or {}).get("timeout_s", 180.0),
            "ragas_evidence": False if evidence is None else evidence.get("enabled"),
            "ragas_evidence_statements": (evidence or {}).get("statements", "llm"),
        }
        other = {name: options for name, options in self.root.items() if name not in BUILT_IN and options is not False}
        return {**form, "other": other} if other else form
