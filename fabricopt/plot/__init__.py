"""Pictures: layered fabric diagrams (:mod:`~fabricopt.plot.diagram`), charts that compare
designs (:mod:`~fabricopt.plot.charts`), the routing distribution
(:mod:`~fabricopt.plot.routing`), failure distributions and criticality
(:mod:`~fabricopt.plot.failures`) and the HTML report of a comparison
(:mod:`~fabricopt.plot.report`).
"""

from .charts import plot_metric_bars, plot_pareto
from .diagram import draw
from .failures import plot_criticality, plot_failure_distribution
from .report import write_report
from .routing import plot_routing_distribution

__all__ = ["draw", "plot_criticality", "plot_failure_distribution", "plot_metric_bars",
           "plot_pareto", "plot_routing_distribution", "write_report"]
