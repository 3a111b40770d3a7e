"""Traffic matrices: demand in Gb/s per ordered endpoint pair.

A :class:`Traffic` is either a sparse mapping ``{(s, t): gbps}`` or a *uniform* all-to-all
among a set of endpoints, kept implicit so that an all-to-all on 100,000 GPUs (10^10 pairs)
costs nothing to hold. Solvers ask it for demand aggregated the way they need.
"""

from __future__ import annotations

import math
import numbers
from collections import Counter
from collections.abc import Hashable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from ._checks import (
    as_rng,
    check_demand_gbps,
    check_int,
    check_label,
    check_node_names,
    check_positive,
    did_you_mean,
)
from .errors import InvalidParameterError, TrafficError
from .fabric import check_endpoint_group, check_fabric
from .graph_arrays import FabricShape, GraphArrays

Pair = tuple[Hashable, Hashable]

#: Largest number of pairs a uniform traffic will spell out as a dictionary.
MAX_EXPLICIT_PAIRS = 20_000_000


class Traffic:
    """Demand in Gb/s per ordered pair of endpoints.

    Parameters
    ----------
    demands : mapping
        ``{(source, target): gbps}``. Zero demands are dropped; negative, non-finite or
        self-pairs are errors, and so is a traffic with no positive demand.

    Examples
    --------
    >>> import fabricopt as fo
    >>> tm = fo.Traffic({("a", "b"): 2.0, ("b", "a"): 1.0})
    >>> tm.total_gbps, len(tm)
    (3.0, 2)
    """

    def __init__(self, demands: Mapping[Pair, float] | None = None, *,
                 _uniform: tuple[tuple[Hashable, ...], float] | None = None,
                 name: str = "traffic") -> None:
        self.name = check_label("Traffic", "name", name, optional=False)
        self._uniform = _uniform
        self._pairs: dict[Pair, float] | None = None
        if _uniform is not None:
            endpoints, gbps = _uniform
            if len(endpoints) < 2:
                raise TrafficError(f"{name}: needs at least 2 endpoints, got {len(endpoints)}")
            return
        if not isinstance(demands, Mapping):
            raise TrafficError(f"Traffic(): demands must be a mapping {{(s, t): gbps}}, "
                               f"got {type(demands).__name__}")
        pairs: dict[Pair, float] = {}
        for key, value in demands.items():
            if not (isinstance(key, tuple) and len(key) == 2):
                raise TrafficError(f"Traffic(): demands keys must be (source, target) pairs, "
                                   f"got {key!r}")
            s, t = key
            if s == t:
                raise TrafficError(f"Traffic(): demand from {s!r} to itself is not traffic")
            if (isinstance(value, bool) or not isinstance(value, numbers.Real)
                    or not math.isfinite(value) or value < 0):
                raise TrafficError(f"Traffic(): demand {s!r}->{t!r} must be a finite number "
                                   f">= 0 Gb/s, got {value!r}")
            if value > 0:
                pairs[(s, t)] = float(value)
        if not pairs:
            raise TrafficError("Traffic(): demands must hold a positive demand; traffic must not "
                               "be empty")
        self._pairs = pairs

    # -- constructors -----------------------------------------------------------------------
    @classmethod
    def uniform(cls, endpoints: Iterable[Hashable], gbps: float = 1.0,
                name: str = "all-to-all") -> Traffic:
        """Every ordered pair of distinct ``endpoints`` demands ``gbps`` (kept implicit)."""
        func = "Traffic.uniform"
        gbps = check_positive(func, "gbps", gbps)
        check_label(func, "name", name, optional=False)
        eps = check_node_names(func, "endpoints", endpoints, TrafficError)
        if len(set(eps)) != len(eps):
            raise TrafficError(f"{name}: endpoints must not repeat")
        if len(eps) < 2:
            raise TrafficError(f"{func}(): endpoints must be at least 2 (one endpoint sends to "
                               f"no other), got {list(eps)!r}")
        return cls(_uniform=(eps, gbps), name=name)

    # -- views ------------------------------------------------------------------------------
    @property
    def is_uniform(self) -> bool:
        """True for an implicit all-to-all (every ordered pair of its endpoints, one demand)."""
        return self._uniform is not None

    @property
    def uniform_gbps(self) -> float | None:
        """The per-pair demand of a uniform traffic, else None."""
        return self._uniform[1] if self._uniform is not None else None

    @property
    def endpoints(self) -> tuple[Hashable, ...]:
        """Endpoints that send or receive, in first-seen order."""
        if self._uniform is not None:
            return self._uniform[0]
        seen: dict[Hashable, None] = {}
        for s, t in self._pairs:  # type: ignore[union-attr]
            seen.setdefault(s)
            seen.setdefault(t)
        return tuple(seen)

    def __len__(self) -> int:
        if self._uniform is not None:
            n = len(self._uniform[0])
            return n * (n - 1)
        return len(self._pairs)  # type: ignore[arg-type]

    @property
    def total_gbps(self) -> float:
        """Sum of all demands."""
        if self._uniform is not None:
            return len(self) * self._uniform[1]
        return float(sum(self._pairs.values()))  # type: ignore[union-attr]

    @property
    def pairs(self) -> dict[Pair, float]:
        """The demands as an explicit dictionary (refused for huge uniform traffic)."""
        if self._pairs is None:
            eps, gbps = self._uniform  # type: ignore[misc]
            if len(self) > MAX_EXPLICIT_PAIRS:
                raise TrafficError(f"{self.name}: {len(self)} pairs are too many to list; "
                                   "solvers use the implicit form")
            self._pairs = {(s, t): gbps for s in eps for t in eps if s != t}
        return self._pairs

    def items(self) -> Iterator[tuple[Pair, float]]:
        """Iterate over ``((s, t), gbps)``."""
        return iter(self.pairs.items())

    def out_gbps(self) -> dict[Hashable, float]:
        """Total demand each endpoint sends."""
        if self._uniform is not None:
            eps, gbps = self._uniform
            return {e: gbps * (len(eps) - 1) for e in eps}
        out: dict[Hashable, float] = {}
        for (s, _), d in self.pairs.items():
            out[s] = out.get(s, 0.0) + d
        return out

    def in_gbps(self) -> dict[Hashable, float]:
        """Total demand each endpoint receives."""
        if self._uniform is not None:
            return self.out_gbps()
        inc: dict[Hashable, float] = {}
        for (_, t), d in self.pairs.items():
            inc[t] = inc.get(t, 0.0) + d
        return inc

    def mean_out_gbps(self) -> float:
        """Mean demand sent per sending endpoint."""
        out = self.out_gbps()
        return sum(out.values()) / len(out)

    def crossing_share(self, fab: Any) -> float:
        """The share of this traffic's demand that must cross ``fab``'s network: between
        endpoints of different scale-up domains (the GPUs NVLink or UALink links join, one
        server of a DGX cluster). The rest stays on scale-up links, so a per-GPU throughput
        counts it though no NIC carries it: to read an all-to-all per GPU against a NIC's
        speed, multiply it by this share.

        >>> import fabricopt as fo
        >>> fab = fo.superpod(1)               # 256 GPUs, 8 per DGX H100
        >>> round(fo.all_to_all(fab).crossing_share(fab) * 255)  # peers outside the server
        248
        >>> fo.all_to_all(fo.dgx_h100()).crossing_share(fo.dgx_h100())  # one NVLink domain
        0.0
        """
        self.check_endpoints(fab, "Traffic.crossing_share")
        shape = FabricShape.of(fab)
        codes = shape.domain[shape.endpoint_index]
        if self._uniform is not None:
            # Every ordered pair of some endpoints at one demand: the pairs inside each
            # domain counted from its size (a 16K-GPU all-to-all has 268 million pairs,
            # never listed); over all of the fabric's, sizes by one count over the codes,
            # not a dict per GPU.
            group = self._uniform[0]
            if list(group) == list(fab.endpoints):
                sizes = np.bincount(codes).tolist()
            else:
                domain = dict(zip(fab.endpoints, codes.tolist(), strict=True))
                sizes = list(Counter(domain[e] for e in group).values())
            n = len(group)
            inside = sum(k * (k - 1) for k in sizes)
            return (n * (n - 1) - inside) / (n * (n - 1))
        domain = dict(zip(fab.endpoints, codes.tolist(), strict=True))
        total = self.total_gbps
        crossing = sum(d for (s, t), d in self.items() if domain[s] != domain[t])
        return crossing / total if total > 0 else 0.0

    # -- transformations --------------------------------------------------------------------
    def restrict(self, endpoints: Iterable[Hashable]) -> Traffic:
        """Only the demands whose source and target are both in ``endpoints``.

        >>> import fabricopt as fo
        >>> tm = fo.Traffic.uniform(["a", "b", "c"]).restrict(["a", "b"])
        >>> sorted(tm.pairs)
        [('a', 'b'), ('b', 'a')]
        """
        keep = set(check_node_names("Traffic.restrict", "endpoints", endpoints, TrafficError))
        if self._uniform is not None:
            eps, gbps = self._uniform
            left = [e for e in eps if e in keep]
            if len(left) < 2:
                raise TrafficError(f"Traffic.restrict(): endpoints must keep a demand of "
                                   f"{self.name!r}, got {sorted(keep, key=repr)[:3]!r}")
            return Traffic.uniform(left, gbps, self.name)
        kept = {(s, t): d for (s, t), d in self.pairs.items() if s in keep and t in keep}
        if not kept:
            raise TrafficError(f"Traffic.restrict(): endpoints must keep a demand of "
                               f"{self.name!r}, got {sorted(keep, key=repr)[:3]!r}")
        return Traffic(kept, name=self.name)

    def scaled(self, factor: float) -> Traffic:
        """Every demand multiplied by ``factor`` (> 0)."""
        factor = check_positive("Traffic.scaled", "factor", factor)
        if self._uniform is not None:
            return Traffic.uniform(self._uniform[0], self._uniform[1] * factor, self.name)
        return Traffic({k: v * factor for k, v in self.pairs.items()}, name=self.name)

    def check_endpoints(self, fab: Any, func: str = "Traffic.check_endpoints") -> None:
        """Raise :class:`TrafficError` if a demand names a node that is not an endpoint;
        the message names ``func``, the public function that asked."""
        check_fabric(func, fab)
        known = set(fab.endpoints)
        unknown = [e for e in self.endpoints if e not in known]
        if unknown:
            raise TrafficError(f"{func}(): traffic {self.name!r}: {len(unknown)} endpoint(s) "
                               f"are not endpoints of fabric {fab.name!r}, e.g. "
                               f"{unknown[:3]!r}")

    def __repr__(self) -> str:
        kind = "uniform" if self.is_uniform else "explicit"
        return (f"<Traffic {self.name!r}: {kind}, {len(self)} pairs, "
                f"{self.total_gbps:g} Gb/s in total>")


def _endpoints_of(func: str, fab: Any, endpoints: Iterable[Hashable] | None) -> tuple:
    return check_endpoint_group(func, fab, endpoints, minimum=1, error=TrafficError)


def all_to_all(fab: Any, gbps: float = 1.0,
               endpoints: Iterable[Hashable] | None = None) -> Traffic:
    """Uniform all-to-all: every ordered pair of distinct endpoints demands ``gbps``.

    ``endpoints`` restricts the pattern to a group (one rail, a data-parallel group).

    >>> import fabricopt as fo
    >>> len(fo.all_to_all(fo.ring(4)))   # 4 x 3 ordered pairs
    12
    """
    gbps = check_demand_gbps("all_to_all", "gbps", gbps)
    return Traffic.uniform(_endpoints_of("all_to_all", fab, endpoints), gbps)


def permutation(fab: Any, seed: Any = None, gbps: float = 1.0,
                endpoints: Iterable[Hashable] | None = None) -> Traffic:
    """A random derangement: each endpoint sends ``gbps`` to one other, each receives once.

    >>> import fabricopt as fo
    >>> tm = fo.permutation(fo.ring(6), seed=0)
    >>> len(tm), all(s != t for s, t in tm.pairs)
    (6, True)
    """
    gbps = check_demand_gbps("permutation", "gbps", gbps)
    eps = _endpoints_of("permutation", fab, endpoints)
    if len(eps) < 2:
        raise TrafficError("permutation(): needs at least 2 endpoints")
    rng = as_rng(seed, "permutation")
    n = len(eps)
    # A uniformly random cyclic shift of a random order is a derangement; mixing cycle
    # structure by sampling permutations until one has no fixed point keeps it uniform.
    for _ in range(1000):
        perm = rng.permutation(n)
        if not np.any(perm == np.arange(n)):
            break
    else:  # pragma: no cover - probability ~ e^-1000
        perm = np.roll(np.arange(n), 1)
    return Traffic({(eps[i], eps[int(perm[i])]): gbps for i in range(n)}, name="permutation")


def longest_matching(fab: Any, gbps: float = 1.0,
                     endpoints: Iterable[Hashable] | None = None,
                     max_endpoints: int = 8192) -> Traffic:
    """A permutation pairing endpoints as far apart as possible (in hops).

    Solves a maximum-weight assignment on the hop-distance matrix (a bipartite maximum-weight
    matching, as in the worst-case traffic of TUB, Namyar et al., SIGCOMM 2021), with fixed
    points forbidden. Distances come from one shortest-path search per endpoint, so
    ``max_endpoints`` caps the size.

    >>> import fabricopt as fo
    >>> tm = fo.longest_matching(fo.ring(8))
    >>> sorted(set(tm.pairs.values())), len(tm)
    ([1.0], 8)
    """
    gbps = check_demand_gbps("longest_matching", "gbps", gbps)
    eps = _endpoints_of("longest_matching", fab, endpoints)
    return farthest_matching("longest_matching", fab, eps, gbps, None, max_endpoints)


def farthest_matching(func: str, fab: Any, eps: tuple[Hashable, ...], gbps: float,
                      lengths: np.ndarray | None, max_endpoints: int) -> Traffic:
    """The permutation of ``eps`` (no fixed point) that maximises the total distance under
    arc ``lengths`` (one per arc of ``GraphArrays.from_fabric(fab)``; None: hops)."""
    from scipy.optimize import linear_sum_assignment
    from scipy.sparse.csgraph import dijkstra

    max_endpoints = check_int(func, "max_endpoints", max_endpoints, minimum=2)
    if len(eps) < 2:
        raise TrafficError(f"{func}(): needs at least 2 endpoints")
    if len(eps) > max_endpoints:
        raise InvalidParameterError(
            f"{func}(): {len(eps)} endpoints exceed max_endpoints={max_endpoints} "
            "(the assignment is cubic in the count); pass a larger max_endpoints or use "
            "permutation()")
    ga = GraphArrays.from_fabric(fab)
    idx = np.array([ga.index[e] for e in eps])
    weights = np.ones(ga.n_arcs) if lengths is None else np.asarray(lengths, dtype=float)
    dist = dijkstra(ga.matrix(weights), directed=True, indices=idx)[:, idx]
    if np.isinf(dist).any():
        # Unreachable pairs are the farthest of all.
        finite = dist[np.isfinite(dist)]
        dist[np.isinf(dist)] = (finite.max() if len(finite) else 0.0) + 1
    np.fill_diagonal(dist, -1e9 * max(float(dist.max()), 1.0))
    rows, cols = linear_sum_assignment(dist, maximize=True)
    name = "longest-matching" if lengths is None else "farthest-matching"
    return Traffic({(eps[r], eps[c]): gbps for r, c in zip(rows, cols, strict=True)},
                   name=name)


def select_endpoints(fab: Any, **attributes: Any) -> tuple[Hashable, ...]:
    """Endpoints whose node attributes equal the given values: a group to restrict to.

    ``select_endpoints(fab, rail=0)`` is the data-parallel group of GPU 0 of every node (one
    rail); ``select_endpoints(fab, node=3)`` one server or scale-up domain.

    >>> import fabricopt as fo
    >>> fab = fo.rail_optimized(nodes=4, gpus_per_node=2, leaf_radix=4)
    >>> fo.select_endpoints(fab, rail=1)
    ('n0.g1', 'n1.g1', 'n2.g1', 'n3.g1')
    >>> len(fo.all_to_all(fab).restrict(fo.select_endpoints(fab, rail=1)))
    12
    """
    check_fabric("select_endpoints", fab)
    if not attributes:
        raise InvalidParameterError("select_endpoints(): name at least one attribute, "
                                    "e.g. rail=0")
    g = fab.graph
    chosen = tuple(e for e in fab.endpoints
                   if all(g.nodes[e].get(k) == v for k, v in attributes.items()))
    if not chosen:
        raise TrafficError(f"select_endpoints(): no endpoint of {fab.name!r} has "
                           + ", ".join(f"{k}={v!r}" for k, v in attributes.items()))
    return chosen


#: The patterns a name stands for (:func:`traffic_named`).
TRAFFIC_NAMES = ("all-to-all", "permutation", "longest-matching")


def traffic_named(fab: Any, spec: str, where: str = "traffic") -> Traffic:
    """The pattern ``spec`` names on ``fab``: ``"all-to-all"``, ``"permutation"`` or
    ``"permutation:SEED"``, ``"longest-matching"`` (``_`` may stand for ``-``), as the
    command line's ``--traffic`` reads them. ``where`` names the argument in errors.

    >>> import fabricopt as fo
    >>> fab = fo.ring(4)
    >>> dict(traffic_named(fab, "permutation:3").items()) == dict(
    ...     fo.permutation(fab, seed=3).items())
    True
    """
    if not isinstance(spec, str):
        raise InvalidParameterError(f"{where} must be a Traffic or one of "
                                    f"{', '.join(TRAFFIC_NAMES)}, got {type(spec).__name__}")
    name, colon, arg = spec.partition(":")
    name = name.strip().replace("_", "-")
    if colon and name in ("all-to-all", "longest-matching"):
        raise InvalidParameterError(f"{where} {name} takes no ':' suffix (only "
                                    f"permutation:SEED does), got {spec!r}")
    if name == "all-to-all":
        return all_to_all(fab)
    if name == "permutation":
        if colon and not arg.strip().isdigit():
            raise InvalidParameterError(f"{where} permutation:SEED: the seed must be an "
                                        f"integer >= 0, got {arg!r}")
        return permutation(fab, seed=int(arg) if colon else 0)
    if name == "longest-matching":
        return longest_matching(fab)
    raise InvalidParameterError(f"{where} must be all-to-all, permutation[:SEED] or "
                                f"longest-matching, got {spec!r}"
                                + did_you_mean(name, TRAFFIC_NAMES))


def checked_traffic(func: str, fab: Any, traffic: Any) -> Traffic:
    """``traffic`` for a solve on ``fab``: all-to-all when None, the pattern a name stands
    for (:func:`traffic_named`), else a :class:`Traffic` whose endpoints are ``fab``'s; an
    error naming ``func`` otherwise."""
    if traffic is None:
        return all_to_all(fab)
    if isinstance(traffic, str):
        return traffic_named(fab, traffic, f"{func}(): traffic")
    if not isinstance(traffic, Traffic):
        raise InvalidParameterError(f"{func}(): traffic must be a Traffic, a pattern's name "
                                    f"({', '.join(TRAFFIC_NAMES)}) or None, got "
                                    f"{type(traffic).__name__}")
    traffic.check_endpoints(fab, func)
    return traffic
