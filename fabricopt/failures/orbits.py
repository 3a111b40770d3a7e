"""Failure patterns up to the fabric's symmetry: solve one pattern per orbit.

An automorphism ``s`` of a fabric (a permutation of its nodes that maps arcs onto arcs of the
same capacity and endpoints onto endpoints) maps a failure pattern ``P`` onto ``s(P)``, and the
fabric without ``P`` onto the fabric without ``s(P)``. Uniform all-to-all traffic is invariant
under ``s``, so both failed fabrics carry the same theta: one solve answers for the whole
orbit of ``P``. :class:`FailureSymmetry` gives each pattern a key such that **equal keys are
proven equivalent** (never the other way round: patterns it cannot prove equivalent keep
different keys and are solved apart, which costs time, never correctness).

* A single failed bundle (or some of its parallel links): a bundle ``{u, v}`` is mapped onto
  ``{u', v'}`` exactly when the arc ``u -> v`` lies in the orbit of ``u' -> v'`` or of
  ``v' -> u'``, so the key is the pair of arc-orbit labels of its two arcs (with the bundle's
  link count and the count failed). Exact for the group whose arc orbits the fabric's symmetry
  lists, claimed by its generator or found (:func:`~fabricopt.find_symmetry`).
* A single failed switch: two nodes are in one orbit when arcs leaving them lie in one arc
  orbit (an automorphism maps one arc onto the other, so its tail onto the other's tail).
* Several failures: a canonical descent under the group's generators (proven automorphisms
  from :func:`~fabricopt.search_symmetry`): apply each generator and its inverse while that
  makes the sorted pattern lexicographically smaller. Each step applies an automorphism, so
  two patterns that descend to the same form are equivalent; two equivalent patterns may stop
  at different local minima, and are then merely solved twice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from ..fabric import Fabric
from ..symmetry.search import FoundSymmetry, search_symmetry

#: Hop counts in a pattern's invariant are coded below ``HOP_CODES``: ``UNREACHABLE`` for no
#: path, ``NO_END`` where a part has no second end (a switch).
HOP_CODES = 64
UNREACHABLE = HOP_CODES - 2
NO_END = HOP_CODES - 1
#: Orbit labels numbered in one invariant (with four hop codes, a pair packs into 56 bits).
LABEL_CODES = 1 << 16

#: Search nodes the search for generators may visit before a sweep falls back to exact
#: duplicates for multi-failure patterns (single failures use the arc orbits and need no
#: generators): a work limit, so a sweep keys its patterns alike on a busy machine; the same
#: budget as ``method="auto"``'s search (:data:`fabricopt.flow.api.FIND_SYMMETRY_NODES`).
GENERATOR_SEARCH_NODES = 1_000
#: Descent steps per pattern: each strictly lowers the pattern, so this only bounds the cost.
MAX_DESCENT_STEPS = 200


@dataclass(frozen=True)
class Pattern:
    """A failure pattern: ``links`` maps a bundle (unordered node pair) to the physical links
    failed in it, ``switches`` the failed switches (their links go with them)."""

    links: Mapping[frozenset, int]
    switches: frozenset[Hashable]

    def removal(self, fab: Any) -> tuple[dict[tuple, int], list[Hashable]]:
        """What :meth:`~fabricopt.Fabric.without` takes to apply the pattern to ``fab``:
        physical links per arc (a bundle given as 0 fails whole; those of a failed switch go
        with it) and the switches."""
        g = fab.graph
        links = {}
        for pair, n in self.links.items():
            if pair & self.switches:
                continue
            u, v = tuple(pair)
            links[(u, v)] = n if n else int(g[u][v].get("links", 1))
        return links, list(self.switches)


def _union_labels(n: int, pairs: np.ndarray) -> np.ndarray:
    """Connected-component labels of ``n`` items joined by the rows of ``pairs``."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    if len(pairs) == 0:
        return np.arange(n)
    g = sp.coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    return connected_components(g, directed=False)[1].astype(np.int64)


class FailureSymmetry:
    """Keys for failure patterns of one intact fabric, equal only for proven-equivalent
    patterns under all-to-all traffic.

    Parameters
    ----------
    fab : Fabric
        The intact fabric.
    use_symmetry : bool
        False: every pattern is its own key (exact duplicates still share one).

    Examples
    --------
    A ring's rotations map any link onto any other: one orbit of single-link failures.

    >>> import fabricopt as fo
    >>> fs = FailureSymmetry(fo.ring(6))
    >>> keys = {fs.key(Pattern({frozenset((f"n{i}", f"n{(i + 1) % 6}")): 1}, frozenset()))
    ...         for i in range(6)}
    >>> len(keys)
    1
    """

    def __init__(self, fab: Fabric, *, use_symmetry: bool = True) -> None:
        self.fab = fab
        g = fab.graph
        self.nodes = list(g.nodes)
        self.node_index = {v: i for i, v in enumerate(self.nodes)}
        self.bundles: list[frozenset] = []
        self.bundle_index: dict[frozenset, int] = {}
        self.bundle_links: list[int] = []
        for u, v, d in g.edges(data=True):
            key = frozenset((u, v))
            if key not in self.bundle_index:
                self.bundle_index[key] = len(self.bundles)
                self.bundles.append(key)
                self.bundle_links.append(int(d.get("links", 1)))
        self.use_symmetry = use_symmetry
        self._arc_orbit: Mapping[tuple[Hashable, Hashable], int] | None = None
        self._node_orbit: np.ndarray | None = None
        self._generators: list[tuple[np.ndarray, np.ndarray]] | None = None
        self.symmetry_note = "symmetry not used"
        self._groups: dict[Hashable, list[list[Any]]] = {}
        self._hop_matrix: sp.csr_matrix | None = None
        self._label_ids: dict[Hashable, int] = {}  # the parts' orbit labels, numbered

    # -- orbits of single failures --------------------------------------------------------
    def arc_orbit(self) -> Mapping[tuple[Hashable, Hashable], int] | None:
        """Arc orbit labels of the fabric's symmetry: its claim, else one found (None when
        symmetry is off or none was found)."""
        if not self.use_symmetry:
            return None
        if self._arc_orbit is None:
            sym = self.fab.symmetry
            if sym is not None and sym.matches(self.fab.graph, self.fab.endpoints):
                self.symmetry_note = f"claimed symmetry ({sym.group})"
            else:
                found = search_symmetry(self.fab, max_nodes=GENERATOR_SEARCH_NODES)
                sym = found.symmetry
                self.symmetry_note = found.message
                if sym is None:
                    self._arc_orbit = {}
                    return None
                self._set_generators(sym)
            self._arc_orbit = sym.arc_orbit
        return self._arc_orbit or None

    def bundle_orbit(self, bundle: frozenset) -> Hashable:
        """A label shared exactly by the bundles the group maps onto each other."""
        orbit = self.arc_orbit()
        u, v = tuple(bundle) if len(bundle) == 2 else (next(iter(bundle)),) * 2
        links = self.bundle_links[self.bundle_index[bundle]]
        if orbit is None:
            return ("bundle", self.bundle_index[bundle])
        return ("orbit", frozenset((orbit.get((u, v)), orbit.get((v, u)))), links)

    def node_orbit(self, node: Hashable) -> Hashable:
        """A label shared only by nodes the group maps onto each other (tails of arcs in one
        arc orbit)."""
        orbit = self.arc_orbit()
        if orbit is None:
            return ("node", self.node_index[node])
        if self._node_orbit is None:
            first: dict[int, int] = {}
            pairs = []
            for (u, _), label in orbit.items():
                i = self.node_index[u]
                pairs.append((first.setdefault(label, i), i))
            self._node_orbit = _union_labels(len(self.nodes), np.array(pairs, dtype=np.int64))
        return ("orbit", int(self._node_orbit[self.node_index[node]]))

    # -- generators, for patterns of several failures ------------------------------------
    def _set_generators(self, sym: FoundSymmetry) -> None:
        to_here = np.array([self.node_index[v] for v in sym.nodes], dtype=np.int64)
        n = len(self.nodes)
        ends = np.array([sorted(self.node_index[v] for v in (tuple(b) * 2)[:2])
                         for b in self.bundles], dtype=np.int64).reshape(-1, 2)
        code = ends[:, 0] * n + ends[:, 1]
        order = np.argsort(code)
        gens = []
        for support, image in sym.generators:
            perm = np.arange(n)
            perm[to_here[np.asarray(support, dtype=np.int64)]] = \
                to_here[np.asarray(image, dtype=np.int64)]
            moved = np.sort(perm[ends], axis=1)
            pos = order[np.searchsorted(code[order], moved[:, 0] * n + moved[:, 1])]
            inverse = np.empty(n, dtype=np.int64)
            inverse[perm] = np.arange(n)
            inv_pos = np.empty(len(pos), dtype=np.int64)
            inv_pos[pos] = np.arange(len(pos))
            gens += [(perm, pos), (inverse, inv_pos)]
        self._generators = gens

    def generators(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Proven automorphisms and their inverses, each as (node map, bundle map)."""
        if self._generators is None:
            self._generators = []
            sym = self.fab.symmetry
            if isinstance(sym, FoundSymmetry) and sym.matches(self.fab.graph,
                                                               self.fab.endpoints):
                self._set_generators(sym)
            elif self.use_symmetry:
                found = search_symmetry(self.fab, max_nodes=GENERATOR_SEARCH_NODES)
                if found.symmetry is not None:
                    self._set_generators(found.symmetry)
        return self._generators

    def _descend(self, switches: np.ndarray, bundles: np.ndarray, counts: np.ndarray,
                 ) -> tuple[Any, ...]:
        def form(s: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[Any, ...]:
            order = np.lexsort((c, b))
            return (tuple(np.sort(s).tolist()), tuple(b[order].tolist()),
                    tuple(c[order].tolist()))

        best = form(switches, bundles, counts)
        gens = self.generators()
        for _ in range(MAX_DESCENT_STEPS):
            improved = False
            for perm, bmap in gens:
                s = perm[np.asarray(best[0], dtype=np.int64)]
                b = bmap[np.asarray(best[1], dtype=np.int64)]
                cand = form(s, b, np.asarray(best[2], dtype=np.int64))
                if cand < best:
                    best, improved = cand, True
            if not improved:
                break
        return best

    def first_equivalent(self, pattern: Pattern, index: int) -> int | None:
        """The ``index`` of an earlier pattern passed here that ``pattern`` is proven
        equivalent to (equal :meth:`key`), or None, and then ``pattern`` is kept as ``index``.
        (The descent may stop short: the rotation of pattern 0 by one step keeps its own key
        below, and is solved again.)

        Patterns are grouped first by the orbits of what failed; inside a group of two or
        more, by an invariant (those orbits with the hop distances between the failed
        parts); the descent of :meth:`key` runs only where invariants agree. On
        ``fat_tree(16)`` with 20 failed links every pattern is alone in its group, and the
        descent (about 0.1 s a pattern) never runs; on ``superpod(16)`` with 1% of its
        links failed (800 parts, the distances a second each) neither does the invariant.

        >>> import fabricopt as fo
        >>> fs = FailureSymmetry(fo.ring(6))
        >>> def two(i):  # links i-(i+1) and (i+2)-(i+3) around the ring
        ...     return Pattern({frozenset((f"n{i % 6}", f"n{(i + 1) % 6}")): 1,
        ...                     frozenset((f"n{(i + 2) % 6}", f"n{(i + 3) % 6}")): 1},
        ...                    frozenset())
        >>> [fs.first_equivalent(two(i), i) for i in (0, 4, 1)]  # 4 is 0 rotated
        [None, 0, None]
        """
        parts = self._parts(pattern)
        coarse = (self.key(pattern) if parts is None
                  else frozenset(Counter(label for label, _ in parts).items()))
        group = self._groups.setdefault(coarse, [])
        # Each member: [pattern, its parts, invariant, key, index], the last three found
        # when first needed.
        mine = [pattern, parts, None, None, index]
        for member in group:
            for m in (mine, member):
                if m[2] is None:
                    m[2] = self._invariant(m[0], m[1])
            if member[2] != mine[2]:
                continue
            for m in (mine, member):
                if m[3] is None:
                    m[3] = self.key(m[0])
            if member[3] == mine[3]:
                return int(member[4])
        group.append(mine)
        return None

    def _parts(self, pattern: Pattern) -> list[tuple[Hashable, tuple[Hashable, ...]]] | None:
        """What failed, each as its orbit label and its nodes; None when symmetry is off or
        one part failed (then :meth:`key` is cheap and exact)."""
        links = {b: n for b, n in pattern.links.items() if not (b & pattern.switches)}
        if not self.use_symmetry or len(pattern.switches) + len(links) <= 1:
            return None
        return ([(("switch", self.node_orbit(w)), (w,)) for w in pattern.switches]
                + [(("bundle", self.bundle_orbit(b), n), tuple(b)) for b, n in links.items()])

    def _invariant(self, pattern: Pattern, parts: list[Any] | None) -> Hashable:
        """The same for patterns the group maps onto each other: the multiset of the failed
        parts' orbits (with the links failed in each bundle), and of every two parts' orbits
        with the hop distances between their nodes (automorphisms keep both)."""
        if parts is None:
            return self.key(pattern)
        nodes = sorted({self.node_index[v] for _, ends in parts for v in ends})
        where = {v: i for i, v in enumerate(nodes)}
        hops = shortest_path(self._hops(), unweighted=True, indices=nodes)[:, nodes]
        # Hop counts as small integers; a switch's missing second end reads NO_END.
        finite = np.isfinite(hops)
        if hops[finite].max(initial=0) >= UNREACHABLE:
            return self.key(pattern)
        hops = np.where(finite, hops, UNREACHABLE)
        hops = np.pad(hops.astype(np.int64), ((0, 1), (0, 1)), constant_values=NO_END)
        ends = np.full((len(parts), 2), len(nodes), dtype=np.int64)
        for i, (_, e) in enumerate(parts):
            ends[i, :len(e)] = [where[self.node_index[v]] for v in e]
        label = np.array([self._label_ids.setdefault(lab, len(self._label_ids))
                          for lab, _ in parts], dtype=np.int64)
        # Every two parts: their labels (unordered) and the sorted hops between their ends,
        # packed into one integer per pair so the multiset is one np.unique.
        i, j = np.triu_indices(len(parts), 1)
        d = np.sort(np.stack([hops[ends[i, a], ends[j, b]] for a in (0, 1) for b in (0, 1)],
                             axis=1), axis=1)
        if len(self._label_ids) > LABEL_CODES:
            return self.key(pattern)
        packed = np.minimum(label[i], label[j]) * LABEL_CODES + np.maximum(label[i], label[j])
        for k in range(4):
            packed = packed * HOP_CODES + d[:, k]
        pairs, counts = np.unique(packed, return_counts=True)
        return ("orbits", frozenset(Counter(label.tolist()).items()),
                frozenset(zip(pairs.tolist(), counts.tolist(), strict=True)))

    def _hops(self) -> sp.csr_matrix:
        """The fabric's links as an undirected graph in node order (built once)."""
        if self._hop_matrix is None:
            g = self.fab.graph
            n = len(self.nodes)
            tail = [self.node_index[u] for u, _ in g.edges()]
            head = [self.node_index[v] for _, v in g.edges()]
            self._hop_matrix = sp.csr_matrix((np.ones(len(tail)), (tail, head)), shape=(n, n))
        return self._hop_matrix

    def key(self, pattern: Pattern) -> Hashable:
        """The pattern's key: equal keys are proven to fail the fabric the same way."""
        links = {b: n for b, n in pattern.links.items()
                 if not (b & pattern.switches)}  # a failed switch takes its links
        if not self.use_symmetry:
            return ("exact", frozenset(pattern.switches), frozenset(links.items()))
        if len(pattern.switches) + len(links) <= 1:
            if pattern.switches:
                return ("switch", self.node_orbit(next(iter(pattern.switches))))
            if links:
                (b, n), = links.items()
                return ("link", self.bundle_orbit(b), n)
            return ("none",)
        switches = np.array([self.node_index[w] for w in pattern.switches], dtype=np.int64)
        bundles = np.array([self.bundle_index[b] for b in links], dtype=np.int64)
        counts = np.array(list(links.values()), dtype=np.int64)
        return ("descent",) + self._descend(switches, bundles, counts)


__all__ = ["FailureSymmetry", "Pattern"]
