"""Per-hop latency: the alpha (startup) term of the bounds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._checks import check_positive
from ..catalog import Catalog
from ..errors import InvalidParameterError
from ..fabric import Fabric
from ..graph_arrays import GraphArrays
from ..tiers import tier_of
from .problem import Problem

#: Switch traversal when neither the model nor the catalog says (an estimate: public figures
#: for current InfiniBand, Ethernet and NVLink switches range from about 150 to 700 ns).
DEFAULT_SWITCH_NS = 300.0


@dataclass(frozen=True)
class LatencyModel:
    """Per-hop latency that gives bounds their alpha (startup) term.

    Parameters
    ----------
    switch_ns : float, optional
        Traversal of one switch; default: the catalog's ``latency_ns`` for the switch's
        model, else :data:`DEFAULT_SWITCH_NS`.
    endpoint_us : float
        Fixed cost at the GPUs per step (kernel launch, protocol handshake): an estimate.
    ns_per_m : float
        Propagation in fibre or copper, about 5 ns per metre.
    length_m_by_tier : dict, optional
        Link length per tier (e.g. from the cost layout); tiers not named count 0 m.
    catalog : Catalog, optional
        Where ``latency_ns`` is read from (default catalog if None).

    The lower bound adds ``endpoint_us`` plus the latency to the nearest other participant
    (some byte must make that trip after the last is sent). The achievable figure adds, per
    algorithm step, ``endpoint_us`` plus the largest participant-to-participant latency
    (a ring step never crosses more).
    """

    switch_ns: float | None = None
    endpoint_us: float = 2.0
    ns_per_m: float = 5.0
    length_m_by_tier: dict[str, float] | None = None
    catalog: Any = None

    def __post_init__(self) -> None:
        func = "LatencyModel"
        if self.switch_ns is not None:
            check_positive(func, "switch_ns", self.switch_ns, allow_zero=True)
        check_positive(func, "endpoint_us", self.endpoint_us, allow_zero=True)
        check_positive(func, "ns_per_m", self.ns_per_m, allow_zero=True)
        if self.length_m_by_tier is not None:
            if not isinstance(self.length_m_by_tier, dict):
                raise InvalidParameterError(f"{func}(): length_m_by_tier must be None or a dict "
                                            f"of metres by tier, got {self.length_m_by_tier!r}")
            for tier, length in self.length_m_by_tier.items():
                check_positive(func, f"length_m_by_tier[{tier!r}]", length, allow_zero=True)
        if self.catalog is not None and not isinstance(self.catalog, Catalog):
            raise InvalidParameterError(f"{func}(): catalog must be None or a Catalog, got "
                                        f"{self.catalog!r}")

    def arc_latency_s(self, fab: Fabric, ga: GraphArrays) -> np.ndarray:
        """Seconds to cross each arc: its length plus the switch it enters."""
        catalog = self.catalog or Catalog.default()
        node_ns = np.zeros(ga.n_nodes)
        for i, v in enumerate(ga.nodes):
            d = fab.graph.nodes[v]
            if d.get("role") != "switch":
                continue
            ns = self.switch_ns
            if ns is None:
                entry = catalog.switches.get(d.get("model")) if d.get("model") else None
                ns = (entry.get("latency_ns") if entry is not None else None) or \
                    DEFAULT_SWITCH_NS
            node_ns[i] = ns
        lengths = np.zeros(ga.n_arcs)
        if self.length_m_by_tier:
            lengths = np.array([self.length_m_by_tier.get(tier_of(fab.graph[u][v]), 0.0)
                                for u, v in ga.arcs])
        return (node_ns[ga.head] + lengths * self.ns_per_m) * 1e-9

    def alphas(self, fab: Fabric, p: Problem) -> tuple[float, float]:
        """(lower-bound alpha, per-step alpha of the achievable model), in seconds."""
        from scipy.sparse.csgraph import dijkstra

        lat = self.arc_latency_s(fab, p.ga)
        # Tiny positive floor so zero-latency arcs stay arcs for the shortest-path search.
        sources = p.orbit_reps if p.orbit_reps is not None else p.gpus[: min(len(p.gpus), 16)]
        dist = dijkstra(p.ga.matrix(np.maximum(lat, 1e-18)), indices=sources)[:, p.gpus]
        for row, s in zip(dist, sources, strict=True):
            row[p.gpus == s] = np.nan
        nearest = float(np.nanmin(dist))
        farthest = float(np.nanmax(dist))
        base = self.endpoint_us * 1e-6
        return base + nearest, base + farthest
