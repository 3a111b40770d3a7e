"""Max flow between two groups, its minimum cut and each cut link's sensitivity: checked by
the certificate (a feasible flow, a cut that separates, cut = flow) and against max flows
recomputed from scratch with networkx on the changed graph."""

import networkx as nx
import pytest

import fabricopt as fo
from fabricopt.analysis.group_flow import group_max_flow


def _two_paths():
    # a -x-y- b: 10, 3, 10; a -z- b: 2, 5. Max flow 3 + 2 = 5, cut {x->y, a->z}.
    g = nx.Graph()
    for u, v, c in [("a", "x", 10), ("x", "y", 3), ("y", "b", 10), ("a", "z", 2),
                    ("z", "b", 5)]:
        g.add_edge(u, v, capacity=c)
    return fo.from_networkx(g, endpoints=["a", "b"])


def _recomputed(fab, arc, capacity, sources, sinks):
    """The max flow with one arc at another capacity, from scratch (networkx alone)."""
    h = nx.DiGraph(fab.graph)
    h[arc[0]][arc[1]]["capacity"] = capacity
    h.add_edges_from(("S", s) for s in sources)
    h.add_edges_from((t, "T") for t in sinks)
    return nx.maximum_flow_value(h, "S", "T")


def test_cut_sensitivity_by_hand_and_recomputed():
    fab = _two_paths()
    r = group_max_flow(fab, "a", "b")
    assert r.value_gbps == 5.0 and r.cut_gbps == 5.0 and r.exact
    assert r.check(fab) == []
    cut = {(c.tail, c.head): c for c in r.cut}
    assert set(cut) == {("x", "y"), ("a", "z")}
    # Losing a cut link loses its capacity (3, 2); doubling it adds as much again (x-y at 6:
    # min(10, 6, 10) = 6 through x, +3; a-z at 4: min(4, 5) = 4 through z, +2).
    for arc, c in cut.items():
        assert c.loss_gbps == c.capacity_gbps
        assert _recomputed(fab, arc, 0.0, ["a"], ["b"]) == 5.0 - c.loss_gbps
        assert _recomputed(fab, arc, 2 * c.capacity_gbps, ["a"], ["b"]) == \
            5.0 + c.gain_if_doubled_gbps
    assert (cut[("x", "y")].gain_if_doubled_gbps, cut[("a", "z")].gain_if_doubled_gbps) == \
        (3.0, 2.0)


def test_leaf_spine_groups_and_a_tampered_certificate():
    # 2 leaves x 2 GPUs of 400 Gb/s, 2 spines: leaf 0's GPUs send at most 2 x 400 to leaf 1's
    # (their own links; leaf 0's two uplinks hold as much). Another minimum cut exists, so
    # doubling one GPU's link gains nothing.
    fab = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2, link_gbps=400)
    r = group_max_flow(fab, "name=g0|g1", {"name": ["g2", "g3"]})
    assert (r.value_gbps, r.check(fab)) == (800.0, [])
    assert [(c.tier, c.loss_one_link_gbps, c.gain_if_doubled_gbps) for c in r.cut] == \
        [("gpu-leaf", 400.0, 0.0)] * 2
    # The certificate fails where the answer is wrong: a flow over capacity, a value
    # claimed too high, a cut that leaves a path.
    slow = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2, link_gbps=100)
    assert any("outside [0, 100]" in p for p in r.check(slow))
    r.value_gbps = 900.0
    assert any("the cut holds 800" in p for p in r.check(fab))


def test_a_bundle_loses_one_link_at_a_time():
    # Two leaves joined through one spine by bundles of 2 links of 400: GPUs 4 x 400 = 1,600
    # on leaf 0, uplink bundle 800. One link of the bundle lost: 800 - 400.
    fab = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=4, link_gbps=400,
                        links_per_pair=2)
    sources, sinks = ["g0", "g1", "g2", "g3"], ["g4", "g5", "g6", "g7"]
    r = group_max_flow(fab, sources, sinks)
    assert r.value_gbps == 800.0 and r.check(fab) == []
    [c] = r.cut
    assert (c.links, c.loss_one_link_gbps, c.loss_gbps) == (2, 400.0, 800.0)
    arc = (c.tail, c.head)
    assert _recomputed(fab, arc, 400.0, sources, sinks) == 800.0 - c.loss_one_link_gbps


def test_borrowed_nics_and_no_transit():
    # One GPU of server 0 to one GPU of server 1 on another rail: through its NVSwitches it
    # reaches all 8 of its server's NICs, 8 x 400 = 3,200 Gb/s (below its 18 NVLink x 200 =
    # 3,600); kept off other GPUs, its own NIC alone: 400.
    pod = fo.superpod(1)
    with_nics = group_max_flow(pod, ["n0.gpu0"], ["n1.gpu1"], gain_limit=0)
    alone = group_max_flow(pod, ["n0.gpu0"], ["n1.gpu1"], gain_limit=0, transit_gpus=False)
    assert (with_nics.value_gbps, alone.value_gbps) == (3200.0, 400.0)
    assert with_nics.check(pod) == [] and alone.check(pod) == []


@pytest.mark.slow
def test_scalable_unit_to_scalable_unit():
    # Two SUs of a non-blocking SuperPOD: 256 GPUs send 256 x 400 Gb/s; the cut is their own
    # links (the first cut from the sources), every one of them.
    pod = fo.superpod(2)
    r = group_max_flow(pod, "su=0,role=gpu", "su=1,role=gpu", gain_limit=2)
    assert r.value_gbps == 256 * 400 and len(r.cut) == 256 and r.check(pod) == []
    assert r.gains_left_out == 254


def test_bad_groups_are_named():
    fab = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2)
    with pytest.raises(fo.InvalidParameterError, match="sharing no node"):
        group_max_flow(fab, "g*", "g3")
    with pytest.raises(fo.InvalidParameterError, match=r"sinks must be a selector that picks"):
        group_max_flow(fab, "g0", "gpu9")
    with pytest.raises(fo.InvalidParameterError, match="did you mean 'role'"):
        group_max_flow(fab, "rol=gpu", "g3")
