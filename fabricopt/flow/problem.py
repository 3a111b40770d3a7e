"""One record per engine call: what is asked, the fabric's arrays in the units a solve uses,
the sizes that decide the plan (counted once), the fabric's claim and provenance, and the
budget.

Every stage of :mod:`fabricopt.flow.plan` reads this record and nothing else, so a size,
a claim or a time left is computed in one place and read the same way by the plan that
prints it and the run that follows it.

>>> import fabricopt as fo
>>> p = FlowProblem.of(fo.ring(8))   # 8 sources x 16 arcs (8 links, both ways)
>>> p.method, p.entries, p.nonzeros, p.claim
('auto', 128, 384, (True, ''))
>>> p.budget.left() is None
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from .._checks import check_choice
from .._stages import SILENT
from ..fabric import Fabric, check_fabric
from ..graph_arrays import FabricShape, GraphArrays
from ..traffic import Traffic, checked_traffic
from .arguments import METHODS
from .bounds import ECMP_MAX_ENTRIES
from .budget import clock, search_budget, seconds_left
from .formulation import Collapse
from .units import solve_units

__all__ = ["Budget", "FlowProblem", "full_lp_entries", "symmetric_applicable",
           "traffic_invariant"]


@dataclass
class Budget:
    """What a call may spend: seconds counted from ``start`` (``time_limit``, None without
    one) and the solver's work (``work_limit``: iterations, or approximate rounds).

    >>> b = Budget(None)
    >>> b.left(), b.spent(), b.search()
    (None, False, None)
    """

    time_limit: float | None
    start: float = field(default_factory=clock)
    work_limit: int | None = None

    def left(self) -> float | None:
        """Seconds left (never below 0); None without a limit."""
        return seconds_left(self.time_limit, self.start)

    def spent(self) -> bool:
        """True when a time limit was given and nothing of it is left."""
        return self.left() == 0

    def search(self) -> float | None:
        """Seconds a symmetry search may take (at least a millisecond); None without a
        limit (:func:`~fabricopt.flow.budget.search_budget`)."""
        return search_budget(self.time_limit, self.start)


def traffic_invariant(fab: Fabric, traffic: Traffic) -> tuple[bool, str]:
    """Whether ``traffic`` is invariant under every permutation of the endpoints (uniform
    all-to-all over all of them), and why not."""
    if set(traffic.endpoints) != set(fab.endpoints):
        return False, "the traffic does not involve every endpoint, so it is not invariant"
    if traffic.is_uniform:
        return True, ""
    n = len(fab.endpoints)
    values = set(traffic.pairs.values())
    if len(traffic) == n * (n - 1) and len(values) == 1:
        return True, ""
    return False, "the traffic is not uniform all-to-all, so it is not invariant"


def symmetric_applicable(fab: Fabric, traffic: Traffic) -> tuple[bool, str]:
    """Whether the symmetric method is exact for this fabric and traffic, and why not."""
    if fab.symmetry is None:
        why = ("the fabric carries no symmetry claim" if fab._symmetry is None and
               not fab.origin.edited else
               "the fabric was changed after it was generated (or has no symmetry claim)")
        return False, why
    return traffic_invariant(fab, traffic)


def full_lp_entries(fab: Fabric, traffic: Traffic, ga: GraphArrays | None = None) -> int:
    """Flow variables (commodities x core arcs) of the full LP, counted without building
    it; its nonzeros are three times this. ``ga``, the fabric's arrays, spares reading them
    again (5 s on 128,000 GPUs)."""
    ga = ga or GraphArrays.from_fabric(fab)
    collapse = Collapse.of(ga, fab, traffic.endpoints)
    if traffic.is_uniform:
        k = len(np.unique(collapse.attach))
    else:
        # Read only here: on fat_tree(128)'s uniform all-to-all this map of its 524,288
        # endpoints was a quarter of a second of nothing.
        position = {e: i for i, e in enumerate(traffic.endpoints)}
        src = np.array([position[s] for s, _ in traffic.pairs], dtype=np.int64)
        k = len(np.unique(collapse.attach[src]))
    return int(k * collapse.core_arc.sum())


@dataclass
class FlowProblem:
    """A max-concurrent-flow call, read once (see the module notes).

    ``fab`` may gain a symmetry the search proves (the same graph, with a claim); the
    sizes, arrays and units stay those of the graph. ``traffic`` and ``ga`` are in the
    caller's units; ``scaled`` and ``ga_solve`` in the solve's (theta near 1, capacities
    near 1: :func:`~fabricopt.flow.units.solve_units`).
    """

    fab: Fabric
    traffic: Traffic
    method: str = "auto"
    backend: str = "highs"
    gap: float = 0.01
    include_endpoint_links: bool = True
    progress: bool | None = None
    bounds_first: bool | None = None
    budget: Budget = field(default_factory=lambda: Budget(None))
    warm: np.ndarray | None = None
    backend_options: dict[str, Any] = field(default_factory=dict)
    report: Any = SILENT
    ga: GraphArrays = field(default=None)  # type: ignore[assignment]
    #: What a handed stage notes for those after it in the same call (the failure floor's
    #: detours note that they skipped their search for the planes that follow).
    notes: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.ga is None:
            self.ga = GraphArrays.from_fabric(self.fab)
        self.traffic_scale, self.capacity_unit, self.scaled, self.ga_solve = solve_units(
            self.fab, self.traffic, self.ga)
        self.claim = symmetric_applicable(self.fab, self.traffic)
        #: Exact and fast by the generator's own claim: ``auto`` then skips the bounds.
        self.own_claim = self.claim[0]

    @classmethod
    def of(cls, fab: Fabric, traffic: Traffic | str | None = None, **asked: Any
           ) -> FlowProblem:
        """The record of ``fab`` and ``traffic`` (None: all-to-all at 1 Gb/s; a name such as
        ``"permutation:1"`` stands for its pattern), the other arguments as
        :func:`~fabricopt.max_concurrent_flow` takes them (``time_limit`` and ``work_limit``
        make the ``budget``, counted from now); the fabric, traffic and method are checked,
        the rest is not (``max_concurrent_flow`` checks them all).

        >>> import fabricopt as fo
        >>> FlowProblem.of(fo.ring(4), "permutation:1").traffic.name
        'permutation'
        >>> FlowProblem.of(fo.ring(4), time_limit=5).budget.time_limit
        5
        >>> FlowProblem.of(fo.ring(4), method="exact")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        fabricopt.errors.InvalidParameterError: FlowProblem.of(): method must be one of ...
        """
        check_fabric("FlowProblem.of", fab)
        check_choice("FlowProblem.of", "method", asked.get("method", "auto"), METHODS)
        if "time_limit" in asked or "work_limit" in asked:
            asked["budget"] = Budget(asked.pop("time_limit", None),
                                     work_limit=asked.pop("work_limit", None))
        return cls(fab, checked_traffic("FlowProblem.of", fab, traffic), **asked)

    @cached_property
    def entries(self) -> int:
        """Flow variables of the full LP (:func:`full_lp_entries`)."""
        return full_lp_entries(self.fab, self.traffic, self.ga)

    @property
    def nonzeros(self) -> int:
        """Nonzeros of the full LP (three per flow variable)."""
        return 3 * self.entries

    @property
    def stage_on(self) -> bool:
        """Whether the bounds stage runs: asked, or by default with ``method="auto"`` on a
        fabric whose own claim does not already make it exact and fast."""
        if self.bounds_first is not None:
            return self.bounds_first
        return self.method == "auto" and not self.own_claim

    @property
    def bounds_before_search(self) -> bool:
        """Whether ``auto`` proves its bounds (and asks a failed fabric's intact one)
        before any symmetry search: the bounds stage on, and no warm start standing in for
        the routing (:attr:`warm_skips_routing`)."""
        return self.stage_on and self.method == "auto" and not self.warm_skips_routing

    @cached_property
    def warm_skips_routing(self) -> bool:
        """Whether a warm start stands in for the routed bounds: where the fabric has
        scale-up links a failure trial's exact solve is faster than the routing (1.3 s
        against 7 s on a failed 16-SU SuperPOD); without them the routing is WCMP
        rebalanced, hundredths of a second (a failed fat_tree(8): 0.03 s, where its full LP
        took 1.4-4.3 s)."""
        return self.warm is not None and bool(FabricShape.of(self.fab, self.ga).scale_up.any())

    @property
    def routable(self) -> bool:
        """Whether the routed bounds take the full model: at most
        :data:`~fabricopt.flow.bounds.ECMP_MAX_ENTRIES` flow variables."""
        return self.entries <= ECMP_MAX_ENTRIES

    @property
    def too_large(self) -> bool:
        """Too large for the routed bounds, where ``auto`` proves them."""
        return self.bounds_before_search and not self.routable

    @property
    def edited(self) -> bool:
        """Made by ``without`` or ``fail_random`` (a failed fabric)."""
        return self.fab.origin.edited

    @cached_property
    def invariant(self) -> bool:
        """Whether the traffic is uniform all-to-all over every endpoint."""
        return traffic_invariant(self.fab, self.traffic)[0]

    def units(self) -> dict[str, float]:
        """``traffic_scale`` and ``capacity_unit``, as the bracket makers take them."""
        return {"traffic_scale": self.traffic_scale, "capacity_unit": self.capacity_unit}
