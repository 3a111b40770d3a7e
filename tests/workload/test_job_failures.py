"""Single failures seen by a training job: what each failure kind does, one solve per orbit."""

from functools import cache

import pytest

import fabricopt as fo
from fabricopt.workload.job_failures import ALL_KINDS, INTERRUPTING
from fabricopt.workload.reliability import unit_counts

#: Llama 3 8B over 4 DGX H100 (32 GPUs): tp 8 keeps each replica in one server, dp 4.
JOB = fo.TrainingJob("llama3-8b", tp=8, global_batch=32, seq_len=8192)


@cache
def pod(planes: int) -> fo.Fabric:
    """4 DGX H100 on a rail-optimized network of one plane or two (each GPU's 400G split
    over a leaf in each plane, as the Alibaba HPN design dual-homes its NICs)."""
    return fo.cluster(scale_up=fo.dgx_h100(), nodes=4, scale_out="rail_optimized",
                      nic_gbps=400, planes=planes, leaf_radix=16)


@cache
def table(planes: int, symmetry: bool = True) -> fo.JobFailureTable:
    return fo.single_failures(pod(planes), kind="all", job=JOB, symmetry=symmetry)


def rows(t, kind):
    return [r for r in t.rows if r.kind == kind]


def test_every_single_failure_is_counted_once():
    # The multiplicities add up to the units the fabric holds of each kind.
    for planes in (1, 2):
        t, counts = table(planes), unit_counts(pod(planes))
        units = {k: sum(r.multiplicity for r in rows(t, k)) for k in ALL_KINDS}
        assert units["links"] == counts["network link"]
        assert units["switches"] == counts["network switch"]
        assert units["nvlinks"] == counts["scale-up link"]
        assert units["nvswitches"] == counts["scale-up switch"]
        assert units["gpus"] == units["nics"] == counts["gpu"] == 32
        assert units["servers"] == counts["server"] == 4


def test_single_plane_leaf_and_cable_interrupt_dual_plane_rides_them_out():
    single, dual = table(1), table(2)
    # One plane: a GPU-leaf link is the GPU's only port, so the job stops and restarts
    # without that server's replica (3 of 4 left: 75 %); a leaf holds one GPU of every server
    # (one rail), so every replica is hit and the job waits for the repair.
    gpu_leaf = next(r for r in rows(single, "links") if r.tier == "gpu-leaf")
    assert gpu_leaf.action == "drop replica" and gpu_leaf.replicas_lost == 1
    assert single.share(gpu_leaf) == pytest.approx(3 / 4)
    leaf = next(r for r in rows(single, "switches") if "gpu-leaf" in r.tier)
    assert leaf.action == "stop" and leaf.tokens_per_s == 0 and leaf.servers_lost == 4
    # Two planes: the other plane's port keeps every GPU attached; the job runs on.
    for kind in ("links", "switches"):
        assert not any(r.interrupts for r in rows(dual, kind))
    assert dual.by_kind()["links"]["interrupting"] == 0
    assert single.by_kind()["links"]["interrupting"] == pytest.approx(32 / 64)  # GPU links
    for kind in ("links", "switches"):
        assert dual.by_kind()[kind]["kept"] > single.by_kind()[kind]["kept"]


def test_gpu_nic_and_server_always_interrupt():
    for t in (table(1), table(2)):
        for kind in ("nics", "gpus", "servers"):
            assert all(r.action in INTERRUPTING for r in rows(t, kind))


def test_nvswitch_chip_slows_a_tensor_parallel_job_within_its_bounds():
    t = table(1)
    # DGX H100: each GPU has 5, 4, 4, 5 NVLinks to the four chips; losing one leaves 13 or
    # 14 of 18, and the tp all-reduces over NVLink slow down: the job runs degraded.
    chips = rows(t, "nvswitches")
    assert {r.multiplicity for r in chips} == {8} and len(chips) == 2
    for r in chips:
        assert r.action == "run degraded"
        assert t.intact_step_s < r.step_s
        # Certified: the failed fabric's bound is a bound (below its expected step), and a
        # failure only removes capacity, so it is no lower than the intact bound.
        assert t.intact_step_s_lower <= r.step_s_lower <= r.step_s
        assert r.tokens_per_s <= r.tokens_per_s_upper
    # The 5-link chip costs more than a 4-link one.
    five, four = sorted(chips, key=lambda r: r.step_s, reverse=True)
    assert five.step_s > four.step_s


def test_orbits_agree_with_solving_every_failure():
    # Symmetry groups failures; solving each alone gives the same outcome per unit.
    fab = fo.dgx_h100()
    job = fo.TrainingJob("llama3-8b", tp=8, global_batch=8, seq_len=8192)
    grouped = fo.single_failures(fab, kind="nvswitches", job=job)
    alone = fo.single_failures(fab, kind="nvswitches", job=job, symmetry=False)
    assert len(grouped.rows) == 2 and len(alone.rows) == 4

    def spread(t):
        return sorted((round(r.step_s, 9), r.action) for r in t.rows for _ in r.members)

    assert spread(grouped) == spread(alone)


def test_spares_decide_swap_drop_or_stop():
    fab = pod(1)
    # 16 GPUs of 32: two servers idle, so a lost server is swapped for a spare.
    half = fo.TrainingJob("llama3-8b", tp=8, dp=2, global_batch=16, seq_len=8192)
    t = fo.single_failures(fab, kind="servers", job=half)
    assert t.spares == 2
    assert {r.action for r in t.rows} == {"swap in a spare", "unaffected"}
    swap = next(r for r in t.rows if r.action == "swap in a spare")
    assert swap.multiplicity == 2 and swap.tokens_per_s == t.intact_tokens_per_s
    # No spares: drop the replica; one replica over one server (tp 8, dp 1): stop.
    t = fo.single_failures(fab, kind="servers", job=half, spares=0)
    assert next(r for r in t.rows if r.interrupts).action == "drop replica"
    one = fo.TrainingJob("llama3-8b", tp=8, global_batch=8, seq_len=8192)
    t = fo.single_failures(fo.dgx_h100(), kind="gpus", job=one)
    assert [r.action for r in t.rows] == ["stop"] and t.rows[0].multiplicity == 8


def test_criticality_puts_the_costliest_first():
    t = fo.criticality(pod(1), kind=["nvswitches", "switches"], job=JOB)
    kept = [r.tokens_per_s for r in t.rows]
    assert kept == sorted(kept) and t.rows[0].action == "stop"


def test_without_a_job_the_fabric_table_is_unchanged():
    t = fo.single_failures(fo.ring(6))
    assert isinstance(t, fo.FailureTable) and round(t.rows[0].lost, 3) == 0.5  # 8/36 -> 1/9
    assert isinstance(fo.criticality(fo.ring(6)), fo.FailureTable)


def test_bad_input_is_refused_before_work():
    with pytest.raises(fo.InvalidParameterError, match="kind"):
        fo.single_failures(pod(1), kind="leafs", job=JOB)
    with pytest.raises(fo.InvalidParameterError, match="spares"):
        fo.single_failures(pod(1), kind="gpus", job=JOB, spares=-1)
    with pytest.raises(fo.InvalidParameterError, match="not read with a job"):
        fo.single_failures(pod(1), kind="gpus", job=JOB, method="lp")
    with pytest.raises(fo.InvalidParameterError, match="only with a job"):
        fo.single_failures(pod(1), spares=2)
    with pytest.raises(fo.InvalidParameterError, match="job"):
        fo.job_failures(pod(1), "llama3-8b")
    with pytest.raises(fo.InvalidParameterError, match="tiers"):
        fo.single_failures(pod(1), kind="links", tiers="leaf-core", job=JOB)


def test_failure_sweep_with_a_job():
    # 10 % of the network switches of each pod (1 of 10, 2 of 20), the same draws by seed.
    single = fo.failure_sweep(pod(1), [0.1], trials=4, seed=3, job=JOB, kind="switches",
                              tiers=["gpu-leaf", "leaf-spine"])
    again = fo.failure_sweep(pod(1), [0.1], trials=4, seed=3, job=JOB, kind="switches",
                             tiers=["gpu-leaf", "leaf-spine"])
    assert single.to_records() == again.to_records()
    dual = fo.failure_sweep(pod(2), [0.1], trials=4, seed=3, job=JOB, kind="switches",
                            tiers=["gpu-leaf", "leaf-spine"])
    # Two planes keep at least as much on average: a GPU is cut off only when the leaves of
    # both its planes fail, where one plane loses it with its one leaf.
    assert single.summary()[0]["mean_share"] <= dual.summary()[0]["mean_share"]
    for t in single.trials + dual.trials:
        assert t.step_s_lower <= t.step_s and 0 <= t.share <= 1
    with pytest.raises(fo.InvalidParameterError, match="not read with a job"):
        fo.failure_sweep(pod(1), [0.1], job=JOB, method="lp")
    with pytest.raises(fo.InvalidParameterError, match="kind"):
        fo.failure_sweep(pod(1), [0.1], job=JOB, kind="groups")
    assert isinstance(fo.failure_sweep(fo.ring(6), [0.2], trials=1, seed=1), fo.FailureSweep)


def test_the_printed_table_folds_many_unaffected_orbits_into_one_line():
    # table(2, symmetry=False) solves every failure on its own: the dual-plane pod rides out
    # every link, so most rows are "unaffected". Printed, they are one line whose count is
    # the sum of theirs; the rows themselves keep every orbit.
    t = table(2, symmetry=False)
    calm = [r for r in t.rows if r.action == "unaffected"]
    assert len(calm) > 5  # more than SHOWN_UNAFFECTED, so they fold
    text = str(t).splitlines()
    folded = [line for line in text if line.startswith(f"({len(calm)} orbits)")]
    assert len(folded) == 1
    assert int(folded[0].split()[2]) == sum(r.multiplicity for r in calm)
    assert not any("unaffected" in line.split() for line in text[4:] if line[0] != "(")
    assert len(text) == 4 + len(t.rows) - len(calm) + 1
