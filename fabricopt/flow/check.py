"""Re-check a throughput result against the fabric, independently of how it was solved.

The lower bound is re-proven from the stored flow (conservation and capacities recomputed
from the fabric's own arcs); the upper bound is recomputed from the stored arc lengths with
one shortest-path search per *endpoint* over the whole graph — no endpoint collapse, no
aggregation, no symmetry — so the distance bound is evaluated exactly as stated in
``reference/bounds.md``.

For results of the symmetric method the lower bound is re-proven for the root's flow and
spread over the arc orbits, which relies on the generator's symmetry claim (the upper bound
does not): prove a claim on a small instance with :func:`fabricopt.verify_symmetry`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse.csgraph import dijkstra

from ..errors import InvalidParameterError
from ..fabric import Fabric
from ..traffic import Traffic, all_to_all
from .certificate import certified_lower
from .formulation import build_flow_lp
from .graph_arrays import GraphArrays
from .result import FlowResult
from .symmetric import build_symmetric_lp


@dataclass(frozen=True)
class CertificateCheck:
    """What :func:`check_certificate` found.

    ``lower`` and ``upper`` are the bounds recomputed here; ``lower_ok``/``upper_ok`` say
    whether they prove the result's bracket (to 1e-9 relative).
    """

    lower: float
    upper: float
    max_overload: float
    residual_l1: float
    lower_ok: bool
    upper_ok: bool

    @property
    def ok(self) -> bool:
        return self.lower_ok and self.upper_ok


def explicit_distance_bound(fab: Fabric, traffic: Traffic, lengths: np.ndarray,
                            ga: GraphArrays | None = None) -> float:
    """``sum c l / sum D dist_l`` with one Dijkstra per source endpoint on the whole graph."""
    ga = ga or GraphArrays.from_fabric(fab)
    lengths = np.clip(lengths, 0.0, None)
    numerator = float(ga.capacity @ lengths)
    eps = traffic.endpoints
    pos = {e: i for i, e in enumerate(eps)}
    idx = np.array([ga.index[e] for e in eps])
    dist = dijkstra(ga.matrix(lengths), directed=True, indices=idx)[:, idx]
    if traffic.is_uniform:
        denominator = float(traffic.uniform_gbps * (dist.sum() - np.trace(dist)))
    else:
        s = np.array([pos[a] for a, _ in traffic.pairs])
        t = np.array([pos[b] for _, b in traffic.pairs])
        denominator = float(np.fromiter(traffic.pairs.values(), float) @ dist[s, t])
    if np.isinf(denominator):
        return 0.0
    return numerator / denominator if denominator > 0 else np.inf


def check_certificate(fab: Fabric, result: FlowResult, traffic: Traffic | None = None,
                      ) -> CertificateCheck:
    """Re-prove ``result.lower`` and ``result.upper`` on ``fab`` for ``traffic``.

    Parameters
    ----------
    fab : Fabric
        The fabric the result was computed on.
    result : FlowResult
        From :func:`max_concurrent_flow`.
    traffic : Traffic, optional
        The traffic it was computed for (default: all-to-all at 1 Gb/s).

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.ring(6)
    >>> check = fo.check_certificate(fab, fo.max_concurrent_flow(fab))
    >>> check.ok, round(check.upper, 6)   # 8 / 6**2
    (True, 0.222222)
    """
    traffic = traffic or all_to_all(fab)
    # The solve ran on traffic scaled so theta is near one; re-prove in those units.
    scale = float(result.extra.get("traffic_scale", 1.0))
    if scale != 1.0:
        traffic = traffic.scaled(scale)
    ga = GraphArrays.from_fabric(fab)
    if result._ga is not None and result._ga.arcs != ga.arcs:
        raise InvalidParameterError("check_certificate(): the result was computed on a "
                                    "different graph (arcs differ)")
    lower, overload, residual = 0.0, 0.0, 0.0
    if result.method in ("lp", "approx") and result.extra.get("x") is not None:
        model = build_flow_lp(fab, traffic, result.extra["include_endpoint_links"])
        x = result.extra["x"]
        residual = model.conservation_residual(x)
        load = model.full_load(x)
        lower, overload = certified_lower(float(x[-1]), load[model.constrained],
                                          ga.capacity[model.constrained], residual,
                                          model.min_demand)
    elif result.method == "symmetric" and result.extra.get("f0") is not None:
        gbps = traffic.uniform_gbps or next(iter(traffic.pairs.values()))
        model = build_symmetric_lp(fab, gbps, reduce=False,
                                   include_endpoint_links=result.extra["include_endpoint_links"])
        f0 = result.extra["f0"]
        theta = result.extra["theta"]
        residual = model.residual(f0, theta)
        load = model.loads(f0)
        lower, overload = certified_lower(theta, load[model.constrained],
                                          ga.capacity[model.constrained], residual, gbps)
    upper = np.inf
    if result._lengths is not None:
        upper = explicit_distance_bound(fab, traffic, result._lengths, ga)
    elif result.unreachable is not None:
        upper = explicit_distance_bound(fab, traffic, np.ones(ga.n_arcs), ga)
    lower, upper = lower * scale, upper * scale
    tol = 1e-9
    return CertificateCheck(lower, upper, overload, residual,
                            lower >= result.lower * (1 - tol) - 1e-15,
                            upper <= result.upper * (1 + tol) + 1e-15)
