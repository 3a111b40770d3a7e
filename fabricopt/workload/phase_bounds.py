r"""Certified time of one phase: every group of a dimension sends at once on the shared fabric.

Two lower bounds, the larger holds (``docs/workload.md#time-from-the-fabric``):

* **one group alone** (collectives, groups of at most :data:`ALONE_MAX_GPUS`):
  :func:`fabricopt.collective_bounds` for the first group, free to use the whole fabric;
  every group is at least as slow with the others present.
* **cuts around fabric levels, all groups at once**: for every set ``X`` of a level (one
  GPU, one scale-up domain, every component of the switches up to one ``layer``: a leaf
  group, a scalable unit), the distinct bytes that must leave and enter ``X`` over its
  capacity. Per group holding ``h`` of its ``n`` ranks in ``X`` (``0 < h < n``): all-gather
  ``h S/n`` out and ``(n-h) S/n`` in (each chunk crosses once, whatever switches copy),
  reduce-scatter the reverse, all-reduce ``S`` each way (the sum depends on both sides),
  all-to-all ``h (n-h) S/n`` each way, a send ``S`` when its ends are split.

Send and all-to-all phases on fabrics up to :data:`FLOW_LP_MAX_GPUS` GPUs also get the
max-concurrent-flow bound of their traffic (:func:`fabricopt.max_concurrent_flow`). Bounds are
linear in the message size, so each (collective, dimensions) is solved once per byte.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain
from operator import methodcaller

import numpy as np

from ..collectives import collective_bounds
from ..collectives.efficiency import EFFICIENCY_PROFILES
from ..collectives.parts import Partition, partition
from ..fabric import Fabric
from ..failures.engine import max_concurrent_flow  # with the failure floor's stages
from ..graph_arrays import FabricShape, GraphArrays
from ..tiers import tier_of
from ..traffic import Traffic

#: Largest fabric whose send and all-to-all phases also get a flow LP (above it the LP of
#: thousands of point-to-point commodities outgrows memory; the cut bounds remain).
FLOW_LP_MAX_GPUS = 1024
#: Solver iterations (or approximate rounds) a phase's flow may take: a work limit, so a
#: training row is the same on a busy machine (it replaces 60 s). Only the flow's certified
#: upper bound is used, which holds wherever the solve stops. Measured: the send phases of
#: Llama 3 70B with PP 4 and 8 on superpod(2) and superpod(4) close by bounds alone, with the
#: same answer at 1,000 and 10,000.
PHASE_WORK_LIMIT = 10_000
BYTES_PER_GBPS = 1e9 / 8
#: Largest group whose one-group bound is computed: ForestColl's search takes a minimum cut
#: per GPU of a group that is not a symmetry orbit, minutes for a thousand GPUs of a 16K
#: fabric; larger groups keep the cut bounds (still certified, perhaps looser).
ALONE_MAX_GPUS = 256


@dataclass
class PhaseBound:
    """Least seconds per byte of one message kind, the tier that binds and how it was found."""

    seconds_per_byte: float
    binding_tier: str
    method: str
    notes: list[str] = field(default_factory=list)


@dataclass
class FabricLevels:
    """The fabric's arrays and the partitions whose parts the cut bound tries."""

    fab: Fabric
    ga: GraphArrays
    tiers: list[str]
    scale_up_tiers: frozenset[str]
    levels: list[Partition]
    profile: str  # the collectives' efficiency profile of the fabric's NVLink generation
    #: Every link carries the same both ways: the reversed graph is the graph, so a
    #: reduce-scatter's bounds are the all-gather's (ForestColl reverses the arcs for it).
    reversible: bool = False
    alone: dict = field(default_factory=dict)  # (collective, group) -> (s per byte, tier)
    #: Scale-up bandwidth out of each node, Gb/s (what a GPU's NVLink links carry).
    scale_up_gbps: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @classmethod
    def of(cls, fab: Fabric, ga: GraphArrays) -> FabricLevels:
        # The arrays read each arc's tier already (tier_of's rule); looking every arc up in
        # the graph again was a fifth of a 16K-GPU step.
        tiers = (list(ga.tiers) if len(ga.tiers) == ga.n_arcs
                 else [tier_of(fab.graph[u][v]) for u, v in ga.arcs])
        shape = FabricShape.of(fab, ga)
        scale_up = shape.scale_up
        gpu = np.zeros(ga.n_nodes, dtype=bool)
        gpu[shape.endpoint_index] = True
        layer = shape.layer
        # levels[1] is the scale-up partition: placement reads its domains from it.
        levels = [partition(ga, gpu, np.zeros(ga.n_arcs, dtype=bool), "GPUs"),
                  partition(ga, gpu, scale_up, "scale-up domains")]
        known = sorted({int(x) for x in layer if x >= 0})
        for top in known[1:-1]:  # up to each switch layer below the highest
            inside = (layer >= 0) & (layer <= top)
            levels.append(partition(ga, gpu, inside[ga.tail] & inside[ga.head],
                                    f"switch layers <= {top}"))
        # Distinct labels first, by C-level maps over the adjacency dicts (GraphArrays's way).
        data = chain.from_iterable(map(dict.values, fab.graph._adj.values()))
        techs = {str(t).lower() for t in set(map(methodcaller("get", "tech", ""), data))}
        profile = next((g for g in ("nvlink5", "nvlink3") if g in EFFICIENCY_PROFILES
                        and any(t.startswith(g) for t in techs)), "nvlink4")
        order = np.lexsort((ga.head, ga.tail))
        back = np.lexsort((ga.tail, ga.head))
        reversible = bool(np.array_equal(ga.tail[order], ga.head[back])
                          and np.array_equal(ga.head[order], ga.tail[back])
                          and np.array_equal(ga.capacity[order], ga.capacity[back]))
        up = np.bincount(ga.tail[scale_up], weights=ga.capacity[scale_up],
                         minlength=ga.n_nodes)
        return cls(fab, ga, tiers, frozenset(t for t, s in zip(tiers, scale_up, strict=True)
                                             if s), levels, profile, reversible,
                   scale_up_gbps=up)

    def part_tier(self, part: Partition, q: int) -> str:
        """The tier carrying most capacity out of part ``q``."""
        ga = self.ga
        out = np.flatnonzero((part.label[ga.tail] == q) & (part.label[ga.head] != q))
        by: dict[str, float] = {}
        for a in out:
            by[self.tiers[a]] = by.get(self.tiers[a], 0.0) + float(ga.capacity[a])
        return max(by.items(), key=lambda kv: kv[1])[0] if by else "?"


def _volumes(label: np.ndarray, groups: np.ndarray, collective: str, n_parts: int,
             ) -> tuple[np.ndarray, np.ndarray]:
    """Bytes per unit message that must leave and enter each part (see module docstring)."""
    n_groups, n = groups.shape
    out = np.zeros(n_parts)
    inn = np.zeros(n_parts)
    lab = label[groups]                                       # groups x n
    if collective == "p2p":  # groups are (sender, receiver) pairs
        split = lab[:, 0] != lab[:, 1]
        np.add.at(out, lab[split, 0], 1.0)
        np.add.at(inn, lab[split, 1], 1.0)
        return out, inn
    keys = (np.arange(n_groups)[:, None] * n_parts + lab).ravel()
    uniq, h = np.unique(keys, return_counts=True)
    q = uniq % n_parts
    sep = h < n
    q, h = q[sep], h[sep].astype(float)
    if collective == "all_gather":
        o, i = h / n, (n - h) / n
    elif collective == "reduce_scatter":
        o, i = (n - h) / n, h / n
    elif collective == "all_reduce":
        o = i = np.ones_like(h)
    else:  # all_to_all: S/n from each of the h ranks inside to each of the n - h outside
        o = i = h * (n - h) / n
    np.add.at(out, q, o)
    np.add.at(inn, q, i)
    return out, inn


def cut_bound(levels: FabricLevels, rank_nodes: np.ndarray, groups: np.ndarray,
              collective: str) -> tuple[float, str, str]:
    """(seconds per byte, binding tier, level name) of the cut bound, all groups at once;
    ``rank_nodes[r]`` is the node index of rank ``r``."""
    best, tier, where = 0.0, "?", "-"
    nodes = rank_nodes[groups]
    for part in levels.levels:
        out, inn = _volumes(part.label, nodes, collective, part.n_parts)
        # A capacity near zero (a link of 1e-320 Gb/s) overflows to an infinite time, which
        # the step refuses by name: no warning on the way.
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            t = np.maximum(np.where(out > 0, out / (part.egress_gbps * BYTES_PER_GBPS), 0.0),
                           np.where(inn > 0, inn / (part.ingress_gbps * BYTES_PER_GBPS), 0.0))
        q = int(np.argmax(t))
        if t[q] > best:
            best, tier, where = float(t[q]), levels.part_tier(part, q), part.name
    return best, tier, where


def _alone(levels: FabricLevels, names: list, collective: str) -> tuple[float, str]:
    """Seconds per byte and binding tier of :func:`collective_bounds` for one group alone
    (a reduce-scatter reuses the all-gather of the same group on a reversible fabric)."""
    if collective == "reduce_scatter" and levels.reversible:
        collective = "all_gather"
    key = (collective, tuple(names))
    if key not in levels.alone:
        size = 1e9
        c = collective_bounds(levels.fab, collective, message_bytes=size, endpoints=names)
        tier = "?"
        if c.binding_cut is not None and c.binding_cut.tiers:
            tier = max(c.binding_cut.tiers.items(), key=lambda kv: kv[1])[0]
        levels.alone[key] = (c.lower_time_s / size, tier)
    return levels.alone[key]


def _flow(levels: FabricLevels, gpus: tuple, groups: np.ndarray, collective: str,
          ) -> tuple[float, str, str]:
    """Seconds per byte from the max-concurrent-flow of the phase's traffic (a demand of 1 GB
    per second of each byte sent), and its status."""
    demand: dict[tuple, float] = {}
    scale = 8.0  # Gb/s to move one byte per unit time, per 1e9 bytes of message
    for row in groups:
        if collective == "p2p":
            demand[(gpus[row[0]], gpus[row[1]])] = scale
            continue
        n = len(row)
        for a in row:
            for b in row:
                if a != b:
                    demand[(gpus[a], gpus[b])] = scale / n
    r = max_concurrent_flow(levels.fab, Traffic(demand), work_limit=PHASE_WORK_LIMIT)
    if r.upper <= 0:
        return float("inf"), r.binding_tier or "?", r.status
    return 1.0 / r.upper / 1e9, r.binding_tier or "?", f"{r.status} ({r.method})"


def phase_bound(levels: FabricLevels, gpus: tuple, rank_nodes: np.ndarray, groups: np.ndarray,
                collective: str) -> PhaseBound:
    """The certified seconds per byte of one message of ``collective`` run by every row of
    ``groups`` (ranks) at once."""
    t, tier, where = cut_bound(levels, rank_nodes, groups, collective)
    best = PhaseBound(t, tier, f"cut around {where}, all groups at once")
    if collective in ("all_gather", "reduce_scatter", "all_reduce"):
        if groups.shape[1] > ALONE_MAX_GPUS:
            best.notes.append(f"{collective}: cut bounds only (groups of {groups.shape[1]:,} "
                              f"GPUs; one-group bounds up to {ALONE_MAX_GPUS})")
            return best
        t1, tier1 = _alone(levels, [gpus[r] for r in groups[0]], collective)
        if t1 > best.seconds_per_byte:
            best = PhaseBound(t1, tier1, "collective_bounds of one group alone")
    elif len(levels.fab.endpoints) <= FLOW_LP_MAX_GPUS:
        t1, tier1, status = _flow(levels, gpus, groups, collective)
        if t1 >= best.seconds_per_byte:
            best = PhaseBound(t1, tier1, f"max-concurrent-flow of the phase, {status}")
    else:
        best.notes.append(f"{collective}: cut bounds only (the fabric has more than "
                          f"{FLOW_LP_MAX_GPUS:,} GPUs for the flow LP of this traffic)")
    return best


__all__ = ["ALONE_MAX_GPUS", "FLOW_LP_MAX_GPUS", "PHASE_WORK_LIMIT", "FabricLevels",
           "PhaseBound", "cut_bound", "phase_bound"]
