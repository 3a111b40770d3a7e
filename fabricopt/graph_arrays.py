"""A fabric's graph as flat numpy arrays, the form every solver works on, and its shape
(:class:`FabricShape`: scale-up domains, servers, leaves, rails, layers, the hierarchy's
partitions) read off those arrays once."""

from __future__ import annotations

import operator
from collections.abc import Hashable
from dataclasses import dataclass
from functools import cached_property
from itertools import chain, count, repeat
from operator import is_, itemgetter, methodcaller
from typing import Any

import networkx as nx
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ._gc import paused_gc
from ._unchanged import once
from .errors import InvalidFabricError
from .tiers import DEFAULT_TIER, is_scale_up

#: Types read as capacities without a closer look.
_PLAIN_NUMBERS = {float, int, np.float64, np.float32, np.int64, np.int32}


def _as_gbps(value: Any) -> float:
    """A capacity as a float, NaN when it is missing or not a number (bools included)."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        return np.nan
    return float(value)


@dataclass(frozen=True)
class GraphArrays:
    """Nodes and arcs of a fabric as arrays.

    ``nodes[i]`` is node ``i``; arc ``a`` runs from ``tail[a]`` to ``head[a]`` with
    ``capacity[a]`` Gb/s. ``arcs[a]`` is the ``(u, v)`` node pair of arc ``a`` and
    ``tiers[a]`` its ``tier`` attribute (``"link"`` when it names none).
    """

    nodes: list[Hashable]
    index: dict[Hashable, int]
    arcs: list[tuple[Hashable, Hashable]]
    tail: np.ndarray
    head: np.ndarray
    capacity: np.ndarray
    tiers: tuple[str, ...] = ()

    def __repr__(self) -> str:
        # The arrays ride along in every certificate and proof: their repr would list every
        # node and arc (nearly a million characters for a 1,024-GPU SuperPOD's cut proof).
        return f"GraphArrays({len(self.nodes):,} nodes, {len(self.tail):,} arcs)"

    @classmethod
    def from_fabric(cls, fab: Any) -> GraphArrays:
        """Read the arrays off ``fab.graph`` (one pass over nodes and arcs).

        Every solver starts here, so the arcs are checked here too (vectorised, cheap): a
        capacity that is missing, not a number, not finite or not positive, or an arc from a
        node to itself, raises :class:`~fabricopt.InvalidFabricError` naming the arc before
        any work is done.
        """
        return once(fab, "graph_arrays", lambda: cls._read_without_gc(fab))

    @classmethod
    def _read_without_gc(cls, fab: Any) -> GraphArrays:
        """:meth:`_read` with the cyclic garbage collector paused: on a 128,000-GPU fabric
        its passes took two thirds of the read (4.4 s, 1.4 s without)."""
        with paused_gc():
            return cls._read(fab)

    @classmethod
    def _read(cls, fab: Any) -> GraphArrays:
        g = fab.graph
        nodes = list(g.nodes)
        index = dict(zip(nodes, count()))
        tail = None
        if type(g) is nx.DiGraph:
            # The adjacency dicts g.edges walks, in its order, read by C-level maps (the
            # view's generator was a third of this reading on a 24,576-GPU cluster).
            succ = g._succ
            degrees = list(map(len, succ.values()))
            tails = list(chain.from_iterable(map(repeat, succ, degrees)))
            heads = list(chain.from_iterable(succ.values()))
            data = arc_dicts(fab)
            if list(succ) == nodes:  # as networkx keeps them: each node's arcs in a run
                tail = np.repeat(np.arange(len(nodes), dtype=np.int64),
                                 np.array(degrees, dtype=np.int64))
        else:  # One pass over networkx's views (microseconds per arc).
            edges = list(g.edges(data=True))
            tails, heads, data = map(list, zip(*edges, strict=True)) if edges else ([], [], [])
        m = len(data)
        arcs = list(zip(tails, heads, strict=True))
        order = getattr(getattr(fab, "_symmetry", None), "__dict__", {}).get("_order")
        if (tail is not None and order is not None and nodes == order.nodes
                and degrees == order.degrees and heads == order.heads):
            # The arcs its builder aligned the claim with (symmetry_claim.ClaimOrder), in the
            # same order: their ends as node indices already, no lookup per head.
            tail, head = order.tail, order.head
        else:
            if tail is None:
                tail = np.fromiter(map(index.__getitem__, tails), dtype=np.int64, count=m)
            head = np.fromiter(map(index.__getitem__, heads), dtype=np.int64, count=m)
        raw, kinds = (_capacity_column(fab) if type(g) is nx.DiGraph else
                      _with_types(_values(data, "capacity", None)))
        raw_tiers = _values(data, "tier", DEFAULT_TIER)
        # str() of a str is itself: the call per arc only where some tier is not a str.
        tiers = (tuple(raw_tiers) if set(map(type, raw_tiers)) <= {str}
                 else tuple(map(str, raw_tiers)))
        if kinds <= _PLAIN_NUMBERS:
            cap = np.array(raw, dtype=float).reshape(m)
        else:  # missing, bool or text capacities become NaN and are named below
            cap = np.fromiter(map(_as_gbps, raw), dtype=float, count=m)
        bad = np.flatnonzero(~(np.isfinite(cap) & (cap > 0)))
        if len(bad):
            u, v = arcs[bad[0]]
            raise InvalidFabricError(
                f"fabric {getattr(fab, 'name', '')!r}: arc {u!r}->{v!r} has capacity "
                f"{g[u][v].get('capacity')!r}; every arc needs a finite capacity > 0 Gb/s "
                f"({len(bad)} arc(s) break this rule)")
        missing = [e for e in getattr(fab, "endpoints", ()) if e not in index]
        if missing:
            raise InvalidFabricError(
                f"fabric {getattr(fab, 'name', '')!r}: endpoint {missing[0]!r} is not a node of "
                f"its graph (removed after the fabric was built?); {len(missing)} endpoint(s) "
                "break this rule")
        loops = np.flatnonzero(tail == head)
        if len(loops):
            u, _ = arcs[loops[0]]
            raise InvalidFabricError(
                f"fabric {getattr(fab, 'name', '')!r}: arc {u!r}->{u!r} joins a node to itself; "
                f"self-loops carry nothing between devices and are not allowed")
        for shared in (tail, head, cap):  # one reading may serve several solvers
            shared.flags.writeable = False
        return cls(nodes, index, arcs, tail, head, cap, tiers)

    @property
    def n_nodes(self) -> int:
        return len(self.nodes)

    @property
    def n_arcs(self) -> int:
        return len(self.arcs)

    def matrix(self, weights: np.ndarray) -> sp.csr_matrix:
        """Node-by-node sparse matrix with ``weights[a]`` at ``(tail[a], head[a])``.

        Zero weights stay as explicit entries, which scipy's graph routines treat as arcs of
        length zero.
        """
        n = self.n_nodes
        return sp.csr_matrix((np.asarray(weights, dtype=float), (self.tail, self.head)),
                             shape=(n, n))

    @cached_property
    def tier_codes(self) -> tuple[np.ndarray, list[str]]:
        """Codes 0..k-1 of :attr:`tiers` in order of first appearance, and the k tiers (read
        once per arrays: the arc labels and each flow result's per-tier table share them).

        >>> import fabricopt as fo
        >>> codes, names = GraphArrays.from_fabric(fo.dgx_h100()).tier_codes
        >>> names, int(codes.max())
        (['gpu-nvswitch'], 0)
        """
        codes, names = _first_seen(self.tiers)
        codes.flags.writeable = False
        return codes, names

    @cached_property
    def has_reverse(self) -> np.ndarray:
        """Per arc: True when the arc back, from its head to its tail, is in the arrays too
        (found once per arrays: validation and the summary both ask).

        >>> import fabricopt as fo
        >>> bool(GraphArrays.from_fabric(fo.ring(3)).has_reverse.all())
        True
        """
        return self._reverse_search[1]

    @cached_property
    def reverse(self) -> np.ndarray | None:
        """The index of each arc's reverse (read-only), None when some arc has none (found
        once per arrays: the two-phase routing and its bounds ask).

        >>> import fabricopt as fo
        >>> ga = GraphArrays.from_fabric(fo.ring(3))
        >>> [ga.arcs[r] for r in ga.reverse[:2].tolist()], ga.arcs[:2]
        ([('n1', 'n0'), ('n2', 'n0')], [('n0', 'n1'), ('n0', 'n2')])
        """
        rev, found = self._reverse_search
        return rev if found.all() else None

    @cached_property
    def _reverse_search(self) -> tuple[np.ndarray, np.ndarray]:
        """Per arc, where its reverse would be and whether it is (a graph has at most one arc
        per ordered pair, so the code ``tail * n + head`` names an arc)."""
        m, n = self.n_arcs, np.int64(self.n_nodes)
        code = self.tail * n + self.head
        order = np.argsort(code, kind="stable")
        want = self.head * n + self.tail
        rev = order[np.minimum(np.searchsorted(code[order], want), max(m - 1, 0))]
        found = code[rev] == want if m else np.zeros(0, dtype=bool)
        rev = rev.astype(np.int64)
        for array in (rev, found):
            array.flags.writeable = False
        return rev, found

    def incidence(self) -> sp.csr_matrix:
        """Node-arc incidence: +1 where the arc leaves the node, -1 where it enters."""
        m = self.n_arcs
        rows = np.concatenate([self.tail, self.head])
        cols = np.concatenate([np.arange(m), np.arange(m)])
        vals = np.concatenate([np.ones(m), -np.ones(m)])
        return sp.csr_matrix((vals, (rows, cols)), shape=(self.n_nodes, m))


@dataclass(frozen=True)
class ArcLabels:
    """The ``(tier, tech)`` attributes of a fabric's arcs, in the order of
    :class:`GraphArrays`: ``code[a]`` indexes ``labels``, the distinct pairs (a few per
    fabric, so each question about them is asked once per pair, not once per arc)."""

    code: np.ndarray
    labels: tuple[tuple[Any, Any], ...]

    @property
    def scale_up(self) -> np.ndarray:
        """Mask of the scale-up arcs (:func:`fabricopt.tiers.is_scale_up_arc`)."""
        per_label = np.array([is_scale_up(t, x) for t, x in self.labels], dtype=bool)
        return per_label[self.code] if len(self.code) else np.zeros(0, dtype=bool)


def arc_labels(fab: Any, arrays: GraphArrays | None = None) -> ArcLabels:
    """The ``(tier, tech)`` of every arc of ``fab`` (one pass over the graph, made once in a
    study row: :func:`fabricopt._unchanged.once`), on ``arrays`` when the caller has read
    them off ``fab`` already.

    >>> import fabricopt as fo
    >>> labels = arc_labels(fo.dgx_h100())
    >>> int(labels.scale_up.sum()), sorted({t for t, _ in labels.labels})
    (64, ['gpu-nvswitch'])
    """
    return once(fab, "arc_labels", lambda: _read_labels(fab, arrays))


def arc_dicts(fab: Any) -> list[dict[str, Any]]:
    """The attribute dict of every arc of ``fab`` (a plain ``DiGraph``), in the order of
    :class:`GraphArrays`: one C-level pass over the successor dicts, made once in a study
    row (the arrays, the arc labels and the link counts each read a column of them).

    >>> import fabricopt as fo
    >>> [d["capacity"] for d in arc_dicts(fo.ring(3))]
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    """
    return once(fab, "arc_dicts",
                lambda: list(chain.from_iterable(map(dict.values, fab.graph._succ.values()))))


def _capacity_column(fab: Any) -> tuple[list[Any], frozenset[type]]:
    """The ``capacity`` of every arc of a plain ``DiGraph`` (None where unset), in the
    arrays' order, and their types: read once in a study row (validation's first look and
    the arrays both check them)."""
    return once(fab, "capacity_column",
                lambda: _with_types(_values(arc_dicts(fab), "capacity", None)))


def _with_types(values: list[Any]) -> tuple[list[Any], frozenset[type]]:
    return values, frozenset(map(type, values))


def _read_labels(fab: Any, arrays: GraphArrays | None = None) -> ArcLabels:
    ga = GraphArrays.from_fabric(fab) if arrays is None else arrays
    # The tiers are read already (``str`` of the attribute, ``"link"`` when absent: the
    # same answer from is_scale_up, which reads neither as a scale-up tier); the techs in
    # one C-level pass over the attribute dicts, in the arrays' order (g.edges walks the same
    # dicts). Strings only, so no tuple per arc: with a large graph alive those were slow.
    techs = _values(arc_dicts(fab), "tech", None)
    tier_code, tier_names = ga.tier_codes
    try:
        tech_code, tech_names = _first_seen(techs)
    except TypeError:  # an unhashable label: is_scale_up reads its str() alone
        tech_code, tech_names = _first_seen(list(map(str, techs)))
    pair, codes = small_unique(tier_code * len(tech_names) + tech_code,
                               len(tier_names) * len(tech_names))
    labels = tuple((tier_names[p // len(tech_names)], tech_names[p % len(tech_names)])
                   for p in pair.tolist())
    codes = codes.reshape(-1)
    codes.flags.writeable = False
    return ArcLabels(codes, labels)


def link_counts(fab: Any) -> np.ndarray | None:
    """The physical links of every arc of ``fab`` (its ``links``, 1 where unset), in the
    order of :class:`GraphArrays`, read once in a study row (validation, the summary and
    pricing all read them); None when a count is not an ``int`` (bools, floats and text are
    left to the callers' own readings) or the graph is not a plain ``DiGraph``.

    >>> import fabricopt as fo
    >>> link_counts(fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=1,
    ...                           links_per_pair=3)).tolist()
    [1, 1, 1, 3, 1, 3, 3, 3]
    """
    return once(fab, "link_counts", lambda: _read_link_counts(fab))


def _read_link_counts(fab: Any) -> np.ndarray | None:
    if type(fab.graph) is not nx.DiGraph:
        return None
    raw = _values(arc_dicts(fab), "links", 1)
    if not set(map(type, raw)) <= {int}:
        return None
    try:
        counts = np.array(raw, dtype=np.int64).reshape(len(raw))
    except OverflowError:  # a whole number, but no int64: left to the callers' readings
        return None
    counts.flags.writeable = False
    return counts


def _first_seen(values: list[Any] | tuple[Any, ...]) -> tuple[np.ndarray, list[Any]]:
    """Codes 0..k-1 of ``values`` (hashable), in order of first appearance, and the k
    distinct values."""
    seen: dict[Any, int] = {}
    first = np.fromiter(map(seen.setdefault, values, count()), dtype=np.int64,
                        count=len(values))
    return np.searchsorted(np.fromiter(seen.values(), dtype=np.int64, count=len(seen)),
                           first), list(seen)



def small_unique(keys: np.ndarray, size: int, return_index: bool = False
                 ) -> tuple[np.ndarray, ...]:
    """``np.unique(keys, return_inverse=True)`` (with ``return_index``: the first place of
    each value between them) of integer keys in ``[0, size)``, by one pass over a table of
    ``size`` places, not a sort: a third of the time on the 300,000 arcs of a 24,576-GPU
    cluster. A table much larger than the keys sorts them instead (the same answer).

    >>> values, first, inverse = small_unique(np.array([3, 1, 3, 0]), 4, return_index=True)
    >>> values.tolist(), first.tolist(), inverse.tolist()
    ([0, 1, 3], [3, 1, 0], [2, 1, 2, 0])
    """
    keys = np.asarray(keys, dtype=np.int64).reshape(-1)
    if size > 4 * len(keys) + 1024:
        return tuple(x.reshape(-1) for x in np.unique(keys, return_index=return_index,
                                                      return_inverse=True))
    present = np.zeros(size, dtype=bool)
    present[keys] = True
    values = np.flatnonzero(present)
    inverse = (np.cumsum(present) - 1)[keys]
    if not return_index:
        return values, inverse
    first = np.full(size, len(keys), dtype=np.int64)
    np.minimum.at(first, keys, np.arange(len(keys), dtype=np.int64))
    return values, first[values], inverse


#: Node attributes that name a level of a fabric's hierarchy, lowest first (set by the
#: generators; :mod:`fabricopt.fabric`'s schema table says what each means).
HIERARCHY_KEYS = ("node", "rail", "su", "pod", "plane", "group", "dc")


class FabricShape:
    """One reading of a fabric's shape, on the nodes and arcs of its :class:`GraphArrays`.

    Which GPUs share a scale-up domain or a server, which switches are leaves, which rail a
    node is on, each node's layer, and the partitions of the hierarchy the structural cuts
    try: read here once, not found again by each solver, estimator and plot. Each part is
    read when first asked for; within ``with unchanged(fab):``
    (:func:`fabricopt._unchanged.unchanged`) every caller shares one shape.

    Attributes (lazy, read-only arrays indexed like ``arrays.nodes`` or ``arrays.arcs``):

    ``scale_up``
        per arc: an NVLink or UALink link (:func:`fabricopt.tiers.is_scale_up`)
    ``layer``
        per node: its ``layer`` attribute, -1 where it has none
    ``domain``
        per node: its scale-up domain, the component through scale-up arcs (a node without
        scale-up links is a domain of its own)
    ``server``
        per node: its server (the ``node`` attribute; nodes without one alone), or None when
        no node names one
    ``rail``
        per node: its ``rail`` as a code (-1 for none), or None when no node names one
    ``leaves``
        per node: a switch an endpoint reaches by a scale-out link, directly or through its
        NIC
    ``hierarchy``
        the partitions (a group per node) the structural cuts try: every node alone, one per
        attribute of :data:`HIERARCHY_KEYS` present, one per switch layer closed upward

    Examples
    --------
    >>> import fabricopt as fo
    >>> shape = FabricShape.of(fo.superpod(1))
    >>> len(set(shape.domain[shape.endpoint_index].tolist()))   # 32 DGX H100, 8 GPUs each
    32
    >>> int(shape.leaves.sum()), int(shape.rail.max()) + 1       # one leaf per rail per SU
    (8, 8)
    """

    def __init__(self, fab: Any, arrays: GraphArrays | None = None) -> None:
        self.fab = fab
        self.arrays = GraphArrays.from_fabric(fab) if arrays is None else arrays
        self._attributes: dict[tuple[str, type, Any], list[Any]] = {}

    @classmethod
    def of(cls, fab: Any, arrays: GraphArrays | None = None) -> FabricShape:
        """The shape of ``fab`` (one per fabric inside an ``unchanged(fab)`` block), on
        ``arrays`` when the caller has read them off ``fab`` already."""
        return once(fab, "fabric_shape", lambda: cls(fab, arrays))

    def attribute(self, key: str, default: Any = None) -> list[Any]:
        """The node attribute ``key`` of every node, in the arrays' order (a new list)."""
        # ga.nodes is list(g.nodes), the order of g._node: one C-level map per key over the
        # attribute dicts (a view's generator took a fifth of a second per row on a
        # 24,576-GPU cluster), kept per key: a row's metrics read "node", "rail", "layer"
        # and "role" twice each. The shape is one reading of an unchanged fabric.
        kept = (key, type(default), default)  # 0 and False are equal keys, not defaults
        try:
            read = self._attributes.get(kept)
        except TypeError:  # an unhashable default: read, not kept
            kept, read = None, None
        if read is None:
            read = list(map(methodcaller("get", key, default), self.fab.graph._node.values()))
            if kept is not None:
                self._attributes[kept] = read
        return list(read)

    @cached_property
    def endpoint_index(self) -> np.ndarray:
        """Node index of each endpoint, in ``fab.endpoints`` order."""
        index = self.arrays.index
        return _frozen(np.fromiter(map(index.__getitem__, self.fab.endpoints), dtype=np.int64,
                                   count=len(self.fab.endpoints)))

    @cached_property
    def scale_up(self) -> np.ndarray:
        return _frozen(arc_labels(self.fab, self.arrays).scale_up)

    @cached_property
    def layer(self) -> np.ndarray:
        return _frozen(np.array([-1 if x is None else x for x in self.attribute("layer")],
                                dtype=np.int64).reshape(self.arrays.n_nodes))

    @cached_property
    def domain(self) -> np.ndarray:
        ga, up = self.arrays, self.scale_up
        joined = sp.csr_matrix((np.ones(int(up.sum())), (ga.tail[up], ga.head[up])),
                               shape=(ga.n_nodes, ga.n_nodes))
        return _frozen(connected_components(joined, directed=False)[1].astype(np.int64))

    @cached_property
    def server(self) -> np.ndarray | None:
        values = self.attribute("node")
        return None if _all_none(values) else _frozen(group_labels(values))

    @cached_property
    def rail(self) -> np.ndarray | None:
        values = self.attribute("rail")
        if _all_none(values):
            return None
        ids: dict[Hashable, int] = {}
        return _frozen(np.array([-1 if x is None else ids.setdefault(x, len(ids))
                                 for x in values], dtype=np.int64))

    @cached_property
    def leaves(self) -> np.ndarray:
        ga = self.arrays
        near = np.zeros(ga.n_nodes, dtype=bool)
        near[self.endpoint_index] = True
        nic = np.array([r == "nic" for r in self.attribute("role")], dtype=bool)
        # A NIC hangs off its GPU: the switch beyond it is the GPU's leaf.
        near |= nic
        out = ~self.scale_up & near[ga.tail] & ~near[ga.head]
        mask = np.zeros(ga.n_nodes, dtype=bool)
        mask[ga.head[out]] = True
        return _frozen(mask)

    @cached_property
    def hierarchy(self) -> tuple[np.ndarray, ...]:
        ga = self.arrays
        n = ga.n_nodes
        out: list[np.ndarray] = [np.arange(n)]  # every node alone: an endpoint's own links
        nodes_of = self.attribute("node")
        # A key no node has is all None: skipped without a pass over the nodes (most of the
        # seven are absent from any one design).
        present = set().union(*map(dict.keys, self.fab.graph._node.values()))
        for key in HIERARCHY_KEYS:
            if key not in present:
                continue
            values = nodes_of if key == "node" else self.attribute(key)
            if not _all_none(values):
                out.append(self.server if key == "node" else group_labels(values))
        layers = self.attribute("layer", 0)
        layer = np.array(layers if None not in layers else [x or 0 for x in layers],
                         dtype=float).reshape(n)
        # The server is the first group; network switches (no ``node``) join layer by layer.
        server = self.server
        rows = [np.arange(n)]
        cols = [np.arange(n) if server is None else _first_of(server)]
        network = np.fromiter(map(is_, nodes_of, repeat(None)), dtype=bool, count=n)
        for level in np.unique(layer[network & (layer > 0)]):
            down = network[ga.tail] & (layer[ga.tail] == level) & (layer[ga.head] < level)
            rows.append(ga.tail[down])
            cols.append(ga.head[down])
            joined = sp.csr_matrix((np.ones(sum(len(r) for r in rows)),
                                    (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
            out.append(connected_components(joined, directed=False)[1])
        return tuple(map(_frozen, out))


def _all_none(values: list[Any]) -> bool:
    """True when every value is None (C-level: a generator per node took a tenth of a
    second per attribute on a 65,536-GPU fat tree, seven attributes per shape)."""
    return all(map(is_, values, repeat(None)))


def group_labels(values: list[Hashable]) -> np.ndarray:
    """A group id per node from its attribute value; nodes without one are alone.

    >>> group_labels([3, None, 3, "a", None]).tolist()
    [0, 3, 0, 2, 4]
    """
    # Coded by C-level maps over a dict of the distinct values (a loop building a key per
    # node took a sixth of a second per row on a 24,576-GPU cluster).
    code = {x: i for i, x in enumerate(dict.fromkeys(values))}
    label = np.fromiter(map(code.__getitem__, values), dtype=np.int64, count=len(values))
    alone = np.flatnonzero(np.fromiter(map(is_, values, repeat(None)), dtype=bool,
                                       count=len(values)))
    label[alone] = len(code) + np.arange(len(alone))
    return label


def _first_of(label: np.ndarray) -> np.ndarray:
    """For each node, the first node with the same label (joins a group to one node)."""
    _, first, inverse = np.unique(label, return_index=True, return_inverse=True)
    return first[inverse]


def _frozen(array: np.ndarray) -> np.ndarray:
    """``array``, read-only: one shape may serve several callers."""
    array.flags.writeable = False
    return array

# -- the summary's counts per tier ---------------------------------------------------------

#: The longest node repr :func:`tier_totals` ranks as fixed-width numpy text (4 bytes per
#: character for every node); beyond it the names are ranked as Python strings.
MAX_TEXT_RANK_WIDTH = 64


def tier_totals(fab: Any) -> tuple[dict[str, int], dict[str, float], dict[str, set[str]],
                                  dict[Hashable, float]] | None:
    """What :meth:`~fabricopt.Fabric.summary` counts arc by arc (links, capacity and techs
    per tier, a link counted once by the arc whose ends' reprs sort first, and the capacity
    out of every node), from the fabric's arrays, its arcs' labels and link counts (each
    read once in a study row): the same numbers, summed in the same order, tiers in the
    order the arc-by-arc count meets them. None for a graph the arrays refuse (a self-loop,
    a capacity that is not positive ...): the arc-by-arc count then reports it as before.

    >>> import fabricopt as fo
    >>> tier_totals(fo.ring(4))[:2]
    ({'ring': 4}, {'ring': 4.0})
    """
    g = fab.graph
    if type(g) is not nx.DiGraph:
        return None
    try:
        ga = GraphArrays.from_fabric(fab)
    except InvalidFabricError:
        return None
    # Ranked as numpy text (code point order, as str compares; a repr holds no NUL to be
    # stripped): half the time of sorting the Python strings. A fixed-width array takes the
    # longest repr's width for every node, so long names (graphml ids, tuples) keep the
    # object array, whose memory follows the names.
    names = [repr(v) for v in ga.nodes]
    wide = max(map(len, names), default=0) > MAX_TEXT_RANK_WIDTH
    rank = np.unique(np.array(names, dtype=object if wide else str),
                     return_inverse=True)[1].reshape(-1)
    counted = np.flatnonzero(~(ga.has_reverse & (rank[ga.tail] > rank[ga.head])))
    per_tier = _per_tier_on_labels(fab, ga, counted) or _per_tier_read(fab, ga, counted)
    tiers, tier_code, counts, techs = per_tier
    cap = np.bincount(tier_code, weights=ga.capacity[counted], minlength=len(tiers))
    links = np.zeros(len(tiers), dtype=np.int64)
    np.add.at(links, tier_code, counts)
    out = np.bincount(ga.tail, weights=ga.capacity, minlength=ga.n_nodes)
    return (dict(zip(tiers, links.tolist(), strict=True)),
            dict(zip(tiers, cap.tolist(), strict=True)), techs,
            dict(zip(ga.nodes, out.tolist(), strict=True)))


PerTier = tuple[list[str], np.ndarray, np.ndarray, dict[str, set[str]]]


def _per_tier_on_labels(fab: Any, ga: GraphArrays, counted: np.ndarray) -> PerTier | None:
    """The tiers in the order the ``counted`` arcs meet them, each counted arc's tier (as
    its place in that list) and physical links, and the techs of each tier, from the arcs'
    labels and link counts as every metric of a row shares them (no pass over the arcs of
    its own). None where the labels cannot say ``str(tech)`` (a tech that is not a string,
    or unset: the summary writes ``""`` for an unset one, ``"None"`` for one set to None)."""
    counts = link_counts(fab)
    labels = arc_labels(fab, ga)
    if counts is None or not all(type(tech) is str for _, tech in labels.labels):
        return None
    label = labels.code[counted]
    tier_names = list(dict.fromkeys(t for t, _ in labels.labels))
    tier_of_label = np.array([tier_names.index(t) for t, _ in labels.labels], dtype=np.int64)
    tier = tier_of_label[label] if len(label) else np.zeros(0, dtype=np.int64)
    # Renumbered by first appearance among the counted arcs, as the arc-by-arc count meets
    # them.
    met, first = np.unique(tier, return_index=True)
    met = met[np.argsort(first, kind="stable")]
    place = np.empty(len(tier_names), dtype=np.int64)
    place[met] = np.arange(len(met))
    tiers = [tier_names[t] for t in met.tolist()]
    techs: dict[str, set[str]] = {t: set() for t in tiers}
    for k in np.unique(label).tolist():
        tier_name, tech = labels.labels[k]
        techs[tier_name].add(tech)
    return tiers, place[tier], counts[counted], techs


def _per_tier_read(fab: Any, ga: GraphArrays, counted: np.ndarray) -> PerTier:
    """:func:`_per_tier_on_labels` read off the attribute dicts of the counted arcs (C-level
    maps): ``int`` of every ``links``, ``str`` of every ``tech``."""
    index = counted.tolist()
    chosen = list(map(arc_dicts(fab).__getitem__, index))
    tier_code, tiers = _first_seen(list(map(ga.tiers.__getitem__, index)))
    counts = np.fromiter(map(int, map(methodcaller("get", "links", 1), chosen)),
                         dtype=np.int64, count=len(index))
    tech_code, techs_seen = _first_seen(list(map(str, map(methodcaller("get", "tech", ""),
                                                          chosen))))
    techs: dict[str, set[str]] = {t: set() for t in tiers}
    for t, x in set(zip(tier_code.tolist(), tech_code.tolist(), strict=True)):
        techs[tiers[t]].add(techs_seen[x])
    return tiers, tier_code, counts, techs


# -- a first look at Fabric.validate's rules ------------------------------------------------
# Fabric.problems names every problem in readable sentences, one arc at a time (1.3 s of a
# 5 s comparison row on a 24,576-GPU design). Most fabrics have none: looks_valid checks the
# same rules on arrays, stricter where that is simpler (plain int/float capacities, int link
# counts); only when it finds something, or cannot tell, does validate run the full check.

_NUMBERS = frozenset({int, float})


def looks_valid(fab: Any, roles: tuple[str, ...] = ("gpu", "switch", "nic")
                ) -> np.ndarray | None:
    """A fast first look at :meth:`~fabricopt.Fabric.validate`'s rules (see the notes above):
    every arc's capacity (Gb/s, in the graph's order) when ``fab`` keeps every rule of
    :meth:`~fabricopt.Fabric.validate`: capacities finite and > 0, link counts whole and
    >= 1, no self-loop, every arc's reverse present, endpoints in the graph with role
    ``"gpu"``, every node's role in ``roles``, no switch using more ports than its radix.
    None when one is broken or the graph is not a plain ``DiGraph`` (look closer).

    >>> import fabricopt as fo
    >>> looks_valid(fo.ring(4)) is not None
    True
    >>> bad = fo.ring(4)
    >>> bad.graph["n0"]["n1"]["capacity"] = 0
    >>> looks_valid(bad) is None
    True
    """
    try:
        return _look(fab, roles)
    except (TypeError, ValueError, OverflowError):  # values the arrays cannot hold
        return None


def _look(fab: Any, roles: tuple[str, ...]) -> np.ndarray | None:
    g = fab.graph
    if type(g) is not nx.DiGraph:
        return None
    node_data = g._node
    if not _capacity_column(fab)[1] <= _NUMBERS:  # read once in a study row, as below
        return None
    links = link_counts(fab)  # read once in a study row: the summary and pricing read them
    if links is None or (len(links) and links.min() < 1):
        return None
    try:  # capacities, self-loops and endpoints checked as every solver reads them
        ga = GraphArrays.from_fabric(fab)  # read once in a study row, shared with its metrics
    except InvalidFabricError:
        return None
    n, tail, index = ga.n_nodes, ga.tail, ga.index
    if not ga.has_reverse.all():
        return None  # an arc without its reverse
    # Roles, endpoints and radices as columns in the arrays' node order (ga.nodes is the
    # order of g._node): a loop per node was a third of this look on a 24,576-GPU cluster.
    node_roles = list(map(methodcaller("get", "role"), node_data.values()))
    if not set(node_roles) <= set(roles):
        return None
    gpu = np.fromiter(map(operator.eq, node_roles, repeat("gpu")), dtype=bool, count=n)
    endpoints = np.fromiter(map(index.__getitem__, fab.endpoints), dtype=np.int64,
                            count=len(fab.endpoints))  # all in the graph: the arrays say so
    if not gpu[endpoints].all():
        return None
    switch = np.flatnonzero(np.fromiter(map(operator.eq, node_roles, repeat("switch")),
                                        dtype=bool, count=n))
    radix = list(map(list(map(methodcaller("get", "radix"), node_data.values())).__getitem__,
                     switch.tolist()))
    limited = [i for i, r in zip(switch.tolist(), radix, strict=True) if r is not None]
    if limited:
        given = [r for r in radix if r is not None]
        if not set(map(type, given)) <= _NUMBERS:
            return None
        used = np.bincount(tail, weights=links, minlength=n)
        if np.any(used[limited] > np.array(given, dtype=float)):
            return None
    return ga.capacity


def _values(dicts: list[dict[str, Any]], key: str, default: Any) -> list[Any]:
    """``[d.get(key, default) for d in dicts]`` by the faster ``itemgetter`` while every
    dict has ``key`` (the usual case: twice as fast on 300,000 arcs)."""
    try:
        return list(map(itemgetter(key), dicts))
    except KeyError:
        return list(map(methodcaller("get", key, default), dicts))
