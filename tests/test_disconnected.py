"""Fabrics whose endpoints are not all connected never get a finite figure for the whole set.

A collective (``collective_bounds``, ``collective_curve``) over GPUs that cannot all reach
each other has no schedule: its time is infinite, its algbw and busbw 0, with the two GPUs
that cannot meet named and what to do (``endpoints=`` a connected group). The all-to-all
throughput (``max_concurrent_flow``) is 0 with a pair that has no path. A group restricted
to one connected part gets its own finite figure. A training job whose parallel groups would
span the parts is refused by name; one that runs has every group inside one part.

Fabrics are small and random (hypothesis): two graphs side by side, a GPU whose links are
all removed, a ring cut twice, a leaf-spine without its spine, a rail-only fabric alone
(rails never meet without scale-up links), and scale-up domains with no network.
"""

import math

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from small_fabrics import nvswitch_like

import fabricopt as fo
from fabricopt.collectives import COLLECTIVES
from fabricopt.workload.placement import place_ranks

SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _random_graph(draw, first):
    n = draw(st.integers(3, 6))
    g = nx.connected_watts_strogatz_graph(n, 2, 0.5, seed=draw(st.integers(0, 10_000)))
    for u, v in g.edges:
        g[u][v]["capacity"] = draw(st.sampled_from([1.0, 2.0, 5.0]))
    return nx.relabel_nodes(g, {v: first + v for v in g})


def _isolate(fab, endpoint):
    """``fab`` with every link of ``endpoint`` removed: a GPU whose NIC and ports failed."""
    return fab.without(links=[(endpoint, w) for w in fab.graph.successors(endpoint)])


@st.composite
def disconnected_fabrics(draw):
    """A small fabric whose endpoints are not all connected (checked by networkx)."""
    kind = draw(st.sampled_from(["two_graphs", "isolated_gpu", "cut_ring", "no_spine",
                                 "rail_only", "no_network"]))
    if kind == "two_graphs":
        a = _random_graph(draw, 0)
        b = _random_graph(draw, 100)
        fab = fo.from_networkx(nx.union(a, b))
    elif kind == "isolated_gpu":
        base = draw(st.sampled_from([
            lambda: fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2, link_gbps=100),
            lambda: fo.fat_tree(4, link_gbps=1.0),
            lambda: fo.torus((3, 3)),
            lambda: fo.complete(4),
            lambda: fo.cluster(nvswitch_like(2), nodes=4, leaf_radix=4)]))()
        fab = _isolate(base, draw(st.sampled_from(base.endpoints)))
    elif kind == "cut_ring":
        n = draw(st.integers(4, 8))
        i = draw(st.integers(0, n - 1))
        j = (i + draw(st.integers(1, n - 2))) % n
        fab = fo.ring(n).without(links=[(f"n{i}", f"n{(i + 1) % n}"),
                                        (f"n{j}", f"n{(j + 1) % n}")])
    elif kind == "no_spine":
        fab = fo.leaf_spine(leaves=draw(st.integers(2, 3)), spines=1,
                            endpoints_per_leaf=draw(st.integers(1, 3)),
                            link_gbps=100).without(switches=["spine0"])
    elif kind == "rail_only":
        nodes = draw(st.integers(1, 4))
        fab = fo.rail_optimized(nodes=nodes, gpus_per_node=draw(st.integers(2, 3)),
                                leaf_radix=max(nodes, 2), spine=False)
    else:
        fab = fo.cluster(nvswitch_like(draw(st.integers(2, 3))), nodes=draw(st.integers(2, 3)),
                         scale_out=None)
    # Every generator builds both arcs of a link: weak components are the parts.
    parts = list(nx.weakly_connected_components(fab.graph))
    assert sum(1 for p in parts if set(fab.endpoints) & p) > 1, kind
    return fab


def _part_of(fab, endpoint):
    """The endpoints ``endpoint`` can reach (its own among them)."""
    reach = nx.descendants(fab.graph, endpoint) | {endpoint}
    return [e for e in fab.endpoints if e in reach]


def _check_refusal_names_a_real_pair(fab, unreachable):
    a, b = unreachable
    assert a in fab.endpoints and b in fab.endpoints
    assert not nx.has_path(fab.graph, a, b)


@SETTINGS
@given(disconnected_fabrics(), st.sampled_from(["auto", True, False]), st.booleans(),
       st.sampled_from([1.0, 2.0**20, 2.0**30]))
def test_every_collective_over_the_whole_set_is_zero(fab, inr, expected, size):
    for collective in COLLECTIVES:
        c = fo.collective_bounds(fab, collective, message_bytes=size, expected=expected,
                                 in_network_reduction=inr if collective == "all_reduce"
                                 else "auto")
        assert c.disconnected and c.binding == "disconnected"
        assert c.busbw_GBps == 0.0 and c.algbw_GBps == 0.0
        assert math.isinf(c.lower_time_s)
        assert c.achievable_time_s is None and c.achievable_busbw_GBps is None
        assert all(b.busbw_GBps == 0.0 for b in c.bounds)
        if expected:
            assert c.expected["busbw_GBps"] == 0.0
        _check_refusal_names_a_real_pair(fab, c.unreachable)
        # The certificate: nothing leaves the nodes the first of the pair reaches.
        assert c.binding_cut.capacity_gbps == 0.0
        assert c.unreachable[0] in c.binding_cut.nodes
        assert c.unreachable[1] not in c.binding_cut.nodes
        # What to do, said in the result and in its report.
        assert any("endpoints=" in note for note in c.notes)
        assert "cannot reach" in str(c) and "endpoints=" in str(c)


@SETTINGS
@given(disconnected_fabrics(), st.sampled_from(COLLECTIVES), st.data())
def test_a_connected_group_gets_its_own_finite_figure(fab, collective, data):
    # Restricted by name to the part of one GPU, the same question has an answer.
    group = _part_of(fab, data.draw(st.sampled_from(fab.endpoints)))
    if len(group) < 2:
        with pytest.raises(fo.InvalidParameterError, match="at least 2"):
            fo.collective_bounds(fab, collective, message_bytes=2**20, endpoints=group)
        return
    c = fo.collective_bounds(fab, collective, message_bytes=2**20, endpoints=group)
    assert not c.disconnected and c.unreachable is None
    assert 0 < c.busbw_GBps < math.inf and math.isfinite(c.lower_time_s)
    r = fo.max_concurrent_flow(fab, fo.all_to_all(fab, endpoints=group))
    assert r.lower > 0 and r.unreachable is None


@SETTINGS
@given(disconnected_fabrics())
def test_curve_over_the_whole_set_is_zero(fab):
    curve = fo.collective_curve(fab, "all_reduce", sizes=[1.0, 2.0**20, 2.0**30])
    assert curve.busbw_limit_GBps == 0.0 and not curve.busbw_GBps.any()
    assert all(math.isinf(t) for t in curve.lower_time_s)
    _check_refusal_names_a_real_pair(fab, curve.unreachable)
    with pytest.raises(fo.InvalidParameterError, match="cannot reach .*endpoints="):
        curve.size_for_fraction(0.5)


@SETTINGS
@given(disconnected_fabrics())
def test_all_to_all_throughput_is_zero_by_every_method(fab):
    methods = ["auto", "lp", "approx"] + (["symmetric"] if fab.symmetry is not None else [])
    for method in methods:
        r = fo.max_concurrent_flow(fab, method=method)
        # A pair with no path proves theta = 0 whatever the method: the bracket is [0, 0].
        assert r.upper == 0.0 and r.lower == 0.0, method
        assert r.theta in (0.0, None) and r.per_endpoint_gbps == 0.0
        _check_refusal_names_a_real_pair(fab, r.unreachable)


@st.composite
def training_cases(draw):
    """Domains of 8 GPUs that the network does not join (none at all, or one node's NICs
    all cut), and a job of llama3-8b that fits in memory at most sizes tried."""
    nodes = draw(st.integers(2, 3))
    dom = nvswitch_like(8, split=(1,))
    if draw(st.booleans()):
        fab = fo.cluster(dom, nodes=nodes, scale_out=None)
    else:
        whole = fo.cluster(dom, nodes=nodes, leaf_radix=8)
        cut = [(g, w) for g in whole.endpoints if g.startswith("n0.")
               for w in whole.graph.successors(g) if whole.graph[g][w]["tier"] == "gpu-leaf"]
        fab = whole.without(links=cut)  # node 0 keeps its NVLink only
    job = fo.TrainingJob("llama3-8b", tp=draw(st.sampled_from([2, 4, 8])),
                         pp=draw(st.sampled_from([1, 2])), dp=draw(st.sampled_from([None, 1, 2])),
                         global_batch=96, seq_len=2048, gpu="h100_sxm", zero=3)
    order = list(fab.endpoints)
    if draw(st.booleans()):
        order = draw(st.permutations(order))
    # One GPU per rank: all of them when dp is left to fill the fabric.
    ranks = job.tp * job.pp * (job.dp or len(order) // (job.tp * job.pp))
    return fab, job, order[:ranks]


@SETTINGS
@given(training_cases())
def test_a_training_job_runs_only_inside_connected_parts(case):
    fab, job, order = case
    try:
        step = fo.training_step(fab, job, placement=order)
    except fo.InvalidParameterError as exc:
        msg = str(exc)
        # Refused by name: a dimension whose groups cannot meet, or a plan this fabric cannot
        # hold at all (too many GPUs, too little memory), which is no figure either.
        assert ("has no path between some of its GPUs" in msg or "GB HBM" in msg
                or "takes tp x cp x ep x dp x pp" in msg), msg
        return
    assert math.isfinite(step.step_s) and step.step_s > 0
    # It ran: every group of every parallel dimension lies inside one part of the fabric.
    part = {}
    for i, nodes in enumerate(nx.weakly_connected_components(fab.graph)):
        part.update(dict.fromkeys(nodes, i))
    place = place_ranks(fab, step.job, order)
    for dim in ("tp", "pp", "dp", "ep", "cp"):
        for row in place.groups([dim]):
            assert len({part[place.gpus[r]] for r in row}) == 1, (dim, row)


def test_the_issue_case_in_the_small():
    # 16 domains of 8 GPUs (128 GPUs, NVSwitches that reduce) on 8-port rail leaves without
    # a spine, wired directly from a plan of two unjoined leaves per rail (the generator
    # makes each rail a Clos instead): servers 0-7 and 8-15, two islands of 64 GPUs. The
    # fabric claims its symmetry, so cut searches look at one GPU's neighbours only; the
    # all-reduce with in-network reduction was reported finite here. It is 0 now, naming a
    # pair across the islands.
    from fabricopt.generators._builder import FabricBuilder
    from fabricopt.generators.cluster import copy_domains, read_domain
    from fabricopt.generators.wiring import RailPlan, UpperTiers, add_rail_scale_out

    dom = read_domain("test", nvswitch_like(8, split=(1,)))
    # 16 servers, 8 rails, 1 plane, radix 8, 8 down, 2 leaves per rail, nothing above them.
    plan = RailPlan(16, 8, 1, 8, 8, 2, UpperTiers(1, 0, 16, 1, 0), 0.0, True)
    b = FabricBuilder("islands", {})
    maps = copy_domains(b, dom, 16)
    add_rail_scale_out(b, [[m[v] for v in dom.servers[0]] for m in maps], plan, 400.0, "400g")
    fab = b.build(symmetric=plan.symmetric, group="domain, rail and leaf permutations")
    assert fab.symmetry is not None and nx.number_weakly_connected_components(fab.graph) == 2
    c = fo.collective_bounds(fab, "all_reduce", message_bytes=2**30, expected=True)
    assert c.disconnected and c.busbw_GBps == 0.0 and c.expected["busbw_GBps"] == 0.0
    _check_refusal_names_a_real_pair(fab, c.unreachable)
    # The participants the first GPU reaches: domains 0-7, 64 GPUs.
    assert c.binding_cut.endpoints_inside == 64
    # Each island alone is a connected group with a finite all-reduce.
    island = [e for e in fab.endpoints if int(e.split(".")[0][1:]) < 8]
    alone = fo.collective_bounds(fab, "all_reduce", message_bytes=2**30, endpoints=island)
    assert 0 < alone.busbw_GBps < math.inf
    assert fo.max_concurrent_flow(fab).upper == 0.0


def test_concurrent_groups_each_connected_are_fine_one_split_is_zero():
    # A rail-only fabric alone: each rail is one star, so the rails as concurrent groups are
    # each connected; the same GPUs as one group are not.
    fab = fo.rail_optimized(nodes=4, gpus_per_node=2, leaf_radix=4, spine=False)
    rails = fo.collective_bounds(fab, "all_gather", message_bytes=2**20, concurrent="rails")
    # Each rail: 4 GPUs on one star of 400 Gb/s links; all-gather busbw is bound by a GPU's
    # link, 400 Gb/s = 50 GB/s (ForestColl: (S/4) 3 / B, busbw = S/t x 3/4 = B).
    assert rails.busbw_GBps == pytest.approx(50.0, rel=1e-9)
    # Groups that straddle the rails: one GPU of each rail per group.
    straddle = [[f"n{i}.g0", f"n{i}.g1"] for i in range(4)]
    c = fo.collective_bounds(fab, "all_gather", message_bytes=2**20, concurrent=straddle)
    assert c.disconnected and c.busbw_GBps == 0.0
    assert any("concurrent groups" in note for note in c.notes)


def test_the_failure_metric_is_zero_when_the_gpus_up_are_split():
    # all_reduce_metric over a ring cut twice: the GPUs still up form two arcs of the ring.
    fab = fo.ring(6).without(links=[("n0", "n1"), ("n3", "n4")])
    assert fo.all_reduce_metric(2**30)(fab, fab.endpoints) == 0.0
