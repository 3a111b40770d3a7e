r"""A bisection bound by counting: a fabric whose endpoints sit in small *blocks* (servers)
below a few *middle* switches per unit, below a one-level *top* (a rail-optimized cluster:
DGX servers, rail leaves, spines).

* **Blocks, middles, units, top.** The endpoints and the switches that link only to
  endpoints (a server's NVSwitches) form *blocks* (a server: 8 GPUs and 4 NVSwitches; a
  host alone); blocks share no link. The switches a block links to are *middles* (the rail
  leaves); every other switch is the *top* (the spines), and must link only to middles.
  Below the top, the middles and blocks form *units* (a scalable unit: its rail leaves and
  its servers) that share nothing but the top.
* **Every cut splits into a top part and the units' parts.** The arcs between the top and
  the middles are the top part; every other arc lies inside one unit. Given which middles
  are on the sending side, each top switch lies on one side and pays the arcs from the
  other side's middles: at least the lesser of the two sums, :math:`\sum_s \min(A_s, B_s)`.
* **A unit, exactly, per count of its sending middles.** For every side of its middles
  (at most ``MAX_UNIT_MIDS``) the blocks share nothing but those middles, so each block's
  least cost per number of its sending endpoints is exact by trying every side of its
  nodes (at most ``MAX_BLOCK_NODES``; alike blocks once), and the blocks convolve. Reading
  the least over the sides with ``k`` middles sending gives, per ``k``, a table of the
  unit's own cost per number of sending endpoints, and the least of each top switch's
  :math:`A_s` and :math:`B_s` shares over those sides.
* **Every count of every unit.** For each choice of ``k`` per unit (mirrored choices once
  when the halves are equal), the top's part is at least
  :math:`\sum_s \min(\sum_u A^{\min}_{u,s}(k_u),\ \sum_u B^{\min}_{u,s}(k_u))` and the
  units' parts at least the min-plus convolution of their tables read at the halves'
  sizes (first bounded by Lagrange's relaxation of the halves' size, a sum per unit; the
  convolution only where that does not already reach the bound asked to beat). The least
  over every choice is a bound below on the bisection.

Where the least choice has every unit's middles on one side (no ``k`` strictly between 0
and the unit's middles), its split is built (the top on its cheaper side, each unit's
blocks as their tables chose) and its cut's capacity summed from the arcs: when that
equals the bound, it is both ends.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..flow.budget import now
from ..graph_arrays import GraphArrays
from .layered_bisection import _convolve, _sides

#: Most middle switches in one unit (each of their sides is tried).
MAX_UNIT_MIDS = 8
#: Most nodes in one block (each of their sides is tried).
MAX_BLOCK_NODES = 14
#: Most choices of every unit's count of sending middles.
MAX_STATES = 6_000_000
#: Most choices of every side of every unit's middles (then tried side by side: exact).
MAX_SIDE_STATES = 100_000
#: Most choices whose relaxation leaves them below the bound in hand, each then convolved
#: exactly: past it the bound is not proven (None), rather than searched for long.
MAX_CONVOLVED = 5_000
#: Most choices tried side by side when the least ones hold counts of several sides (a
#: 768-GPU rail 1:1 cluster needs about 3,000 to close, 0.9 s: the flows close it sooner,
#: so a few only: 0.1 s).
MAX_REFINED = 100
#: Choices bounded at once (memory: each holds a row of top shares).
CHUNK = 200_000

_INF = np.inf


@dataclass(frozen=True)
class _Unit:
    """A unit below the top: its middles, its blocks' nodes, and what each side of its
    middles costs inside it."""

    mids: np.ndarray
    blocks: tuple[np.ndarray, ...]
    #: Per block: its least cost per side of the middles (rows), sending endpoints (cols),
    #: and what finds the side of its nodes that costs that (:func:`_block_side`).
    block_costs: tuple[np.ndarray, ...]
    block_takes: tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]
    #: The unit's own cost per side of its middles (rows) and sending endpoints (columns).
    inner: np.ndarray
    #: Capacity middle -> top and top -> middle (rows: middles, columns: top switches).
    up: np.ndarray
    down: np.ndarray


@dataclass(frozen=True)
class Blocked:
    """A fabric read as blocks below middles below a one-level top (module docstring)."""

    units: tuple[_Unit, ...]
    tops: np.ndarray


def read_blocks(ga: GraphArrays, ep_idx: np.ndarray) -> Blocked | None:
    """The blocks, units and top of the fabric, with each unit's exact costs per side of
    its middles; None when the fabric does not have that shape (module docstring) or a unit
    or a block is too large.

    >>> import fabricopt as fo
    >>> fab = fo.cluster(fo.dgx_h100(), nodes=4, scale_out="rail_optimized")
    >>> ga = GraphArrays.from_fabric(fab)
    >>> b = read_blocks(ga, np.array([ga.index[e] for e in fab.endpoints]))
    >>> len(b.units), [len(u.blocks) for u in b.units], len(b.tops)
    (1, [4], 1)
    """
    live = ga.capacity > 0
    tail, head, c = ga.tail[live], ga.head[live], ga.capacity[live]
    n = ga.n_nodes
    is_ep = np.zeros(n, dtype=bool)
    is_ep[ep_idx] = True
    # A switch with a link to another switch is not in a block.
    reaches_switch = np.zeros(n, dtype=bool)
    reaches_switch[tail[~is_ep[head]]] = True
    reaches_switch[head[~is_ep[tail]]] = True
    touched = np.zeros(n, dtype=bool)
    touched[tail], touched[head] = True, True
    in_block = is_ep | (touched & ~reaches_switch)
    is_mid = np.zeros(n, dtype=bool)
    is_mid[np.where(in_block[tail], head, tail)[in_block[tail] ^ in_block[head]]] = True
    is_top = touched & ~in_block & ~is_mid
    if np.any((is_top[tail] & ~is_mid[head]) | (is_top[head] & ~is_mid[tail])):
        return None  # the top links only to middles
    _, block_of = _components(n, tail, head, in_block[tail] & in_block[head])
    _, unit_of = _components(n, tail, head, ~is_top[tail] & ~is_top[head])
    tops = np.flatnonzero(is_top)
    top_pos = np.full(n, -1)
    top_pos[tops] = np.arange(len(tops))
    # Arcs grouped by the block they touch (own arcs and arcs to or from middles).
    block_arc = np.where(in_block[tail], block_of[tail], np.where(
        in_block[head], block_of[head], -1))
    by_block = np.argsort(block_arc, kind="stable")
    starts = np.searchsorted(block_arc[by_block], np.arange(n + 1))
    units, known = [], {}
    members = np.flatnonzero((in_block | is_mid) & (touched | is_ep))
    order = members[np.argsort(unit_of[members], kind="stable")]
    pos = np.full(n, -1)
    for group in np.split(order, np.flatnonzero(np.diff(unit_of[order])) + 1):
        mids = group[is_mid[group]]
        if len(mids) > MAX_UNIT_MIDS:
            return None
        pos[mids] = np.arange(len(mids))
        unit = _read_unit(group, mids, is_ep, in_block, block_of, by_block, starts,
                          (tail, head, c), pos, top_pos, len(tops), known)
        pos[mids] = -1
        if unit is None:
            return None
        units.append(unit)
    return Blocked(tuple(units), tops)


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A small matrix product without BLAS (whose threads cost more than these products
    on a busy machine)."""
    return np.einsum("ij,jk->ik", a, b)


def _components(n: int, tail: np.ndarray, head: np.ndarray, keep: np.ndarray,
                ) -> tuple[int, np.ndarray]:
    graph = sp.coo_matrix((np.ones(int(keep.sum())), (tail[keep], head[keep])), shape=(n, n))
    return connected_components(graph, directed=False)


def _read_unit(group: np.ndarray, mids: np.ndarray, is_ep: np.ndarray, in_block: np.ndarray,
               block_of: np.ndarray, by_block: np.ndarray, starts: np.ndarray,
               arcs: tuple[np.ndarray, np.ndarray, np.ndarray], pos: np.ndarray,
               top_pos: np.ndarray, n_tops: int, known: dict) -> _Unit | None:
    """One unit: its blocks' tables (alike blocks computed once), its own cost per side of
    its middles, and its middles' links to the top."""
    tail, head, c = arcs
    q = len(mids)
    on_a = _sides(q).astype(float)
    # The middles' links among themselves, and to and from the top.
    mine = (pos[tail] >= 0) | (pos[head] >= 0)
    t, h, x = tail[mine], head[mine], c[mine]
    own = np.zeros((q, q))
    both = (pos[t] >= 0) & (pos[h] >= 0)
    np.add.at(own, (pos[t[both]], pos[h[both]]), x[both])
    up, down = np.zeros((q, n_tops)), np.zeros((q, n_tops))
    to_top, from_top = (pos[t] >= 0) & (top_pos[h] >= 0), (top_pos[t] >= 0) & (pos[h] >= 0)
    np.add.at(up, (pos[t[to_top]], top_pos[h[to_top]]), x[to_top])
    np.add.at(down, (pos[h[from_top]], top_pos[t[from_top]]), x[from_top])
    inner = (_dot(on_a, own) * (1 - on_a)).sum(axis=1)[:, None]
    nodes_in = group[in_block[group]]
    nodes_in = nodes_in[np.argsort(block_of[nodes_in], kind="stable")]
    blocks, costs, takes = [], [], []
    for nodes in np.split(nodes_in, np.flatnonzero(np.diff(block_of[nodes_in])) + 1):
        if len(nodes) > MAX_BLOCK_NODES:
            return None
        arc_ids = by_block[starts[block_of[nodes[0]]]:starts[block_of[nodes[0]] + 1]]
        cost, take = _block(nodes, arc_ids, arcs, is_ep, pos, q, known)
        blocks.append(nodes)
        costs.append(cost)
        takes.append(take)
        inner, _ = _convolve(inner, cost)
    return _Unit(mids, tuple(blocks), tuple(costs), tuple(takes), inner, up, down)


def _block(nodes: np.ndarray, arc_ids: np.ndarray, arcs: tuple, is_ep: np.ndarray,
           pos: np.ndarray, q: int, known: dict) -> tuple[np.ndarray, np.ndarray]:
    """A block's least cost per side of its unit's ``q`` middles and number of sending
    endpoints, and what finds its nodes' sides (``known``: alike blocks' tables)."""
    tail, head, c = (a[arc_ids] for a in arcs)
    local = {int(v): i for i, v in enumerate(nodes)}
    lt = np.array([local.get(int(v), -1) for v in tail], dtype=int)
    lh = np.array([local.get(int(v), -1) for v in head], dtype=int)
    own = (lt >= 0) & (lh >= 0)
    out, inn = (lt >= 0) & (pos[head] >= 0), (pos[tail] >= 0) & (lh >= 0)
    def listed(*columns: np.ndarray) -> tuple:
        return tuple(sorted(zip(*(col.tolist() for col in columns), strict=True)))

    key = (tuple(is_ep[nodes]), q, listed(lt[own], lh[own], c[own]),
           listed(lt[out], pos[head[out]], c[out]), listed(pos[tail[inn]], lh[inn], c[inn]))
    found = known.get(key)
    if found is None:
        found = known[key] = _block_costs(len(nodes), is_ep[nodes], q, key)
    return found


def _block_costs(b: int, eps: np.ndarray, q: int, key: tuple,
                 ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Rows: sides of the ``q`` middles; columns: sending endpoints; entry: the block's
    least cost (its own arcs and its arcs to and from the middles that cross); and what
    :func:`_block_side` reads the nodes' sides from (bit ``i`` set: node ``i`` sending).
    The ports (nodes linked to middles) and endpoints are tried every way; the other nodes
    (a server's NVSwitches) each take their cheaper side when they do not link to one
    another, else are tried every way too."""
    own, out, inn = key[2], key[3], key[4]
    ports = {u for u, _, _ in out} | {u for _, u, _ in inn}
    tried = sorted(ports | set(np.flatnonzero(eps).tolist()))
    rest = [i for i in range(b) if i not in set(tried)]
    rest_set = set(rest)
    if any(u in rest_set and v in rest_set for u, v, _ in own):
        tried, rest = list(range(b)), []
    at = {u: i for i, u in enumerate(tried)}
    free = {u: i for i, u in enumerate(rest)}
    sides = _sides(len(tried))
    f = sides.astype(float)
    cost = np.zeros(len(sides))
    into, out_of = np.zeros((len(tried), len(rest))), np.zeros((len(tried), len(rest)))
    for u, v, x in own:
        if u in at and v in at:                # u sending, v not
            cost += x * (f[:, at[u]] * (1 - f[:, at[v]]))
        elif u in at:
            into[at[u], free[v]] += x          # crosses when u sends and v does not
        else:
            out_of[at[v], free[u]] += x        # crosses when u sends and v does not
    stays, sends = _dot(f, into), _dot(1 - f, out_of)  # each other node's either side
    cost += np.minimum(stays, sends).sum(axis=1)
    packed = (sides * (1 << np.array(tried, dtype=np.int64))).sum(axis=1)
    if rest:
        packed += ((sends < stays) * (1 << np.array(rest, dtype=np.int64))).sum(axis=1)
    port_list = sorted(ports)
    port_of = (sides[:, [at[u] for u in port_list]]
               * (1 << np.arange(len(port_list), dtype=np.int64))).sum(axis=1)
    sent = sides[:, [at[u] for u in np.flatnonzero(eps)]].sum(axis=1)
    width = int(eps.sum()) + 1
    # The least side of the non-port nodes per side of the ports and sending count.
    flat = port_of * width + sent
    best = np.full((1 << len(port_list)) * width, _INF)
    np.minimum.at(best, flat, cost)
    choice = np.zeros(best.shape, dtype=np.int64)
    hit = cost <= best[flat]
    choice[flat[hit]] = packed[hit]
    best, choice = best.reshape(-1, width), choice.reshape(-1, width)
    p = _sides(len(port_list)).astype(float)
    local = {u: i for i, u in enumerate(port_list)}
    w_out, w_in = np.zeros((len(port_list), q)), np.zeros((len(port_list), q))
    for u, m, x in out:
        w_out[local[u], m] += x
    for m, u, x in inn:
        w_in[local[u], m] += x
    on_a = _sides(q).astype(float)
    ext = _dot(_dot(p, w_out), 1 - on_a.T) + _dot(_dot(1 - p, w_in), on_a.T)
    table = (best.T[:, None, :] + ext.T[None, :, :]).min(axis=2).T  # middles x sent
    return table, (best, choice, ext)


def _block_side(recipe: tuple[np.ndarray, np.ndarray, np.ndarray], row: int,
                sent: int) -> int:
    """The block's nodes' sides (bits) that cost its table's entry at middles' side
    ``row`` and ``sent`` sending endpoints."""
    best, choice, ext = recipe
    return int(choice[int(np.argmin(best[:, sent] + ext[:, row])), sent])


@dataclass(frozen=True)
class _Counts:
    """One unit read per *state* of its middles (each side of them, or each count ``k`` of
    them sending): its own least cost per sending endpoints (rows: states), the least top
    shares ``A`` and ``B`` (rows: states, columns: top switches), the Lagrange terms (rows:
    states, columns: multipliers), and which sides of the middles each state holds."""

    table: np.ndarray
    a_min: np.ndarray
    b_min: np.ndarray
    lagrange: np.ndarray
    states: tuple[np.ndarray, ...]


def _counts(unit: _Unit, multipliers: np.ndarray, by_side: bool) -> _Counts:
    """The unit's states: every side of its middles (``by_side``), else every count of
    them sending (the least over that count's sides, per top switch)."""
    q = len(unit.mids)
    on_a = _sides(q)
    if by_side:
        states = tuple(np.array([s]) for s in range(len(on_a)))
    else:
        k_of = on_a.sum(axis=1)
        states = tuple(np.flatnonzero(k_of == k) for k in range(q + 1))
    f = on_a.astype(float)
    a, b = _dot(f, unit.up), _dot(1 - f, unit.down)
    table = np.stack([unit.inner[rows].min(axis=0) for rows in states])
    a_min = np.stack([a[rows].min(axis=0) for rows in states])
    b_min = np.stack([b[rows].min(axis=0) for rows in states])
    m = np.arange(table.shape[1])
    lagrange = (table[:, None, :] - multipliers[None, :, None] * m[None, None, :]).min(axis=2)
    return _Counts(table, a_min, b_min, lagrange, states)


def _multipliers(counts_tables: list[np.ndarray]) -> np.ndarray:
    """Prices per sending endpoint for Lagrange's bound: each table's mean slope per count
    (the unit's cost per endpoint moved), and zero."""
    slopes = {0.0}
    for table in counts_tables:
        width = table.shape[1] - 1
        if width > 0:
            for row in table:
                if np.all(np.isfinite(row[[0, -1]])):
                    slopes.add(float(row[-1] - row[0]) / width)
    # Prices closer than a fiftieth of the largest bound little more than one of them.
    values = np.array(sorted(slopes))
    step = max(np.abs(values).max(), 1e-12) / 50
    kept = [values[0]]
    for v in values[1:]:
        if v - kept[-1] > step:
            kept.append(v)
    return np.array(sorted(set(kept) | {0.0}))


def _group_sums(parts: list[_Counts], attr: str, width: int,
                ) -> tuple[np.ndarray, np.ndarray]:
    """Every choice of ``k`` per unit of ``parts`` (rows, the last unit fastest; one empty
    choice when there are none) with the sum of the units' ``attr`` rows (``width`` wide)."""
    sizes = [getattr(p, attr).shape[0] for p in parts]
    ks = np.indices(sizes).reshape(len(sizes), -1).T if parts else np.zeros((1, 0), int)
    total = np.zeros((len(ks), width))
    for i, p in enumerate(parts):
        total = total + getattr(p, attr)[ks[:, i]]
    return ks, total


def blocked_lower(ga: GraphArrays, ep_idx: np.ndarray, beat: float = _INF,
                  deadline: float | None = None,
                  ) -> tuple[float, np.ndarray | None] | None:
    """A bound below on the bisection of a fabric of blocks, middles and a one-level top
    (module docstring), at most ``beat`` (a choice whose relaxation already reaches
    ``beat`` is not evaluated further, so pass a cut's capacity); and a split built from
    the least choice (True on the sending side; None when every choice reached ``beat``).
    The split's cut equals the bound when every unit's middles are on one side in that
    choice, and may exceed it otherwise: sum it from the arcs. None when the fabric does
    not have that shape, the choices are too many (or more than ``MAX_CONVOLVED`` stay
    below ``beat`` relaxed), or the call's clock (:func:`~fabricopt.flow.budget.now`)
    passes ``deadline``.

    >>> import fabricopt as fo
    >>> fab = fo.cluster(fo.dgx_h100(), nodes=4, scale_out="rail_optimized")
    >>> ga = GraphArrays.from_fabric(fab)
    >>> ep = np.array([ga.index[e] for e in fab.endpoints])
    >>> from fabricopt.analysis.cuts import cut_capacity
    >>> value, side = blocked_lower(ga, ep)      # two servers a side: 16 NICs of 400
    >>> value, cut_capacity(ga, side)[0]
    (6400.0, 6400.0)
    """
    blocked = read_blocks(ga, ep_idx)
    if blocked is None or not any(len(u.mids) for u in blocked.units):
        return None  # no switch between the blocks: a direct network, not this shape
    # Every side of every unit's middles where they are few (exact), else their counts.
    by_side = float(np.prod([1 << len(u.mids) for u in blocked.units], dtype=float)) <= (
        MAX_SIDE_STATES)
    sizes = [(1 << len(u.mids)) if by_side else len(u.mids) + 1 for u in blocked.units]
    if float(np.prod(sizes, dtype=float)) > MAX_STATES:
        return None
    n = len(ep_idx)
    lo, hi = n // 2, n - n // 2
    # Lagrange's prices: each unit's cost per endpoint per count of its middles.
    first = [_counts(u, np.zeros(1), by_side) for u in blocked.units]
    prices = _multipliers([c.table for c in first])
    counts = [_counts(u, prices, by_side) for u in blocked.units]
    offset = np.where(prices >= 0, prices * lo, prices * hi)
    order = np.argsort(sizes)[::-1]
    split_at, states = 0, 1.0
    while split_at < len(order) and states * sizes[order[split_at]] <= np.sqrt(
            np.prod(sizes, dtype=float)) + 1e-9:
        states *= sizes[order[split_at]]
        split_at += 1
    g1, g2 = list(order[:split_at]), list(order[split_at:])
    tops, n_prices = len(blocked.tops), len(prices)
    ks1, a1 = _group_sums([counts[u] for u in g1], "a_min", tops)
    _, b1 = _group_sums([counts[u] for u in g1], "b_min", tops)
    _, l1 = _group_sums([counts[u] for u in g1], "lagrange", n_prices)
    ks2, a2 = _group_sums([counts[u] for u in g2], "a_min", tops)
    _, b2 = _group_sums([counts[u] for u in g2], "b_min", tops)
    _, l2 = _group_sums([counts[u] for u in g2], "lagrange", n_prices)
    # A choice is evaluated unless its relaxation passes `beat` by more than rounding, so
    # every choice left out is at least `beat`.
    best, found = float(beat), []
    conv1: dict[int, np.ndarray] = {}
    conv2: dict[int, np.ndarray] = {}
    convolved = 0
    for i in range(len(ks1)):
        if deadline is not None and now() > deadline:
            return None
        top = np.minimum(a1[i] + a2, b1[i] + b2).sum(axis=1)
        relaxed = top + (l1[i] + l2 + offset).max(axis=1)
        below = np.flatnonzero(relaxed < best * (1 + 1e-9))
        convolved += len(below)
        if convolved > MAX_CONVOLVED:
            return None
        for j in below:
            if i not in conv1:
                conv1[i] = _convolved([counts[u].table[k] for u, k in zip(g1, ks1[i], strict=True)])
            if j not in conv2:
                conv2[j] = _convolved([counts[u].table[k] for u, k in zip(g2, ks2[j], strict=True)])
            value = top[j] + _least_at(conv1[i], conv2[j], lo, hi)
            if value < beat * (1 + 1e-9):
                k = np.zeros(len(blocked.units), dtype=int)
                k[g1], k[g2] = ks1[i], ks2[j]
                found.append((value, k))
            best = min(best, value)
    bound, rows = _refine(blocked, counts, found, float(beat), lo, hi)
    return bound, None if rows is None else _build(ga, blocked, rows, lo, hi)


def _refine(blocked: Blocked, counts: list[_Counts], found: list[tuple[float, np.ndarray]],
            beat: float, lo: int, hi: int) -> tuple[float, list[np.ndarray] | None]:
    """The least of the choices ``found`` (each a state per unit, with its bound), best
    first: a choice whose units each hold one side of their middles is exact (its bound is
    a split's cut) and ends the search; one with a count of several sides is replaced by
    each of its sides (its bound is below every one of theirs), at most ``MAX_REFINED`` in
    all. Returns the bound and each unit's sides of the least choice (rows of ``_sides``;
    one each when exact); ``beat`` and None when nothing was found below it."""
    heap = [(value, n, [c.states[kk] for c, kk in zip(counts, k, strict=True)])
            for n, (value, k) in enumerate(found)]
    heapq.heapify(heap)
    tried = len(heap)
    shares = [(_dot(_sides(len(u.mids)).astype(float), u.up),
               _dot(1 - _sides(len(u.mids)).astype(float), u.down)) for u in blocked.units]
    while heap:
        value, _, rows = heapq.heappop(heap)
        mixed = [u for u, r in enumerate(rows) if len(r) > 1]
        if not mixed:
            return float(value), rows
        tried += int(np.prod([len(rows[u]) for u in mixed]))
        if tried > MAX_REFINED:
            return float(value), rows   # every choice left is at least this
        fixed = [u for u in range(len(rows)) if u not in mixed]
        base = _convolved([blocked.units[u].inner[rows[u][0]] for u in fixed])
        a = sum((shares[u][0][rows[u][0]] for u in fixed), np.zeros(len(blocked.tops)))
        b = sum((shares[u][1][rows[u][0]] for u in fixed), np.zeros(len(blocked.tops)))
        for pick in itertools.product(*(rows[u] for u in mixed)):
            exact = list(rows)
            top_a, top_b = a.copy(), b.copy()
            for u, r in zip(mixed, pick, strict=True):
                exact[u] = np.array([r])
                top_a += shares[u][0][r]
                top_b += shares[u][1][r]
            own = _convolved([blocked.units[u].inner[r] for u, r in zip(mixed, pick,
                                                                           strict=True)])
            cost = float(np.minimum(top_a, top_b).sum()) + _least_at(base, own, lo, hi)
            heapq.heappush(heap, (cost, tried + len(heap), exact))
    return beat, None


def _convolved(tables: list[np.ndarray]) -> np.ndarray:
    least = np.zeros((1, 1))
    for table in tables:
        least, _ = _convolve(least, table[None, :])
    return least[0]


def _least_at(c1: np.ndarray, c2: np.ndarray, lo: int, hi: int) -> float:
    """The least ``c1[m] + c2[M - m]`` over ``lo <= M <= hi``."""
    best = _INF
    for total in range(lo, hi + 1):
        m = np.arange(max(0, total - len(c2) + 1), min(len(c1), total + 1))
        if len(m):
            best = min(best, float((c1[m] + c2[total - m]).min()))
    return best


def _build(ga: GraphArrays, blocked: Blocked, rows: list[np.ndarray], lo: int, hi: int,
           ) -> np.ndarray | None:
    """The split a choice stands for: each unit's sending endpoints as the least
    convolution of its tables (the least over its sides ``rows``) says, its middles on the
    one of those sides that costs it least inside, its blocks as their tables chose, and
    each top switch on its cheaper side."""
    least, takes = np.zeros((1, 1)), []
    for unit, r in zip(blocked.units, rows, strict=True):
        least, take = _convolve(least, unit.inner[r].min(axis=0)[None, :], take=True)
        takes.append(take[0])
    window = least[0, lo:hi + 1]
    if not window.size or not np.isfinite(window.min()):
        return None
    m = lo + int(np.argmin(window))
    side = np.zeros(ga.n_nodes, dtype=bool)
    a = np.zeros(len(blocked.tops))
    b = np.zeros(len(blocked.tops))
    for unit, r, take in zip(reversed(blocked.units), reversed(rows), reversed(takes),
                             strict=True):
        mine = int(take[m])
        m -= mine
        row = int(r[np.argmin(unit.inner[r, mine])])
        sends = _sides(len(unit.mids))[row]
        side[unit.mids] = sends
        a += _dot(sends[None, :].astype(float), unit.up)[0]
        b += _dot((~sends)[None, :].astype(float), unit.down)[0]
        _place_blocks(unit, row, mine, side)
    side[blocked.tops[b < a]] = True
    return side


def _place_blocks(unit: _Unit, row: int, sending: int, side: np.ndarray) -> None:
    """Put a unit's blocks on their sides for the middles' side ``row`` and ``sending`` of
    its endpoints sending."""
    least = np.zeros((1, 1))
    takes = []
    for cost in unit.block_costs:
        least, take = _convolve(least, cost[row:row + 1], take=True)
        takes.append(take[0])
    m = sending
    for nodes, table_take, take in zip(reversed(unit.blocks), reversed(unit.block_takes),
                                       reversed(takes), strict=True):
        mine = int(take[m])
        m -= mine
        bits = _block_side(table_take, row, mine)
        side[nodes] = (bits >> np.arange(len(nodes))) & 1 == 1
