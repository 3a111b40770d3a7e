"""The graph of a collective: its participants on the fabric's arrays, the switches that may
reduce, and the cut searches the bounds rest on (ForestColl's ratio, the scatter ratio, pair
cuts)."""

from __future__ import annotations

import dataclasses
import math
import operator
import weakref
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import methodcaller
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order, connected_components

from ..analysis.cuts import (
    INT_BUDGET,
    Cut,
    PairCuts,
    SuperLayout,
    cut_capacity,
    min_cut,
    to_integers,
)
from ..errors import InvalidFabricError
from ..fabric import Fabric
from ..flow.symmetric import endpoint_orbits
from ..graph_arrays import FabricShape, GraphArrays, arc_labels
from ..tiers import tier_of
from .results import GBPS_TO_BYTES, CutInfo


@dataclass(frozen=True)
class Problem:
    ga: GraphArrays
    gpus: np.ndarray          # node indices of the participants
    gpu_names: tuple[Hashable, ...]
    tiers: Sequence[str]      # per arc
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


def collective_problem(fab: Fabric, endpoints: Sequence[Hashable], ga: GraphArrays | None = None,
             ) -> Problem:
    ga = GraphArrays.from_fabric(fab) if ga is None else ga
    gpus = np.fromiter(map(ga.index.__getitem__, endpoints), dtype=np.int64,
                       count=len(endpoints))
    orbit_reps = None
    sym = fab.symmetry
    if sym is not None and len(endpoints) == len(fab.endpoints):
        first = np.unique(endpoint_orbits(sym, tuple(endpoints)), return_index=True)[1]
        orbit_reps = gpus[np.sort(first)]
    g = fab.graph
    # The arrays' arcs and nodes come in the graph's order (GraphArrays.from_fabric): the
    # labels read in one pass line up with them.
    labels = arc_labels(fab)
    up = labels.scale_up
    tiers: Sequence[str]
    if len(ga.tiers) == ga.n_arcs:
        tiers = ga.tiers  # read-only: the arrays' own tuple, not a copy of 300,000 names
        # The tiers of the scale-up arcs: those of their few distinct labels (whose tiers
        # are the arrays' tiers), not an object array of every arc's.
        up_tiers = frozenset(labels.labels[c][0] for c in np.unique(labels.code[up]).tolist())
    else:
        tiers = [tier_of(g[u][v]) for u, v in ga.arcs]
        up_tiers = frozenset(np.asarray(tiers, dtype=object)[up]) if ga.n_arcs else frozenset()
    # The attributes in the arrays' node order, one C-level pass each (node views' generators
    # were a tenth of the bound on a 24,576-GPU cluster).
    shape = FabricShape.of(fab, ga)
    reduce_attr = np.fromiter(map(operator.is_, shape.attribute("reduce"), repeat(True)),
                              dtype=bool, count=ga.n_nodes)
    is_switch = np.fromiter(map(operator.eq, shape.attribute("role"), repeat("switch")),
                            dtype=bool, count=ga.n_nodes)
    return Problem(ga, gpus, tuple(endpoints), tiers, up_tiers, orbit_reps, up, reduce_attr,
                   is_switch)


def unreachable_pair(p: Problem, root_only: bool = False
                     ) -> tuple[Hashable, Hashable, np.ndarray] | None:
    """Two participants ``(a, b)`` where ``a`` cannot reach ``b``, and the nodes ``a``
    reaches (nothing leaves them, so no schedule moves a byte from ``a`` to ``b``); None
    when every participant reaches every other (``root_only``: when the first, a
    broadcast's root, reaches every other).

    One pass over the arcs (strong components; 10 ms on a 24,576-GPU cluster's 300,000
    arcs), then one breadth-first search only when the participants are split.

    >>> import networkx as nx, fabricopt as fo
    >>> g = nx.disjoint_union(nx.path_graph(2), nx.path_graph(2))   # 0-1 and 2-3
    >>> fab = fo.from_networkx(g)
    >>> unreachable_pair(collective_problem(fab, fab.endpoints))[:2]
    (0, 2)
    >>> unreachable_pair(collective_problem(fab, [2, 3])) is None
    True
    """
    ga, gpus = p.ga, p.gpus
    n = ga.n_nodes
    arcs = sp.csr_matrix((np.ones(ga.n_arcs, dtype=np.int8), (ga.tail, ga.head)),
                         shape=(n, n))
    if not root_only:
        _, label = connected_components(arcs, directed=True, connection="strong")
        if np.all(label[gpus] == label[gpus[0]]):
            return None

    def reached(matrix: sp.csr_matrix, start: int) -> np.ndarray:
        side = np.zeros(n, dtype=bool)
        side[breadth_first_order(matrix, start, directed=True,
                                 return_predecessors=False)] = True
        return side

    first = int(gpus[0])
    side = reached(arcs, first)
    missed = gpus[~side[gpus]]
    if len(missed):
        return ga.nodes[first], ga.nodes[int(missed[0])], side
    if root_only:
        return None
    # The first reaches every other; some participant does not reach it back.
    back = reached(arcs.T.tocsr(), first)
    stuck = int(gpus[~back[gpus]][0])
    return ga.nodes[stuck], ga.nodes[first], reached(arcs, stuck)


def check_reduce_attributes(func: str, fab: Fabric) -> None:
    """Every node's ``reduce`` attribute, when present, is a bool (a string such as ``"no"``
    would otherwise read as true)."""
    values = list(map(methodcaller("get", "reduce"), fab.graph._node.values()))
    if all(value is None or value is True or value is False for value in values):
        return  # the usual case, read in one pass
    for v, value in zip(fab.graph._node, values, strict=True):
        if value is not None and not isinstance(value, bool | np.bool_):
            raise InvalidFabricError(f"{func}(): fab node {v!r} has reduce={value!r}; reduce "
                                     "must be True or False")


def reducing_switches(p: Problem, scale_out_reduction: bool) -> tuple[np.ndarray, np.ndarray]:
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


def reversed_problem(p: Problem) -> Problem:
    ga = p.ga
    rga = GraphArrays(ga.nodes, ga.index, _ReversedArcs(ga.arcs), ga.head, ga.tail,
                      ga.capacity)
    return dataclasses.replace(p, ga=rga)


class _ReversedArcs(Sequence):
    """Every arc ``(u, v)`` of a list read as ``(v, u)``, on demand: a reversed problem's
    bounds need only its arrays, and reversing a 24,576-GPU cluster's million arcs as a list
    took a quarter of a second of its all-reduce bound.

    >>> _ReversedArcs([(1, 2), (3, 4)])[1], list(_ReversedArcs([(1, 2)]))
    ((4, 3), [(2, 1)])
    """

    def __init__(self, arcs: Sequence[tuple[Hashable, Hashable]]) -> None:
        self._arcs = arcs

    def __len__(self) -> int:
        return len(self._arcs)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [(v, u) for u, v in self._arcs[i]]
        u, v = self._arcs[i]
        return (v, u)


def describe_cut(p: Problem, side: np.ndarray, direction: str) -> CutInfo:
    value, arcs = cut_capacity(p.ga, side)
    # C-level maps over the cut's arcs and side (a generator per item was most of the
    # description of a cut around half a 24,576-GPU cluster).
    tiers = Counter(map(p.tiers.__getitem__, arcs.tolist()))
    return CutInfo(int(side[p.gpus].sum()), value, direction, dict(tiers),
                   frozenset(map(p.ga.nodes.__getitem__, np.flatnonzero(side).tolist())))


def _ratio(p: Problem, side: np.ndarray) -> float:
    inside = int(side[p.gpus].sum())
    if inside == 0 or inside == len(p.gpus):
        return 0.0
    value, _ = cut_capacity(p.ga, side)
    return math.inf if value <= 0 else inside / value


class _CutsToOneGpu:
    """``min_cut(ga, gpus other than w, [w], source_caps=1/lam each)`` for any participant
    ``w`` at one ``lam``, the same cut :func:`~fabricopt.analysis.cuts.min_cut` returns.

    :func:`min_cut` rescales the capacities and builds a new sparse graph for every search;
    on a 16,384-GPU fabric that was two thirds of each of ForestColl's cuts. Here the
    graph's layout (the arcs, an arc from the super-source to every participant, one from
    every participant to the super-sink) is built once per search, whatever its ``lam``; a
    cut sets ``w``'s two arcs and
    reuses the integer capacities of every ``w`` whose known cut (the scale
    :func:`to_integers` is given) is the same. The side returned is the one :func:`min_cut`
    finds: the nodes the super-source reaches in the residual graph of a maximum flow are
    the same for every maximum flow, and an arc of capacity 0 joins no residual graph.
    """

    def __init__(self, ga: GraphArrays, gpus: np.ndarray, lam: float,
                 layout: _CutsToOneGpu | None = None) -> None:
        k = len(gpus)
        self.source_caps = np.full(k - 1, 1.0 / lam)  # as min_cut is given them
        self.finite = np.concatenate([ga.capacity, self.source_caps])
        self.by_limit: dict[float, tuple[np.ndarray, int, bool]] = {}
        if layout is not None:  # the arcs' layout is the same at every lam: read it once
            for name in self._LAYOUT:
                setattr(self, name, getattr(layout, name))
            return
        self.ga, self.gpus = ga, gpus
        n = ga.n_nodes
        self.layout = SuperLayout.of(ga, gpus)
        self.slot = {int(g): i for i, g in enumerate(gpus)}
        # The arcs out of participants, and into each (in arc order, as cut_capacity lists
        # them): the two cuts min_cut knows before it searches, read without a pass over
        # every arc.
        self.is_gpu = np.zeros(n, dtype=bool)
        self.is_gpu[gpus] = True
        self.out_of_gpus = np.flatnonzero(self.is_gpu[ga.tail])
        # The arcs into each participant searched from, found when first asked: a search
        # under a symmetry asks for a few (one per orbit), not for every participant.
        self.into: dict[int, np.ndarray] = {}

    #: What does not depend on ``lam`` (a later step of the search shares it).
    _LAYOUT = ("ga", "gpus", "layout", "slot", "is_gpu", "out_of_gpus", "into")

    def _into(self, w: int) -> np.ndarray:
        """The arcs into ``w``, in arc order."""
        into = self.into.get(w)
        if into is None:
            into = self.into[w] = np.flatnonzero(self.ga.head == w)
        return into

    def _limit(self, w: int) -> float:
        """The known cut :func:`min_cut` scales by: the least of the participants but ``w``
        (their arcs to ``w`` or to nodes that are no participant), of everything but ``w``
        (the arcs into ``w``) and of the source arcs; summed over the same arcs in the same
        order as min_cut sums them, so the same float."""
        ga, cap = self.ga, self.ga.capacity
        a = self.out_of_gpus
        head = ga.head[a]
        leaving = a[(ga.tail[a] != w) & (~self.is_gpu[head] | (head == w))]
        into = self._into(w)
        options = [float(cap[leaving].sum()) + 0.0, float(cap[into].sum()) + 0.0,
                   float(np.sum(self.source_caps))]
        return max(min(options), 1e-300)

    def cut(self, w: int) -> Cut:
        ga, lay = self.ga, self.layout
        others = self.gpus[self.gpus != w]
        limit = self._limit(w)
        if limit not in self.by_limit:
            ints, top, exact = to_integers(self.finite, limit, INT_BUDGET)
            data = np.zeros(len(lay.indices), dtype=np.int64)
            data[lay.arc_pos] = ints[:ga.n_arcs]
            data[lay.src_pos] = ints[ga.n_arcs]  # the source arcs share one capacity
            self.by_limit[limit] = (np.minimum(data, top + 2), top + 2, exact)
        data, big, exact = self.by_limit[limit]
        data = data.copy()
        i = self.slot[int(w)]
        data[lay.src_pos[i]] = 0     # w is no source
        data[lay.snk_pos[i]] = big   # but the sink
        node_side = lay.source_side(data.astype(np.int32))
        value, arcs = cut_capacity(ga, node_side)
        value += float(self.source_caps[~node_side[others]].sum())
        return Cut(node_side, value, arcs, exact)


#: A work limit on :func:`forestcoll_ratio`: minimum cuts searched in all. A fabric without
#: a symmetry to pick one GPU per orbit (a partly filled 16,384-GPU cluster: 20 ms a cut, a
#: pass over every GPU) would otherwise take hours; past it the best set found is the
#: answer, a real cut, reported as not proven.
FORESTCOLL_MAX_CUTS = 1_024


def forestcoll_ratio(p: Problem, max_iter: int = 50,
                     max_cuts: int | None = None) -> tuple[float, np.ndarray, bool | None]:
    """Max over node sets X (some, not all GPUs) of |X cap G| / B_out(X) in 1/(Gb/s).

    Dinkelbach: with the best ratio ``lam`` so far, minimise ``B_out(X) + |G \\ X| / lam``
    over X missing GPU ``w`` (a minimum cut with arcs of ``1/lam`` from a super-source to
    every GPU); a value below ``|G| / lam`` is a set with a larger ratio. Returns
    ``(ratio, X, proven)`` where ``proven`` is False if a rounded max-flow search could have
    missed a better set, and None when the search stopped at ``max_cuts`` minimum cuts (the
    set is real, its ratio a lower bound on the largest).
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
    cuts, limit = 0, FORESTCOLL_MAX_CUTS if max_cuts is None else max_cuts
    unique = len(np.unique(gpus)) == n
    searches: _CutsToOneGpu | None = None
    for _ in range(max_iter):
        improved = False
        searches = _CutsToOneGpu(ga, gpus, lam, searches) if unique and n > 1 else None
        for w in targets:
            if cuts >= limit:
                return lam, best_side, None
            cuts += 1
            others = gpus[gpus != w]
            # Divided by lam, F(X) = B_out(X) + |G \ X| / lam: arcs keep their Gb/s and each
            # GPU left outside costs 1/lam Gb/s, all of one magnitude for the integer search.
            cut = (searches.cut(int(w)) if searches is not None else
                   min_cut(ga, others, np.array([w]),
                           source_caps=np.full(len(others), 1.0 / lam)))
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


def scatter_ratio(p: Problem, root: int, max_iter: int = 50) -> tuple[float, np.ndarray, bool]:
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


def balanced_forwarders(p: Problem) -> bool:
    """True when every node that is not a participant has as much capacity in as out
    (ForestColl's schedules split switches off as Eulerian nodes)."""
    ga = p.ga
    cap_in = np.bincount(ga.head, weights=ga.capacity, minlength=ga.n_nodes)
    cap_out = np.bincount(ga.tail, weights=ga.capacity, minlength=ga.n_nodes)
    forwarder = np.ones(ga.n_nodes, dtype=bool)
    forwarder[p.gpus] = False
    return bool(np.allclose(cap_in[forwarder], cap_out[forwarder], rtol=1e-9, atol=0))


def pair_cut_min(p: Problem, root: int, limit: int = 64, reversible: bool | None = None,
                 ) -> tuple[float, np.ndarray | None]:
    """Smallest cut separating GPUs found: single GPUs (exact, all of them) and min cuts
    from ``root`` to up to ``limit`` other GPUs, in both directions. Any value returned is
    the capacity of a real GPU-separating cut. ``reversible`` is
    :func:`reversible_arcs` of ``p.ga`` when the caller has it."""
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
    # No pair's cut exceeds its source's egress: one graph, capped there, serves every pair.
    cuts = PairCuts(ga, float(egress.max())) if len(others) else None
    # Where every arc's reverse has its capacity, a cut leaving a side has the capacity of
    # the one entering it, so the least cut from v to the root is the least from the root
    # to v: one direction is enough (half the flows on a 24,576-GPU cluster).
    both = not (reversible_arcs(ga) if reversible is None else reversible)
    pairs = [(a, b) for v in others.tolist()
             for a, b in (((root, v), (v, root)) if both else ((root, v),))]
    if cuts is not None:  # the first least pair cut below the single GPUs', in this order
        best, best_side = cuts.least(pairs, best)
    return best, best_side


def reversible_arcs(ga: GraphArrays) -> bool:
    """True when every arc has a reverse arc of the same capacity (parallel arcs summed).

    >>> import fabricopt as fo
    >>> reversible_arcs(GraphArrays.from_fabric(fo.ring(4)))
    True
    """
    n = ga.n_nodes
    forward = sp.csr_matrix((ga.capacity, (ga.tail, ga.head)), shape=(n, n))
    return bool(abs(forward - forward.T).max() <= 1e-12 * float(ga.capacity.max(initial=0.0)))


#: The last answer of :func:`reduce_domains`: the problem (by weak reference), the switches
#: and the answer. An all-reduce row asks twice with the same ones (its bounds, then NCCL's
#: figure), a tenth of the bound on a 24,576-GPU cluster.
_LAST_DOMAINS: list[Any] = [None, None, None]


def reduce_domains(p: Problem, red_up: np.ndarray) -> tuple[list[list[int]], float]:
    """Groups of participants that share reducing scale-up switches (``red_up``), and the
    least bandwidth (Gb/s, per direction) from a participant to such switches (the groups
    are shared with the next caller on the same problem and switches: read them only)."""
    ref, held, answer = _LAST_DOMAINS
    if ref is not None and ref() is p and np.array_equal(held, red_up):
        return answer
    answer = _reduce_domains(p, red_up)
    _LAST_DOMAINS[:] = [weakref.ref(p), red_up.copy(), answer]
    return answer


def _reduce_domains(p: Problem, red_up: np.ndarray) -> tuple[list[list[int]], float]:
    ga = p.ga
    is_gpu = np.zeros(ga.n_nodes, dtype=bool)
    is_gpu[p.gpus] = True
    to_reduce = is_gpu[ga.tail] & red_up[ga.head]
    if not to_reduce.any():
        return [], 0.0
    # Join participants through the reduce switches they touch: components of those arcs
    # (a participant without one is alone), in the participants' order.
    n = ga.n_nodes
    joined = sp.csr_matrix((np.ones(int(to_reduce.sum())),
                            (ga.tail[to_reduce], ga.head[to_reduce])), shape=(n, n))
    component = connected_components(joined, directed=True, connection="weak")[1]
    groups = _groups_in_order(p.gpus, component[p.gpus])
    bw = np.bincount(ga.tail[to_reduce], weights=ga.capacity[to_reduce], minlength=ga.n_nodes)
    return groups, float(bw[p.gpus].min())


def _groups_in_order(items: np.ndarray, label: np.ndarray) -> list[list[int]]:
    """``items`` grouped by ``label``, the groups in order of first appearance and each in
    the items' order (one sort, not a dict append per item).

    >>> _groups_in_order(np.array([5, 6, 7, 8]), np.array([2, 0, 2, 1]))
    [[5, 7], [6], [8]]
    """
    if not len(items):
        return []
    _, first, code = np.unique(label, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    order = np.argsort(rank[code.ravel()], kind="stable")
    ends = np.cumsum(np.bincount(rank[code.ravel()], minlength=len(first))).tolist()
    # One list of every item, sliced per group (a tolist per group was 6,144 of them on a
    # 24,576-GPU cluster's all-reduce bound, a seventh of it).
    flat = np.asarray(items)[order].tolist()
    return [flat[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]


def transfer_time(bytes_: float, gbps: float) -> float:
    return math.inf if gbps <= 0 else bytes_ / (gbps * GBPS_TO_BYTES)


def scale_out_gbps(p: Problem, red_up: np.ndarray) -> float:
    """Least per-GPU bandwidth (Gb/s) that does not go to a reducing scale-up switch: its
    NICs."""
    ga = p.ga
    other = ~red_up[ga.head]
    egress = np.bincount(ga.tail[other], weights=ga.capacity[other], minlength=ga.n_nodes)
    return float(egress[p.gpus].min())
