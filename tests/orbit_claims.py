"""Symmetry claims with several endpoint orbits, built for tests from colour refinement.

Colour refinement of a fabric (nodes coloured by role and by being an endpoint, arcs by
capacity) gives classes that every automorphism preserves. On most small irregular fabrics of
the tests these classes are the orbits of the full automorphism group, which
``fo.verify_symmetry`` then proves (it finds, with VF2, an automorphism onto every endpoint
from its orbit's first endpoint and onto every arc from its class's first arc). Where they are
not (refinement cannot tell some arcs of a torus apart), tiny fabrics get the orbits of their
whole automorphism group, listed by VF2.
"""

import networkx as nx
import numpy as np
from networkx.algorithms.isomorphism import DiGraphMatcher

import fabricopt as fo
from fabricopt.flow.symmetric import color_refinement
from fabricopt.graph_arrays import GraphArrays
from fabricopt.symmetry.search import with_symmetry


def refinement_claim(fab, group="colour-refinement classes (test claim)"):
    """``fab`` carrying the colour-refinement classes as its claim (not yet proven)."""
    ga = GraphArrays.from_fabric(fab)
    endpoint = {ga.index[e] for e in fab.endpoints}
    roles = {r: i for i, r in enumerate(sorted({str(fab.graph.nodes[v].get("role"))
                                                for v in ga.nodes}))}
    node_color = np.array([2 * roles[str(fab.graph.nodes[v].get("role"))] + (i in endpoint)
                           for i, v in enumerate(ga.nodes)])
    arc_color = np.unique(ga.capacity, return_inverse=True)[1].ravel()
    nc, ac = color_refinement(ga, node_color, arc_color)
    sym = fo.Symmetry(arc_orbit={a: int(c) for a, c in zip(ga.arcs, ac, strict=True)},
                      group=group, n_nodes=ga.n_nodes, n_arcs=ga.n_arcs,
                      endpoints=frozenset(fab.endpoints),
                      endpoint_orbit={e: int(nc[ga.index[e]]) for e in fab.endpoints})
    return with_symmetry(fab, sym)


def group_claim(fab, group="all automorphisms (test claim)"):
    """``fab`` carrying the orbits of its whole automorphism group (preserving roles,
    endpoints and capacities), every automorphism listed by VF2: tiny fabrics only."""
    g = nx.DiGraph()
    endpoints = set(fab.endpoints)
    for v, d in fab.graph.nodes(data=True):
        g.add_node(v, key=(d.get("role"), v in endpoints))
    for u, v, c in fab.graph.edges(data="capacity"):
        g.add_edge(u, v, key=c)
    match = DiGraphMatcher(g, g, node_match=lambda x, y: x["key"] == y["key"],
                           edge_match=lambda x, y: x["key"] == y["key"])
    node_orbit = {v: v for v in g}

    def find(v):
        while node_orbit[v] != v:
            v = node_orbit[v]
        return v

    arc_orbit = {a: a for a in g.edges}

    def find_arc(a):
        while arc_orbit[a] != a:
            a = arc_orbit[a]
        return a

    for perm in match.isomorphisms_iter():
        for v, w in perm.items():
            node_orbit[find(v)] = find(w)
        for u, v in g.edges:
            arc_orbit[find_arc((u, v))] = find_arc((perm[u], perm[v]))
    arc_ids = {r: i for i, r in enumerate(dict.fromkeys(find_arc(a) for a in g.edges))}
    ep_ids = {r: i for i, r in enumerate(dict.fromkeys(find(e) for e in fab.endpoints))}
    sym = fo.Symmetry(arc_orbit={a: arc_ids[find_arc(a)] for a in g.edges}, group=group,
                      n_nodes=g.number_of_nodes(), n_arcs=g.number_of_edges(),
                      endpoints=frozenset(fab.endpoints),
                      endpoint_orbit={e: ep_ids[find(e)] for e in fab.endpoints})
    return with_symmetry(fab, sym)


def proven_claim(fab):
    """``fab`` with the orbits of its automorphism group as its claim, proven by VF2 (small
    fabrics only): the colour-refinement classes when they are the orbits, else (tiny
    fabrics) the orbits of every automorphism listed."""
    claimed = refinement_claim(fab)
    try:
        fo.verify_symmetry(claimed)
    except fo.errors.InvalidFabricError:
        claimed = group_claim(fab)
        fo.verify_symmetry(claimed)
    return claimed
