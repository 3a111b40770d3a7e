"""Direct networks used for validation and comparison: ring, torus, hypercube, complete graph.

In a direct network every node is an endpoint that also forwards traffic: nodes have role
``"gpu"`` and layer 0, and links have tier ``"ring"``, ``"torus"``, ``"hypercube"`` or
``"complete"``. Capacities default to 1 Gb/s per direction so results read in the unit-capacity
convention of ``reference/bounds.md``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from .._checks import check_int, check_int_sequence, check_positive
from ..fabric import Fabric
from ._builder import FabricBuilder


def _torus_name(coords: Sequence[int]) -> str:
    return "n" + ".".join(str(c) for c in coords)


def torus(dims: Sequence[int], link_gbps: float = 1.0, tech: str = "generic") -> Fabric:
    """A torus (wrap-around mesh) with the given size in each dimension.

    Parameters
    ----------
    dims : sequence of int
        Size of each dimension, every size >= 2.
    link_gbps : float
        Capacity of every link per direction (Gb/s).
    tech : str
        Technology label of the links.

    Returns
    -------
    Fabric
        ``N = prod(dims)`` endpoints. A dimension of size ``k >= 3`` gives each node two
        neighbours in it and ``N`` links; size 2 gives one neighbour and ``N / 2`` links (the
        two wrap-around links would join the same pair, so there is just one).

    Notes
    -----
    Nodes are named ``"n{c0}.{c1}..."`` by coordinates. Arcs ``x -> x + e_d`` and
    ``x -> x - e_d`` form the arc orbits of the translation group, which acts transitively on
    the nodes; the fabric carries that symmetry claim.

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.torus((4, 4))
    >>> len(fab.endpoints), fab.graph.number_of_edges() // 2
    (16, 32)
    """
    func = "torus"
    dims = check_int_sequence(func, "dims", dims, minimum=2)
    link_gbps = check_positive(func, "link_gbps", link_gbps)
    b = FabricBuilder(f"torus({', '.join(map(str, dims))})" if len(dims) > 1
                      else f"ring({dims[0]})",
                      {"dims": list(dims), "link_gbps": link_gbps})
    for coords in itertools.product(*(range(k) for k in dims)):
        b.gpu(_torus_name(coords), coords=list(coords))
    tier = "torus" if len(dims) > 1 else "ring"
    for coords in itertools.product(*(range(k) for k in dims)):
        for d, k in enumerate(dims):
            nxt = list(coords)
            nxt[d] = (coords[d] + 1) % k
            if k == 2 and coords[d] == 1:
                continue  # the pair was joined from coordinate 0
            rev = f"d{d}+" if k == 2 else f"d{d}-"
            b.link(_torus_name(coords), _torus_name(nxt), link_gbps, tier, tech,
                   orbit=(f"d{d}+", rev))
    return b.build(symmetric=True, group="translations")


def ring(n: int, link_gbps: float = 1.0, tech: str = "generic") -> Fabric:
    """A ring of ``n`` nodes: the one-dimensional torus ``torus((n,))``.

    Nodes are ``"n0" .. "n{n-1}"``; ``n`` links (one for ``n == 2``).

    >>> import fabricopt as fo
    >>> fab = fo.ring(8)
    >>> len(fab.endpoints), fab.graph.number_of_edges()
    (8, 16)
    """
    n = check_int("ring", "n", n, minimum=2)
    link_gbps = check_positive("ring", "link_gbps", link_gbps)
    fab = torus((n,), link_gbps=link_gbps, tech=tech)
    fab.params = {"n": n, "link_gbps": link_gbps}
    return fab


def hypercube(d: int, link_gbps: float = 1.0, tech: str = "generic") -> Fabric:
    """The ``d``-dimensional hypercube: ``2**d`` nodes, ``d * 2**(d-1)`` links.

    Node ``"n{i}"`` joins ``"n{i ^ 2**b}"`` for every bit ``b``. The XOR translations act
    transitively on the nodes; their arc orbits are the ``d`` dimensions.

    >>> import fabricopt as fo
    >>> fab = fo.hypercube(3)
    >>> len(fab.endpoints), fab.graph.number_of_edges() // 2
    (8, 12)
    """
    d = check_int("hypercube", "d", d, minimum=1)
    link_gbps = check_positive("hypercube", "link_gbps", link_gbps)
    b = FabricBuilder(f"hypercube({d})", {"d": d, "link_gbps": link_gbps})
    for i in range(2**d):
        b.gpu(f"n{i}")
    for i in range(2**d):
        for bit in range(d):
            j = i ^ (1 << bit)
            if i < j:
                b.link(f"n{i}", f"n{j}", link_gbps, "hypercube", tech,
                       orbit=(f"d{bit}", f"d{bit}"))
    return b.build(symmetric=True, group="bit-flip translations")


def complete(n: int, link_gbps: float = 1.0, tech: str = "generic") -> Fabric:
    """The complete graph ``K_n``: every pair of the ``n`` nodes joined by one link.

    ``n * (n - 1) / 2`` links; nodes ``"n0" .. "n{n-1}"``; all arcs form one orbit of the
    symmetric group.

    >>> import fabricopt as fo
    >>> fo.complete(6).graph.number_of_edges() // 2
    15
    """
    n = check_int("complete", "n", n, minimum=2)
    link_gbps = check_positive("complete", "link_gbps", link_gbps)
    b = FabricBuilder(f"complete({n})", {"n": n, "link_gbps": link_gbps})
    for i in range(n):
        b.gpu(f"n{i}")
    for i, j in itertools.combinations(range(n), 2):
        b.link(f"n{i}", f"n{j}", link_gbps, "complete", tech, orbit=("all", "all"))
    return b.build(symmetric=True, group="all permutations")
