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
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._checks import check_bool, check_choice, check_endpoint_group, check_int, check_positive
from ..analysis.cuts import cut_capacity, min_cut
from ..catalog import Catalog
from ..errors import InvalidFabricError, InvalidParameterError
from ..fabric import Fabric
from ..flow import max_concurrent_flow
from ..flow.symmetric import endpoint_orbits
from ..graph_arrays import GraphArrays
from ..routing.api import ROUTINGS
from ..routing.schedules import ORDERS, RoutedCollective, routed_collective
from ..tiers import is_scale_up_arc, scale_up_tiers, tier_of
from ..traffic import all_to_all
from .parts import Partition, all_reduce_volume_s, part_cut_s, partition

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast")
GBPS_TO_BYTES = 1e9 / 8  # one Gb/s of capacity moves this many bytes per second


def bus_factor(collective: str, n_endpoints: int) -> float:
    """nccl-tests' busbw / algbw factor.

    >>> bus_factor("all_reduce", 8), bus_factor("all_gather", 8), bus_factor("broadcast", 8)
    (1.75, 0.875, 1.0)
    """
    n = n_endpoints
    if collective == "all_reduce":
        return 2 * (n - 1) / n
    if collective == "broadcast":
        return 1.0
    return (n - 1) / n


@dataclass(frozen=True)
class CutInfo:
    """A set of nodes that binds a bound: GPUs inside, capacity leaving (or entering), and
    how many of its crossing arcs lie in each tier."""

    endpoints_inside: int
    capacity_gbps: float
    direction: str
    tiers: dict[str, int]
    nodes: frozenset[Hashable] = field(repr=False, default=frozenset())

    def describe(self) -> str:
        tiers = ", ".join(f"{t}: {k}" for t, k in sorted(self.tiers.items()))
        return (f"{self.endpoints_inside:,} GPU(s) inside, {self.capacity_gbps:,.6g} Gb/s "
                f"{self.direction} ({tiers})")


@dataclass(frozen=True)
class Bound:
    """One time bound with its rates and the reason it holds."""

    name: str
    time_s: float
    algbw_GBps: float
    busbw_GBps: float
    kind: str          # "lower" (no algorithm is faster) or "achievable" (some algorithm is)
    why: str
    cut: CutInfo | None = None


@dataclass
class CollectiveBounds:
    """What :func:`collective_bounds` returns.

    ``lower_time_s`` is the largest lower bound (no algorithm on this fabric is faster);
    ``achievable_time_s`` the best schedule known to exist; ``algbw_GBps``/``busbw_GBps`` the
    best rates the fabric allows (from ``lower_time_s``). ``bounds`` lists every bound
    computed; ``expected`` (when asked for) is a labelled estimate, kept apart.

    ``routed`` (when ``routing=`` is given) is neither a bound nor an estimate: the ring
    schedule routed as deployed (:func:`~fabricopt.routed_collective`), what a ring gets with
    that routing's collisions; ``routed_busbw_GBps`` and ``routed_busbw_distribution`` read
    it. No routing lets the ring beat ``busbw_GBps``.
    """

    collective: str
    n_endpoints: int
    message_bytes: float
    lower_time_s: float
    achievable_time_s: float | None
    algbw_GBps: float
    busbw_GBps: float
    binding: str
    binding_cut: CutInfo | None
    bounds: list[Bound]
    in_network_reduction: bool
    latency_s: float = 0.0
    expected: dict[str, float] | None = None
    notes: list[str] = field(default_factory=list)
    routed: RoutedCollective | None = None

    @property
    def routed_busbw_GBps(self) -> float | None:
        """Busbw of the ring under ``routing`` (the median hashed trial), pure bandwidth (no
        latency term); None without ``routing``."""
        return None if self.routed is None else self.routed.busbw_GBps

    @property
    def routed_busbw_distribution(self) -> dict[str, float] | None:
        """The routed ring's busbw over the hashed trials (GB/s): ``min``, ``p5``,
        ``median``, ``p95``, ``max`` and ``mean``; one trial for a deterministic routing."""
        if self.routed is None:
            return None
        t = np.asarray(self.routed.busbw_GBps_trials, dtype=float)
        p5, median, p95 = np.percentile(t, [5, 50, 95])
        return {"min": float(t.min()), "p5": float(p5), "median": float(median),
                "p95": float(p95), "max": float(t.max()), "mean": float(t.mean())}

    @property
    def achievable_busbw_GBps(self) -> float | None:
        if self.achievable_time_s is None:
            return None
        return self.message_bytes / self.achievable_time_s / 1e9 * bus_factor(
            self.collective, self.n_endpoints)

    def __str__(self) -> str:
        # The size as the user wrote it: a whole number of one unit (1 GiB, 512 MB).
        size = self.message_bytes
        shown = next((f"{size / b:.0f} {u}" for u, b in (
            ("TiB", 2**40), ("TB", 1e12), ("GiB", 2**30), ("GB", 1e9), ("MiB", 2**20),
            ("MB", 1e6), ("KiB", 2**10), ("kB", 1e3)) if size % b == 0 and 1 <= size / b < 1024),
            f"{size:,.0f} bytes")
        lines = [f"{self.collective} of {shown} on {self.n_endpoints:,} GPUs"
                 + (" (in-network reduction)" if self.in_network_reduction else "")]
        lines.append(f"  best possible  {self.lower_time_s * 1e3:.6g} ms, algbw "
                     f"{self.algbw_GBps:.6g} GB/s, busbw {self.busbw_GBps:.6g} GB/s "
                     f"(binding: {self.binding})")
        if self.achievable_time_s is not None:
            lines.append(f"  achievable     {self.achievable_time_s * 1e3:.6g} ms, busbw "
                         f"{self.achievable_busbw_GBps:.6g} GB/s")
        if self.binding_cut is not None:
            lines.append(f"  binding cut    {self.binding_cut.describe()}")
        if self.expected:
            label = str(self.expected["label"]).removeprefix("expected ")
            lines.append(f"  expected       busbw {self.expected['busbw_GBps']:.6g} GB/s "
                         + (label if label.startswith("(") else f"({label})"))
        if self.routed is not None:
            r = self.routed
            line = (f"  routed ring    busbw {r.busbw_GBps:.6g} GB/s under {r.routing} "
                    f"({r.order} order; the ring as routed, not a bound)")
            if len(r.busbw_GBps_trials) > 1:
                d = self.routed_busbw_distribution
                line += (f"; over {len(r.busbw_GBps_trials)} trials p5 {d['p5']:.6g}, "  # type: ignore[index]
                         f"median {d['median']:.6g} GB/s")  # type: ignore[index]
            lines.append(line)
        return "\n".join(lines)


# -- the graph of a collective ----------------------------------------------------------------
@dataclass(frozen=True)
class _Problem:
    ga: GraphArrays
    gpus: np.ndarray          # node indices of the participants
    gpu_names: tuple[Hashable, ...]
    tiers: list[str]          # per arc
    scale_up_tiers: frozenset[str]
    # One participant per GPU orbit under a claimed symmetry (every endpoint taking part),
    # else None: a search over the participants may stop at these.
    orbit_reps: np.ndarray | None
    scale_up_arc: np.ndarray  # per arc: NVLink / UALink (fabricopt.tiers.is_scale_up_arc)
    reduce_attr: np.ndarray   # per node: the switch says reduce=True
    is_switch: np.ndarray     # per node: role "switch"

    @property
    def symmetric(self) -> bool:
        """One GPU orbit under a claimed symmetry (the group is transitive on them)."""
        return self.orbit_reps is not None and len(self.orbit_reps) == 1


def _problem(fab: Fabric, endpoints: Sequence[Hashable], ga: GraphArrays | None = None,
             ) -> _Problem:
    ga = GraphArrays.from_fabric(fab) if ga is None else ga
    gpus = np.array([ga.index[e] for e in endpoints])
    arcs = [fab.graph[u][v] for u, v in ga.arcs]
    orbit_reps = None
    sym = fab.symmetry
    if sym is not None and len(endpoints) == len(fab.endpoints):
        first = np.unique(endpoint_orbits(sym, tuple(endpoints)), return_index=True)[1]
        orbit_reps = gpus[np.sort(first)]
    reduce_attr = np.array([fab.graph.nodes[v].get("reduce") is True for v in ga.nodes])
    return _Problem(ga, gpus, tuple(endpoints), [tier_of(d) for d in arcs],
                    scale_up_tiers(arcs), orbit_reps,
                    np.array([is_scale_up_arc(d) for d in arcs], dtype=bool), reduce_attr,
                    np.array([fab.graph.nodes[v].get("role") == "switch" for v in ga.nodes]))


def _check_reduce_attributes(func: str, fab: Fabric) -> None:
    """Every node's ``reduce`` attribute, when present, is a bool (a string such as ``"no"``
    would otherwise read as true)."""
    for v, d in fab.graph.nodes(data=True):
        value = d.get("reduce")
        if value is not None and not isinstance(value, bool | np.bool_):
            raise InvalidFabricError(f"{func}(): fab node {v!r} has reduce={value!r}; reduce "
                                     "must be True or False")


def _reducing_switches(p: _Problem, scale_out_reduction: bool) -> tuple[np.ndarray, np.ndarray]:
    """(scale-up, scale-out) masks of the nodes that may reduce: switches with
    ``reduce=True`` that touch a scale-up link (NVLink SHARP), and switches that touch none and
    either say ``reduce=True`` or are made to by ``scale_out_reduction`` (InfiniBand SHARP)."""
    ga = p.ga
    touches_up = np.zeros(ga.n_nodes, dtype=bool)
    touches_up[ga.tail[p.scale_up_arc]] = True
    touches_up[ga.head[p.scale_up_arc]] = True
    red_up = p.reduce_attr & touches_up & p.is_switch
    red_out = p.is_switch & ~touches_up & (p.reduce_attr | scale_out_reduction)
    return red_up, red_out


def _reversed(p: _Problem) -> _Problem:
    ga = p.ga
    rga = GraphArrays(ga.nodes, ga.index, [(v, u) for u, v in ga.arcs], ga.head, ga.tail,
                      ga.capacity)
    return dataclasses.replace(p, ga=rga)


def _cut_info(p: _Problem, side: np.ndarray, direction: str) -> CutInfo:
    value, arcs = cut_capacity(p.ga, side)
    tiers = Counter(p.tiers[a] for a in arcs)
    return CutInfo(int(side[p.gpus].sum()), value, direction, dict(tiers),
                   frozenset(p.ga.nodes[i] for i in np.flatnonzero(side)))


def _ratio(p: _Problem, side: np.ndarray) -> float:
    inside = int(side[p.gpus].sum())
    if inside == 0 or inside == len(p.gpus):
        return 0.0
    value, _ = cut_capacity(p.ga, side)
    return math.inf if value <= 0 else inside / value


def forestcoll_ratio(p: _Problem, max_iter: int = 50) -> tuple[float, np.ndarray, bool]:
    """Max over node sets X (some, not all GPUs) of |X cap G| / B_out(X) in 1/(Gb/s).

    Dinkelbach: with the best ratio ``lam`` so far, minimise ``B_out(X) + |G \\ X| / lam``
    over X missing GPU ``w`` (a minimum cut with arcs of ``1/lam`` from a super-source to
    every GPU); a value below ``|G| / lam`` is a set with a larger ratio. Returns
    ``(ratio, X, proven)`` where ``proven`` is False if a rounded max-flow search could have
    missed a better set.
    """
    ga, gpus = p.ga, p.gpus
    n = len(gpus)
    # Start from the single GPU with the least egress.
    best_side = np.zeros(ga.n_nodes, dtype=bool)
    egress = np.bincount(ga.tail, weights=ga.capacity, minlength=ga.n_nodes)[gpus]
    best_side[gpus[int(np.argmin(egress))]] = True
    lam = _ratio(p, best_side)
    if math.isinf(lam):
        return lam, best_side, True
    proven = True
    # X missing w and its image under an automorphism g (missing g(w)) have one ratio.
    targets = gpus if p.orbit_reps is None else p.orbit_reps
    for _ in range(max_iter):
        improved = False
        for w in targets:
            others = gpus[gpus != w]
            # Divided by lam, F(X) = B_out(X) + |G \ X| / lam: arcs keep their Gb/s and each
            # GPU left outside costs 1/lam Gb/s, all of one magnitude for the integer search.
            cut = min_cut(ga, others, np.array([w]),
                          source_caps=np.full(len(others), 1.0 / lam))
            proven &= cut.exact_search
            # F(X) + 1/lam (w is outside too) below n/lam means a better ratio.
            if (cut.capacity + 1.0 / lam) * lam < n * (1 - 1e-12):
                r = _ratio(p, cut.side)
                if r > lam * (1 + 1e-12):
                    lam, best_side, improved = r, cut.side, True
                    if math.isinf(lam):
                        return lam, best_side, True
                    break
        if not improved:
            return lam, best_side, proven
    return lam, best_side, False


def scatter_ratio(p: _Problem, root: int, max_iter: int = 50) -> tuple[float, np.ndarray, bool]:
    """Max over node sets X holding the root (not every GPU) of |G \\ X| / B_out(X).

    The root can send ``r`` to every other GPU at once iff ``r`` times that ratio is at most
    one, so a scatter of ``S/n`` per GPU takes ``(S/n) x ratio``. Dinkelbach as in
    :func:`forestcoll_ratio`, with unit arcs from each other GPU to a super-sink.
    """
    ga, gpus = p.ga, p.gpus
    others = gpus[gpus != root]
    side = np.zeros(ga.n_nodes, dtype=bool)
    side[root] = True

    def ratio(x: np.ndarray) -> float:
        outside = int((~x[others]).sum())
        value, _ = cut_capacity(ga, x)
        if outside == 0:
            return 0.0
        return math.inf if value <= 0 else outside / value

    lam = ratio(side)
    proven = True
    for _ in range(max_iter):
        if math.isinf(lam):
            return lam, side, True
        cut = min_cut(ga, np.array([root]), others,
                      sink_caps=np.full(len(others), 1.0 / lam))
        proven &= cut.exact_search
        # B_out(X) + |others in X| / lam < |others| / lam means a larger ratio.
        r = ratio(cut.side)
        if cut.capacity * lam < len(others) * (1 - 1e-12) and r > lam * (1 + 1e-12):
            lam, side = r, cut.side
        else:
            return lam, side, proven
    return lam, side, False


def _forwarders_balanced(p: _Problem) -> bool:
    """True when every node that is not a participant has as much capacity in as out
    (ForestColl's schedules split switches off as Eulerian nodes)."""
    ga = p.ga
    cap_in = np.bincount(ga.head, weights=ga.capacity, minlength=ga.n_nodes)
    cap_out = np.bincount(ga.tail, weights=ga.capacity, minlength=ga.n_nodes)
    forwarder = np.ones(ga.n_nodes, dtype=bool)
    forwarder[p.gpus] = False
    return bool(np.allclose(cap_in[forwarder], cap_out[forwarder], rtol=1e-9, atol=0))


def _pair_cut_min(p: _Problem, root: int, limit: int = 64) -> tuple[float, np.ndarray | None]:
    """Smallest cut separating GPUs found: single GPUs (exact, all of them) and min cuts
    from ``root`` to up to ``limit`` other GPUs, in both directions. Any value returned is
    the capacity of a real GPU-separating cut."""
    ga, gpus = p.ga, p.gpus
    egress = np.bincount(ga.tail, weights=ga.capacity, minlength=ga.n_nodes)[gpus]
    ingress = np.bincount(ga.head, weights=ga.capacity, minlength=ga.n_nodes)[gpus]
    best = float(min(egress.min(), ingress.min()))
    best_side: np.ndarray | None = None
    others = gpus[gpus != root]
    if p.symmetric:
        others = others[: min(len(others), limit)]
    elif len(others) > limit:
        others = others[np.linspace(0, len(others) - 1, limit).astype(int)]
    for v in others:
        for a, b in ((root, v), (v, root)):
            cut = min_cut(ga, np.array([a]), np.array([b]))
            if cut.capacity < best:
                best, best_side = cut.capacity, cut.side
    return best, best_side


def _reduce_domains(p: _Problem, red_up: np.ndarray) -> tuple[list[list[int]], float]:
    """Groups of participants that share reducing scale-up switches (``red_up``), and the
    least bandwidth (Gb/s, per direction) from a participant to such switches."""
    ga = p.ga
    is_gpu = np.zeros(ga.n_nodes, dtype=bool)
    is_gpu[p.gpus] = True
    to_reduce = is_gpu[ga.tail] & red_up[ga.head]
    if not to_reduce.any():
        return [], 0.0
    # Union participants through the reduce switches they touch.
    parent = list(range(ga.n_nodes))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a in np.flatnonzero(to_reduce):
        parent[find(int(ga.tail[a]))] = find(int(ga.head[a]))
    groups: dict[int, list[int]] = {}
    for g in p.gpus:
        groups.setdefault(find(int(g)), []).append(int(g))
    bw = np.bincount(ga.tail[to_reduce], weights=ga.capacity[to_reduce], minlength=ga.n_nodes)
    return list(groups.values()), float(bw[p.gpus].min())


def _time(bytes_: float, gbps: float) -> float:
    return math.inf if gbps <= 0 else bytes_ / (gbps * GBPS_TO_BYTES)


#: Efficiency profiles for ``expected=True``, calibrated on published nccl-tests all-reduce
#: busbw at large sizes (``docs/collectives.md#expected-efficiency-not-a-bound``). Each is the
#: measured busbw over this module's figure for the algorithm that ran:
#:
#: * ``"scale_up"``: a ring over NVLink, against the bound (the per-GPU NVLink bandwidth);
#: * ``"nvls"``: NVLink SHARP, against its schedule as NCCL runs it (``S + S/g`` per GPU);
#: * ``"network"``: the scale-out phase over the NICs.
#:
#: nvlink4 (8 x H100, 450 GB/s per GPU): ring about 370 GB/s and NVLS about 480 GB/s
#: (NVIDIA/nccl-tests issue 212, an NCCL maintainer; NVIDIA/nccl issue 1455 measures 365-370
#: and 480). nvlink5 (8 x B300, 900 GB/s per GPU; no B200 figure was found and a DGX B200 has
#: the same per-GPU NVLink): ring 695 and NVLS 845 GB/s (NVIDIA/nccl issue 2140).
#: nvlink5-rack (GB200 NVL72, all 72 GPUs): 834.6 GB/s out of place at 8 GiB (the GB200
#: NVL72 example of CoreWeave's nccl-tests fork, pull request 43), read as NVLS (NCCL's
#: default there). The network figure, 0.94, is inside the 92-96% of NIC line rate reported
#: for tuned InfiniBand rings: an estimate without a cited measurement.
EFFICIENCY_PROFILES: dict[str, dict[str, float]] = {
    "nvlink4": {"scale_up": 370.0 / 450.0, "nvls": 480.0 / 700.0, "network": 0.94},
    "nvlink5": {"scale_up": 695.0 / 900.0, "nvls": 845.0 / 1400.0, "network": 0.94},
    "nvlink5-rack": {"scale_up": 695.0 / 900.0,
                     "nvls": 834.57 / (900.0 * (2 * 71 / 72) / (1 + 1 / 72)),
                     "network": 0.94},
}

#: The profile used when the fabric's scale-up links name no NVLink generation.
DEFAULT_EFFICIENCY = EFFICIENCY_PROFILES["nvlink4"]


# -- one function per collective ----------------------------------------------------------------
@dataclass
class _Ask:
    """One collective asked of one problem: the buffer, its participants and the notes the
    computation leaves for the caller."""

    fab: Fabric
    p: _Problem
    collective: str
    size: float
    in_network_reduction: bool | str = "auto"
    notes: list[str] = field(default_factory=list)
    _balanced: bool | None = None
    scale_out_reduction: bool = False

    def reducing(self) -> tuple[np.ndarray, np.ndarray]:
        """(scale-up, scale-out) masks of the switches that reduce in this computation
        (:func:`_reducing_switches`), both empty when in-network reduction is off."""
        if self.in_network_reduction is False:
            none = np.zeros(self.p.ga.n_nodes, dtype=bool)
            return none, none
        return _reducing_switches(self.p, self.scale_out_reduction)

    @property
    def n(self) -> int:
        return len(self.p.gpus)

    @property
    def chunk(self) -> float:
        return self.size / self.n

    def forwarders_balanced(self) -> bool:
        """Whether ForestColl's schedules apply (:func:`_forwarders_balanced`); the first
        answer No leaves a note."""
        if self._balanced is None:
            self._balanced = _forwarders_balanced(self.p)
            if not self._balanced:
                self.notes.append("some forwarding node has unequal capacity in and out, so "
                                  "the ForestColl optimum is a lower bound only (its schedules "
                                  "need balanced switches); no achievable time is claimed for "
                                  "all-gather/reduce-scatter")
        return self._balanced

    def bound(self, name: str, t: float, kind: str, why: str,
              cut: CutInfo | None = None) -> Bound:
        """A time bound of this collective with its algbw and busbw."""
        algbw = self.size / t / 1e9 if t > 0 else math.inf
        return Bound(name, t, algbw, algbw * bus_factor(self.collective, self.n), kind, why, cut)


@dataclass
class _Outcome:
    """What one collective's function finds: its binding (largest) lower bound, the best
    achievable time, and every bound computed."""

    lower: Bound
    achievable_s: float | None
    bounds: list[Bound]
    in_network_reduction: bool = False
    #: Phase times of the in-network reduction schedule: {"nvls": s, "network": s}.
    inr_phases_s: dict[str, float] | None = None


def _forestcoll(ask: _Ask, problem: _Problem, name: str,
                direction: str) -> tuple[float | None, Bound]:
    """The ForestColl all-gather optimum on ``problem`` (the reversed graph gives
    reduce-scatter): its bound, and its time when a schedule reaches it (balanced switches)."""
    # Reversing every arc keeps each node's capacity in and out: one answer serves both.
    balanced = ask.forwarders_balanced()
    ratio, side, proven = forestcoll_ratio(problem)
    t = ask.chunk * ratio / GBPS_TO_BYTES
    if not proven:
        ask.notes.append(f"{name}: the max-flow search was rounded; the cut found is real, "
                         "but a slightly tighter one may exist")
    bound = ask.bound(name, t, "exact" if balanced else "lower",
                      "ForestColl cut formula (forwarding-only switches)",
                      _cut_info(problem, side, direction))
    return (t if balanced else None), bound


def _all_gather(ask: _Ask) -> _Outcome:
    t, b = _forestcoll(ask, ask.p, "all-gather optimum", "leaving")
    return _Outcome(b, t, [b])


def _reduce_scatter(ask: _Ask) -> _Outcome:
    t, b = _forestcoll(ask, _reversed(ask.p), "reduce-scatter optimum", "entering")
    return _Outcome(b, t, [b])


def _partitions(p: _Problem, combining: np.ndarray) -> list[Partition]:
    """The two partitions the volume bounds use: the finest (participants and reducing
    switches joined by arcs between them) and the scale-up one (also joined through every
    scale-up link, so a whole NVLink domain is one part)."""
    ga = p.ga
    direct = combining[ga.tail] & combining[ga.head]
    return [partition(ga, combining, direct, "finest"),
            partition(ga, combining, direct | p.scale_up_arc, "scale-up domains")]


def _volume_bound(ask: _Ask, groups: Sequence[np.ndarray], combining: np.ndarray,
                  reducing: bool) -> Bound:
    """The all-reduce volume bound over parts (``docs/collectives.md#volume-over-parts``):
    the larger over the finest and the scale-up partition."""
    best_t, best = 0.0, None
    for part in _partitions(ask.p, combining):
        t = all_reduce_volume_s(part, groups, ask.size)
        if t > best_t:
            best_t, best = t, part
    parts = 0 if best is None else len(np.unique(best.label[groups[0]]))
    inside = "reducing parts" if reducing else "parts"
    why = (f"{parts} {inside} per group ({best.name if best else '-'}); the parts together "
           "send and receive 2(m-1) times the buffer (Patarasuk and Yuan)")
    # The boundary of the first participant's part stands for the links that bind.
    cut = None if best is None else _cut_info(ask.p, best.label == best.label[groups[0][0]],
                                               "leaving")
    return ask.bound("volume", best_t, "lower", why, cut)


def _sharp_single_switch(ask: _Ask, red_out: np.ndarray) -> bool:
    """True when the GPUs that aggregate together in the scale-out (those of one ``rail``,
    or all participants when they name none) reach one common reducing switch directly: the
    aggregation then needs no switch-to-switch link and runs at the NICs' rate."""
    p, ga = ask.p, ask.p.ga
    graph = ask.fab.graph
    rails: dict[Any, list[int]] = {}
    for name, g in zip(p.gpu_names, p.gpus, strict=True):
        rails.setdefault(graph.nodes[name].get("rail"), []).append(int(g))
    for members in rails.values():
        common: set[int] | None = None
        for g in members:
            arcs = ga.tail == g
            here = {int(h) for h in ga.head[arcs] if red_out[h]}
            common = here if common is None else common & here
        if not common:
            return False
    return True


def _all_reduce(ask: _Ask) -> _Outcome:
    """Reduce-scatter + all-gather, the volume and any-scheme cut bounds, and in-network
    reduction where switches reduce (see the module docstring)."""
    p, n, size = ask.p, ask.n, ask.size
    t_ag, b_ag = _forestcoll(ask, p, "all-gather optimum", "leaving")
    t_rs, b_rs = _forestcoll(ask, _reversed(p), "reduce-scatter optimum", "entering")
    cut_min, cut_side = _pair_cut_min(p, int(p.gpus[0]))
    t_sum = math.inf if t_rs is None or t_ag is None else t_rs + t_ag
    b_sum = ask.bound("reduce-scatter + all-gather", t_sum, "achievable",
                      "ForestColl reduce-scatter then all-gather")
    red_up, red_out = ask.reducing()
    domains, b_up = _reduce_domains(p, red_up)
    if domains and max(len(d) for d in domains) < 2:
        domains = []  # one participant per reducing domain: nothing to reduce in a switch
    sharp = bool(red_out.any())
    use_inr = (bool(domains) or sharp) and ask.in_network_reduction in ("auto", True)
    if ask.in_network_reduction is True and not use_inr:
        ask.notes.append("in-network reduction asked for, but no participant reaches a switch "
                         "with reduce=True")
    participants = np.zeros(p.ga.n_nodes, dtype=bool)
    participants[p.gpus] = True
    combining = participants | ((red_up | red_out) if use_inr else False)
    b_vol = _volume_bound(ask, [p.gpus], combining, use_inr)
    # The boundary of each scale-up domain is a cut too (one a pair search may not meet).
    part_t, part_q = part_cut_s(_partitions(p, combining)[1], [p.gpus], size, "all_reduce")
    t_cut, cut_why = _time(size, cut_min), "every GPU-separating cut carries the buffer both ways"
    cut_info = _cut_info(p, cut_side, "leaving") if cut_side is not None else None
    if part_t > t_cut:
        side = _partitions(p, combining)[1].label == part_q
        t_cut, cut_info = part_t, _cut_info(p, side, "leaving")
    b_cut = ask.bound("any-scheme cut", t_cut, "lower", cut_why, cut_info)
    bounds = [b_rs, b_ag] + ([b_vol] if b_vol.time_s > 0 else []) + [b_cut] + (
        [b_sum] if math.isfinite(t_sum) else [])
    if not use_inr:
        lower = max([b_rs, b_ag, b_vol, b_cut], key=lambda b: b.time_s)
        return _Outcome(lower, t_sum if math.isfinite(t_sum) else None, bounds)
    # Reduce inside each scale-up domain in its switches (S + S/g per GPU each way as NCCL
    # runs NVLS), combine the S/g shards across the k domains over the scale-out (a ring of
    # 2(k-1)/k S/g per NIC, or S/g each way with SHARP aggregating in the switches), and
    # multicast back. The phases use different links, so pipelined over chunks the time
    # tends to the slowest phase.
    k = len(domains) if domains else n
    g = min(len(d) for d in domains) if domains else 1
    shard = size / g
    t_in = _time(size + size / g, b_up) if domains else 0.0
    t_in_ideal = _time(size, b_up) if domains else 0.0
    b_out = _scale_out_gbps(p, red_up)
    if k == 1:
        t_out = 0.0
    elif sharp:
        t_out = _time(shard, b_out)
    else:
        t_out = _time(2 * (k - 1) / k * shard, b_out)
    names = (["NVLink SHARP"] if domains else []) + (["InfiniBand SHARP"] if sharp and k > 1
                                                     else [])
    out_phase = ("" if k == 1 else "; scale-out " + (
        "S/g per GPU each way, aggregated in the switches" if sharp
        else "ring of 2(k-1)/k S/g per GPU"))
    kind = "achievable"
    if sharp and k > 1 and not _sharp_single_switch(ask, red_out):
        kind = "model"
        ask.notes.append("scale-out SHARP: the GPUs that aggregate together do not share one "
                         "reducing switch, so the aggregation trees cross switch-to-switch "
                         "links; the SHARP figure assumes those run at the NICs' rate "
                         "(a model, not a proven schedule)")
    if k > 1 and not sharp:
        ask.notes.append("the scale-out phase of the hierarchical schedule assumes the network "
                         "carries every NIC at line rate at once (non-blocking)")
    b_nvls = ask.bound(" + ".join(names) + " (as NCCL runs it)", max(t_in, t_out), kind,
                       (f"S + S/g per GPU each way through the reducing switches (g = {g})"
                        if domains else "no scale-up reduction") + out_phase
                       + "; phases pipelined")
    b_ideal = ask.bound("ideal in-switch reduction", max(t_in_ideal, t_out), "model",
                        "S per GPU each way through the reducing switches" + out_phase)
    achievable = [t for t in (t_sum, b_nvls.time_s if kind == "achievable" else math.inf)
                  if math.isfinite(t)]
    # With reduction in the switches the ForestColl bounds assume too little; the any-scheme
    # cut and the volume over reducing parts hold.
    lower = max([b_vol, b_cut], key=lambda b: b.time_s)
    return _Outcome(lower, min(achievable) if achievable else None,
                    bounds + [b_nvls, b_ideal], True, {"nvls": t_in, "network": t_out})


def _all_to_all(ask: _Ask) -> _Outcome:
    r = max_concurrent_flow(ask.fab, all_to_all(ask.fab, endpoints=ask.p.gpu_names, gbps=1.0))
    lower = ask.bound("all-to-all throughput", _time(ask.chunk, r.upper), "lower",
                      f"max-concurrent-flow theta <= {r.upper:.6g} per Gb/s of demand "
                      f"(binding tier {r.binding_tier})")
    ask.notes.append(f"throughput solve: {r.status} ({r.method})")
    return _Outcome(lower, _time(ask.chunk, r.lower) if r.lower > 0 else None, [lower])


def _broadcast(ask: _Ask) -> _Outcome:
    """The root cut bound; scatter + all-gather (van de Geijn) is achievable."""
    p = ask.p
    root = int(p.gpus[0])
    cut_root = math.inf
    side_best = None
    for v in p.gpus[1: 1 + (1 if p.symmetric else 64)]:
        cut = min_cut(p.ga, np.array([root]), np.array([v]))
        if cut.capacity < cut_root:
            cut_root, side_best = cut.capacity, cut.side
    lower = ask.bound("root cut", _time(ask.size, cut_root), "lower",
                      "the buffer must cross every cut between the root and another GPU",
                      _cut_info(p, side_best, "leaving") if side_best is not None else None)
    t_ag, _ = _forestcoll(ask, p, "all-gather optimum", "leaving")
    if t_ag is None:
        return _Outcome(lower, None, [lower])
    ratio, _, _ = scatter_ratio(p, root)
    achievable = ask.chunk * ratio / GBPS_TO_BYTES + t_ag
    return _Outcome(lower, achievable, [lower, ask.bound(
        "scatter + all-gather", achievable, "achievable",
        "van de Geijn: scatter S/n per GPU, then all-gather")])


_BY_COLLECTIVE = {"all_gather": _all_gather, "reduce_scatter": _reduce_scatter,
                  "all_reduce": _all_reduce, "all_to_all": _all_to_all, "broadcast": _broadcast}


def _checked_ask(func: str, fab: Any, collective: Any, message_bytes: Any,
                 endpoints: Iterable[Hashable] | None, in_network_reduction: Any,
                 scale_out_reduction: Any = False) -> _Ask:
    """The arguments common to :func:`collective_bounds` and :func:`collective_curve`,
    checked, as one collective to compute."""
    if not isinstance(fab, Fabric):
        raise InvalidParameterError(f"{func}(): fab must be a Fabric, got {type(fab).__name__}")
    check_choice(func, "collective", collective, COLLECTIVES)
    size = check_positive(func, "message_bytes", message_bytes)
    if in_network_reduction not in ("auto", True, False) or isinstance(
            in_network_reduction, int | float) and not isinstance(in_network_reduction, bool):
        raise InvalidParameterError(f"{func}(): in_network_reduction must be 'auto', True or "
                                    f"False, got {in_network_reduction!r}")
    sharp = check_bool(func, "scale_out_reduction", scale_out_reduction)
    _check_reduce_attributes(func, fab)
    eps = check_endpoint_group(func, fab, endpoints)
    return _Ask(fab, _problem(fab, eps), collective, size, in_network_reduction,
                scale_out_reduction=sharp)


def _checked_latency(func: str, latency: Any) -> LatencyModel | None:
    if latency is not None and not isinstance(latency, LatencyModel):
        raise InvalidParameterError(f"{func}(): latency must be None or a LatencyModel, got "
                                    f"{latency!r}")
    return latency


def _profile_for(p: _Problem, fab: Fabric) -> tuple[str, dict[str, float]]:
    """The calibrated profile for the participants' scale-up links: by NVLink generation, and
    the rack-scale one when a reducing domain holds more than 8 of them."""
    techs = {str(fab.graph[u][v].get("tech", "")).lower()
             for a, (u, v) in enumerate(p.ga.arcs) if p.scale_up_arc[a]}
    if any(t.startswith("nvlink5") for t in techs):
        domains, _ = _reduce_domains(p, _reducing_switches(p, False)[0])
        big = any(len(d) > 8 for d in domains)
        name = "nvlink5-rack" if big else "nvlink5"
    else:
        name = "nvlink4"
    return name, dict(EFFICIENCY_PROFILES[name])


def _efficiency_profile(func: str, expected: Any) -> dict[str, float] | str | None:
    """None, the name of a profile (``"auto"`` for ``True``), or a checked custom dict."""
    if expected is None or expected is False:
        return None
    if expected is True:
        return "auto"
    if isinstance(expected, str):
        return check_choice(func, "expected", expected, tuple(EFFICIENCY_PROFILES))
    if not isinstance(expected, dict):
        raise InvalidParameterError(f"{func}(): expected must be None, True, a profile name "
                                    f"or a dict of efficiencies, got {expected!r}")
    for k, v in expected.items():
        check_choice(func, "a key of expected", k, tuple(DEFAULT_EFFICIENCY))
        value = check_positive(func, f"expected[{k!r}]", v)
        if value > 1:
            raise InvalidParameterError(f"{func}(): expected[{k!r}] must be an efficiency in "
                                        f"(0, 1] (a fraction of a bound), got {v!r}")
    return {**DEFAULT_EFFICIENCY, **expected}


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
    groups = [check_endpoint_group(func, fab, g) for g in raw]
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


def _concurrent(asks: list[_Ask], outs: list[_Outcome]) -> _Outcome:
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
        lowers.append(_volume_bound(first, groups, combining, inr))
        lowers[-1] = dataclasses.replace(lowers[-1], name="volume, all groups at once")
    if collective in ("all_reduce", "all_gather", "reduce_scatter"):
        best_t, best_side = 0.0, None
        for part in _partitions(p, combining):
            t, q = part_cut_s(part, groups, size, collective)
            if t > best_t:
                best_t, best_side = t, part.label == q
        if best_side is not None:
            lowers.append(first.bound(
                "part cut, all groups at once", best_t, "lower",
                "every group the part separates moves its share across the part's boundary",
                _cut_info(p, best_side, "leaving")))
    lower = max(lowers, key=lambda b: b.time_s)
    times = [o.achievable_s for o in outs]
    achievable = None if any(t is None for t in times) else n_groups * max(times)
    bounds += [b for b in lowers[1:]]
    if achievable is not None:
        bounds.append(first.bound("each group on a 1/G share", achievable, "achievable",
                                  f"every group runs its own schedule on 1/{n_groups} of every "
                                  "link"))
    return _Outcome(lower, achievable, bounds, inr)


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
        Adds a labelled expected busbw, never a bound. ``True``: the calibrated profile of
        :data:`EFFICIENCY_PROFILES` for the fabric's NVLink generation; a profile name; or a
        dict ``{"scale_up": f, "nvls": f, "network": f}`` of efficiencies in (0, 1] (keys
        left out take :data:`DEFAULT_EFFICIENCY`). Scale-up links (NVLink, UALink) are those
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
        With ``routing``: the ring order of the participants (:func:`~fabricopt.rank_order`).
    trials, flows_per_pair : int
        With ``routing="hash"``: hashed draws, and flows per ring edge (NCCL channels).
    seed : None, int or numpy.random.Generator
        With ``routing``: seed of a random order and of the hashed draws.

    Returns
    -------
    CollectiveBounds

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
    """
    func = "collective_bounds"
    ask = _checked_ask(func, fab, collective, message_bytes, endpoints, in_network_reduction,
                       scale_out_reduction)
    profile = _efficiency_profile(func, expected)
    _checked_latency(func, latency)
    groups = _checked_groups(func, fab, concurrent, endpoints)
    routed = _routed_ring(func, ask, routing, order, trials, seed, flows_per_pair, groups)
    if groups is None:
        out = _BY_COLLECTIVE[collective](ask)
    else:
        ga = ask.p.ga
        asks = [dataclasses.replace(ask, p=_problem(fab, g, ga), notes=ask.notes, _balanced=None)
                for g in groups]
        out = _concurrent(asks, [_BY_COLLECTIVE[collective](a) for a in asks])
        ask = asks[0]
    n, size = ask.n, ask.size
    alpha_low, alpha_step = latency.alphas(fab, ask.p) if latency is not None else (0.0, 0.0)
    # Latency-bound steps of the achievable schedules: 2(n-1) for a ring all-reduce, else n-1.
    steps = 2 * (n - 1) if collective == "all_reduce" else n - 1
    lower_time = out.lower.time_s + alpha_low
    ach_time = None if out.achievable_s is None else out.achievable_s + steps * alpha_step
    algbw = size / lower_time / 1e9
    result = CollectiveBounds(
        collective, n, size, lower_time, ach_time, algbw, algbw * bus_factor(collective, n),
        out.lower.name, out.lower.cut, out.bounds, out.in_network_reduction, alpha_low, None,
        ask.notes)
    if groups is not None:
        ask.notes.append(f"{len(groups)} groups of {n} GPUs run at once, sharing the fabric; "
                         "times are those of the slowest group")
    if profile is not None:
        result.expected = _expected(ask, out, profile, alpha_low)
    result.routed = routed
    return result


def _routed_ring(func: str, ask: _Ask, routing: Any, order: Any, trials: Any, seed: Any,
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


def _expected(ask: _Ask, out: _Outcome, profile: dict[str, float] | str,
              alpha_s: float) -> dict[str, Any]:
    """The labelled expected figure: the faster of the ring (the best schedule without
    in-network reduction, or the bound, at the efficiency of the links that bind) and NVLink
    SHARP (each phase at its own efficiency); never a bound."""
    name = "custom"
    if profile == "auto":
        name, effs = _profile_for(ask.p, ask.fab)
    elif isinstance(profile, str):
        name, effs = profile, dict(EFFICIENCY_PROFILES[profile])
    else:
        effs = profile
    ring = next((b.time_s for b in out.bounds if b.name == "reduce-scatter + all-gather"),
                None)
    if ring is None:
        ring = out.achievable_s if out.achievable_s is not None else out.lower.time_s
    plain = [b for b in out.bounds if b.kind in ("lower", "exact") and "SHARP" not in b.name]
    side = _binding_side(ask.p, max(plain, key=lambda b: b.time_s) if plain else out.lower)
    candidates = {f"ring, {side.replace('_', '-')} efficiency {effs[side]:.3g}":
                  ring / effs[side]}
    if out.in_network_reduction and out.inr_phases_s is not None:
        phases = out.inr_phases_s
        candidates[f"NVLink SHARP efficiency {effs['nvls']:.3g}, network "
                   f"{effs['network']:.3g}"] = max(phases["nvls"] / effs["nvls"],
                                                   phases["network"] / effs["network"])
    label, t = min(candidates.items(), key=lambda kv: kv[1])
    t += alpha_s
    busbw = ask.size / t / 1e9 * bus_factor(ask.collective, ask.n)
    return {"busbw_GBps": busbw, "time_s": t, "profile": name,
            "efficiency": effs,
            "label": f"expected ({name} profile: {label}; calibrated on nccl-tests, not a bound)"}


def _scale_out_gbps(p: _Problem, red_up: np.ndarray) -> float:
    """Least per-GPU bandwidth (Gb/s) that does not go to a reducing scale-up switch: its
    NICs."""
    ga = p.ga
    other = ~red_up[ga.head]
    egress = np.bincount(ga.tail[other], weights=ga.capacity[other], minlength=ga.n_nodes)
    return float(egress[p.gpus].min())


def _binding_side(p: _Problem, bound: Bound) -> str:
    """"scale_up" or "network": the kind (:mod:`fabricopt.tiers`) of the tier that carries
    most of the binding cut, or of the participants' own links when the bound has no cut
    (volume bounds)."""
    if bound.cut is not None and bound.cut.tiers:
        tiers = dict(bound.cut.tiers)
    else:
        gpu = np.zeros(p.ga.n_nodes, dtype=bool)
        gpu[p.gpus] = True
        tiers = {}
        for a in np.flatnonzero(gpu[p.ga.tail]):
            tiers[p.tiers[a]] = tiers.get(p.tiers[a], 0.0) + float(p.ga.capacity[a])
    if not tiers:
        return "network"
    tier = max(tiers.items(), key=lambda kv: kv[1])[0]
    return "scale_up" if tier in p.scale_up_tiers else "network"


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

    def alphas(self, fab: Fabric, p: _Problem) -> tuple[float, float]:
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


@dataclass(frozen=True)
class CollectiveCurve:
    """Time and busbw over message sizes: ``t(S) = alpha + beta S`` for the lower bound.

    ``busbw_limit_GBps`` is the bandwidth bound (S -> infinity); :meth:`size_for_fraction`
    gives the message size at which the busbw bound reaches a fraction of it.
    """

    collective: str
    n_endpoints: int
    alpha_s: float
    beta_s_per_byte: float
    sizes: np.ndarray
    lower_time_s: np.ndarray
    busbw_GBps: np.ndarray
    busbw_limit_GBps: float

    def size_for_fraction(self, fraction: float) -> float:
        """Bytes at which busbw reaches ``fraction`` of its limit: ``f alpha / (beta (1-f))``.

        >>> curve = CollectiveCurve("all_reduce", 8, 1e-5, 1e-9, np.array([1.0]),
        ...                         np.array([1e-5]), np.array([0.0]), 1.75)
        >>> round(curve.size_for_fraction(0.5))   # alpha / beta
        10000
        """
        if not 0 < fraction < 1:
            raise InvalidParameterError(f"size_for_fraction(): fraction must be in (0, 1), "
                                        f"got {fraction!r}")
        return fraction * self.alpha_s / (self.beta_s_per_byte * (1 - fraction))


def collective_curve(fab: Fabric, collective: str, sizes: Sequence[float] | None = None, *,
                     latency: LatencyModel | None = None,
                     endpoints: Iterable[Hashable] | None = None,
                     in_network_reduction: bool | str = "auto") -> CollectiveCurve:
    """Lower-bound time and busbw of ``collective`` over message sizes, with latency.

    Every bandwidth bound is linear in the size, so one evaluation gives ``beta`` and the
    latency model gives ``alpha``; the curve is exact for the bound at every size.

    Examples
    --------
    >>> import networkx as nx, fabricopt as fo
    >>> fab = fo.from_networkx(nx.star_graph(8), endpoints=range(1, 9),
    ...                        default_capacity=3600.0)
    >>> curve = fo.collective_curve(fab, "all_reduce")
    >>> round(curve.busbw_limit_GBps, 6), curve.size_for_fraction(0.5) > 0
    (450.0, True)
    """
    func = "collective_curve"
    latency = _checked_latency(func, latency) or LatencyModel()
    try:
        s = np.asarray(sizes if sizes is not None else 2.0 ** np.arange(10, 35), dtype=float)
    except (TypeError, ValueError):
        s = np.array([np.nan])
    if s.ndim != 1 or not len(s) or not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise InvalidParameterError(f"{func}(): sizes must be a non-empty sequence of finite "
                                    f"sizes > 0 bytes, got {sizes!r}")
    ref = 2.0**30  # any size: the bandwidth bound is linear in it
    ask = _checked_ask(func, fab, collective, ref, endpoints, in_network_reduction)
    beta = _BY_COLLECTIVE[collective](ask).lower.time_s / ref
    alpha = latency.alphas(fab, ask.p)[0]
    t = alpha + beta * s
    factor = bus_factor(collective, ask.n)
    return CollectiveCurve(collective, ask.n, alpha, beta, s, t, s / t / 1e9 * factor,
                           factor / beta / 1e9)


def hierarchical_all_reduce_time(g: int, k: int, scale_up_gbps: float, nic_gbps: float,
                                 message_bytes: float) -> float:
    """The textbook hierarchical all-reduce: ``2(g-1)/g S/B_up + 2(k-1)/k (S/g)/b``.

    ``g`` GPUs per scale-up domain with ``scale_up_gbps`` each, ``k`` domains joined by
    ``nic_gbps`` per GPU, phases run one after another
    (``docs/collectives.md#the-textbook-hierarchical-model``). A model to set against the
    graph bounds, which may overlap the phases and so are never slower.

    >>> round(hierarchical_all_reduce_time(8, 2, 3600.0, 400.0, 2**30) * 1e3, 2)
    6.86
    """
    func = "hierarchical_all_reduce_time"
    g = check_int(func, "g", g, minimum=1)
    k = check_int(func, "k", k, minimum=1)
    scale_up_gbps = check_positive(func, "scale_up_gbps", scale_up_gbps)
    nic_gbps = check_positive(func, "nic_gbps", nic_gbps)
    message_bytes = check_positive(func, "message_bytes", message_bytes)
    up = 2 * (g - 1) / g * message_bytes / (scale_up_gbps * GBPS_TO_BYTES)
    out = 2 * (k - 1) / k * (message_bytes / g) / (nic_gbps * GBPS_TO_BYTES) if k > 1 else 0.0
    return up + out
