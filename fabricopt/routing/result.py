"""What :func:`fabricopt.routed_flow` returns: theta under a routing, its loads and spread."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..flow.result import FlowResult, TierUtilization, tier_utilization
from ..graph_arrays import GraphArrays

Arc = tuple[Hashable, Hashable]

#: Relative slack within which an arc counts as saturated (binding) at theta.
BINDING_RTOL = 1e-9


@dataclass
class RoutedFlowResult:
    """Throughput of a traffic under a fixed routing, exactly.

    A routing fixes what each arc carries per unit of traffic, :math:`L_a`; the traffic then
    fits scaled by :math:`\\theta = \\min_a c_a / L_a`, no more (the first saturated arc stops
    it) and no less. Field names follow :class:`~fabricopt.FlowResult` where they mean the same.

    Attributes
    ----------
    theta : float
        Largest scale of the traffic the routing carries (for ``routing="hash"``: the median
        trial, the lower of the two middle ones for an even count, so that ``link_load`` is
        that trial's).
    status : str
        ``"exact"``, or ``"disconnected"`` (theta = 0) when some demand has no path at all
        (the package's one status table: :data:`fabricopt.flow.lp.STATUS_MEANINGS`).
    method : str
        The routing policy: ``"ecmp"``, ``"wcmp"``, ``"hash"`` or ``"static"``.
    seconds : float
        Wall time, the optimum's solve included when asked for.
    per_endpoint_gbps : float
        ``theta`` times the mean demand sent per sending endpoint (Gb/s per direction).
    thetas : ndarray
        Theta of every trial (one entry unless hashed over several trials).
    flows_per_pair, trials : int
        Hashed flows per demand pair and trials drawn (1 for the deterministic policies).
    seed : object
        The seed the hashed trials were drawn from.
    optimum : FlowResult or None
        The max-concurrent-flow optimum, when asked for (``optimum=True``): ideal multipath
        routing, what adaptive routing or packet spraying achieve at best.
    pairs_by_network : dict
        Demand pairs routed on the scale-up links, in the scale-out network, and over the
        whole fabric (see :mod:`fabricopt.routing.networks`).
    unreachable : tuple or None
        A pair with no path, when ``status == "disconnected"``.
    """

    theta: float
    status: str
    method: str
    seconds: float
    per_endpoint_gbps: float
    fabric_name: str = ""
    traffic_name: str = ""
    thetas: np.ndarray = field(default_factory=lambda: np.zeros(0))
    flows_per_pair: int = 1
    trials: int = 1
    seed: Any = None
    optimum: FlowResult | None = None
    pairs_by_network: dict[str, int] = field(default_factory=dict)
    unreachable: Arc | None = None
    _ga: GraphArrays | None = field(default=None, repr=False)
    _load: np.ndarray | None = field(default=None, repr=False)
    _tiers: list[str] | None = field(default=None, repr=False)
    #: Port-equivalent loads (:mod:`fabricopt.routing.hashing`): the bundle's links times its
    #: busiest member's load; None when it equals ``_load``.
    _port_load: np.ndarray | None = field(default=None, repr=False)

    @property
    def pairs_by_plane(self) -> dict[str, int]:
        """:attr:`pairs_by_network`, its name of a release ago."""
        return self.pairs_by_network

    @property
    def routing(self) -> str:
        """The routing policy (the same as ``method``)."""
        return self.method

    @property
    def efficiency(self) -> float | None:
        """Routed theta over the optimal theta (None without a proven optimum)."""
        if self.optimum is None or self.optimum.theta is None or self.optimum.theta <= 0:
            return None
        return self.theta / self.optimum.theta

    @property
    def distribution(self) -> dict[str, float]:
        """Theta over the trials: ``min``, ``p5``, ``median``, ``p95``, ``max`` and ``mean``."""
        t = np.asarray(self.thetas, dtype=float)
        if not t.size:
            t = np.array([self.theta])
        p5, median, p95 = np.percentile(t, [5, 50, 95])
        return {"min": float(t.min()), "p5": float(p5), "median": float(median),
                "p95": float(p95), "max": float(t.max()), "mean": float(t.mean())}

    @property
    def link_load(self) -> dict[Arc, float]:
        """Gb/s on each arc at ``theta``."""
        if self._load is None or self._ga is None:
            return {}
        return dict(zip(self._ga.arcs, self._load.tolist(), strict=True))

    @property
    def utilization(self) -> dict[Arc, float]:
        """Load / capacity on each arc at ``theta``."""
        if self._load is None or self._ga is None:
            return {}
        return dict(zip(self._ga.arcs, (self._load / self._ga.capacity).tolist(), strict=True))

    @property
    def port_utilization(self) -> dict[Arc, float]:
        """Per arc, the utilization of its busiest member link at ``theta`` (the same as
        :attr:`utilization` but where hashing or static tables load a bundle's members
        unevenly)."""
        if self._load is None or self._ga is None:
            return {}
        port = self._load if self._port_load is None else self._port_load
        return dict(zip(self._ga.arcs, (port / self._ga.capacity).tolist(), strict=True))

    def _binding_mask(self) -> np.ndarray:
        port = self._load if self._port_load is None else self._port_load
        util = port / self._ga.capacity  # type: ignore[union-attr,operator]
        top = float(util.max(initial=0.0))
        if top <= 0:
            return np.zeros(len(util), dtype=bool)
        return util >= top * (1 - BINDING_RTOL)

    @property
    def bottlenecks(self) -> list[Arc]:
        """The saturated arcs: those whose load reaches their capacity at ``theta``."""
        if self._load is None or self._ga is None:
            return []
        return [self._ga.arcs[a] for a in np.flatnonzero(self._binding_mask())]

    @property
    def tiers(self) -> dict[str, TierUtilization]:
        """Per tier: max and mean utilization at ``theta`` and how many arcs saturate."""
        if self._load is None or self._ga is None or self._tiers is None:
            return {}
        util = self._load / self._ga.capacity
        return tier_utilization(util, np.asarray(self._tiers), self._binding_mask())

    @property
    def binding_tier(self) -> str | None:
        """The tier with the most saturated arcs (ties: the highest utilization)."""
        tiers = self.tiers
        if not tiers:
            return None
        return max(tiers.values(),
                   key=lambda t: (t.binding_arcs > 0, t.binding_arcs, t.max_utilization)).tier

    def __str__(self) -> str:
        lines = [
            f"fabric           {self.fabric_name}",
            f"traffic          {self.traffic_name}",
            f"routing          {self.method} ({self.status}, {self.seconds:.2f} s)",
            f"theta            {self.theta:.6g}",
        ]
        if self.method == "hash":
            d = self.distribution
            lines.append(f"over {self.trials} trials  min {d['min']:.6g}, p5 {d['p5']:.6g}, "
                         f"median {d['median']:.6g}, p95 {d['p95']:.6g}, max {d['max']:.6g} "
                         f"({self.flows_per_pair} flow(s) per pair)")
        lines.append(f"per endpoint     {self.per_endpoint_gbps:.6g} Gb/s "
                     f"({self.per_endpoint_gbps / 8:.6g} GB/s) per direction")
        if self.optimum is not None:
            opt = self.optimum
            if opt.theta is not None:
                lines.append(f"optimum theta    {opt.theta:.6g} (routing efficiency "
                             f"{self.efficiency:.4g})" if self.efficiency is not None else
                             f"optimum theta    {opt.theta:.6g}")
            else:
                lines.append(f"optimum          not proven ({opt.status}): "
                             f"{opt.lower:.6g} <= theta* <= {opt.upper:.6g}")
        if self.binding_tier:
            lines.append(f"binding tier     {self.binding_tier}")
        if self.unreachable:
            lines.append(f"disconnected     {self.unreachable[0]!r} cannot reach "
                         f"{self.unreachable[1]!r}")
        return "\n".join(lines)
