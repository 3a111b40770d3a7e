"""Symmetry claims that generators attach to the fabrics they build (part of the data model:
a :class:`~fabricopt.Fabric` carries one; :mod:`fabricopt.symmetry` verifies and finds them).

A generator that knows a group of automorphisms of its fabric records the arc orbits of that
group (any such group will do, a subgroup gives finer orbits) and, when the group is not
transitive on the endpoints, its orbits on them. The flow engine then solves one root's flow
per endpoint orbit with one capacity row per arc orbit, which is exact for traffic invariant
under the group (see ``docs/throughput.md#the-symmetric-method``).

A claim describes the graph as it was built. :meth:`Symmetry.matches` compares a cheap
fingerprint (node and arc counts, and one capacity per orbit) so that a fabric edited after
generation is never solved with a stale claim.
"""

from __future__ import annotations

import operator
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain, repeat
from typing import Any

import networkx as nx
import numpy as np

from ._checks import check_node_names
from .errors import InvalidParameterError

Arc = tuple[Hashable, Hashable]


@dataclass(frozen=True)
class Symmetry:
    """Arc orbits of a group of automorphisms of a fabric, and its orbits on the endpoints.

    The group acts transitively on the endpoints unless ``endpoint_orbit`` says otherwise.

    Parameters
    ----------
    arc_orbit : mapping
        Orbit label of every arc ``(u, v)`` of the graph.
    group : str
        A short description of the group, for people (e.g. ``"pod and switch permutations"``).
    n_nodes, n_arcs : int
        Size of the graph the claim was made for.
    endpoints : frozenset
        The endpoints the claim is about; it says nothing about any other set of endpoints.
    endpoint_orbit : mapping, optional
        Orbit label of every endpoint when the group has several orbits on them (a failed
        or irregular fabric); None (the default) means one orbit: the group is transitive.

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.ring(4)
    >>> fab.symmetry.n_orbits   # rotations and reflections map any arc to any other
    1
    """

    arc_orbit: Mapping[Arc, int]
    group: str
    n_nodes: int
    n_arcs: int
    endpoints: frozenset[Hashable]
    orbit_names: tuple[str, ...] = field(default=())
    endpoint_orbit: Mapping[Hashable, int] | None = None

    @property
    def n_orbits(self) -> int:
        """Number of distinct arc orbits."""
        orbits = self.arc_orbit
        return len(set(orbits._codes if isinstance(orbits, ArcOrbits) else orbits.values()))

    @property
    def transitive(self) -> bool:
        """True when the group maps every endpoint to every other (one endpoint orbit)."""
        return self.n_endpoint_orbits <= 1

    @property
    def n_endpoint_orbits(self) -> int:
        """Number of orbits of the group on the endpoints (1 for a transitive group)."""
        if self.endpoint_orbit is None:
            return 1 if self.endpoints else 0
        return len(set(self.endpoint_orbit.values()))

    def matches(self, graph: nx.DiGraph, endpoints: Iterable[Hashable]) -> bool:
        """True when ``graph`` and ``endpoints`` still look like what the claim was made for.

        Checks the endpoint set, the node and arc counts, that every claimed arc exists, and
        that all arcs of an orbit have the same capacity (an automorphism preserves
        capacities). Anything but a networkx.DiGraph and an iterable of node names is refused.
        """
        if not isinstance(graph, nx.DiGraph):
            raise InvalidParameterError(f"Symmetry.matches(): graph must be a networkx.DiGraph, "
                                        f"got {type(graph).__name__}")
        endpoints = check_node_names("Symmetry.matches", "endpoints", endpoints)
        # networkx counts arcs by summing degrees node by node (seconds at 500,000 nodes); a
        # plain DiGraph's successor dicts give the count at C speed.
        arcs = (sum(map(len, graph._succ.values())) if type(graph) is nx.DiGraph
                else graph.number_of_edges())
        if graph.number_of_nodes() != self.n_nodes or arcs != self.n_arcs:
            return False
        if frozenset(endpoints) != self.endpoints:
            return False
        if self.endpoint_orbit is not None and frozenset(self.endpoint_orbit) != self.endpoints:
            return False
        if len(self.arc_orbit) != self.n_arcs:
            return False
        if type(graph) is nx.DiGraph:
            return self._capacities_match(graph)
        seen: dict[int, float] = {}
        orbit_of = self.arc_orbit
        for u, v, cap in graph.edges(data="capacity"):
            orbit = orbit_of.get((u, v))
            if orbit is None or seen.setdefault(orbit, cap) != cap:
                return False
        return True

    def _capacities_match(self, graph: nx.DiGraph) -> bool:
        """Every arc of a plain ``DiGraph`` claimed, one capacity per orbit: the loop of
        :meth:`matches` as C-level maps over the adjacency dicts (a fifth of a second per
        check on a 15,360-GPU pod, arc by arc). A claim its builder aligned with the graph
        (:class:`ClaimOrder`) whose graph still has the same arcs in the same order checks
        the capacities on arrays instead, without an orbit lookup per arc."""
        succ = graph._succ
        order = self.__dict__.get("_order")
        if order is not None and order.same_arcs(graph):
            capacities = list(map(operator.methodcaller("get", "capacity"),
                                  chain.from_iterable(map(dict.values, succ.values()))))
            if set(map(type, capacities)) <= _PLAIN_NUMBERS:
                return order.one_capacity_per_orbit(np.array(capacities, dtype=float))
        arcs = chain.from_iterable(map(zip, map(repeat, succ), succ.values()))
        orbits = list(map(self.arc_orbit.get, arcs))
        data = chain.from_iterable(map(dict.values, succ.values()))
        capacities = list(map(operator.methodcaller("get", "capacity"), data))
        seen: dict[Any, Any] = dict(zip(orbits, capacities, strict=True))
        # Each orbit's last capacity was kept: every arc must show it (and be claimed).
        return None not in seen and all(map(operator.eq, map(seen.__getitem__, orbits),
                                            capacities))


class ArcOrbits(Mapping):
    """A claim's orbit of each arc as a read-only mapping ``(u, v) -> code``: two parallel
    lists in the order its builder made the arcs, the arcs and their orbit codes (integers;
    the generators' builder numbers them 0..k-1 by the claim's sorted ``orbit_names``). Its
    length and iterating its arcs (``keys()``) read the lists; the dict keyed by arc is made
    once, on the first call that needs it (a lookup, ``get``, ``in``, ``values()``,
    ``items()``, ``repr``), and answers every call after it (the dict of a 24,576-GPU
    cluster's 301,344 arcs was a tenth of its claim's making).

    >>> orbits = ArcOrbits([("a", "b"), ("b", "a")], [0, 1])
    >>> len(orbits), orbits[("b", "a")], dict(orbits)
    (2, 1, {('a', 'b'): 0, ('b', 'a'): 1})
    """

    def __init__(self, arcs: list[Arc], codes: list[int]) -> None:
        if len(arcs) != len(codes):
            raise InvalidParameterError(f"ArcOrbits: {len(codes)} codes for {len(arcs)} arcs")
        self._arcs, self._codes = arcs, codes
        self._by_arc: dict[Arc, int] | None = None

    def _dict(self) -> dict[Arc, int]:
        if self._by_arc is None:
            self._by_arc = dict(zip(self._arcs, self._codes, strict=True))
        return self._by_arc

    def __getitem__(self, arc: Arc) -> int:
        return self._dict()[arc]

    def __contains__(self, arc: object) -> bool:
        return arc in self._dict()

    def __iter__(self) -> Iterator[Arc]:
        return iter(self._dict()) if self._by_arc is not None else iter(self._arcs)

    def __len__(self) -> int:
        return len(self._dict()) if self._by_arc is not None else len(self._arcs)

    def values(self) -> Any:
        return self._dict().values()

    def items(self) -> Any:
        return self._dict().items()

    def __repr__(self) -> str:
        return repr(self._dict())


#: Capacity types compared as floats without a closer look (as
#: :class:`~fabricopt.graph_arrays.GraphArrays` reads them).
_PLAIN_NUMBERS = {float, int, np.float64, np.float32, np.int64, np.int32}


@dataclass(frozen=True, eq=False)
class ClaimOrder:
    """A claim's orbits in the order of the graph its builder made: the node names, each
    node's out-degree and each arc's head, as the successor dicts hold them (the order of
    :class:`~fabricopt.graph_arrays.GraphArrays`), the arcs' ends as node indices, and
    each arc's orbit code (dense, 0..k-1, as ``arc_orbit`` gives it).

    A builder attaches it to the claim it makes (``claim._order``); the claim's own arcs and
    codes are read-only, so while a graph still has exactly these arcs in this order
    (:meth:`same_arcs`, compared by C-level passes) the codes are the claim's for that graph
    and no arc needs to be looked up: :meth:`Symmetry.matches` checks one capacity per orbit
    on arrays, and the symmetric method takes the codes as they are (on a 524,288-GPU fat
    tree the lookups took two to three seconds per solve).

    >>> import fabricopt as fo
    >>> fab = fo.fat_tree(4)
    >>> order = fab.symmetry._order
    >>> order.same_arcs(fab.graph), int(order.codes.max()) + 1 == fab.symmetry.n_orbits
    (True, True)
    >>> order.same_arcs(fab.without_links([("leaf0", "spine0.0")]).graph)
    False
    """

    nodes: list[Hashable]
    degrees: list[int]
    heads: list[Hashable]
    tail: np.ndarray
    head: np.ndarray
    codes: np.ndarray

    def same_arcs(self, graph: Any) -> bool:
        """True when ``graph`` is a plain DiGraph with these nodes and arcs, in this order."""
        if type(graph) is not nx.DiGraph:
            return False
        succ = graph._succ
        return (list(succ) == self.nodes and list(map(len, succ.values())) == self.degrees
                and list(chain.from_iterable(succ.values())) == self.heads)

    def fits(self, nodes: list[Hashable], tail: np.ndarray, head: np.ndarray) -> bool:
        """True when arrays with these ``nodes`` and arc ends (node indices) are this order's
        arcs, in this order (so :attr:`codes` are their orbits)."""
        return (len(tail) == len(self.tail) and nodes == self.nodes
                and np.array_equal(tail, self.tail) and np.array_equal(head, self.head))

    def one_capacity_per_orbit(self, capacity: np.ndarray) -> bool:
        """True when every orbit's arcs have one capacity (``capacity`` in this order)."""
        if len(capacity) != len(self.codes):
            return False
        seen = np.zeros(int(self.codes.max()) + 1 if len(self.codes) else 0)
        seen[self.codes] = capacity
        return bool(np.all(seen[self.codes] == capacity))

    @classmethod
    def of(cls, graph: nx.DiGraph, arcs: list[Arc], codes: np.ndarray) -> ClaimOrder | None:
        """The order of ``graph`` (a plain DiGraph whose successor dicts got the arcs
        ``arcs`` in that order, each node's in the order added), ``codes[i]`` the orbit of
        ``arcs[i]``: the arcs sorted stably by tail index, which is the order networkx walks.
        None when the graph's arcs are not those, in that order (checked)."""
        succ = graph._succ
        nodes = list(succ)
        if type(graph) is not nx.DiGraph or list(graph._node) != nodes:
            return None
        index = dict(zip(nodes, range(len(nodes)), strict=True))
        m = len(arcs)
        degrees = list(map(len, succ.values()))
        try:  # read in the order added, in one sequential pass, then sorted as arrays
            ends = np.fromiter(map(index.__getitem__, chain.from_iterable(arcs)),
                               dtype=np.int64, count=2 * m).reshape(m, 2)
        except (KeyError, ValueError):  # an arc that is not the graph's, or too few
            return None
        tail, head = ends[:, 0], ends[:, 1]
        # Each node's successors were set in the order added, so the arcs sorted stably by
        # tail are the graph's walk; out- and in-degrees must agree (an arc never set would
        # not).
        if (sum(degrees) != m
                or not np.array_equal(np.bincount(tail, minlength=len(nodes)), degrees)
                or not np.array_equal(np.bincount(head, minlength=len(nodes)),
                                      list(map(len, graph._pred.values())))):
            return None
        by_tail = np.argsort(tail, kind="stable")
        tail, head = tail[by_tail], head[by_tail]
        heads = list(chain.from_iterable(succ.values()))
        codes = np.asarray(codes, dtype=np.int64)[by_tail]
        if m and not np.all(np.bincount(codes) > 0):  # gaps: dense, as arc_orbits numbers
            codes = np.unique(codes, return_inverse=True)[1].reshape(m)
        for array in (tail, head, codes):
            array.flags.writeable = False
        return cls(nodes, degrees, heads, tail, head, codes)
