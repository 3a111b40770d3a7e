r"""Collective bounds in the nccl-tests vocabulary: all-gather, reduce-scatter, all-reduce,
all-to-all and broadcast on any fabric.

Conventions (NVIDIA/nccl-tests ``doc/PERFORMANCE.md``; ``docs/collectives.md#conventions``):
``S`` is ``message_bytes``, the buffer size nccl-tests reports (the total gathered size for
all-gather, the input size for reduce-scatter, the buffer for all-reduce, the bytes each GPU
sends for all-to-all). ``algbw = S / t``; ``busbw = algbw x 2(n-1)/n`` for all-reduce,
``x (n-1)/n`` for all-gather, reduce-scatter and all-to-all, ``x 1`` for broadcast. Rates are
GB/s (10^9 bytes/s); capacities in the fabric are Gb/s, so a capacity ``c`` moves ``c/8``
GB/s.

Bounds:

* **All-gather** with forwarding-only switches (ForestColl, Zhao et al., arXiv 2402.06787):
  the optimum is :math:`T^* = (S/n) \max_X |X \cap G| / B_{out}(X)` over node sets ``X``
  holding some but not all GPUs ``G``. It is found by a Dinkelbach search on the ratio: given
  the best ratio so far, one minimum cut per GPU orbit (one in all when a symmetry claim makes
  the GPUs one orbit) finds a set with a larger ratio or proves there is none. That set is the
  binding cut. **Reduce-scatter** is the same on the reversed graph (``B_in``).
* **All-reduce**: achievable ``T_RS* + T_AG*``; lower bounds ``max(T_RS*, T_AG*)``, the volume
  bound ``2(m-1) S / sum of part egress`` over parts joined only through switches that do not
  reduce (one part per GPU, or per reducing NVLink domain: :mod:`fabricopt.collectives.parts`),
  and, for any scheme at all, ``S / min(B_out(X), B_in(X))`` over every cut separating GPUs.
  With switches that reduce (``reduce=True``) and in-network reduction on: NVLink SHARP
  as NCCL runs it moves ``S + S/n`` per GPU each way
  (NVIDIA/nccl issue 1506) and ideal in-switch reduction ``S`` per GPU each way; for clusters
  the scale-out phase (a ring, or InfiniBand SHARP with ``scale_out_reduction``) is
  pipelined with it
  (``docs/collectives.md#in-network-reduction-nvlink-sharp-and-infiniband-sharp``).
* **All-to-all** from the certified max-concurrent-flow theta of uniform traffic among the
  participants: each pair moves ``S/n`` bytes.
* **Concurrent groups** (``concurrent=``): every group at once on the shared fabric; their
  volumes add on the part boundaries, and each group on a ``1/G`` share of every link is
  achievable.
* **Broadcast**: lower bound ``S / min_v mincut(root, v)``; achievable scatter + all-gather
  (van de Geijn), the scatter being one single-commodity max-flow search.

This module checks the arguments and runs the groups; the bounds of each collective are in
:mod:`fabricopt.collectives.schemes`, the cut searches in :mod:`fabricopt.collectives.problem`,
the expected figure in :mod:`fabricopt.collectives.efficiency`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from .._checks import check_bool, check_choice, check_message_bytes
from .._stages import stage_report
from ..errors import InvalidParameterError
from ..fabric import Fabric, check_endpoint_group
from ..routing.api import ROUTINGS
from ..routing.schedules import ORDERS, RoutedCollective, routed_collective
from .efficiency import efficiency_profile, expected_figure
from .latency import LatencyModel
from .parts import part_cut_s
from .problem import (
    check_reduce_attributes,
    collective_problem,
    describe_cut,
    unreachable_pair,
)
from .results import COLLECTIVES, Bound, CollectiveBounds, bus_factor
from .schemes import BY_COLLECTIVE, Ask, Outcome, partitions, volume_bound


def checked_ask(func: str, fab: Any, collective: Any, message_bytes: Any,
                 endpoints: Iterable[Hashable] | None, in_network_reduction: Any,
                 scale_out_reduction: Any = False) -> Ask:
    """The arguments common to :func:`collective_bounds` and :func:`collective_curve`,
    checked, as one collective to compute."""
    if not isinstance(fab, Fabric):
        raise InvalidParameterError(f"{func}(): fab must be a Fabric, got {type(fab).__name__}")
    check_choice(func, "collective", collective, COLLECTIVES)
    size = check_message_bytes(func, "message_bytes", message_bytes)
    if in_network_reduction not in ("auto", True, False) or isinstance(
            in_network_reduction, int | float) and not isinstance(in_network_reduction, bool):
        raise InvalidParameterError(f"{func}(): in_network_reduction must be 'auto', True or "
                                    f"False, got {in_network_reduction!r}")
    sharp = check_bool(func, "scale_out_reduction", scale_out_reduction)
    check_reduce_attributes(func, fab)
    eps = check_endpoint_group(func, fab, endpoints)
    return Ask(fab, collective_problem(fab, eps), collective, size, in_network_reduction,
                scale_out_reduction=sharp)


def checked_latency(func: str, latency: Any) -> LatencyModel | None:
    if latency is not None and not isinstance(latency, LatencyModel):
        raise InvalidParameterError(f"{func}(): latency must be None or a LatencyModel, got "
                                    f"{latency!r}")
    return latency



def _checked_groups(func: str, fab: Fabric, concurrent: Any,
                    endpoints: Iterable[Hashable] | None) -> list[tuple[Hashable, ...]] | None:
    """The concurrent groups: None, ``"rails"`` (one group per ``rail`` value of the
    endpoints) or a sequence of endpoint groups; disjoint, of one size, at least two GPUs
    each."""
    if concurrent is None:
        return None
    if endpoints is not None:
        raise InvalidParameterError(f"{func}(): give endpoints or concurrent, not both "
                                    "(concurrent names every group)")
    if concurrent == "rails":
        by_rail: dict[Any, list[Hashable]] = {}
        for e in fab.endpoints:
            rail = fab.graph.nodes[e].get("rail")
            if rail is None:
                raise InvalidParameterError(f"{func}(): concurrent='rails' needs a rail "
                                            f"attribute on every endpoint; {e!r} has none")
            by_rail.setdefault(rail, []).append(e)
        raw: list[Any] = list(by_rail.values())
    elif isinstance(concurrent, str | bytes) or not isinstance(concurrent, Iterable):
        raise InvalidParameterError(f"{func}(): concurrent must be None, 'rails' or a list of "
                                    f"endpoint groups, got {concurrent!r}")
    else:
        raw = list(concurrent)
    for g in raw:  # each group is itself a list of endpoints, not one endpoint
        if isinstance(g, str | bytes) or not isinstance(g, Iterable):
            raise InvalidParameterError(f"{func}(): concurrent must be None, 'rails' or a list "
                                        f"of endpoint groups, got group {g!r}")
    groups = [check_endpoint_group(func, fab, g, name="concurrent group") for g in raw]
    if len(groups) < 2:
        raise InvalidParameterError(f"{func}(): concurrent must name at least 2 groups, got "
                                    f"{len(groups)}")
    seen: set[Hashable] = set()
    for g in groups:
        if seen & set(g):
            raise InvalidParameterError(f"{func}(): concurrent groups must be disjoint; "
                                        f"{sorted(map(repr, seen & set(g)))[:3]} repeat")
        seen |= set(g)
    if len({len(g) for g in groups}) != 1:
        raise InvalidParameterError(f"{func}(): concurrent groups must all have the same "
                                    f"number of GPUs, got sizes {[len(g) for g in groups]}")
    return groups


def _concurrent(asks: list[Ask], outs: list[Outcome]) -> Outcome:
    """Several groups at once: each group's own bounds still hold; the volumes of all groups
    add on the boundaries of the parts (``docs/collectives.md#concurrent-groups``); each group
    running alone on a 1/G share of every link is achievable, G times its own time."""
    first = asks[0]
    p, size, collective = first.p, first.size, first.collective
    n_groups = len(asks)
    groups = [a.p.gpus for a in asks]
    inr = any(o.in_network_reduction for o in outs)
    combining = np.zeros(p.ga.n_nodes, dtype=bool)
    for g in groups:
        combining[g] = True
    if inr:
        red_up, red_out = first.reducing()
        combining |= red_up | red_out
    bounds = [dataclasses.replace(b, name=f"{b.name} (one group alone)")
              for b in max(outs, key=lambda o: o.lower.time_s).bounds]
    lowers = [max((o.lower for o in outs), key=lambda b: b.time_s)]
    if collective == "all_reduce":
        lowers.append(volume_bound(first, groups, combining, inr))
        lowers[-1] = dataclasses.replace(lowers[-1], name="volume, all groups at once")
    if collective in ("all_reduce", "all_gather", "reduce_scatter"):
        best_t, best_side = 0.0, None
        for part in partitions(p, combining):
            t, q = part_cut_s(part, groups, size, collective)
            if t > best_t:
                best_t, best_side = t, part.label == q
        if best_side is not None:
            lowers.append(first.bound(
                "part cut, all groups at once", best_t, "lower",
                "every group the part separates moves its share across the part's boundary",
                describe_cut(p, best_side, "leaving")))
    lower = max(lowers, key=lambda b: b.time_s)
    times = [o.achievable_s for o in outs]
    achievable = None if any(t is None for t in times) else n_groups * max(times)
    bounds += [b for b in lowers[1:]]
    if achievable is not None:
        bounds.append(first.bound("each group on a 1/G share", achievable, "achievable",
                                  f"every group runs its own schedule on 1/{n_groups} of every "
                                  "link"))
    return Outcome(lower, achievable, bounds, inr)


def collective_bounds(fab: Fabric, collective: str, *, message_bytes: float,
                      endpoints: Iterable[Hashable] | None = None,
                      in_network_reduction: bool | str = "auto",
                      expected: bool | str | dict[str, float] | None = None,
                      latency: LatencyModel | None = None,
                      scale_out_reduction: bool = False,
                      concurrent: str | Sequence[Iterable[Hashable]] | None = None,
                      routing: str | None = None, order: str = "given", trials: int = 1,
                      seed: Any = None, flows_per_pair: int = 1,
                      ) -> CollectiveBounds:
    """Bounds on how fast ``collective`` can run on ``fab`` (see the module docstring).

    Parameters
    ----------
    fab : Fabric
    collective : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"}
    message_bytes : float
        Buffer size ``S`` in bytes, as nccl-tests reports it.
    endpoints : iterable, optional
        The participating GPUs (one node, one rail, a data-parallel group); default all.
    in_network_reduction : {"auto", True, False}
        Whether switches with ``reduce=True`` may reduce (all-reduce only). ``"auto"``: yes
        when such switches touch the participants.
    expected : bool, str or dict, optional
        Adds a labelled expected busbw, never a bound: the collective as NCCL runs it (ring,
        tree, NVLS, NVLS-tree or CollNet, whichever NCCL's tuner would pick at this size,
        :mod:`fabricopt.collectives.nccl`), held to the bound. ``True``: the calibrated
        profile of :data:`~fabricopt.collectives.efficiency.EFFICIENCY_PROFILES` for the
        fabric's NVLink generation; a profile name; or a dict ``{"scale_up": f, "nvls": f,
        "network": f}`` of efficiencies in (0, 1] (keys left out take
        :data:`~fabricopt.collectives.efficiency.DEFAULT_EFFICIENCY`). Scale-up links (NVLink,
        UALink) are those
        of :func:`fabricopt.tiers.is_scale_up`.
    latency : LatencyModel, optional
        Adds the alpha term (see :class:`LatencyModel`); default: none (pure bandwidth).
    scale_out_reduction : bool
        Let the scale-out switches (those without scale-up links) reduce, as InfiniBand
        SHARP on Quantum-2 and later does (all-reduce; needs in-network reduction on).
    concurrent : "rails" or list of groups, optional
        Run the collective in several disjoint groups of equal size at once, sharing the
        fabric: ``"rails"`` for one group per ``rail`` (GPU ``i`` of every node, the
        data-parallel groups). Default None: the group (``endpoints``) alone, free to use every
        link of the fabric, the other GPUs' NICs included.
    routing : {"ecmp", "wcmp", "hash", "static"}, optional
        Also route the ring schedule of the collective (all-reduce, all-gather,
        reduce-scatter) as deployed, with :func:`~fabricopt.routed_collective`, into the
        result's ``routed`` (``routed_busbw_GBps``, ``routed_busbw_distribution``): the busbw
        a ring gets under that routing, kept apart from the bounds (it is not one). Default
        None: bounds only.
    order : {"given", "rail_aligned", "random"}
        With ``routing``: the ring order of the participants
        (:func:`~fabricopt.routing.schedules.rank_order`).
    trials, flows_per_pair : int
        With ``routing="hash"``: hashed draws, and flows per ring edge (NCCL channels).
    seed : None, int or numpy.random.Generator
        With ``routing``: seed of a random order and of the hashed draws.

    Returns
    -------
    CollectiveBounds
        When some participant cannot reach another (the fabric splits them), no schedule
        exists: ``unreachable`` names the pair, ``busbw_GBps`` is 0 and ``lower_time_s``
        infinite, with a note saying what to do (pass ``endpoints=`` a connected group).

    Examples
    --------
    One DGX-style star: 8 GPUs, each with one 3,600 Gb/s (450 GB/s) link to a forwarding
    switch. All-reduce busbw cannot beat the per-GPU bandwidth
    (``docs/collectives.md#lower-bounds-without-in-network-reduction``).

    >>> import networkx as nx, fabricopt as fo
    >>> fab = fo.from_networkx(nx.star_graph(8), endpoints=range(1, 9),
    ...                        default_capacity=3600.0)
    >>> c = fo.collective_bounds(fab, "all_reduce", message_bytes=2**30)
    >>> round(c.busbw_GBps, 6)
    450.0

    A ring routed by ECMP through the star reaches that bound: every GPU's one link carries
    its ring edge in full.

    >>> c = fo.collective_bounds(fab, "all_reduce", message_bytes=2**30, routing="ecmp")
    >>> round(c.routed_busbw_GBps, 6)
    450.0

    Two such stars side by side are two islands: no all-reduce over all 16 GPUs can finish.

    >>> two = fo.from_networkx(nx.disjoint_union(nx.star_graph(8), nx.star_graph(8)),
    ...                        endpoints=[*range(1, 9), *range(10, 18)], default_capacity=3600.0)
    >>> c = fo.collective_bounds(two, "all_reduce", message_bytes=2**30)
    >>> c.busbw_GBps, c.lower_time_s, c.unreachable
    (0.0, inf, (1, 10))
    """
    func = "collective_bounds"
    ask = checked_ask(func, fab, collective, message_bytes, endpoints, in_network_reduction,
                       scale_out_reduction)
    profile = efficiency_profile(func, expected)
    checked_latency(func, latency)
    groups = _checked_groups(func, fab, concurrent, endpoints)
    routed = _routed_ring(func, ask, routing, order, trials, seed, flows_per_pair, groups)
    stage_report()(f"{collective} bounds", detail=f"{ask.n:,} GPUs")  # a terminal's status
    asks = [ask] if groups is None else [
        dataclasses.replace(ask, p=collective_problem(fab, g, ask.p.ga), notes=ask.notes,
                            _balanced=None) for g in groups]
    for one in asks:
        split = unreachable_pair(one.p, root_only=collective == "broadcast")
        if split is not None:
            return disconnected_result(one, split, profile, routed, len(asks))
    if groups is None:
        out = BY_COLLECTIVE[collective](ask)
    else:
        out = _concurrent(asks, [BY_COLLECTIVE[collective](a) for a in asks])
        ask = asks[0]
    n, size = ask.n, ask.size
    alpha_low, alpha_step = latency.alphas(fab, ask.p) if latency is not None else (0.0, 0.0)
    # Latency-bound steps of the achievable schedules: 2(n-1) for a ring all-reduce, else n-1.
    steps = 2 * (n - 1) if collective == "all_reduce" else n - 1
    lower_time = out.lower.time_s + alpha_low
    ach_time = None if out.achievable_s is None else out.achievable_s + steps * alpha_step
    if ach_time is not None and ach_time < lower_time:
        # Equal in exact arithmetic where the bounds meet (the 16,384-GPU rail-only cluster's
        # T_RS* + T_AG* came out one unit in the last place below its volume bound): no
        # schedule beats a lower bound, so the rounding goes the bound's way.
        ach_time = lower_time
    algbw = size / lower_time / 1e9
    result = CollectiveBounds(
        collective, n, size, lower_time, ach_time, algbw, algbw * bus_factor(collective, n),
        out.lower.name, out.lower.cut, out.bounds, out.in_network_reduction, alpha_low, None,
        ask.notes)
    if groups is not None:
        ask.notes.append(f"{len(groups)} groups of {n} GPUs run at once, sharing the fabric; "
                         "times are those of the slowest group")
    if profile is not None:
        result.expected = expected_figure(ask, out, profile, alpha_low)
    result.routed = routed
    return result


def disconnected_result(ask: Ask, split: tuple[Hashable, Hashable, np.ndarray],
                        profile: Any, routed: RoutedCollective | None = None,
                        groups: int = 1) -> CollectiveBounds:
    """The answer for participants the fabric splits (``split`` from
    :func:`~fabricopt.collectives.problem.unreachable_pair`): no schedule exists, so the time
    is infinite and every rate 0, never a figure computed over a group that cannot meet."""
    a, b, side = split
    cut = describe_cut(ask.p, side, "leaving")
    where = f" (one of {groups} concurrent groups)" if groups > 1 else ""
    why = (f"{a!r} cannot reach {b!r}{where}: no arc leaves the {len(cut.nodes):,} nodes "
           f"{a!r} reaches")
    bound = Bound("disconnected", math.inf, 0.0, 0.0, "lower", why, cut)
    ask.notes.append(f"{why}; no schedule exists. Pass endpoints= a group that is "
                     f"connected (the {cut.endpoints_inside:,} participants {a!r} reaches, "
                     "for one), or join the parts")
    expected = None
    if profile is not None:
        expected = {"busbw_GBps": 0.0, "time_s": math.inf, "profile": None, "algorithm": None,
                    "algorithm_times_s": {}, "efficiency": {},
                    "label": "expected 0 (the participants are not all connected: nothing "
                             "NCCL runs can finish)"}
    return CollectiveBounds(ask.collective, ask.n, ask.size, math.inf, None, 0.0, 0.0,
                            "disconnected", cut, [bound], False, 0.0, expected, ask.notes,
                            routed, unreachable=(a, b))


def _routed_ring(func: str, ask: Ask, routing: Any, order: Any, trials: Any, seed: Any,
                 flows_per_pair: Any, groups: Any) -> RoutedCollective | None:
    """The ring schedule under ``routing`` (checked first, so bad input fails before the
    bounds are computed), or None without a routing."""
    if routing is None:
        if order != "given" or trials != 1 or flows_per_pair != 1 or seed is not None:
            raise InvalidParameterError(
                f"{func}(): order, trials, flows_per_pair and seed route the ring and need "
                f"routing= (one of {', '.join(map(repr, ROUTINGS))}), got routing=None with "
                f"order={order!r}, trials={trials!r}, flows_per_pair={flows_per_pair!r}, "
                f"seed={seed!r}")
        return None
    check_choice(func, "routing", routing, ROUTINGS)
    check_choice(func, "order", order, ORDERS)
    if ask.collective not in ("all_reduce", "all_gather", "reduce_scatter"):
        raise InvalidParameterError(
            f"{func}(): routing= routes the ring schedule of all_reduce, all_gather and "
            f"reduce_scatter, got collective={ask.collective!r}")
    if groups is not None:
        raise InvalidParameterError(f"{func}(): routing= routes one group's ring; concurrent "
                                    f"must be None with it, got {len(groups)} groups")
    return routed_collective(ask.fab, ask.collective, ask.size, routing=routing,
                             order=order, endpoints=ask.p.gpu_names, trials=trials,
                             flows_per_pair=flows_per_pair, seed=seed)
