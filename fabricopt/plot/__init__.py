"""Pictures: layered fabric diagrams (:mod:`~fabricopt.plot.diagram`), charts that compare
designs (:mod:`~fabricopt.plot.charts`), the routing distribution
(:mod:`~fabricopt.plot.routing`) and the HTML report of a comparison
(:mod:`~fabricopt.plot.report`).
"""

from .charts import plot_metric_bars, plot_pareto
from .diagram import draw
from .report import write_report
from .routing import plot_routing_distribution

__all__ = ["draw", "plot_metric_bars", "plot_pareto", "plot_routing_distribution", "write_report"]
