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
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain, repeat
from typing import Any

import networkx as nx

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
        return len(set(self.arc_orbit.values()))

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
        check on a 15,360-GPU pod, arc by arc)."""
        succ = graph._succ
        arcs = chain.from_iterable(map(zip, map(repeat, succ), succ.values()))
        orbits = list(map(self.arc_orbit.get, arcs))
        data = chain.from_iterable(map(dict.values, succ.values()))
        capacities = list(map(operator.methodcaller("get", "capacity"), data))
        seen: dict[Any, Any] = dict(zip(orbits, capacities, strict=True))
        # Each orbit's last capacity was kept: every arc must show it (and be claimed).
        return None not in seen and all(map(operator.eq, map(seen.__getitem__, orbits),
                                            capacities))
