"""Find a fabric's symmetry instead of trusting a claim: automorphisms found and proven.

The symmetric flow method needs a group of automorphisms of the fabric (maps of nodes onto
nodes that send arcs to arcs of the same capacity and endpoints to endpoints; nothing else
matters to the flow LP), given by its arc orbits and its orbits on the endpoints. A generator
knows such a group; a fabric built by hand, read from a file, edited or failed does not.
:func:`find_symmetry` finds one, transitive on the endpoints or not:

1. **Colour refinement** (the coarsest equitable partition, see
   :func:`fabricopt.flow.symmetric.color_refinement`) of the graph with endpoints and
   capacities as colours. An automorphism preserves refined colours, so endpoints of
   different colours lie in different orbits (``max_endpoint_orbits=1`` stops there when
   there are several).
2. **Twins**: two nodes with the same neighbours over arcs of the same capacities swap by an
   automorphism that can be written down. They are found by hashing neighbourhoods and each
   swap is verified; the search below never branches inside a class of twins.
3. **Individualisation-refinement** (the method of McKay's nauty): to map a root endpoint
   to endpoint ``e``, give the root a colour of its own in one copy and ``e`` in the other,
   refine both, and keep individualising one node of the same cell on both sides (the first
   node on the first side, every candidate on the second, backtracking on a mismatch) until
   the cells left are classes of twins. Each step first tries the map that pairs the cells in
   node order, which on fabrics built in a regular order is an automorphism at once.
4. **Orbits, class by class**: in each colour class of endpoints a root is mapped to every
   endpoint not yet in its orbit under the generators found. An endpoint that no
   automorphism reaches (the search above, exhaustive) is outside the root's orbit in the
   full group, with its whole current orbit; once the root is done, the first endpoint left
   starts the next orbit. When every endpoint was either reached or ruled out, the endpoint
   orbits are the full automorphism group's (``SymmetrySearch.proven``).
5. Every map is **verified** (each arc it moves lands on an arc of the same capacity,
   endpoints stay endpoints) before it becomes a generator. A last pass merges arc orbits
   that colour refinement (with the proven endpoint orbits as colours) cannot tell apart,
   when an automorphism between them is found within a small budget (finer orbits stay
   exact, coarser ones make the symmetric LP smaller).

The orbits are those of the group the verified generators generate, so the result is exact
however many automorphisms the search missed, and any subgroup is sound: when the time limit
stops the search, the group found so far is returned, its orbits exact but perhaps finer
than the full group's (``proven=False``). :func:`verify_found_symmetry` re-proves all of it
from the generators the result carries, and :func:`symmetry_from_generators` rebuilds it from
them (how a file keeps a found symmetry).
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._checks import check_int, check_positive
from ..errors import InvalidFabricError, InvalidParameterError
from ..fabric import Fabric
from ..graph_arrays import GraphArrays
from ..symmetry_claim import Symmetry
from .orbits import Generator, _first_seen_labels, _merge, _node_labels, _same_partition
from .refinement import _RNG_SEED, Refinement

#: Nodes a search that merges two arc orbits may visit before it gives up on that pair.
MERGE_BUDGET_NODES = 64

@dataclass(frozen=True, eq=False)
class FoundSymmetry(Symmetry):
    """A :class:`~fabricopt.Symmetry` found by :func:`find_symmetry`, with its proof.

    ``generators`` are permutations of ``nodes`` (by position), each as the nodes it moves
    and their images; the arc orbits (``arc_orbit``) and, when there are several, the orbits
    on the endpoints (``endpoint_orbit``, None for one orbit) are exactly the orbits of the
    group they generate, which :func:`verify_found_symmetry` re-checks.
    """

    nodes: tuple[Hashable, ...] = ()
    generators: tuple[Generator, ...] = field(default=(), repr=False)
    n_twin_swaps: int = 0


@dataclass(frozen=True)
class SymmetrySearch:
    """What :func:`search_symmetry` found: the symmetry, or None and why.

    Attributes
    ----------
    symmetry : FoundSymmetry or None
    reason : str
        Why there is no symmetry, or why its orbits may be finer than the full group's (the
        time limit); "" when the search completed.
    proven : bool
        True when the answer is final: the symmetry's endpoint orbits are proven to be those
        of the full automorphism group (each endpoint left out of a root's orbit was shown
        unreachable by exhaustive search), or no symmetry exists within
        ``max_endpoint_orbits``. False when the time limit stopped the search: the symmetry
        is then the subgroup found so far (its orbits exact for it, so still sound for the
        symmetric method, only finer), or None.
    seconds : float
    n_generators, n_twin_swaps, n_orbits, n_endpoint_orbits : int
        Generators found (twin swaps included), how many are twin swaps, arc orbits, and
        orbits on the endpoints (1: the group is transitive on them).
    """

    symmetry: FoundSymmetry | None
    reason: str
    proven: bool
    seconds: float
    n_generators: int = 0
    n_twin_swaps: int = 0
    n_orbits: int = 0
    n_endpoint_orbits: int = 0

    @property
    def message(self) -> str:
        """One line for a result's message."""
        if self.symmetry is None:
            return f"no symmetry found ({self.reason})"
        on_endpoints = ("transitive on the endpoints" if self.n_endpoint_orbits == 1 else
                        f"{self.n_endpoint_orbits} orbits on the endpoints")
        return (f"symmetry found: {self.n_generators} generators ({self.n_twin_swaps} twin "
                f"swaps), {on_endpoints}, {self.n_orbits} arc orbits, in {self.seconds:.2f} s"
                + ("" if self.proven else f" ({self.reason})"))


class _GiveUp(Exception):
    """The search ran out of time or of its node budget."""


class _Automorphisms:
    """The fabric as arrays, with a vectorised test of candidate automorphisms."""

    def __init__(self, ga: GraphArrays, endpoint_idx: np.ndarray) -> None:
        self.ga = ga
        n = ga.n_nodes
        self.n = n
        self.is_endpoint = np.zeros(n, dtype=bool)
        self.is_endpoint[endpoint_idx] = True
        key = ga.tail * n + ga.head
        self.arc_order = np.argsort(key, kind="stable")
        self.sorted_key = key[self.arc_order]
        # Arcs by tail and by head, to list the arcs at a set of nodes.
        self.out_arcs = np.argsort(ga.tail, kind="stable")
        self.out_ptr = np.r_[0, np.cumsum(np.bincount(ga.tail, minlength=n))]
        self.in_arcs = np.argsort(ga.head, kind="stable")
        self.in_ptr = np.r_[0, np.cumsum(np.bincount(ga.head, minlength=n))]
        # Capacities compared exactly: an automorphism must preserve them to the bit.
        self.arc_color = np.unique(ga.capacity, return_inverse=True)[1].ravel().astype(np.int64)

    def arc_index(self, tail: np.ndarray, head: np.ndarray) -> np.ndarray:
        """Index of arc ``tail -> head`` for each pair, -1 where there is none."""
        key = tail * self.n + head
        if len(self.sorted_key) == 0:
            return np.full(len(key), -1)
        pos = np.minimum(np.searchsorted(self.sorted_key, key), len(self.sorted_key) - 1)
        found = self.sorted_key[pos] == key
        return np.where(found, self.arc_order[pos], -1)

    def incident_arcs(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Arcs leaving or entering each of ``nodes``, with the position in ``nodes`` each
        came from (an arc between two listed nodes appears twice)."""
        parts, owners = [], []
        for arcs, ptr in ((self.out_arcs, self.out_ptr), (self.in_arcs, self.in_ptr)):
            start, stop = ptr[nodes], ptr[nodes + 1]
            count = stop - start
            owner = np.repeat(np.arange(len(nodes)), count)
            offset = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
            parts.append(arcs[np.repeat(start, count) + offset])
            owners.append(owner)
        return np.concatenate(parts), np.concatenate(owners)

    def apply(self, gens: Sequence[Generator]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Test permutations given by what they move; return (ok per generator, arcs, their
        images) where the image pairs cover every arc each valid generator moves.

        A permutation ``p`` of the nodes is an automorphism when it maps endpoints to
        endpoints and every arc to an arc of the same capacity. Arcs away from the moved
        nodes are fixed, and ``p`` maps the finite set of arcs at the moved nodes injectively
        into itself, so checking those arcs proves it.
        """
        n, ga = self.n, self.ga
        ok = np.ones(len(gens), dtype=bool)
        if not gens:
            return ok, np.zeros(0, np.int64), np.zeros(0, np.int64)
        gid = np.concatenate([np.full(len(s), g) for g, (s, _) in enumerate(gens)])
        sup = np.concatenate([np.asarray(s, dtype=np.int64) for s, _ in gens])
        img = np.concatenate([np.asarray(i, dtype=np.int64) for _, i in gens])
        if len(sup) != len(img) or np.any((sup < 0) | (sup >= n) | (img < 0) | (img >= n)):
            raise InvalidFabricError("automorphism test: a generator names nodes outside the "
                                     "graph or has support and image of different lengths")
        # Each must permute its own support: same sets, no repeats.
        by_gen_sup = np.sort(gid * n + sup)
        by_gen_img = np.sort(gid * n + img)
        repeats = np.zeros(len(gens), dtype=bool)
        repeats[(by_gen_sup // n)[1:][np.diff(by_gen_sup) == 0]] = True
        ok &= ~repeats
        bad = by_gen_sup != by_gen_img
        ok[np.unique(by_gen_sup[bad] // n)] = False
        ok[np.unique(gid[self.is_endpoint[sup] != self.is_endpoint[img]])] = False
        arcs, owner = self.incident_arcs(sup)
        arc_gen = gid[owner]
        # Image of both ends under the arc's own generator (ends it does not move stay).
        lookup = gid * n + sup
        order = np.argsort(lookup, kind="stable")
        lookup_sorted, img_sorted = lookup[order], img[order]

        def image(nodes: np.ndarray) -> np.ndarray:
            key = arc_gen * n + nodes
            pos = np.minimum(np.searchsorted(lookup_sorted, key), len(lookup_sorted) - 1)
            return np.where(lookup_sorted[pos] == key, img_sorted[pos], nodes)

        new = self.arc_index(image(ga.tail[arcs]), image(ga.head[arcs]))
        broken = (new < 0) | (self.arc_color[np.maximum(new, 0)] != self.arc_color[arcs])
        ok[np.unique(arc_gen[broken])] = False
        keep = ok[arc_gen]
        return ok, arcs[keep], new[keep]

    def is_automorphism(self, gen: Generator) -> bool:
        return bool(self.apply([gen])[0][0])


def _twin_swaps(aut: _Automorphisms) -> list[Generator]:
    """Verified swaps of twin nodes: same endpoint status and the same neighbours over arcs
    of the same capacities (false twins), or also joined to each other both ways by equal
    capacities (true twins, e.g. the nodes of a complete graph).

    Candidates come from hashing neighbourhoods; for true twins ``u, v`` joined with capacity
    ``c`` the open hashes differ by the terms of ``v`` and ``u``, so each node is also hashed
    with itself added as a neighbour at each of its capacities.
    """
    ga, n = aut.ga, aut.n
    if n < 2:
        return []
    rng = np.random.default_rng(_RNG_SEED)
    key_node = rng.integers(1, 2**63, size=(2, n), dtype=np.uint64)
    key_cap = rng.integers(1, 2**63, size=(2, int(aut.arc_color.max(initial=0)) + 1),
                           dtype=np.uint64) | np.uint64(1)
    key_endpoint = rng.integers(1, 2**63, size=2, dtype=np.uint64)
    a_out = key_node[0][ga.head] * key_cap[0][aut.arc_color]
    a_in = key_node[1][ga.tail] * key_cap[1][aut.arc_color]
    open_hash = key_endpoint[aut.is_endpoint.astype(np.int64)].copy()
    np.add.at(open_hash, ga.tail, a_out)
    np.add.at(open_hash, ga.head, a_in)
    # True-twin hash of each (node, capacity of one of its out-arcs).
    node_cap = np.unique(ga.tail * (int(aut.arc_color.max(initial=0)) + 1) + aut.arc_color)
    k = int(aut.arc_color.max(initial=0)) + 1
    v, c = node_cap // k, node_cap % k
    closed = (open_hash[v] + key_node[0][v] * key_cap[0][c] + key_node[1][v] * key_cap[1][c]
              + np.uint64(0x9E3779B97F4A7C15))
    keys = np.concatenate([open_hash, closed]).view(np.int64)
    who = np.concatenate([np.arange(n), v])
    order = np.lexsort((who, keys))
    keys, who = keys[order], who[order]
    first = np.r_[True, keys[1:] != keys[:-1]]
    group_start = np.flatnonzero(first)
    rep = who[np.repeat(group_start, np.diff(np.r_[group_start, len(keys)]))]
    pair = rep != who
    gens = [(np.array([a, b]), np.array([b, a])) for a, b in zip(rep[pair], who[pair],
                                                                 strict=True)]
    ok = aut.apply(gens)[0]
    return [g for g, good in zip(gens, ok, strict=True) if good]


class _Search(Refinement):
    """Individualisation-refinement search for automorphisms with given node pairs."""

    def __init__(self, aut: _Automorphisms, twin_class: np.ndarray, deadline: float,
                 work: float = np.inf) -> None:
        super().__init__(aut.ga, aut.arc_color)
        self.aut = aut
        self.twin_class = twin_class
        self.deadline = deadline
        self.budget = np.inf  # of one merge attempt
        self.work_left = work  # search nodes of the whole search
        self.index = np.arange(aut.n)

    def tick(self) -> None:
        self.budget -= 1
        self.work_left -= 1
        if self.budget < 0 or self.out_of_limits():
            raise _GiveUp

    def out_of_limits(self) -> bool:
        """Whether the whole search's work (search nodes) or time is used up."""
        return self.work_left < 0 or time.perf_counter() > self.deadline

    def target(self, part: np.ndarray) -> int:
        """First node of the first cell that holds two nodes that are not twins, or -1."""
        sizes = np.bincount(part)
        cand = np.flatnonzero(sizes[part] > 1)
        if len(cand) == 0:
            return -1
        tw = self.twin_class[cand]
        cells = part[cand]
        order = np.lexsort((tw, cells))
        cells, tw, cand = cells[order], tw[order], cand[order]
        # A cell is all twins when its first and last (by twin class) agree.
        start = np.r_[True, cells[1:] != cells[:-1]]
        stop = np.r_[cells[1:] != cells[:-1], True]
        mixed = tw[start] != tw[stop]
        if not mixed.any():
            return -1
        cell = cells[start][np.argmax(mixed)]
        return int(np.min(cand[cells == cell]))

    def pairing(self, p1: np.ndarray, p2: np.ndarray) -> np.ndarray:
        """The map that sends the cells of ``p1`` onto those of ``p2`` in node order."""
        perm = np.empty(self.aut.n, dtype=np.int64)
        perm[np.lexsort((self.index, p1))] = np.lexsort((self.index, p2))
        return perm

    def check(self, perm: np.ndarray) -> Generator | None:
        """``perm`` as a generator if it is an automorphism, else None."""
        moved = np.flatnonzero(perm != self.index)
        # Most guesses in a search are wrong almost everywhere: a few arcs show it cheaply
        # before the full test.
        ga, aut = self.aut.ga, self.aut
        if ga.n_arcs == 0:
            return (moved, perm[moved]) if aut.is_automorphism((moved, perm[moved])) else None
        sample = aut.out_arcs[aut.out_ptr[moved[:: max(1, len(moved) // 32)]]
                              .clip(max=max(ga.n_arcs - 1, 0))]
        if len(sample) and np.any(aut.arc_index(perm[ga.tail[sample]],
                                                perm[ga.head[sample]]) < 0):
            return None
        gen = (moved, perm[moved])
        return gen if aut.is_automorphism(gen) else None

    def find(self, path: _Path, start2: np.ndarray) -> Generator | None:
        """An automorphism mapping the start of ``path`` onto ``start2``, or None when none
        exists (exhaustive); raises :class:`_GiveUp` when out of time or budget."""
        # Depth-first over candidate lists; stack[k] holds the untried candidates at depth k.
        parts = [start2]
        stack: list[list[int]] = []
        while True:
            self.tick()
            k = len(parts) - 1
            p1, p2 = path.partition(k), parts[k]
            descend = False
            if np.array_equal(np.bincount(p1), np.bincount(p2)):
                perm = self.pairing(p1, p2)
                gen = self.check(perm)
                if gen is not None:
                    return gen
                x = path.vertex(k)
                if x >= 0:
                    cell = np.flatnonzero(p2 == p1[x])
                    guess = int(perm[x])
                    stack.append([int(y) for y in cell[::-1] if y != guess] + [guess])
                    descend = True
            if not descend:
                parts.pop()
            while stack and not stack[-1]:
                stack.pop()
                parts.pop()
            if not stack:
                return None
            y = stack[-1].pop()
            parts.append(self.individualise(parts[len(stack) - 1], [y]))


class _Path:
    """The first side of a search: from a start partition, always individualise the first
    node of the target cell. Computed lazily and shared by every search from that start."""

    def __init__(self, search: _Search, start: np.ndarray) -> None:
        self.search = search
        self.parts = [start]
        self.vertices: list[int] = []

    def partition(self, k: int) -> np.ndarray:
        while len(self.parts) <= k:
            x = self.vertex(len(self.parts) - 1)
            self.parts.append(self.search.individualise(self.parts[-1], [x]))
        return self.parts[k]

    def vertex(self, k: int) -> int:
        while len(self.vertices) <= k:
            self.vertices.append(self.search.target(self.partition(len(self.vertices))))
        return self.vertices[k]


def _orbits(aut: _Automorphisms, gens: Sequence[Generator], endpoint_idx: np.ndarray,
            ) -> tuple[np.ndarray, np.ndarray]:
    """Arc orbits and endpoint orbits (in ``endpoint_idx`` order, numbered by first
    appearance) of the group generated by ``gens``; InvalidFabricError if one of them is not
    an automorphism."""
    ok, arcs, images = aut.apply(gens)
    if not ok.all():
        g = int(np.flatnonzero(~ok)[0])
        raise InvalidFabricError(f"generator {g} is not an automorphism (an arc maps to a "
                                 "missing arc, capacities differ, or an endpoint maps to a "
                                 "non-endpoint)")
    arc_orbit = _merge(np.arange(aut.ga.n_arcs), arcs, images)
    endpoint_orbit = _first_seen_labels(_node_labels(aut.n, gens)[endpoint_idx])
    return arc_orbit, endpoint_orbit


def _found(fab: Any, ga: GraphArrays, aut: _Automorphisms, eps: np.ndarray,
           gens: Sequence[Generator], n_twin_swaps: int) -> FoundSymmetry:
    """The FoundSymmetry the generators give: orbits computed, generators checked."""
    arc_orbit, endpoint_orbit = _orbits(aut, gens, eps)
    several = len(endpoint_orbit) and int(endpoint_orbit.max()) > 0
    return FoundSymmetry(
        arc_orbit=dict(zip(ga.arcs, arc_orbit.tolist(), strict=True)),
        group=f"automorphisms found by search ({len(gens)} generators)",
        n_nodes=ga.n_nodes, n_arcs=ga.n_arcs, endpoints=frozenset(fab.endpoints),
        endpoint_orbit=(dict(zip(fab.endpoints, endpoint_orbit.tolist(), strict=True))
                        if several else None),
        nodes=tuple(ga.nodes), generators=tuple(gens), n_twin_swaps=n_twin_swaps)


def symmetry_from_generators(fab: Any, nodes: Sequence[Hashable],
                             generators: Sequence[Generator], n_twin_swaps: int = 0,
                             ) -> FoundSymmetry:
    """The :class:`FoundSymmetry` of ``fab`` that ``generators`` prove (permutations of
    ``nodes`` by position, as in :attr:`FoundSymmetry.generators`).

    Each generator is checked to be an automorphism and the arc and endpoint orbits are those
    of the group they generate, so the result is as sound as one the search returns (this is
    how a file's found symmetry is read back).

    Raises
    ------
    InvalidFabricError
        If ``nodes`` are not the fabric's nodes or a generator is not an automorphism.

    Examples
    --------
    >>> import networkx as nx
    >>> import fabricopt as fo
    >>> fab = fo.from_networkx(nx.path_graph(3))   # 0 - 1 - 2: the reflection swaps the ends
    >>> sym = symmetry_from_generators(fab, [0, 1, 2], [([0, 2], [2, 0])])
    >>> sym.n_endpoint_orbits, sym.n_orbits
    (2, 2)
    """
    ga = GraphArrays.from_fabric(fab)
    name = getattr(fab, "name", "")
    if len(nodes) != ga.n_nodes or set(nodes) != set(ga.nodes):
        raise InvalidFabricError(f"symmetry of {name!r}: its nodes are not the fabric's")
    to_here = np.array([ga.index[v] for v in nodes], dtype=np.int64)
    n = len(to_here)
    gens = []
    for k, (s, i) in enumerate(generators):
        s, i = np.asarray(s, dtype=np.int64).ravel(), np.asarray(i, dtype=np.int64).ravel()
        if np.any((s < 0) | (s >= n)) or np.any((i < 0) | (i >= n)):
            raise InvalidFabricError(f"symmetry of {name!r}: generator {k} names a node "
                                     "position outside the fabric")
        gens.append((to_here[s], to_here[i]))
    eps = np.array([ga.index[e] for e in fab.endpoints], dtype=np.int64)
    aut = _Automorphisms(ga, eps)
    try:
        return _found(fab, ga, aut, eps, gens, n_twin_swaps)
    except InvalidFabricError as exc:
        raise InvalidFabricError(f"symmetry of {name!r}: {exc}") from None


def _orbit_search(search: _Search, base: np.ndarray, eps: np.ndarray, node_orbit: np.ndarray,
                  gens: list[Generator], max_orbits: float,
                  ) -> tuple[np.ndarray, list[int], tuple[int, int] | None]:
    """Find generators until the endpoint orbits are proven, class by colour class.

    In each colour class a root is mapped to every endpoint of the class not yet in its
    orbit; an endpoint no automorphism reaches (exhaustive search) rules out its whole orbit
    and, once the root is done, the first endpoint left becomes the next root. Appends to
    ``gens``; returns the node orbits, the roots (one per proven endpoint orbit) and the
    (root, endpoint) pair of the last exhaustive failure. Stops early, with that pair, once
    more than ``max_orbits`` roots exist; raises :class:`_GiveUp` on the time limit (``gens``
    then holds what was found).
    """
    roots: list[int] = []
    apart: tuple[int, int] | None = None
    classes = base[eps]
    for cls in classes[np.sort(np.unique(classes, return_index=True)[1])]:
        members = eps[classes == cls]
        while True:
            done = node_orbit[np.asarray(roots, dtype=np.int64)]
            fresh = members[~np.isin(node_orbit[members], done)]
            if len(fresh) == 0:
                break
            root = int(fresh[0])
            roots.append(root)
            if len(roots) > max_orbits:
                return node_orbit, roots, apart
            path: _Path | None = None  # built on first use: twin swaps may leave no work
            refused: list[int] = []  # endpoints proven outside the root's orbit
            while True:
                out = node_orbit[np.asarray(refused + roots, dtype=np.int64)]
                left = fresh[(node_orbit[fresh] != node_orbit[root])
                             & ~np.isin(node_orbit[fresh], out)]
                if len(left) == 0:
                    break
                e = int(left[0])
                if path is None:
                    path = _Path(search, search.individualise(base, [root]))
                gen = search.find(path, search.individualise(base, [e]))
                if gen is None:
                    refused.append(e)
                    apart = (root, e)
                else:
                    gens.append(gen)
                    node_orbit = _merge(node_orbit, gen[0], gen[1])
    return node_orbit, roots, apart


def search_symmetry(fab: Any, *, time_limit: float | None = None,
                    max_endpoint_orbits: int | None = None, max_nodes: int | None = None,
                    _caller: str = "search_symmetry") -> SymmetrySearch:
    """Find and prove a group of automorphisms of ``fab`` and its orbits on the endpoints.

    Like :func:`find_symmetry`, but says how the search went: how many orbits, whether they
    are proven to be the full group's, or why there is no symmetry.

    Parameters
    ----------
    fab : Fabric
    time_limit : float, optional
        Seconds; when they run out the search stops and returns the group found so far
        (``proven=False``: its orbits are exact for that subgroup, perhaps finer than the full
        group's).
    max_endpoint_orbits : int, optional
        Give up (no symmetry, ``proven=True``) as soon as the endpoints are proven to fall
        into more orbits than this; 1 asks for a group transitive on the endpoints. Default:
        no limit.
    max_nodes : int, optional
        A work limit: nodes of the search tree it may visit in all, after which it stops as
        with ``time_limit`` (the same stop on a busy machine and an idle one). Default: no
        limit.

    Returns
    -------
    SymmetrySearch

    Examples
    --------
    >>> import networkx as nx
    >>> import fabricopt as fo
    >>> found = search_symmetry(fo.from_networkx(nx.path_graph(4)))   # 0 - 1 - 2 - 3
    >>> found.n_endpoint_orbits, found.proven   # {0, 3} and {1, 2}: the reflection
    (2, True)
    >>> search_symmetry(fo.from_networkx(nx.path_graph(4)), max_endpoint_orbits=1).reason
    'endpoints fall into 2 colour classes, so no automorphism maps every endpoint to every other'
    """
    start = time.perf_counter()
    if not isinstance(fab, Fabric):
        raise InvalidParameterError(f"{_caller}(): fab must be a Fabric, "
                                    f"got {type(fab).__name__}")
    if time_limit is not None:
        check_positive(_caller, "time_limit", time_limit)
    if max_endpoint_orbits is not None:
        check_int(_caller, "max_endpoint_orbits", max_endpoint_orbits, minimum=1)
    if max_nodes is not None:
        check_int(_caller, "max_nodes", max_nodes, minimum=1)
    max_orbits = np.inf if max_endpoint_orbits is None else int(max_endpoint_orbits)
    deadline = start + (np.inf if time_limit is None else float(time_limit))
    ga = GraphArrays.from_fabric(fab)
    eps = np.array([ga.index[e] for e in fab.endpoints], dtype=np.int64)

    def none(reason: str, proven: bool) -> SymmetrySearch:
        return SymmetrySearch(None, reason, proven, time.perf_counter() - start)

    if len(eps) == 0:
        return none("the fabric has no endpoints", True)
    aut = _Automorphisms(ga, eps)
    twins = _twin_swaps(aut)
    twin_class = _merge(np.arange(aut.n), np.array([g[0][0] for g in twins], dtype=np.int64),
                        np.array([g[0][1] for g in twins], dtype=np.int64))
    search = _Search(aut, twin_class, deadline, np.inf if max_nodes is None else max_nodes)
    base = search.refine(aut.is_endpoint.astype(np.int64))
    n_ep_classes = len(np.unique(base[eps]))
    if n_ep_classes > max_orbits:
        return none(f"endpoints fall into {n_ep_classes} colour classes, so no automorphism "
                    + ("maps every endpoint to every other" if max_orbits == 1 else
                       f"group has at most {max_endpoint_orbits} orbits on them"), True)
    gens: list[Generator] = list(twins)
    reason = ""
    try:
        _, roots, apart = _orbit_search(search, base, eps, twin_class, gens, max_orbits)
    except _GiveUp:
        limit = ("the time limit" if search.work_left >= 0 else
                 f"its work limit ({max_nodes:,} search nodes)")
        reason = (f"stopped by {limit} after {time.perf_counter() - start:.3g} s: the "
                  "orbits are a subgroup's, maybe finer than the full group's")
        if len(np.unique(_node_labels(aut.n, gens)[eps])) > max_orbits:
            return none(f"gave up after {time.perf_counter() - start:.3g} s ({limit}) with "
                        f"{len(gens)} generators", False)
    else:
        if len(roots) > max_orbits:
            root, e = apart if apart is not None else (roots[0], roots[-1])
            return none(f"no automorphism maps endpoint {ga.nodes[root]!r} to "
                        f"{ga.nodes[e]!r} (exhaustive search)"
                        + ("" if max_orbits == 1 else
                           f", the endpoints have more than {max_endpoint_orbits} orbits"),
                        True)
    ok, arcs, images = aut.apply(gens)
    arc_orbit = _merge(np.arange(ga.n_arcs), arcs, images)
    if not reason:
        # The endpoint orbits are the full group's, so every automorphism preserves them:
        # as colours they refine the base partition, which rules out most arc pairs at once.
        labels = np.full(aut.n, -1, dtype=np.int64)
        labels[eps] = _node_labels(aut.n, gens)[eps]
        base = search.refine(np.unique(np.stack([base, labels]), axis=1,
                                       return_inverse=True)[1].ravel())
    gens, arc_orbit = _merge_arc_orbits(aut, search, base, gens, arc_orbit)
    sym = _found(fab, ga, aut, eps, gens, len(twins))
    return SymmetrySearch(sym, reason, not reason, time.perf_counter() - start, len(gens),
                          len(twins), sym.n_orbits, sym.n_endpoint_orbits)


def _merge_arc_orbits(aut: _Automorphisms, search: _Search, base: np.ndarray,
                      gens: list[Generator], arc_orbit: np.ndarray,
                      ) -> tuple[list[Generator], np.ndarray]:
    """Try to join arc orbits that colour refinement puts in one class, by searching for an
    automorphism between representatives (a small budget each; failures keep them apart)."""
    ga = aut.ga
    if ga.n_arcs == 0:
        return gens, arc_orbit
    # Arcs alike under refinement: same capacity, same tail class, same head class.
    arc_class = np.unique(np.stack([aut.arc_color, base[ga.tail], base[ga.head]]), axis=1,
                          return_inverse=True)[1].ravel()
    first_of_orbit = np.unique(arc_orbit, return_index=True)[1]
    tried: set[tuple[int, int]] = set()
    for cls in np.unique(arc_class[first_of_orbit]):
        reps = first_of_orbit[arc_class[first_of_orbit] == cls]
        a = int(reps[0])
        path: _Path | None = None
        for b in reps[1:]:
            b = int(b)
            if arc_orbit[a] == arc_orbit[b] or (a, b) in tried:
                continue
            tried.add((a, b))
            search.budget = MERGE_BUDGET_NODES
            try:
                if path is None:
                    path = _Path(search, search.individualise(base, [ga.tail[a], ga.head[a]]))
                gen = search.find(path, search.individualise(base, [ga.tail[b], ga.head[b]]))
            except _GiveUp:
                if search.out_of_limits():
                    search.budget = np.inf
                    return gens, arc_orbit
                continue
            if gen is not None:
                gens.append(gen)
                ok, arcs, images = aut.apply([gen])
                arc_orbit = _merge(arc_orbit, arcs, images)
    search.budget = np.inf
    return gens, arc_orbit


def find_symmetry(fab: Any, *, time_limit: float | None = None,
                  max_endpoint_orbits: int | None = None) -> FoundSymmetry | None:
    """A proven group of automorphisms of ``fab``, with its orbits on arcs and endpoints.

    Automorphisms here map arcs to arcs of the same capacity and endpoints to endpoints
    (roles, tiers and names do not matter to the flow LP). The result holds the arc orbits
    of the group generated by the automorphisms found (finer than the full group's orbits
    when the search missed some, which keeps the symmetric method exact), its orbits on the
    endpoints (``endpoint_orbit``, None when it is transitive on them) and the generators
    that prove it (:func:`verify_found_symmetry`). Attach it with :func:`with_symmetry`.

    Parameters
    ----------
    fab : Fabric
    time_limit : float, optional
        Seconds; when they run out the group found so far is returned (a subgroup: orbits
        exact, perhaps finer than the full group's).
    max_endpoint_orbits : int, optional
        None when the endpoints are proven to fall into more orbits than this (1: only a
        group transitive on the endpoints will do).

    Returns
    -------
    FoundSymmetry or None
        None when the fabric has no endpoints, or no group within ``max_endpoint_orbits``
        exists or was found in time; :func:`search_symmetry` says which.

    Examples
    --------
    >>> import networkx as nx
    >>> import fabricopt as fo
    >>> sym = find_symmetry(fo.from_networkx(nx.cycle_graph(6)))
    >>> sym.n_orbits, sym.transitive   # rotations and reflections: any arc to any other
    (1, True)
    >>> find_symmetry(fo.from_networkx(nx.star_graph(3))).n_endpoint_orbits   # hub, leaves
    2
    """
    return search_symmetry(fab, time_limit=time_limit, max_endpoint_orbits=max_endpoint_orbits,
                           _caller="find_symmetry").symmetry


def verify_found_symmetry(fab: Any, sym: FoundSymmetry) -> None:
    """Re-prove a found symmetry on ``fab`` from its generators.

    Checks that every generator is an automorphism (arcs to arcs of the same capacity,
    endpoints to endpoints), and that the orbits of the group they generate are exactly the
    claim's labels: its arc orbits, and its orbits on the endpoints (one orbit when
    ``sym.endpoint_orbit`` is None).

    Raises
    ------
    InvalidFabricError
        If any of these fails.

    Examples
    --------
    >>> import networkx as nx
    >>> import fabricopt as fo
    >>> fab = fo.from_networkx(nx.cycle_graph(5))
    >>> verify_found_symmetry(fab, find_symmetry(fab))
    """
    ga = GraphArrays.from_fabric(fab)
    name = getattr(fab, "name", "")
    if frozenset(fab.endpoints) != sym.endpoints or set(sym.nodes) != set(ga.nodes) \
            or len(sym.nodes) != ga.n_nodes:
        raise InvalidFabricError(f"found symmetry does not belong to fabric {name!r}: its "
                                 "nodes or endpoints differ")
    to_here = np.array([ga.index[v] for v in sym.nodes], dtype=np.int64)
    gens = [(to_here[np.asarray(s, dtype=np.int64)], to_here[np.asarray(i, dtype=np.int64)])
            for s, i in sym.generators]
    eps = np.array([ga.index[e] for e in fab.endpoints], dtype=np.int64)
    try:
        arc_orbit, endpoint_orbit = _orbits(_Automorphisms(ga, eps), gens, eps)
    except InvalidFabricError as exc:
        raise InvalidFabricError(f"found symmetry of {name!r}: {exc}") from None
    if sym.endpoint_orbit is None:
        if len(endpoint_orbit) and int(endpoint_orbit.max()) > 0:
            raise InvalidFabricError(f"found symmetry of {name!r}: the generators do not map "
                                     "the first endpoint to every endpoint")
    else:
        try:
            claimed = [sym.endpoint_orbit[e] for e in fab.endpoints]
        except KeyError as exc:
            raise InvalidFabricError(f"found symmetry of {name!r}: endpoint {exc} has no "
                                     "orbit") from None
        if not _same_partition(endpoint_orbit, claimed):
            raise InvalidFabricError(f"found symmetry of {name!r}: its endpoint orbit labels "
                                     "are not the orbits of the group its generators generate")
    try:
        labels = [sym.arc_orbit[a] for a in ga.arcs]
    except KeyError as exc:
        raise InvalidFabricError(f"found symmetry of {name!r}: arc {exc} has no orbit") from None
    if not _same_partition(arc_orbit, labels):
        raise InvalidFabricError(f"found symmetry of {name!r}: its orbit labels are not the "
                                 "arc orbits of the group its generators generate")


def with_symmetry(fab: Any, sym: Symmetry) -> Any:
    """The fabric (sharing its graph) carrying ``sym`` as its symmetry claim.

    >>> import networkx as nx
    >>> import fabricopt as fo
    >>> fab = fo.from_networkx(nx.cycle_graph(4))
    >>> with_symmetry(fab, find_symmetry(fab)).symmetry is not None
    True
    """
    return Fabric(fab.graph, fab.endpoints, fab.name, fab.params, sym, fab.design, fab.recipe,
                  fab.removed)


__all__ = ["FoundSymmetry", "SymmetrySearch", "find_symmetry", "search_symmetry",
           "symmetry_from_generators", "verify_found_symmetry", "with_symmetry"]
