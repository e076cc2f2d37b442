"""Experiments: typed configs, the resumable runner and `run --until-decided`, sweeps, analysis and
reports, a run's figures, a person's labels and the estimates and diagnoses built on them
(docs/layout.md, layer 4). A regular package: without this file setuptools' find_packages left it
out of a built wheel, and grimp (import-linter) skipped it (docs/measurements/import-linter.md)."""
