r"""A bound below on a layered fabric's bisection: its planes merged one by one, each plane's
top switches counted on the sending side, in a best-first search.

The planes' bound (:func:`~fabricopt.analysis.layered_bisection.plane_lower`) bisects each
plane apart, and the planes, bisected apart, choose different leaves: on a failed
``fat_tree(16)`` it stays 6–7 % below the best cut. Merging planes couples them, and the top
switches, whose sides make an exact search too large, are counted instead:

* **A plane's top, by its count.** Say ``k`` of plane ``j``'s ``K`` top switches are on the
  sending side. A middle switch of the plane on the sending side then pays its links up to
  the ``K - k`` others, at least the sum of its ``K - k`` smallest up-link capacities; on the
  other side, the links down from the ``k``, at least its ``k`` smallest down-link
  capacities. Each middle switch's cost now depends on its own side and ``k`` only, so with
  every plane's count fixed the components below the top (the pods) fall apart, each exact
  by every side of its middle switches
  (:func:`~fabricopt.analysis.layered_bisection.exact_layered`'s tables), joined by a
  min-plus convolution at the halves' sizes: :math:`R(k)`, at most every split's cut whose
  counts are ``k``. Where every count is ``0`` or ``K`` it is that split's cut exactly.
* **Merged planes and planes apart.** The planes' capacities sum to at most the fabric's
  on every arc, so with the first ``d`` planes (in a fixed order) merged and the others
  apart, every split whose first ``d`` counts are ``k`` cuts at least
  :math:`R_d(k) + \text{rest}_d`, the rest a bound on the later planes: at first
  :math:`\sum_{j > d} B_j`, ``B_j`` plane ``j``'s least :math:`R` over its counts, then
  the later planes merged and searched the same way, from the last plane back. A branch's
  choices are some of its parent's, so it keeps the larger of its bound and its parent's.
  A best-first search over the counts, plane after plane, raises the least open bound as
  it goes: that least, or the best cut in hand when every branch is closed by it, bounds
  the bisection below at every moment.
* **The mirror.** With every link as large both ways, a split and its mirror (the halves
  swapped) cut the same, so the first plane's count is held to at most half its top.

A branch whose counts are all ``0`` or ``K`` is a split: it is built (every pod placed
exactly below that top) and its cut summed from the arcs; where it meets its bound it is
both ends. Where the least open branch has a plane's count partial, that plane's top switches
are chosen every way (at most ``CHOICES``), each a branch bounded with those switches exactly.
On ``fat_tree(16)`` minus 5 % of its links (seeds 0–4) the search closes on the best cut;
it stops at the time limit with the least open bound, and with no time limit after
``MAX_BRANCHES`` branches (a minute or two at about 1 ms a branch).
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from ..graph_arrays import GraphArrays
from .cuts import cut_capacity
from .layered_bisection import (
    MAX_COMPONENT_MIDS,
    Layers,
    _inner,
    _least_below,
    _planes,
    _sides,
    _split,
    read_layers,
)

#: Most branches kept open at once (a heap entry each).
MAX_OPEN = 2_000_000
#: Most branches bounded in one search without a time limit: about 1 ms each, so a search
#: that does not close stops after a minute or two (fat_tree(16) minus 5 %, its hardest seed,
#: closes after about 23,000), with the least open bound it reached.
MAX_BRANCHES = 100_000
#: Most children of the least open branches bounded in one pass.
BATCH = 256
#: Most ways of choosing the top switches a whole choice of counts stands for, tried.
CHOICES = 64
#: Relative margin for the endpoint links' shares (fractions): the bound is lowered by it.
ROUNDING = 1e-12


@dataclass(frozen=True)
class CountedPlanes:
    """What :func:`counted_planes_lower` proved: ``lower`` below every split's cut, the
    branches it closed and left open, whether every branch was closed by the cut it was
    given (``closed``), and a split found on the way (True on the sending side) with its
    cut's capacity summed from the arcs, or None."""

    lower: float
    closed: bool
    branches: int
    left_open: int
    split: np.ndarray | None
    split_gbps: float
    #: Whether a search stopped at ``MAX_BRANCHES`` (no time limit): more work may raise it.
    capped: bool = False


@dataclass(frozen=True)
class _Pod:
    """A component below the top of the merged planes: every side of its middle switches
    (rows, 1 on the sending side), its own cost per side and sending endpoints, and each
    middle switch's cost per count of its plane's top on the sending side (it sending / not)
    and its plane's place in the order."""

    sides: np.ndarray
    inner: np.ndarray
    cost_a: np.ndarray
    cost_b: np.ndarray
    plane: np.ndarray
    mids: np.ndarray


def counted_planes_lower(ga: GraphArrays, ep_idx: np.ndarray, upper: float,
                         seconds: float | None = None) -> CountedPlanes | None:
    """A bound below on the bisection of a layered fabric with two planes or more (module
    docstring), searched until every branch reaches ``upper`` (a cut in hand), ``seconds``
    pass, or, with no ``seconds``, ``MAX_BRANCHES`` branches are bounded (each search: the
    whole's and each suffix's); the least open bound then is the answer, certified, and
    ``closed`` is False. None when the fabric is not layered, has one plane, or a merged pod
    has more than ``MAX_COMPONENT_MIDS`` middle switches.

    >>> import fabricopt as fo
    >>> ft = fo.fail_random(fo.fat_tree(4), 0.1, seed=3)
    >>> ga = GraphArrays.from_fabric(ft)
    >>> ep = np.array([ga.index[e] for e in ft.endpoints])
    >>> found = counted_planes_lower(ga, ep, upper=3200.0)   # intact: 8 x 400 Gb/s
    >>> round(found.lower), found.split_gbps, found.closed  # a split at the bound: exact
    (1200, 1200.0, True)
    """
    start = time.perf_counter()
    deadline = None if seconds is None else start + seconds
    layers = read_layers(ga, ep_idx, max_configs=np.inf)
    if layers is None:
        return None
    planes = _planes(ga, layers)
    if len(planes) < 2:
        return None
    tops = _plane_tops(ga, layers, planes)
    merged = _merged(ga, ep_idx, planes, tops)
    if merged is None:
        return None
    n, mirror = len(ep_idx), _mirrored(ga)
    threshold = upper * (1 - 1e-9)
    rest = _suffix_bounds(ga, ep_idx, planes, tops, merged[0], threshold, mirror,
                          None if seconds is None else start + seconds / 3)
    if rest is None:
        return None
    found: dict = {"split": None, "gbps": np.inf}
    inners: dict = {}  # each pod's own costs, for the splits built

    def whole(counts: tuple[int, ...], value: float, least: bool) -> float | None:
        # A whole choice of counts below the best cut. Pushed: built when every count is
        # 0 or all (one split), lowering the cut the other branches must beat. The least
        # open branch: R there is the least over every branch, so only a split at it can
        # close the bracket; the top switches its partial counts stand for are tried.
        built = _built(ga, ep_idx, layers, tops, counts, inners, search.chosen, every=least)
        if built is not None and built[1] < found["gbps"]:
            found["split"], found["gbps"] = built
        if found["gbps"] <= value * (1 + 1e-9) + 1e-9:
            # Never above the branch's own bound: the closing test allows 1e-9 absolute.
            return min(found["gbps"], value) * (1 - 1e-9)
        return None

    search = _Search(merged, rest, [len(t) for t in tops], mirror, n, threshold)
    search.run(deadline, whole, (ga, tops))
    least = search.least()
    lower = min(least, search.threshold) * (1 - ROUNDING)
    return CountedPlanes(lower, least >= search.threshold, search.branches, len(search.heap),
                         found["split"], float(found["gbps"]), search.capped)


def _suffix_bounds(ga: GraphArrays, ep_idx: np.ndarray, planes: list[np.ndarray],
                   tops: list[np.ndarray], first: tuple[list[_Pod], int], threshold: float,
                   mirror: bool, deadline: float | None) -> np.ndarray | None:
    """``rest[d]``: a bound below on the planes from ``d`` on, merged (the search's tail).
    From the last plane back, each suffix is searched as the whole is, with the bounds of
    the shorter suffixes as its own tail, as far as the whole search can use it (the
    planes before it bound at least their own least) or to ``deadline``."""
    n, count = len(ep_idx), len(planes)
    alone = []
    for j, (cap, top) in enumerate(zip(planes, tops, strict=True)):
        one = first if j == 0 else _merged_one(ga, ep_idx, cap, top)
        alone.append(float(_least(one, n, np.arange(len(top) + 1)[:, None]).min()))
    rest = np.zeros(count + 1)
    rest[count - 1] = alone[-1]
    for d in range(count - 2, 0, -1):
        rest[d] = alone[d] + rest[d + 1]
        if deadline is not None and time.perf_counter() > deadline:
            continue
        merged = _merged(ga, ep_idx, planes[d:], tops[d:])
        if merged is None:
            return None
        tail = rest[d:].copy()
        search = _Search(merged, tail, [len(t) for t in tops[d:]], mirror, n,
                         threshold - sum(alone[:d]))
        search.run(deadline, None)
        rest[d] = max(rest[d], min(search.least(), search.threshold))
    rest[0] = alone[0] + rest[1]
    return rest


def _refined_plane(counts: tuple[int, ...], sizes: list[int]) -> int | None:
    """The first plane whose count is partial (some of its top switches sending, not all)
    with at most ``CHOICES`` ways of choosing them: a later plane may have few enough where
    the first has too many. None when there is none.

    >>> _refined_plane((2, 1, 0), [16, 4, 4])   # C(16, 2) = 120 > 64 ways; C(4, 1) = 4
    1
    >>> _refined_plane((0, 4, 20), [4, 4, 4]), _refined_plane((8,), [16,])  # C(16, 8) > 64
    (None, None)
    """
    return next((j for j, k in enumerate(counts)
                 if 0 < k < sizes[j] and math.comb(sizes[j], k) <= CHOICES), None)


@dataclass
class _Search:
    """Best first over the counts of each plane's top sending, plane after plane: a branch's
    bound is :math:`R` of the planes merged so far plus ``rest`` of the others; branches at
    ``threshold`` or above are closed."""

    merged: list
    rest: np.ndarray
    sizes: list[int]
    mirror: bool
    n: int
    threshold: float
    heap: list = field(default_factory=list)
    branches: int = 0
    #: The top switches a count beyond a plane's top stands for: ``(plane, count)`` -> nodes.
    chosen: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.heap = [(float(self.rest[0]), 0, ())]
        self._count = 0
        self.capped = False  # stopped at MAX_BRANCHES

    def least(self) -> float:
        return self.heap[0][0] if self.heap else np.inf

    def run(self, deadline: float | None,
            whole: Callable[[tuple[int, ...], float, bool], float | None] | None,
            ga_tops: tuple | None = None) -> None:
        """Until every branch is closed, ``deadline``, or the least open branch is a whole
        choice that ``whole`` does not close (it returns the new threshold when it does;
        without it, the search stops there: that branch's bound is the least) and whose
        partial counts cannot be refined (:meth:`_refine`, given ``ga_tops``)."""
        heap, planes = self.heap, len(self.sizes)
        while heap and len(heap) < MAX_OPEN and heap[0][0] < self.threshold:
            if deadline is not None and time.perf_counter() > deadline:
                return
            if deadline is None and self.branches >= MAX_BRANCHES:
                self.capped = True  # no time limit: a cap on the work instead
                return
            if len(heap[0][2]) == planes:
                closed = None if whole is None else whole(heap[0][2], heap[0][0], True)
                if closed is None:
                    if whole is None or not self._refine(ga_tops, whole):
                        return
                    continue
                self.threshold = min(self.threshold, closed)
                heapq.heappop(heap)
                continue
            self._expand(whole)

    def _refine(self, ga_tops: tuple | None, whole: Callable) -> bool:
        """The least open branch is a whole choice with a plane's count ``k`` partial: that
        plane's top switches are chosen every way (at most ``CHOICES``), each a branch of its
        own bounded with those switches exactly (a middle switch then pays its links to the
        others, sending, or from them, not): the first such plane with at most ``CHOICES``
        ways. False when there is none."""
        if ga_tops is None:
            return False
        ga, tops = ga_tops
        bound, _, counts = self.heap[0]
        j = _refined_plane(counts, self.sizes)
        if j is None:
            return False
        heapq.heappop(self.heap)
        sets = [np.array(c) for c in itertools.combinations(tops[j], counts[j])]
        pods, free = self.merged[-1]
        base = max(p.cost_a.shape[1] for p in pods)
        grown = []
        for pod in pods:
            cost_a = np.zeros((len(pod.mids), base + len(sets)))
            cost_b = np.zeros_like(cost_a)
            cost_a[:, :pod.cost_a.shape[1]], cost_b[:, :pod.cost_b.shape[1]] = (
                pod.cost_a, pod.cost_b)
            for i in np.flatnonzero(pod.plane == j):
                up, down = _mid_links(ga, ga.capacity, int(pod.mids[i]), tops[j])
                for c, chosen in enumerate(sets):
                    into = np.isin(tops[j], chosen)
                    cost_a[i, base + c] = up[~into].sum()
                    cost_b[i, base + c] = down[into].sum()
            grown.append(replace(pod, cost_a=cost_a, cost_b=cost_b))
        self.merged[-1] = (grown, free)
        rows = np.array([counts] * len(sets), dtype=np.int64)
        rows[:, j] = base + np.arange(len(sets))
        for c, chosen in enumerate(sets):
            self.chosen[(j, base + c)] = chosen
        found = np.maximum(_least(self.merged[-1], self.n, rows), bound)
        self.branches += len(rows)
        for row, value in zip(rows, found, strict=True):
            self._push(tuple(int(x) for x in row), float(value), whole)
        return True

    def _expand(self, whole: Callable | None) -> None:
        """The least open branches, up to ``BATCH`` rows of children, grouped by depth: one
        pass of numpy per group."""
        heap, planes = self.heap, len(self.sizes)
        by_depth: dict[int, tuple[list[list[int]], list[float]]] = {}
        taken = 0
        while heap and taken < BATCH and heap[0][0] < self.threshold and len(
                heap[0][2]) < planes:
            bound, _, counts = heapq.heappop(heap)
            depth = len(counts)
            top = self.sizes[depth] // 2 if depth == 0 and self.mirror else self.sizes[depth]
            children, parents = by_depth.setdefault(depth, ([], []))
            children.extend(list(counts) + [k] for k in range(top + 1))
            parents.extend([bound] * (top + 1))
            taken += top + 1
        for depth, (children, parents) in by_depth.items():
            rows = np.array(children, dtype=np.int64)
            tail = self.rest[depth + 1]
            found = _least(self.merged[depth], self.n, rows, self.threshold - tail) + tail
            # A child's choices are some of its parent's: the parent's bound holds for it
            # too (the rest of the parent, a suffix searched merged, may be the stronger).
            found = np.maximum(found, parents)
            self.branches += len(rows)
            for row, value in zip(rows, found, strict=True):
                self._push(tuple(int(x) for x in row), float(value), whole)

    def _push(self, counts: tuple[int, ...], value: float, whole: Callable | None) -> None:
        """Keep a branch below the threshold open; a whole choice ``whole`` closes (a split
        at its bound) lowers the threshold instead."""
        if not value < self.threshold:
            return
        if len(counts) == len(self.sizes) and whole is not None:
            closed = whole(counts, value, False)
            if closed is not None:
                self.threshold = min(self.threshold, closed)
                return
        self._count += 1
        heapq.heappush(self.heap, (value, self._count, counts))


def _plane_tops(ga: GraphArrays, layers: Layers, planes: list[np.ndarray],
                ) -> list[np.ndarray]:
    """Each plane's top switches (those with a link in it)."""
    tops = np.concatenate(list(layers.top_classes) + [np.zeros(0, dtype=int)])
    out = []
    for cap in planes:
        live = cap > 0
        touched = np.zeros(ga.n_nodes, dtype=bool)
        touched[ga.tail[live]] = True
        touched[ga.head[live]] = True
        out.append(tops[touched[tops]])
    return out


def _mid_links(ga: GraphArrays, cap: np.ndarray, mid: int, top: np.ndarray,
               ) -> tuple[np.ndarray, np.ndarray]:
    """A middle switch's link capacity up to each of its plane's top switches, and down."""
    pos = np.full(ga.n_nodes, -1)
    pos[top] = np.arange(len(top))
    up, down = np.zeros(len(top)), np.zeros(len(top))
    arcs = (ga.tail == mid) & (pos[ga.head] >= 0)
    np.add.at(up, pos[ga.head[arcs]], cap[arcs])
    arcs = (ga.head == mid) & (pos[ga.tail] >= 0)
    np.add.at(down, pos[ga.tail[arcs]], cap[arcs])
    return up, down


def _mid_costs(ga: GraphArrays, cap: np.ndarray, mid: int, top: np.ndarray,
               ) -> tuple[np.ndarray, np.ndarray]:
    """A middle switch's least cost per count ``k`` of its plane's top sending: sending, its
    ``K - k`` smallest up-link capacities; not, its ``k`` smallest down-link capacities."""
    up, down = _mid_links(ga, cap, mid, top)
    up_sums = np.concatenate([[0.0], np.cumsum(np.sort(up))])
    down_sums = np.concatenate([[0.0], np.cumsum(np.sort(down))])
    return up_sums[::-1].copy(), down_sums


def _merged_one(ga: GraphArrays, ep_idx: np.ndarray, cap: np.ndarray,
                top: np.ndarray, plane_of: dict[int, int] | None = None,
                tops: list[np.ndarray] | None = None) -> tuple[list[_Pod], int] | None:
    """The pods of the fabric whose arcs carry ``cap`` (planes merged), each with its own
    costs and its middle switches' costs per count, and the endpoints linked to nothing."""
    layers = read_layers(ga, ep_idx, cap, max_configs=np.inf)
    if layers is None:
        return None
    pods = []
    for comp in layers.components:
        if len(comp.mids) > MAX_COMPONENT_MIDS:
            return None
        on_a = _sides(len(comp.mids))
        planes = [0 if plane_of is None else plane_of.get(int(m), -1) for m in comp.mids]
        if min(planes, default=0) < 0:
            return None
        costs = [_mid_costs(ga, cap, int(m), top if tops is None else tops[p])
                 for m, p in zip(comp.mids, planes, strict=True)]
        width = 1 + max([len(c[0]) for c in costs], default=1)
        cost_a, cost_b = np.zeros((len(costs), width)), np.zeros((len(costs), width))
        for i, (a, b) in enumerate(costs):
            cost_a[i, :len(a)], cost_b[i, :len(b)] = a, b
        pods.append(_Pod(on_a.astype(float), _inner(ga, cap, comp, on_a), cost_a, cost_b,
                         np.array(planes, dtype=np.int64), comp.mids))
    return pods, len(layers.free)


def _merged(ga: GraphArrays, ep_idx: np.ndarray, planes: list[np.ndarray],
            tops: list[np.ndarray]) -> list[tuple[list[_Pod], int]] | None:
    """For each depth ``d``: the pods of the first ``d + 1`` planes merged."""
    plane_of: dict[int, int] = {}
    for j, cap in enumerate(planes):
        live = cap > 0
        ends = np.concatenate([ga.tail[live], ga.head[live]])
        for t in np.unique(ends):
            plane_of.setdefault(int(t), j)
    out, total = [], np.zeros(ga.n_arcs)
    for cap in planes:
        total = total + cap
        merged = _merged_one(ga, ep_idx, total, np.zeros(0, dtype=int), plane_of, tops)
        if merged is None:
            return None
        out.append(merged)
    return out


def _least(merged: tuple[list[_Pod], int] | None, n: int, rows: np.ndarray,
           beat: float = np.inf) -> np.ndarray:
    """:math:`R` of the merged planes for each row of counts (one per plane merged, in
    order): every pod at its least per sending endpoints, convolved, read at the halves.
    A row whose bound by prices (:func:`_priced`) is already ``beat`` or more gets that
    bound instead (it is at most :math:`R`), without the convolution."""
    if merged is None:
        return np.zeros(len(rows))
    pods, free = merged
    tables = []
    for pod in pods:
        at = np.arange(len(pod.plane))[None, :]
        sending = pod.cost_a[at, rows[:, pod.plane]]
        staying = pod.cost_b[at, rows[:, pod.plane]]
        top = (np.einsum("rm,sm->rs", sending, pod.sides)
               + np.einsum("rm,sm->rs", staying, 1 - pod.sides))
        tables.append((top[:, :, None] + pod.inner[None, :, :]).min(axis=1))
    lo, hi, live = n // 2, n - n // 2, n - free
    first, last = max(0, lo - free), min(live, hi)
    if first > last:
        return np.full(len(rows), np.inf)
    out = _priced(tables, first, last, len(rows))
    keep = out < beat
    if not tables:  # no pod below the merged top: nothing is cut there
        return out
    if not keep.any():
        return out
    tables = [t[keep] for t in tables]
    out[keep] = _convolved(tables, first, last)
    return out


def _priced(tables: list[np.ndarray], first: int, last: int, n_rows: int) -> np.ndarray:
    """Lagrange's bound on the convolution read between ``first`` and ``last`` sending
    endpoints, per row (``n_rows`` of them): for a price ``p`` per sending endpoint every pod
    takes its least ``t[i] - p i`` alone, and ``p`` times the count (``first`` for a price of
    0 or more, ``last`` below) is added back; the best of prices across the tables' steepest
    slope. No pods, or pods of one column each (no slope): price 0 alone.

    >>> _priced([], 0, 0, 2)                                  # nothing to cut
    array([0., 0.])
    >>> _priced([np.array([[5.0]]), np.array([[2.0]])], 0, 0, 1)   # one column each: 5 + 2
    array([7.])
    """
    steep = max((float(np.nanmax(np.abs(np.where(np.isfinite(d), d, np.nan)), initial=0.0))
                 for d in (np.diff(t, axis=1) for t in tables) if d.size), default=0.0)
    prices = np.linspace(-steep, steep, 33)
    total = np.zeros((n_rows, len(prices)))
    for t in tables:
        i = np.arange(t.shape[1])
        total += (t[:, None, :] - prices[None, :, None] * i[None, None, :]).min(axis=2)
    total += np.where(prices >= 0, prices * first, prices * last)[None, :]
    return total.max(axis=1)


def _convolved(tables: list[np.ndarray], first: int, last: int) -> np.ndarray:
    """The min-plus convolution of the pods' tables, least between ``first`` and ``last``
    sending endpoints, per row."""
    # Each half of the pods convolved, then the two halves met only at the window's sizes.
    left, right = _joined(tables[:len(tables) // 2]), _joined(tables[len(tables) // 2:])
    out = np.full(len(tables[0]), np.inf)
    for m in range(first, last + 1):
        i = np.arange(max(0, m - right.shape[1] + 1), min(m, left.shape[1] - 1) + 1)
        if len(i):
            out = np.minimum(out, (left[:, i] + right[:, m - i]).min(axis=1))
    return out


def _joined(tables: list[np.ndarray]) -> np.ndarray:
    """The min-plus convolution of the tables (rows paired) along their last axis."""
    least = np.zeros((tables[0].shape[0] if tables else 1, 1))
    for table in tables:
        width = least.shape[1] + table.shape[1] - 1
        out = np.full((least.shape[0], width), np.inf)
        # Along the narrower table: one pass of numpy per column of it.
        small, big = (least, table) if least.shape[1] < table.shape[1] else (table, least)
        for j in range(small.shape[1]):
            window = out[:, j:j + big.shape[1]]
            np.minimum(window, big + small[:, j:j + 1], out=window)
        least = out
    return least


def _mirrored(ga: GraphArrays) -> bool:
    """Whether every arc's reverse has the same capacity (a split's mirror cuts the same)."""
    forward = np.stack([ga.tail, ga.head], axis=1)
    backward = np.stack([ga.head, ga.tail], axis=1)
    order_f = np.lexsort((forward[:, 1], forward[:, 0]))
    order_b = np.lexsort((backward[:, 1], backward[:, 0]))
    return bool(np.array_equal(forward[order_f], backward[order_b])
                and np.array_equal(ga.capacity[order_f], ga.capacity[order_b]))


def _built(ga: GraphArrays, ep_idx: np.ndarray, layers: Layers, tops: list[np.ndarray],
           counts: tuple[int, ...], inners: dict, chosen: dict, every: bool = False,
           ) -> tuple[np.ndarray, float] | None:
    """A split with these counts of each plane's top sending, every pod placed exactly below
    it, and its cut summed from the arcs: where a count is 0 or the whole top the top is
    fixed; else (with ``every``) each way of choosing that many of the plane's top switches
    is tried when a plane has at most ``CHOICES`` ways and the product at most
    ``CHOICES``, or the ones with the least and the most link capacity. None where a count
    is partial and not ``every``. A count beyond the top is the switches ``chosen`` says."""
    options = []
    for j, (top, k) in enumerate(zip(tops, counts, strict=True)):
        if k > len(top):
            options.append([list(chosen[(j, k)])])
            continue
        if 0 < k < len(top) and not every:
            return None
        ways = math.comb(len(top), k)
        if ways <= CHOICES:
            options.append([list(c) for c in itertools.combinations(top, k)])
        else:
            live = np.array([ga.capacity[(ga.tail == t) | (ga.head == t)].sum() for t in top])
            order = top[np.argsort(live, kind="stable")]
            options.append([list(order[:k]), list(order[::-1][:k])])
    choices = list(itertools.islice(itertools.product(*options), CHOICES))
    rows = np.zeros((len(choices), len(layers.top_classes)))
    for r, choice in enumerate(choices):
        sending = np.zeros(ga.n_nodes, dtype=bool)
        for switches in choice:
            sending[np.array(switches, dtype=int)] = True
        rows[r] = [sending[c].sum() for c in layers.top_classes]
    values, at = _least_below(ga, ep_idx, layers, rows, inners)
    best = int(np.argmin(values))
    side = _split(ga, ga.capacity, layers, rows[best], int(at[best]), len(ep_idx) // 2)
    capacity, _ = cut_capacity(ga, side)
    return side, capacity
