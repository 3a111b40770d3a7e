r"""What every throughput LP of fabricopt is: a reduction of the fabric's flow problem that
knows how to lift its solution back.

Each model (the source-aggregated LP, the symmetric root LP, the two-phase LP, or a future
one) is built by a function from a fabric, holds one :class:`~fabricopt.flow.lp.LinearProgram`
that any backend solves, and maps the answer back onto the fabric's own arcs:

* :meth:`ThroughputModel.lift` turns a point of the LP into a flow on every arc (its inverse
  map), with the conservation residual measured on the whole graph;
* :meth:`ThroughputModel.arc_lengths` turns the duals of the capacity rows into arc lengths;
* :meth:`ThroughputModel.length_bound` evaluates the distance bound of those lengths (or
  returns None when the model proves only a lower bound, as the two-phase LP does).

:func:`fabricopt.flow.certificate.certify` is the one function that proves a bracket from that,
whatever the model. Every model's LP has the same skeleton, built by :func:`max_theta_lp`:

.. math::

    \max \theta \quad\text{s.t.}\quad A_{flow} f = \theta\, b, \quad
    A_{cap} f \le c, \quad \theta\, d \le c_{\theta}, \quad f \ge 0,

with :math:`\theta` the last column.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import scipy.sparse as sp

from ..graph_arrays import GraphArrays
from .lp import LinearProgram


@dataclass(frozen=True)
class DistanceBound:
    """An upper bound on theta from arc lengths (what a model's ``length_bound`` proves),
    and the pair that proves theta = 0 if any."""

    upper: float
    numerator: float
    denominator: float
    unreachable: tuple[Hashable, Hashable] | None = None
    cut: frozenset[Hashable] | None = None
    #: Non-empty when the bound could not be evaluated soundly (then ``upper`` is inf).
    failure: str = ""


@dataclass(frozen=True)
class LiftedFlow:
    """A solver's point mapped back onto every arc of the fabric.

    ``theta`` is the LP's value at the point (in the model's demand units); ``load`` the Gb/s
    on each arc of the fabric at that theta, as checked against ``capacity``;
    ``residual_l1`` the largest per-commodity L1 norm of flow created or lost at nodes;
    ``flow`` the fabric-level flow a checker re-proves (layout documented by each model).
    """

    theta: float
    load: np.ndarray
    residual_l1: float
    flow: np.ndarray


class ThroughputModel(Protocol):
    """The protocol of every throughput LP (see the module docstring).

    ``constrained`` masks the arcs whose capacity the LP enforces; ``min_demand`` is the
    smallest positive demand of a commodity to a target per unit theta (it converts the
    conservation residual into lost theta).
    """

    lp: LinearProgram
    ga: GraphArrays

    @property
    def constrained(self) -> np.ndarray: ...

    @property
    def min_demand(self) -> float: ...

    def lift(self, x: np.ndarray) -> LiftedFlow: ...

    def arc_lengths(self, dual_ub: np.ndarray) -> np.ndarray: ...

    def length_bound(self, lengths: np.ndarray) -> DistanceBound | None: ...


def max_theta_lp(flow_eq: sp.csr_matrix, supply: np.ndarray | sp.spmatrix,
                 capacity_rows: sp.csr_matrix,
                 capacity: np.ndarray, theta_rows: np.ndarray | None = None,
                 theta_capacity: np.ndarray | None = None) -> LinearProgram:
    """The LP ``max theta`` over flows ``f >= 0`` (see the module docstring).

    ``flow_eq @ f == theta * supply`` (conservation), ``capacity_rows @ f <= capacity`` and,
    optionally, ``theta * theta_rows <= theta_capacity`` (links whose load is fixed by theta,
    such as a collapsed endpoint's NIC link). ``supply`` may be sparse (one entry per
    conservation row).

    >>> import numpy as np, scipy.sparse as sp
    >>> lp = max_theta_lp(sp.csr_matrix([[1.0]]), np.array([2.0]), sp.csr_matrix([[1.0]]),
    ...                   np.array([4.0]))
    >>> lp.n_cols, lp.c.tolist()   # one flow variable, then theta (maximised)
    (2, [0.0, -1.0])
    """
    n_flow = flow_eq.shape[1]
    supply_col = (sp.csr_matrix(supply).reshape((-1, 1)) if sp.issparse(supply)
                  else sp.csr_matrix(np.asarray(supply, dtype=float).reshape(-1, 1)))
    A_eq = sp.hstack([flow_eq, -supply_col], format="csr")
    A_ub = sp.hstack([capacity_rows, sp.csr_matrix((capacity_rows.shape[0], 1))], format="csr")
    b_ub = np.asarray(capacity, dtype=float)
    if theta_rows is not None and len(theta_rows):
        k = len(theta_rows)
        fixed = sp.csr_matrix((np.asarray(theta_rows, float), (np.arange(k), np.full(k, n_flow))),
                              shape=(k, n_flow + 1))
        A_ub = sp.vstack([A_ub, fixed], format="csr")
        b_ub = np.concatenate([b_ub, np.asarray(theta_capacity, dtype=float)])
    c = np.zeros(n_flow + 1)
    c[-1] = -1.0
    return LinearProgram(c, A_ub, b_ub, A_eq, np.zeros(A_eq.shape[0]), np.zeros(n_flow + 1),
                         np.full(n_flow + 1, np.inf))
