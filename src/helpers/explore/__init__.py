"""Interactive exploration in JupyterLab (notebooks/08-explore.ipynb, `make app` for Voila):
query, answer and judge, run, results. The logic lives in search/answer/runs (no widgets, unit
tested); panels.py wraps it in ipywidgets.

    from helpers.explore import Workbench, QueryPanel
    bench = Workbench("obstetrics")
    QueryPanel(bench)           # a cell's last line displays the panel
"""

from helpers.explore.search import ARCHITECTURES, ExploreError, Workbench

__all__ = ["ARCHITECTURES", "ExploreError", "Workbench", "QueryPanel", "AnswerPanel", "RunPanel", "ResultsPanel"]


def __getattr__(name):  # the panels import ipywidgets: only when asked for
    if name in ("QueryPanel", "AnswerPanel", "RunPanel", "ResultsPanel"):
        from helpers.explore import panels  # ipywidgets, pandas, scipy: loaded only when this runs

        return getattr(panels, name)
    raise AttributeError(name)
