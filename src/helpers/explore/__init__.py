"""Interactive exploration in JupyterLab (notebooks/08-explore.ipynb, `make app` for Voila):
query, answer and judge, chat, run, results, trends. The logic lives in search/answer/chat/runs (no
widgets, unit tested); panels.py and run_panels.py wrap it in ipywidgets.

    from helpers.explore import Workbench, QueryPanel
    bench = Workbench("obstetrics")
    QueryPanel(bench)           # a cell's last line displays the panel
"""

from helpers.explore.workbench import ARCHITECTURES, ExploreError, Workbench

PANELS = {
    "QueryPanel": "panels",
    "AnswerPanel": "panels",
    "ChatPanel": "panels",
    "RunPanel": "run_panels",
    "ResultsPanel": "run_panels",
    "TrendsPanel": "run_panels",
}
__all__ = ["ARCHITECTURES", "ExploreError", "Workbench", *PANELS]


def __getattr__(name):  # the panels import ipywidgets: only when asked for
    if name in PANELS:
        import importlib

        return getattr(importlib.import_module(f"helpers.explore.{PANELS[name]}"), name)
    raise AttributeError(name)
