"""The command line's front end: one module per area, each with `add_cli(subparsers)` adding its
commands, each command calling the packages below (helpers.__main__ lists them). Nothing below
this package imports it: the layers point down (tools/import_graph.py, docs/layout.md)."""
