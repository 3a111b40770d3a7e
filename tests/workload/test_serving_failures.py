"""Single failures seen by a serving deployment (``single_failures(fab, job=ServingJob)``):
replicas taken out, spares, and the replicas that run on the failed fabric."""

from functools import cache

import pytest

import fabricopt as fo
from fabricopt.errors import InvalidParameterError
from fabricopt.workload.job_failures import ALL_KINDS, INTERRUPTING

#: A replica over two servers (pipeline stage per DGX H100): its stages talk over the network.
ACROSS = fo.ServingJob("llama3-70b", fo.ServingPlan(tp=8, pp=2, batch=64, precision="fp8"))
#: A replica in one server: its tensor-parallel traffic stays on NVLink.
INSIDE = fo.ServingJob("llama3-70b", fo.ServingPlan(tp=8, batch=64, precision="fp8"))


@cache
def pod(planes: int) -> fo.Fabric:
    """4 DGX H100 on a rail-optimized network of one plane or two (as test_job_failures)."""
    return fo.cluster(scale_up=fo.dgx_h100(), nodes=4, scale_out="rail_optimized",
                      nic_gbps=400, planes=planes, leaf_radix=16)


@cache
def table(planes: int, job: fo.ServingJob = ACROSS) -> fo.ServingFailureTable:
    return fo.single_failures(pod(planes), kind="all", job=job)


def rows(t, kind):
    return [r for r in t.rows if r.kind == kind]


def test_every_single_failure_is_counted_once():
    for planes in (1, 2):
        t = table(planes)
        units = {k: sum(r.multiplicity for r in rows(t, k)) for k in ALL_KINDS}
        # 4 servers of 8 GPUs; each GPU has one port per plane to its rail's leaf, and each
        # leaf as many links up to the spines as down (4 servers: 4 + 4 of its 16 ports):
        # 32 + 32 network links a plane.
        assert units["gpus"] == units["nics"] == 32 and units["servers"] == 4
        assert units["links"] == 64 * planes
        # tp 8 x pp 2 over 32 GPUs: 2 replicas of 2 servers each.
        assert t.replicas == 2


def test_single_plane_port_and_leaf_take_replicas_out_dual_plane_rides_them_out():
    single, dual = table(1), table(2)
    # One plane: a GPU-leaf link is the GPU's only port, and its replica's pipeline crosses
    # servers: that replica is out, the other serves on. Colocated, the rate is per replica,
    # so 1 of 2 left keeps 1/2.
    port = next(r for r in rows(single, "links") if r.tier == "gpu-leaf")
    assert (port.action, port.replicas_lost, port.replicas_left) == ("drop replica", 1, 1)
    assert single.share(port) == pytest.approx(1 / 2)
    # A rail leaf holds one GPU of every server: both replicas lose a port, none is left.
    leaf = next(r for r in rows(single, "switches") if "gpu-leaf" in r.tier)
    assert leaf.action == "stop" and leaf.tokens_per_s == 0 and leaf.replicas_left == 0
    # Two planes: the other plane's port keeps every GPU attached; every replica runs on.
    for kind in ("links", "switches"):
        assert not any(r.interrupts for r in rows(dual, kind))
        assert dual.by_kind()[kind]["kept"] > single.by_kind()[kind]["kept"]
    # One plane: of 64 links, the 32 GPU ports interrupt.
    assert single.by_kind()["links"]["interrupting"] == pytest.approx(32 / 64)
    assert dual.by_kind()["links"]["interrupting"] == 0


def test_a_replica_inside_a_server_survives_the_network_and_a_spare_replaces_a_server():
    t = table(1, INSIDE)
    # Its traffic never needs the network: no link or switch, not even one plane's leaf,
    # takes it out (the failed fabric may still slow it: the flow model lets the
    # all-reduce use the network's paths too).
    for kind in ("links", "switches", "nics"):
        assert not any(r.interrupts for r in rows(t, kind))
    server = rows(t, "servers")[0]
    assert server.action == "drop replica" and t.share(server) == pytest.approx(3 / 4)
    spare = fo.single_failures(pod(1), kind="servers", job=INSIDE, spares=1).rows[0]
    assert spare.action == "swap in a spare" and spare.tokens_per_s == t.intact_tokens_per_s


def test_a_failure_never_adds_capacity():
    # Failures only remove links: a replica running on the failed fabric serves no more
    # tokens per second, and no faster a token, than on the intact one.
    for t in (table(1), table(2), table(1, INSIDE)):
        for r in t.rows:
            assert r.tokens_per_s <= t.intact_tokens_per_s * (1 + 1e-9)
            if r.action in ("run degraded", "unaffected"):
                assert r.tpot_s >= t.intact_tpot_s * (1 - 1e-9)
                assert r.replicas_left == t.replicas
            if r.action in INTERRUPTING:
                assert r.replicas_lost >= 1
        # GPUs and servers always take their replica out.
        for kind in ("gpus", "servers"):
            assert all(r.interrupts for r in rows(t, kind))


def test_criticality_puts_the_costliest_first():
    t = fo.criticality(pod(1), kind=["switches", "servers"], job=ACROSS)
    assert t.rows[0].action == "stop"
    assert [r.tokens_per_s for r in t.rows] == sorted(r.tokens_per_s for r in t.rows)


def test_bad_input_is_refused_before_any_work():
    with pytest.raises(InvalidParameterError, match=r"single_failures\(\): job .*a TrainingJob "
                       r"or a ServingJob"):
        fo.single_failures(pod(1), kind="servers", job="llama3-70b")
    with pytest.raises(InvalidParameterError, match=r"placement is not read with a ServingJob"):
        fo.single_failures(pod(1), kind="servers", job=INSIDE, placement=[])
    with pytest.raises(InvalidParameterError, match=r"'traffic' is not read with a job"):
        fo.single_failures(pod(1), kind="servers", job=INSIDE, traffic="x")
    # Llama 3 405B in BF16 over 8 H100 of 80 GB: 101 GB of weights a GPU does not fit.
    big = fo.ServingJob("llama3-405b", fo.ServingPlan(tp=8))
    with pytest.raises(InvalidParameterError, match=r"single_failures\(\): llama3-405b .*does "
                       r"not fit"):
        fo.single_failures(pod(1), kind="servers", job=big)
    with pytest.raises(InvalidParameterError, match=r"ServingJob\(\): model"):
        fo.ServingJob("llama-70b")
    with pytest.raises(InvalidParameterError, match=r"ServingJob\(\): plan"):
        fo.ServingJob("llama3-70b", plan={"tp": 8})
