r"""The exact bisection of a layered fabric, by the sides of its top tier, and a bound below
from its planes.

A fabric is *layered* here when every endpoint hangs off at most one switch (its *leaf*),
leaves link only to endpoints and to a middle layer, and what is above the middle (the
*top*) links only to the middle: a two- or three-tier Clos or fat tree, failed links and
all (an endpoint whose link failed hangs off nothing and fills whichever half it is put
in, free).

* **Given the top's sides, the rest falls apart.** Fix which side of the split every top
  node is on. The middle and leaf switches then form components (a pod: its leaves and
  the middle switches above them) that share nothing but the top, so the least cut is a
  sum over components of what each costs with ``m`` of its endpoints in the sending half,
  joined by a min-plus convolution over ``m`` and read at the halves' sizes.
* **A component, exactly.** Every side of its middle switches is tried; each leaf then
  takes its better side for each ``m`` (its uplinks to middles across, plus its endpoints
  left across, the cheapest first); the leaves' costs convolve over ``m``.
* **The top, by counts.** Top nodes with the same links (the same capacity to and from the
  same middle switches: a group of cores none of whose links failed) are interchangeable,
  so a class of ``n`` of them is tried at ``0 .. n`` in the sending half, not in ``2^n``
  ways. Every such choice is tried (``MAX_CONFIGS`` at most), so the least is the
  bisection: a bound below by exhaustion. The least choice is then built as a split, and
  its cut's capacity summed from the arcs (it must equal the least, else nothing is
  claimed): the same number above.

Where the top has too many classes (a failed ``fat_tree(16)``: most of its 64 cores lost a
link), the fabric is cut into *planes* (the components of the middle and top tiers with
the links between them; in a fat tree, core group ``j`` with the ``j``-th middle switch of
every pod). Each plane keeps its middle switches' links to the leaves and a share of each
endpoint link (the leaf's uplink capacity into that plane over its uplink capacity in
all): the planes' capacities sum to at most the fabric's on every arc. Any split's cut is
the sum of its cuts in the planes, each at least that plane's bisection, so the sum of the
planes' exact bisections is a bound below. It is exact on an intact fat tree (every plane's
least split is the same whole-pod split) and loses only where failed planes would split
differently.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..flow.budget import now as clock_now
from ..graph_arrays import GraphArrays
from .cuts import cut_capacity

#: Most choices of the top tier's sides tried (classes of alike top nodes counted).
MAX_CONFIGS = 1 << 17
#: Most middle switches in one component (each of their sides is tried).
MAX_COMPONENT_MIDS = 10
#: Most entries of one configurations-by-endpoints table held at once.
MAX_TABLE = 40_000_000
#: Most table entries one exact solve computes (:func:`work`; a failed fat_tree(8) up to
#: 2.3e8, under a second): above it the fabric is declined rather than searched for long.
MAX_WORK = 1e9
#: Most entries laid out at once by one small convolution (one numpy pass, not a loop).
SMALL_CONVOLUTION = 1 << 16
#: Most rounds of the descent over the top tier's sides.
DESCENT_ROUNDS = 30

_INF = np.inf


@dataclass(frozen=True)
class _Component:
    """A component below the top: its middle switches, its leaves and each leaf's
    endpoints' link capacities (to and from the leaf)."""

    mids: np.ndarray
    leaves: np.ndarray
    #: Per leaf: capacities leaf -> endpoint and endpoint -> leaf, one entry per endpoint.
    down: tuple[np.ndarray, ...]
    up: tuple[np.ndarray, ...]
    hosts: tuple[np.ndarray, ...]


@dataclass(frozen=True)
class Layers:
    """A layered fabric read off its arcs (with one capacity vector)."""

    components: tuple[_Component, ...]
    #: Top classes: node indices of each class (alike nodes).
    top_classes: tuple[np.ndarray, ...]
    #: Each class's links: ``(middle node, 0 from the top / 1 to it, capacity)``.
    top_links: tuple[tuple[tuple[int, int, float], ...], ...]
    #: Endpoints linked to nothing (free to fill either half).
    free: np.ndarray
    #: Choices of the top tier's sides (the product of each class's size plus one).
    configs: float


def read_layers(ga: GraphArrays, ep_idx: np.ndarray, capacity: np.ndarray | None = None,
                max_configs: float = MAX_CONFIGS) -> Layers | None:
    """The layers of the fabric whose arcs carry ``capacity`` (default the fabric's; an arc
    at 0 counts as absent), or None when it is not layered as the module docstring says or
    too large to enumerate."""
    cap = ga.capacity if capacity is None else capacity
    live = cap > 0
    tail, head, c = ga.tail[live], ga.head[live], cap[live]
    n = ga.n_nodes
    is_ep = np.zeros(n, dtype=bool)
    is_ep[ep_idx] = True
    # Each endpoint's one neighbour: its leaf.
    ep_arcs = is_ep[tail] | is_ep[head]
    if np.any(is_ep[tail] & is_ep[head]):
        return None
    ep_of = np.where(is_ep[tail], tail, head)[ep_arcs]
    other = np.where(is_ep[tail], head, tail)[ep_arcs]
    leaf_of = np.full(n, -1)
    leaf_of[ep_of] = other
    if np.any(leaf_of[ep_of] != other):
        return None
    is_leaf = np.zeros(n, dtype=bool)
    is_leaf[other] = True
    switch_arcs = ~ep_arcs
    st, sh = tail[switch_arcs], head[switch_arcs]
    is_mid = np.zeros(n, dtype=bool)
    is_mid[np.where(is_leaf[st], sh, st)[is_leaf[st] | is_leaf[sh]]] = True
    if np.any(is_leaf & is_mid):
        return None  # leaf-to-leaf links
    is_top = ~(is_ep | is_leaf | is_mid)
    # Tops link only to middles; leaves only to middles and endpoints.
    if np.any((is_top[st] & ~is_mid[sh]) | (is_top[sh] & ~is_mid[st])):
        return None
    below = (is_leaf | is_mid)[st] & (is_leaf | is_mid)[sh]
    graph = sp.coo_matrix((np.ones(int(below.sum())), (st[below], sh[below])), shape=(n, n))
    _, label = connected_components(graph, directed=False)
    components = []
    order = np.argsort(label, kind="stable")
    members = np.split(order, np.flatnonzero(np.diff(label[order])) + 1)
    # Each endpoint's link capacity from its leaf and to it.
    from_leaf, to_leaf = np.zeros(n), np.zeros(n)
    np.add.at(from_leaf, head[ep_arcs & is_ep[head]], c[ep_arcs & is_ep[head]])
    np.add.at(to_leaf, tail[ep_arcs & is_ep[tail]], c[ep_arcs & is_ep[tail]])
    by_leaf = np.argsort(leaf_of, kind="stable")
    by_leaf = by_leaf[leaf_of[by_leaf] >= 0]
    cuts = np.searchsorted(leaf_of[by_leaf], np.arange(n + 1))
    for group in members:
        group = group[(is_leaf | is_mid)[group]]
        if not len(group):
            continue
        mids, leaves = group[is_mid[group]], group[is_leaf[group]]
        if len(mids) > MAX_COMPONENT_MIDS:
            return None
        hosts = tuple(by_leaf[cuts[leaf]:cuts[leaf + 1]] for leaf in leaves)
        down = tuple(from_leaf[h] for h in hosts)
        up = tuple(to_leaf[h] for h in hosts)
        components.append(_Component(mids, leaves, down, up, hosts))
    tops = np.flatnonzero(is_top)
    classes: dict[tuple, list[int]] = {}
    top_arcs = is_top[st] | is_top[sh]
    links: dict[int, list] = {int(t): [] for t in tops}
    for u, v, x in zip(st[top_arcs], sh[top_arcs], c[switch_arcs][top_arcs], strict=True):
        t, m, way = (int(u), int(v), 0) if is_top[u] else (int(v), int(u), 1)
        links[t].append((m, way, float(x)))
    for t in tops:
        if links[int(t)]:  # a switch linked to nothing is free, as a cut-off endpoint is
            classes.setdefault(tuple(sorted(links[int(t)])), []).append(int(t))
    top_classes = tuple(np.array(v) for v in classes.values())
    configs = float(np.prod([len(v) + 1 for v in top_classes], dtype=float))
    if configs > max_configs:
        return None
    free = np.array([e for e in ep_idx if leaf_of[e] < 0], dtype=int)
    return Layers(tuple(components), top_classes, tuple(classes), free, configs)


def exact_layered(ga: GraphArrays, ep_idx: np.ndarray, capacity: np.ndarray | None = None,
                  layers: Layers | None = None) -> tuple[float, np.ndarray] | None:
    """The least cut over every split of ``ep_idx`` into halves (sizes ``n // 2`` and
    ``n - n // 2``, either sending) of the fabric whose arcs carry ``capacity``, and a split
    (True on the sending side) whose arcs' capacity is that least; None when the fabric is
    not layered (:func:`read_layers`) or its table would be too large.

    >>> import fabricopt as fo
    >>> ft = fo.fat_tree(4)                       # 16 hosts, 400 Gb/s links: 8 x 400
    >>> ga = GraphArrays.from_fabric(ft)
    >>> ep = np.array([ga.index[e] for e in ft.endpoints])
    >>> value, side = exact_layered(ga, ep)
    >>> value, int(side[ep].sum())
    (3200.0, 8)
    """
    cap = ga.capacity if capacity is None else capacity
    layers = read_layers(ga, ep_idx, cap) if layers is None else layers
    if layers is None:
        return None
    n = len(ep_idx)
    live = n - len(layers.free)
    if layers.configs * (live + 1) > MAX_TABLE or work(layers, live) > MAX_WORK:
        return None
    counts = _configs(layers.top_classes)
    lo, hi = n // 2, n - n // 2
    least, cols = np.zeros((len(counts), 1)), []
    for comp in layers.components:
        table, _ = _component_table(ga, cap, comp, layers, counts)
        least, _ = _convolve(least, table)
        cols.append(table.shape[1])
    window = least[:, max(0, lo - len(layers.free)):min(live, hi) + 1]
    if not window.size:
        return None
    at = np.unravel_index(int(np.argmin(window)), window.shape)
    value = float(window[at])
    side = _split(ga, cap, layers, counts[at[0]],
                  int(at[1]) + max(0, lo - len(layers.free)), lo)
    built, _ = cut_capacity(ga, side, cap)
    if abs(built - value) > 1e-9 * max(1.0, value):
        return None  # the split built is not the least found: claim nothing
    return value, side


def work(layers: Layers, live: int, choices: float | None = None) -> float:
    """Table entries :func:`exact_layered` would compute: per component, its leaves'
    convolutions for each side of its middles (about the square of its endpoint count, once),
    then for every choice of the top (``choices``, default all) its table and the running
    convolution over components."""
    once, each = 0.0, 0.0
    for comp in layers.components:
        width = sum(len(h) for h in comp.hosts) + 1
        once += (1 << len(comp.mids)) * width * width
        each += ((1 << len(comp.mids)) + live + 1) * width
    return once + (layers.configs if choices is None else choices) * each


def _configs(classes: tuple[np.ndarray, ...]) -> np.ndarray:
    """Every count of each class's nodes on the sending side, one row per choice."""
    if not classes:
        return np.zeros((1, 0), dtype=float)
    grids = np.meshgrid(*[np.arange(len(c) + 1) for c in classes], indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1).astype(float)


def _convolve(a: np.ndarray, b: np.ndarray, take: bool = False,
              ) -> tuple[np.ndarray, np.ndarray | None]:
    """Min-plus convolution of two tables along their last axis (rows paired): ``out[r, m]``
    is the least ``a[r, i] + b[r, m - i]``; with ``take``, also the ``m - i`` chosen."""
    width = a.shape[1] + b.shape[1] - 1
    if not take and a.shape[0] * b.shape[1] * width <= SMALL_CONVOLUTION:
        # A leaf's few endpoints: every shifted sum laid out at once, the least kept.
        shifted = np.full((a.shape[0], b.shape[1], width), _INF)
        at = np.arange(b.shape[1])[:, None] + np.arange(a.shape[1])[None, :]
        shifted[:, np.arange(b.shape[1])[:, None], at] = a[:, None, :] + b[:, :, None]
        return shifted.min(axis=1), None
    out = np.full((a.shape[0], width), _INF)
    chosen = np.zeros((a.shape[0], width), dtype=np.int64) if take else None
    for j in range(b.shape[1]):
        window = out[:, j:j + a.shape[1]]
        trial = a + b[:, j:j + 1]
        if chosen is None:
            np.minimum(window, trial, out=window)
        else:
            better = trial < window
            window[better] = trial[better]
            chosen[:, j:j + a.shape[1]][better] = j
    return out, chosen


def _sides(q: int) -> np.ndarray:
    """Every side of ``q`` middle switches: row ``s``, True on the sending side."""
    return ((np.arange(1 << q)[:, None] >> np.arange(q)) & 1).astype(bool)


def _leaf_costs(ga: GraphArrays, cap: np.ndarray, comp: _Component,
                on_a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per side of the middles (rows) and leaf (columns): the leaf's cost on the sending
    side (its uplinks to middles across), on the other side, and the middles' own links."""
    pos = np.full(ga.n_nodes, -1)
    pos[comp.mids] = np.arange(len(comp.mids))
    where = np.full(ga.n_nodes, -1)
    where[comp.leaves] = np.arange(len(comp.leaves))
    q, k = len(comp.mids), len(comp.leaves)
    out, inn, mid = np.zeros((k, q)), np.zeros((k, q)), np.zeros((q, q))
    pt, ph, wt, wh = pos[ga.tail], pos[ga.head], where[ga.tail], where[ga.head]
    for into, rows, cols, arcs in ((out, wt, ph, (wt >= 0) & (ph >= 0)),
                                   (inn, wh, pt, (pt >= 0) & (wh >= 0)),
                                   (mid, pt, ph, (pt >= 0) & (ph >= 0))):
        np.add.at(into, (rows[arcs], cols[arcs]), cap[arcs])
    up_a = (~on_a).astype(float) @ out.T   # leaf sending, middles not: leaf -> middle
    up_b = on_a.astype(float) @ inn.T      # leaf not, middles sending: middle -> leaf
    mids = ((on_a.astype(float) @ mid) * ~on_a).sum(axis=1)
    return up_a, up_b, mids


def _leaf_profile(down: np.ndarray, up: np.ndarray, up_a: np.ndarray, up_b: np.ndarray,
                  ) -> tuple[np.ndarray, np.ndarray]:
    """A leaf's least cost with ``m`` of its endpoints sending (columns), per side of the
    middles (rows), and whether the leaf then sends: a sending leaf pays its links to the
    endpoints left behind (the cheapest), the other its endpoints' links to it."""
    live = len(down)
    m = np.arange(live + 1)
    left = np.concatenate([[0.0], np.cumsum(np.sort(down))])[live - m]
    sent = np.concatenate([[0.0], np.cumsum(np.sort(up))])[m]
    as_a, as_b = up_a[:, None] + left[None, :], up_b[:, None] + sent[None, :]
    return np.minimum(as_a, as_b), as_a <= as_b


def _component_table(ga: GraphArrays, cap: np.ndarray, comp: _Component, layers: Layers,
                     counts: np.ndarray, inners: dict | None = None,
                     ) -> tuple[np.ndarray, np.ndarray]:
    """What the component costs with ``m`` of its endpoints sending (columns), for each
    choice of the top's counts (rows), its links to the top included; and the side of its
    middles that costs that (a row of :func:`_sides`). ``inners`` keeps each component's own
    cost (it does not depend on the top) across calls."""
    on_a = _sides(len(comp.mids))
    if inners is None:
        inner = _inner(ga, cap, comp, on_a)
    else:
        inner = inners.get(id(comp))
        if inner is None:
            inner = inners[id(comp)] = _inner(ga, cap, comp, on_a)
    pos = {int(v): j for j, v in enumerate(comp.mids)}
    sending, staying = np.zeros((len(layers.top_links), len(on_a))), np.zeros(
        (len(layers.top_links), len(on_a)))
    for k, links in enumerate(layers.top_links):
        for mid, way, c in links:
            if mid in pos:
                if way == 0:  # top -> middle: crosses when the top sends and it does not
                    sending[k] += c * ~on_a[:, pos[mid]]
                else:         # middle -> top: when the middle sends and the top does not
                    staying[k] += c * on_a[:, pos[mid]]
    sizes = np.array([len(c) for c in layers.top_classes], dtype=float)
    top = counts @ sending + (sizes[None, :] - counts) @ staying
    table = np.full((len(counts), inner.shape[1]), _INF)
    choice = np.zeros(table.shape, dtype=np.int64)
    for s in range(len(on_a)):
        trial = top[:, s:s + 1] + inner[s][None, :]
        if len(counts) == 1:  # the one choice a split is built from: keep the sides
            choice[trial < table] = s
        np.minimum(table, trial, out=table)
    return table, choice


def _inner(ga: GraphArrays, cap: np.ndarray, comp: _Component, on_a: np.ndarray,
           takes: list | None = None) -> np.ndarray:
    """The component's own cost (middles and leaves, not the top) per side of its middles
    (rows) and sending endpoints (columns); ``takes`` collects each leaf's choices."""
    up_a, up_b, mids = _leaf_costs(ga, cap, comp, on_a)
    inner = mids[:, None]
    for i in range(len(comp.leaves)):
        profile, _ = _leaf_profile(comp.down[i], comp.up[i], up_a[:, i], up_b[:, i])
        inner, take = _convolve(inner, profile, take=takes is not None)
        if takes is not None:
            takes.append(take)
    return inner


def _split(ga: GraphArrays, cap: np.ndarray, layers: Layers, count: np.ndarray,
           sending: int, lo: int) -> np.ndarray:
    """The split the least choice stands for: the top's ``count`` per class sending,
    ``sending`` endpoints linked to leaves sending, then free endpoints up to ``lo``."""
    side = np.zeros(ga.n_nodes, dtype=bool)
    least, choices, takes = np.zeros((1, 1)), [], []
    for comp in layers.components:
        table, choice = _component_table(ga, cap, comp, layers, count[None, :])
        least, take = _convolve(least, table, take=True)
        choices.append(choice[0])
        takes.append(take[0])
    m = sending
    for comp, choice, take in zip(reversed(layers.components), reversed(choices),
                                  reversed(takes), strict=True):
        mine = int(take[m])
        m -= mine
        _place(ga, cap, comp, int(choice[mine]), mine, side)
    for cls, k in zip(layers.top_classes, count, strict=True):
        side[cls[:int(k)]] = True
    side[layers.free[:max(0, lo - sending)]] = True
    return side


def _place(ga: GraphArrays, cap: np.ndarray, comp: _Component, s: int, sending: int,
           side: np.ndarray) -> None:
    """Put the component's nodes on their sides: middles by side ``s``, each leaf and its
    endpoints as the least cost with ``sending`` of them sending says."""
    on_a = _sides(len(comp.mids))[s:s + 1]
    side[comp.mids] = on_a[0]
    takes: list = []
    _inner(ga, cap, comp, on_a, takes)
    up_a, up_b, _ = _leaf_costs(ga, cap, comp, on_a)
    m = sending
    for i in reversed(range(len(comp.leaves))):
        mine = int(takes[i][0, m])
        m -= mine
        _, leaf_sends = _leaf_profile(comp.down[i], comp.up[i], up_a[:, i], up_b[:, i])
        hosts, live = comp.hosts[i], len(comp.hosts[i])
        if leaf_sends[0, mine]:
            side[comp.leaves[i]] = True
            side[hosts] = True
            side[hosts[np.argsort(comp.down[i], kind="stable")[:live - mine]]] = False
        else:
            side[hosts[np.argsort(comp.up[i], kind="stable")[:mine]]] = True


def plane_lower(ga: GraphArrays, ep_idx: np.ndarray,
                ) -> tuple[float, list[np.ndarray]] | None:
    """The sum of the planes' exact bisections (module docstring), a bound below on the
    fabric's, and each plane's least split (True on the sending side); None when the fabric
    is not layered, has one plane, or a plane is too large to enumerate.

    >>> import fabricopt as fo
    >>> ft = fo.fat_tree(4)                  # two planes of 2 cores: 2 x 1,600 = 3,200
    >>> ga = GraphArrays.from_fabric(ft)
    >>> bound, splits = plane_lower(ga, np.array([ga.index[e] for e in ft.endpoints]))
    >>> round(bound, 6), len(splits)
    (3200.0, 2)
    """
    layers = read_layers(ga, ep_idx, max_configs=np.inf)
    if layers is None:
        return None
    planes = _planes(ga, layers)
    if len(planes) < 2:
        return None
    total, splits = 0.0, []
    for cap in planes:
        solved = exact_layered(ga, ep_idx, cap)
        if solved is None:
            return None
        total += solved[0]
        splits.append(solved[1])
    # The shares of the endpoint links are fractions: a rounding of their sum must not be
    # read as more than the planes prove.
    return total * (1 - 1e-12), splits


def _planes(ga: GraphArrays, layers: Layers) -> list[np.ndarray]:
    """Each plane's capacity on every arc: the middle and top tiers' components with their
    links to the leaves, and each endpoint link in the share of its leaf's uplinks into the
    plane (the shares of a link sum to one)."""
    n, cap = ga.n_nodes, ga.capacity
    mids = np.concatenate([c.mids for c in layers.components] + [np.zeros(0, dtype=int)])
    tops = np.concatenate(list(layers.top_classes) + [np.zeros(0, dtype=int)])
    upper = np.zeros(n, dtype=bool)
    upper[mids], upper[tops] = True, True
    inside = upper[ga.tail] & upper[ga.head] & (cap > 0)
    graph = sp.coo_matrix((np.ones(int(inside.sum())), (ga.tail[inside], ga.head[inside])),
                          shape=(n, n))
    _, label = connected_components(graph, directed=False)
    plane_ids = np.unique(label[mids])
    leaves = np.concatenate([c.leaves for c in layers.components])
    is_leaf = np.zeros(n, dtype=bool)
    is_leaf[leaves] = True
    # Uplink capacity of each leaf into each plane (both directions), and in all.
    uplink = (is_leaf[ga.tail] & upper[ga.head]) | (upper[ga.tail] & is_leaf[ga.head])
    leaf_end = np.where(is_leaf[ga.tail], ga.tail, ga.head)
    mid_end = np.where(is_leaf[ga.tail], ga.head, ga.tail)
    into = {p: np.bincount(leaf_end[uplink & (label[mid_end] == p)],
                           weights=cap[uplink & (label[mid_end] == p)], minlength=n)
            for p in plane_ids}
    total = sum(into.values())
    is_ep = np.zeros(n, dtype=bool)
    for comp in layers.components:
        for hosts in comp.hosts:
            is_ep[hosts] = True
    ep_link = (is_ep[ga.tail] & is_leaf[ga.head]) | (is_leaf[ga.tail] & is_ep[ga.head])
    ep_leaf = np.where(is_leaf[ga.tail], ga.tail, ga.head)
    planes = []
    for i, p in enumerate(plane_ids):
        share = np.divide(into[p], total, out=np.full(n, 1.0 if i == 0 else 0.0),
                          where=total > 0)
        mine = upper[ga.tail] & upper[ga.head] & (label[ga.tail] == p)
        mine |= uplink & (label[mid_end] == p)
        plane = np.where(mine, cap, 0.0)
        plane[ep_link] = cap[ep_link] * share[ep_leaf[ep_link]]
        planes.append(plane)
    return planes


def descend_top(ga: GraphArrays, ep_idx: np.ndarray, side: np.ndarray,
                rounds: int = DESCENT_ROUNDS, deadline: float | None = None,
                ) -> tuple[float, np.ndarray] | None:
    """A cut at or below the split ``side`` (True on the sending side): the top tier's
    sides read off it, then, round by round, every change of one class's count tried at
    once (each with every pod placed exactly below that top) and the best taken, until none
    helps. The split returned has its cut's capacity summed from the arcs; None when the
    fabric is not layered or a round would be more than ``MAX_WORK``. ``deadline`` (a reading
    of :func:`~fabricopt.flow.budget.now`): no round is begun once it has passed.

    >>> import fabricopt as fo
    >>> ft = fo.fat_tree(4)
    >>> ga = GraphArrays.from_fabric(ft)
    >>> ep = np.array([ga.index[e] for e in ft.endpoints])
    >>> bad = np.zeros(ga.n_nodes, dtype=bool)
    >>> bad[ep[::2]] = True                    # every other host: 8 host links, 3,200
    >>> value, side = descend_top(ga, ep, bad)
    >>> value                                  # pods placed whole below the top: 8 x 400
    3200.0
    """
    layers = read_layers(ga, ep_idx, max_configs=np.inf)
    if layers is None:
        return None
    # Each round tries one choice per move: held to MAX_WORK like the exact search.
    moves = 1 + sum(len(c) for c in layers.top_classes)
    if work(layers, len(ep_idx) - len(layers.free), moves) > MAX_WORK:
        return None
    sizes = np.array([len(c) for c in layers.top_classes])
    now = np.array([[side[c].sum() for c in layers.top_classes]], dtype=float)
    inners: dict = {}  # each pod's own costs, the same in every round
    value, sending = _least_below(ga, ep_idx, layers, now, inners)
    value, sending = float(value[0]), int(sending[0])
    for _ in range(rounds):
        if deadline is not None and clock_now() >= deadline:
            break  # the split so far is a cut like any other
        moves = [np.where(np.arange(len(sizes)) == k, x, now[0])
                 for k, n in enumerate(sizes) for x in range(n + 1) if x != now[0, k]]
        if not moves:
            break
        tried, at = _least_below(ga, ep_idx, layers, np.array(moves, dtype=float), inners)
        best = int(np.argmin(tried))
        if not tried[best] < value * (1 - 1e-12):
            break
        value, sending, now = float(tried[best]), int(at[best]), np.array([moves[best]])
    n = len(ep_idx)
    built = _split(ga, ga.capacity, layers, now[0], sending, n // 2)
    capacity, _ = cut_capacity(ga, built)
    if abs(capacity - value) > 1e-9 * max(1.0, value):
        return None
    return value, built


def _least_below(ga: GraphArrays, ep_idx: np.ndarray, layers: Layers, counts: np.ndarray,
                 inners: dict) -> tuple[np.ndarray, np.ndarray]:
    """For each row of the top's counts: the least cut with every pod placed exactly below
    it, and how many endpoints linked to leaves then send."""
    n = len(ep_idx)
    lo, hi, live = n // 2, n - n // 2, n - len(layers.free)
    least = np.zeros((len(counts), 1))
    for comp in layers.components:
        table, _ = _component_table(ga, ga.capacity, comp, layers, counts, inners)
        least, _ = _convolve(least, table)
    first = max(0, lo - len(layers.free))
    window = least[:, first:min(live, hi) + 1]
    return window.min(axis=1), window.argmin(axis=1) + first
