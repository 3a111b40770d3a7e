r"""Collective schedules as traffic, and what a routing lets them reach.

A ring all-reduce of :math:`S` bytes over :math:`n` ranks runs :math:`2(n-1)` steps (a
reduce-scatter, then an all-gather); in each step every rank sends a chunk of :math:`S/n`
bytes to its successor, all ranks at once. Pipelined, every ring edge carries
:math:`2(n-1)/n \cdot S` bytes, all edges concurrently. If the fabric carries the ring's
neighbour traffic (one demand per edge) at rate :math:`r` per edge, the all-reduce takes

.. math::

    t = \frac{2(n-1)}{n} \cdot \frac{S}{r}, \qquad
    \text{algbw} = \frac{S}{t}, \qquad
    \text{busbw} = \text{algbw} \cdot \frac{2(n-1)}{n} = r,

with :math:`r = \theta \cdot g` for the ring traffic at :math:`g` per edge and
:math:`\theta` its routed throughput (nccl-tests' definitions of algbw and busbw). The ring's
bus bandwidth is its edge rate. All-gather and reduce-scatter are one of the two halves:
:math:`t = \frac{n-1}{n} S / r`, busbw :math:`= r` again.

NCCL's double binary tree splits the data over two trees in which each rank is an inner
node of at most one; each tree reduces its half up and broadcasts it down, pipelined, so
every tree edge carries :math:`S/2` bytes each way. At :math:`\theta g / 2` per tree edge and
direction (the traffic puts :math:`g/2` on each), :math:`t = S / (\theta g)`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._checks import (
    as_rng,
    check_bool,
    check_choice,
    check_demand_gbps,
    check_int,
    check_message_bytes,
)
from ..errors import InvalidParameterError
from ..fabric import Fabric, check_endpoint_group
from ..traffic import Traffic
from .api import ROUTINGS, check_routing_size, routed_flow
from .result import RoutedFlowResult

ORDERS = ("given", "rail_aligned", "random")
SCHEDULES = ("ring", "tree")
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter")


def rank_order(fab: Fabric, endpoints: Iterable[Hashable] | None = None, order: str = "given",
               seed: Any = None, func: str = "rank_order") -> tuple[Hashable, ...]:
    """The endpoints in ring order.

    ``"given"``: as listed (by default the fabric's endpoint order, server by server).
    ``"rail_aligned"``: server by server, snaking through each server's GPUs by rail,
    ascending in even and descending in odd servers, so each hop between servers joins two
    GPUs of one rail (rail-aligned placement; needs the ``node`` and ``rail`` attributes).
    ``"random"``: a seeded random order (placement that ignores the topology).

    >>> import fabricopt as fo
    >>> fab = fo.rail_optimized(nodes=2, gpus_per_node=2, leaf_radix=4)
    >>> rank_order(fab, order="rail_aligned")
    ('n0.g0', 'n0.g1', 'n1.g1', 'n1.g0')
    """
    check_choice(func, "order", order, ORDERS)
    eps = check_endpoint_group(func, fab, endpoints)
    rng = as_rng(seed, func)  # checked whatever the order: a bad seed is never ignored
    if order == "random":
        return tuple(eps[i] for i in rng.permutation(len(eps)))
    if order == "given":
        return eps
    g = fab.graph
    missing = [e for e in eps if g.nodes[e].get("node") is None or g.nodes[e].get("rail") is None]
    if missing:
        raise InvalidParameterError(
            f"{func}(): order='rail_aligned' needs endpoints with 'node' and 'rail' "
            f"attributes, got {missing[0]!r} without")
    servers = sorted({g.nodes[e]["node"] for e in eps})
    out: list[Hashable] = []
    for k, server in enumerate(servers):
        gpus = sorted((e for e in eps if g.nodes[e]["node"] == server),
                      key=lambda e: g.nodes[e]["rail"], reverse=bool(k % 2))
        out.extend(gpus)
    return tuple(out)


def ring_traffic(fab: Fabric, endpoints: Iterable[Hashable] | None = None, *,
                 order: str = "given", seed: Any = None, gbps: float = 1.0) -> Traffic:
    """The neighbour traffic of a ring schedule: each rank sends ``gbps`` to its successor.

    Parameters
    ----------
    fab : Fabric
    endpoints : iterable, optional
        The ranks (default: every endpoint); at least 2.
    order : {"given", "rail_aligned", "random"}
        The ring order, see :func:`rank_order`.
    seed : None, int or numpy.random.Generator
        For ``order="random"``.
    gbps : float
        Demand per ring edge.

    Examples
    --------
    >>> import fabricopt as fo
    >>> tm = ring_traffic(fo.ring(4))
    >>> sorted(tm.pairs)
    [('n0', 'n1'), ('n1', 'n2'), ('n2', 'n3'), ('n3', 'n0')]
    """
    gbps = check_demand_gbps("ring_traffic", "gbps", gbps)
    ranks = rank_order(fab, endpoints, order, seed, "ring_traffic")
    n = len(ranks)
    demands: dict[tuple[Hashable, Hashable], float] = {}
    for i in range(n):
        pair = (ranks[i], ranks[(i + 1) % n])
        demands[pair] = demands.get(pair, 0.0) + gbps
    return Traffic(demands, name=f"ring ({order})")


def tree_traffic(fab: Fabric, endpoints: Iterable[Hashable] | None = None, *,
                 order: str = "given", seed: Any = None, gbps: float = 1.0) -> Traffic:
    """The traffic of a double binary tree: ``gbps / 2`` each way on every edge of each tree.

    Tree one is the balanced in-order binary tree over ranks ``0..n-1`` (its leaves are the
    even ranks); tree two is the same tree over the ranks shifted by one, so its leaves are
    the odd ranks (the complementary trees of NCCL's double binary tree).

    >>> import fabricopt as fo
    >>> tm = tree_traffic(fo.complete(3))
    >>> sorted(tm.pairs.items())[:2]
    [(('n0', 'n1'), 0.5), (('n0', 'n2'), 0.5)]
    """
    gbps = check_demand_gbps("tree_traffic", "gbps", gbps)
    ranks = rank_order(fab, endpoints, order, seed, "tree_traffic")
    n = len(ranks)
    demands: dict[tuple[Hashable, Hashable], float] = {}
    for shift in (0, 1):
        for parent, child in _in_order_tree(n):
            p, c = ranks[(parent + shift) % n], ranks[(child + shift) % n]
            for pair in ((p, c), (c, p)):
                demands[pair] = demands.get(pair, 0.0) + gbps / 2
    return Traffic(demands, name=f"double binary tree ({order})")


def _in_order_tree(n: int) -> list[tuple[int, int]]:
    """(parent, child) edges of the balanced binary tree whose in-order walk is 0..n-1."""
    edges: list[tuple[int, int]] = []

    def build(lo: int, hi: int) -> int | None:
        if lo > hi:
            return None
        mid = (lo + hi + 1) // 2
        for child in (build(lo, mid - 1), build(mid + 1, hi)):
            if child is not None:
                edges.append((mid, child))
        return mid

    build(0, n - 1)
    return edges


@dataclass
class RoutedCollective:
    """A collective's time and bandwidth under a routing (see :func:`routed_collective`).

    Attributes
    ----------
    collective, schedule, routing, order : str
    ranks : int
    message_bytes : float
    time_s, algbw_GBps, busbw_GBps : float
        At the routed theta (the median trial when hashed).
    busbw_GBps_trials : ndarray
        Bus bandwidth of every hashed trial.
    routed : RoutedFlowResult
        The schedule's traffic routed; ``routed.optimum`` when asked for.
    """

    collective: str
    schedule: str
    routing: str
    order: str
    ranks: int
    message_bytes: float
    time_s: float
    algbw_GBps: float
    busbw_GBps: float
    busbw_GBps_trials: np.ndarray
    routed: RoutedFlowResult

    @property
    def optimal_busbw_GBps(self) -> float | None:
        """Bus bandwidth of the same schedule under ideal multipath routing."""
        opt = self.routed.optimum
        if opt is None or opt.theta is None:
            return None
        return self.busbw_GBps * opt.theta / self.routed.theta if self.routed.theta else None

    def __str__(self) -> str:
        line = (f"{self.collective} ({self.schedule}, {self.order} order, {self.ranks} ranks) "
                f"under {self.routing}: {self.message_bytes:.6g} B in {self.time_s:.6g} s, "
                f"algbw {self.algbw_GBps:.6g} GB/s, busbw {self.busbw_GBps:.6g} GB/s")
        if len(self.busbw_GBps_trials) > 1:
            t = self.busbw_GBps_trials
            line += (f" (busbw over {len(t)} trials: min {t.min():.6g}, "
                     f"max {t.max():.6g} GB/s)")
        if self.optimal_busbw_GBps is not None:
            line += f"; optimal routing {self.optimal_busbw_GBps:.6g} GB/s"
        return line


def routed_collective(fab: Fabric, collective: str, message_bytes: float, *,
                      routing: str = "hash", schedule: str = "ring", order: str = "given",
                      endpoints: Iterable[Hashable] | None = None, flows_per_pair: int = 1,
                      trials: int = 1, seed: Any = None,
                      optimum: bool = False) -> RoutedCollective:
    """Time and bus bandwidth a collective schedule reaches under a routing policy.

    The schedule becomes traffic (:func:`ring_traffic` or :func:`tree_traffic` at 1 Gb/s per
    edge), :func:`~fabricopt.routed_flow` finds the rate theta every edge gets under
    ``routing``, and the time follows from the schedule (see the module docstring for the
    derivation): ring all-reduce :math:`t = 2(n-1)/n \\cdot S / (\\theta \\cdot 1\\,Gb/s)`,
    ring all-gather and reduce-scatter :math:`t = (n-1)/n \\cdot S / (\\theta \\cdot
    1\\,Gb/s)`, tree all-reduce :math:`t = S / (\\theta \\cdot 1\\,Gb/s)`. This compares, say,
    a ring whose hops collide under RoCE hashing with a rail-aligned one.

    Parameters
    ----------
    fab : Fabric
    collective : {"all_reduce", "all_gather", "reduce_scatter"}
    message_bytes : float
        ``S``: the buffer size in bytes (nccl-tests' size: the all-reduce buffer, the
        all-gather output).
    routing, flows_per_pair, trials, optimum
        As in :func:`~fabricopt.routed_flow`.
    schedule : {"ring", "tree"}
        The tree schedule is for all-reduce only.
    order, endpoints, seed
        The ranks and their order (:func:`rank_order`); ``seed`` draws both a random order
        and the hashed paths.

    Examples
    --------
    A rail-aligned ring on two 2-GPU servers under a rail-optimized fabric without NVLink:
    every hop is a 400 Gb/s NIC link, so busbw = 400 / 8 = 50 GB/s.

    >>> import fabricopt as fo
    >>> fab = fo.rail_optimized(nodes=2, gpus_per_node=2, leaf_radix=4)
    >>> c = routed_collective(fab, "all_reduce", 2**30, routing="ecmp", order="rail_aligned")
    >>> round(c.busbw_GBps, 6)
    50.0
    """
    func = "routed_collective"
    check_choice(func, "collective", collective, COLLECTIVES)
    check_choice(func, "schedule", schedule, SCHEDULES)
    message_bytes = check_message_bytes(func, "message_bytes", message_bytes)
    if schedule == "tree" and collective != "all_reduce":
        raise InvalidParameterError(f"{func}(): schedule='tree' is for collective="
                                    f"'all_reduce' only, got {collective!r}")
    if not isinstance(fab, Fabric):
        raise InvalidParameterError(f"{func}(): fab must be a Fabric, got {type(fab).__name__}")
    check_choice(func, "routing", routing, ROUTINGS)
    check_choice(func, "order", order, ORDERS)
    check_endpoint_group(func, fab, endpoints)
    for name, value in (("flows_per_pair", flows_per_pair), ("trials", trials)):
        check_int(func, name, value, minimum=1)
    check_bool(func, "optimum", optimum)
    rng = as_rng(seed, func)
    make = ring_traffic if schedule == "ring" else tree_traffic
    traffic = make(fab, endpoints, order=order, seed=rng)
    check_routing_size(func, trials, flows_per_pair, fab.graph.number_of_edges(), len(traffic))
    n = len(traffic.endpoints)
    routed = routed_flow(fab, traffic, routing=routing, flows_per_pair=flows_per_pair,
                         trials=trials, seed=rng if routing == "hash" else None,
                         optimum=optimum)
    rate_GBps = np.asarray(routed.thetas, dtype=float) / 8  # theta x 1 Gb/s per edge
    if schedule == "tree":
        steps, bus = 1.0, 2 * (n - 1) / n
    elif collective == "all_reduce":
        steps = bus = 2 * (n - 1) / n
    else:
        steps = bus = (n - 1) / n
    busbw_trials = rate_GBps * bus / steps  # algbw = rate / steps, busbw = algbw x bus
    rate = routed.theta / 8
    time_s = steps * message_bytes / (rate * 1e9) if rate > 0 else float("inf")
    algbw = message_bytes / time_s / 1e9 if rate > 0 else 0.0
    return RoutedCollective(collective, schedule, routing, order, n, message_bytes, time_s,
                            algbw, algbw * bus, busbw_trials, routed)
