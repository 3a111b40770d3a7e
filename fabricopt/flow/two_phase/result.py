"""What :func:`~fabricopt.flow.two_phase.rate.valiant_rate` returns: :class:`ValiantBound`,
a certified two-phase rate with its load per arc, the bound above it and the stage that
proved each end.

>>> import fabricopt as fo
>>> b = fo.valiant_rate(fo.fat_tree(4))
>>> b.rate_gbps, b.method, b.stages
(400.0, 'bounds', {'lower': 'WCMP phase-1 flows', 'upper': 'hierarchy cut'})
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...graph_arrays import GraphArrays
from .bounds import HoseProof

__all__ = ["ValiantBound"]


@dataclass
class ValiantBound:
    """What :func:`valiant_rate` returns.

    ``rate_gbps`` is certified: every traffic in which no endpoint sends or receives more
    than it is routable at once. ``load_gbps`` is the two-phase load per arc at that rate
    (phase 1 plus phase 2), never above the arc's capacity. ``level`` is the hub level (hops
    from the endpoints) when the hubs were chosen by level.
    """

    rate_gbps: float
    status: str
    method: str
    hubs: tuple[Hashable, ...]
    n_endpoints: int
    max_overload: float = 0.0
    max_residual: float = 0.0
    seconds: float = 0.0
    message: str = ""
    load_gbps: dict[tuple[Hashable, Hashable], float] = field(default_factory=dict, repr=False)
    level: int | None = None
    #: The least bound of the cuts tried by the bounds stage (inf when it did not run): the
    #: best two-phase rate with these hubs is at most this.
    upper_gbps: float = np.inf
    #: The nodes on one side of that cut, when a cut gives it; else the arc lengths whose
    #: two-phase distance bound does (``lengths``).
    cut: frozenset[Hashable] | None = field(default=None, repr=False)
    lengths: dict[tuple[Hashable, Hashable], float] | None = field(default=None, repr=False)
    #: The flows behind ``rate_gbps``, re-proven by :func:`~fabricopt.check_certificate`.
    proof: HoseProof | None = field(default=None, repr=False)
    #: The stage that proved each end (``{"lower": ..., "upper": ...}``, ``"none"`` for an
    #: end nothing proved): the plan's names (:func:`~fabricopt.flow.two_phase.plan.plan`).
    stages: dict[str, str] = field(default_factory=lambda: {"lower": "none", "upper": "none"})

    def recheck(self, fab: Any) -> Any:
        """This rate re-proven from ``fab``
        (:func:`~fabricopt.flow.two_phase.check.check_hose_certificate`)."""
        # Lazy: the check imports this module (an import cycle otherwise).
        from .check import check_hose_certificate

        return check_hose_certificate(fab, self)

    def __str__(self) -> str:
        return (f"two-phase rate   {self.rate_gbps:.6g} Gb/s per endpoint, any traffic "
                f"of its hose (via {len(self.hubs)} hubs; {self.method}, {self.status})")


def per_arc(ga: GraphArrays, values: Any) -> dict[tuple[Hashable, Hashable], float]:
    """``values`` (one per arc) keyed by arc, as Python floats (``tolist`` converts them in
    C; a ``float`` call per arc was a tenth of the two-phase rate on a 24,576-GPU cluster)."""
    return dict(zip(ga.arcs, np.asarray(values, dtype=float).tolist(), strict=True))
