"""Charts of failure analyses: the distribution of Gb/s per GPU under a failure model, and
the criticality ranking of single failures.

Both take ``ax=`` and return the Axes; without ``ax`` they make a new
:class:`matplotlib.figure.Figure` outside pyplot. Save with ``ax.figure.savefig("fig.png")``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._checks import fail
from ..failures.distribution import FailureDistribution
from ..failures.single import FailureTable
from ..workload.job_failures import ACTIONS, UNIT_NAMES, JobFailureTable
from .diagram import check_axes, new_axes

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["plot_criticality", "plot_failure_distribution", "plot_job_failures"]

#: Rows of a criticality ranking drawn at most (the rest are summarised in the title).
MAX_BARS = 30


def plot_failure_distribution(dist: FailureDistribution, *, ax: Axes | None = None) -> Axes:
    """The share of failure patterns (by probability) that leave at most x Gb/s per GPU.

    The certified lower bounds draw one step curve and the upper bounds another; the true
    distribution lies between them. The intact fabric's Gb/s per GPU is a dashed line and
    the 5th percentile is marked.

    Examples
    --------
    >>> import fabricopt as fo
    >>> d = fo.failure_distribution(fo.ring(6), fo.EverySingle("links"), trials=None)
    >>> ax = plot_failure_distribution(d)
    >>> ax.get_xlabel()
    'Gb/s per GPU'
    """
    if not isinstance(dist, FailureDistribution):
        raise fail("plot_failure_distribution", "dist", "a FailureDistribution (from "
                   "failure_distribution)", type(dist).__name__)
    ax = check_axes("plot_failure_distribution", ax) or new_axes(6.4, 4.0)
    w = np.array([o.weight for o in dist.outcomes], dtype=float)
    for values, label, style in (([o.gbps_lower for o in dist.outcomes], "certified lower",
                                  "-"),
                                 ([o.gbps_upper for o in dist.outcomes], "certified upper",
                                  ":")):
        order = np.argsort(values, kind="stable")
        x = np.asarray(values, dtype=float)[order]
        y = np.cumsum(w[order]) / w.sum()
        ax.step(np.r_[x[0], x], np.r_[0.0, y], where="post", linestyle=style, label=label)
    ax.axvline(dist.intact_gbps, color="grey", linestyle="--", label="intact")
    p5 = dist.percentile(5)[0]
    ax.axhline(0.05, color="lightgrey", linewidth=0.8)
    ax.plot([p5], [0.05], "o", color="black", label=f"p5 >= {p5:.4g}")
    ax.set_xlabel("Gb/s per GPU")
    ax.set_ylabel("share of failure patterns")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"{dist.fabric_name}: {dist.model}", fontsize=9)
    ax.legend(fontsize=8, loc="upper left")
    return ax


def plot_criticality(table: FailureTable, *, ax: Axes | None = None) -> Axes:
    """Horizontal bars of the share of throughput each orbit of single failures costs, most
    critical on top, labelled with the orbit's representative and multiplicity; an open
    bracket shows as a thin bar to its upper end.

    Examples
    --------
    >>> import fabricopt as fo
    >>> ax = plot_criticality(fo.criticality(fo.fat_tree(4)))
    >>> len(ax.get_yticklabels())
    3
    """
    if not isinstance(table, FailureTable):
        raise fail("plot_criticality", "table", "a FailureTable (from criticality or "
                   "single_failures)", type(table).__name__)
    rows = sorted(table.rows, key=lambda r: -r.lost)[:MAX_BARS]
    ax = check_axes("plot_criticality", ax) or new_axes(6.4, 1.0 + 0.3 * max(len(rows), 1))
    y = np.arange(len(rows))[::-1]
    ax.barh(y, [100 * r.lost_lower for r in rows], color="tab:red")
    ax.barh(y, [100 * (r.lost_upper - r.lost_lower) for r in rows],
            left=[100 * r.lost_lower for r in rows], color="tab:red", alpha=0.3, height=0.3)
    ax.set_yticks(y, [f"{r.representative} (x{r.multiplicity})" for r in rows], fontsize=8)
    ax.set_xlabel("throughput lost (%)")
    ax.set_xlim(0, 100)
    more = len(table.rows) - len(rows)
    ax.set_title(f"{table.fabric_name}: single {table.kind}"
                 + (f" ({more} more orbits not shown)" if more > 0 else ""), fontsize=9)
    return ax


#: One colour per job action, mildest to worst.
ACTION_COLORS = {"unaffected": "tab:gray", "run degraded": "tab:olive",
                 "swap in a spare": "tab:blue", "drop replica": "tab:orange", "stop": "tab:red"}


def plot_job_failures(table: JobFailureTable, *, ax: Axes | None = None) -> Axes:
    """Job impact by failure kind: for each kind, the share of its single failures that leave
    the job unaffected, running degraded, restarting on a spare, restarting without a
    replica, or stopped (stacked bars), and the mean share of throughput kept with the
    failure in place (in the label).

    Examples
    --------
    >>> import fabricopt as fo
    >>> job = fo.TrainingJob("llama3-8b", tp=8, global_batch=8, seq_len=8192)
    >>> t = fo.single_failures(fo.dgx_h100(), kind=["nvswitches", "gpus"], job=job)
    >>> ax = plot_job_failures(t)
    >>> [label.get_text() for label in ax.get_yticklabels()]
    ['NVSwitch chip (4 units, 92% kept)', 'GPU (8 units, 0% kept)']
    """
    if not isinstance(table, JobFailureTable):
        raise fail("plot_job_failures", "table", "a JobFailureTable (from single_failures or "
                   "criticality with job=...)", type(table).__name__)
    summary = table.by_kind()
    kinds = [k for k in table.kinds if summary[k]["units"]]
    ax = check_axes("plot_job_failures", ax) or new_axes(6.4, 1.2 + 0.4 * max(len(kinds), 1))
    y = np.arange(len(kinds))[::-1]
    left = np.zeros(len(kinds))
    for action in ACTIONS:
        share = np.array([sum(r.multiplicity for r in table.rows
                              if r.kind == k and r.action == action) / summary[k]["units"]
                          for k in kinds])
        if share.any():
            ax.barh(y, 100 * share, left=100 * left, color=ACTION_COLORS[action], label=action)
        left += share
    ax.set_yticks(y, [f"{UNIT_NAMES[k]} ({int(summary[k]['units']):,} units, "
                      f"{100 * summary[k]['kept']:.0f}% kept)" for k in kinds], fontsize=8)
    ax.set_xlabel("single failures of the kind (%)")
    ax.set_xlim(0, 100)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3)
    ax.set_title(f"{table.job.model.name} on {table.fabric_name}\nwhat each single failure "
                 "does to the job", fontsize=8)
    return ax
