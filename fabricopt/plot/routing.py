"""Plot of what hashing leaves of the optimum, trial by trial."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidParameterError
from ..routing.result import RoutedFlowResult
from .diagram import check_axes


def plot_routing_distribution(result: RoutedFlowResult, ax: Any = None) -> Any:
    """Histogram of theta over the hashed trials, marking the median and the optimum.

    Draws theta of every trial (as routing efficiency, theta / optimal theta, when the
    result carries a proven optimum), and vertical lines at the median and, when known, at
    the optimum (efficiency 1).

    Parameters
    ----------
    result : RoutedFlowResult
        Usually from ``routed_flow(..., routing="hash", trials=N)``.
    ax : matplotlib Axes, optional
        Where to draw; a new figure's Axes by default.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2)
    >>> r = fo.routed_flow(fab, fo.permutation(fab, seed=0), routing="hash", trials=20, seed=1)
    >>> ax = fo.plot_routing_distribution(r)
    >>> ax.get_xlabel()
    'theta (largest scale of the traffic carried)'
    """
    if not isinstance(result, RoutedFlowResult):
        raise InvalidParameterError(f"plot_routing_distribution(): result must be a "
                                    f"RoutedFlowResult, got {type(result).__name__}")
    import matplotlib.pyplot as plt


    if check_axes("plot_routing_distribution", ax) is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    values = np.asarray(result.thetas, dtype=float)
    opt = result.optimum.theta if result.optimum is not None else None
    relative = opt is not None and opt > 0
    if relative:
        values = values / opt
        ax.set_xlabel("routing efficiency (theta / optimal theta)")
        ax.axvline(1.0, color="black", linestyle="--", label="optimum")
    else:
        ax.set_xlabel("theta (largest scale of the traffic carried)")
    bins = min(30, max(5, len(np.unique(values))))
    ax.hist(values, bins=bins, color="tab:blue", alpha=0.8, label=f"{len(values)} trials")
    median = float(np.median(values))
    ax.axvline(median, color="tab:red", label=f"median {median:.3g}")
    ax.set_ylabel("trials")
    ax.set_title(f"{result.method}: {result.fabric_name}, {result.traffic_name}")
    ax.legend(loc="best", fontsize="small")
    return ax
