"""Hashed routing's port choice: each flow's draw picks the port whose running count first
exceeds it, among the member links of the arcs one hop closer to its class."""

from __future__ import annotations

import numpy as np

import fabricopt as fo
from fabricopt.routing.hashing import _hop_table, _ports
from fabricopt.routing.networks import Networks


def test_each_draw_takes_the_port_a_search_of_the_running_counts_finds():
    fab = fo.cluster(fo.dgx_h100(), nodes=8, scale_out="rail_optimized", oversubscription=2)
    network = Networks.of(fab).networks[-1]
    classes = np.unique(network.klass[network.klass >= 0])
    hops = _hop_table(network, classes)
    links = np.arange(network.n_arcs) % 3 + 1          # bundles of 1, 2 and 3 member links
    rng = np.random.default_rng(7)
    col = rng.integers(0, len(classes), 5_000)
    node = rng.integers(0, network.n_nodes, 5_000)
    keep = (hops[node, col] > 0) & (hops[node, col] < 1_000)   # not there yet, and a way on
    node, col = node[keep], col[keep]
    draw = rng.random(len(node))
    arc, offset = _ports(network, hops, links, node, col, draw, len(classes))
    # Every arc taken leaves the flow's node one hop closer, within its member links.
    assert np.array_equal(network.tail[arc], node)
    assert np.all(hops[network.head[arc], col] == hops[node, col] - 1)
    assert np.all((offset >= 0) & (offset < links[arc]))
    # Same draw, same port: the draw's share of the node's closer ports, counted in arc order.
    for i in range(0, len(node), 97):
        out = np.flatnonzero(network.tail == node[i])
        closer = out[hops[network.head[out], col[i]] == hops[node[i], col[i]] - 1]
        ports = np.repeat(closer, links[closer])
        k = int(np.floor(draw[i] * len(ports)))
        assert arc[i] == ports[k]
        assert offset[i] == k - int(np.searchsorted(ports, ports[k]))
