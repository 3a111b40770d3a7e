"""Hashed routing walks its flows a block at a time, so its memory does not grow with the
traffic, draws the same paths from the same seed as before it streamed, and refuses, naming
the size, what would not fit."""

import os
import subprocess
import sys
import textwrap

import pytest

import fabricopt as fo
import fabricopt.flow.memory as memory
import fabricopt.routing.hashing as hashing
from fabricopt.flow.memory import Memory
from fabricopt.graph_arrays import GraphArrays
from fabricopt.routing.api import LOAD_BYTES_PER_ARC


def test_the_same_seed_draws_the_same_paths_as_before_streaming():
    # leaf_spine(4 leaves, 3 spines, 4 GPUs a leaf), all-to-all, seed 5, five trials: the
    # thetas the walk gave when every flow of every trial was expanded over every out-arc at
    # once (recorded from it). The grouped walk draws the same number per flow and step, in
    # the same order, and maps it to the same port, so the paths are the same.
    fab = fo.leaf_spine(leaves=4, spines=3, endpoints_per_leaf=4)
    r = fo.routed_flow(fab, routing="hash", trials=5, seed=5)
    assert r.thetas == pytest.approx([40 / 3, 50 / 3, 50 / 3, 400 / 21, 200 / 11], rel=1e-12)
    r = fo.routed_flow(fab, fo.permutation(fab, seed=2), routing="hash", flows_per_pair=2,
                       trials=7, seed=5)
    assert r.thetas == pytest.approx([160, 160, 160, 160, 160, 200, 200], rel=1e-12)


def test_blocks_of_a_trial_carry_what_the_whole_trial_does(monkeypatch):
    # One spine: every pair of different leaves has one path (GPU, leaf, spine, leaf, GPU),
    # so hashing routes exactly as ECMP whatever it draws, and so must a trial walked in
    # blocks of 7 flows. leaf_spine(3 leaves, 1 spine, 2 GPUs a leaf) at 400 Gb/s: a leaf
    # sends 2 x 4 Gb/s per unit of theta up one 400 Gb/s link: theta = 400 / 8 = 50, and
    # the GPU links bound it at 400 / 5 = 80.
    monkeypatch.setattr(hashing, "FLOW_BLOCK", 7)
    fab = fo.leaf_spine(leaves=3, spines=1, endpoints_per_leaf=2)
    hashed = fo.routed_flow(fab, routing="hash", trials=3, seed=1)
    ecmp = fo.routed_flow(fab, routing="ecmp")
    assert list(hashed.thetas) == pytest.approx([50.0] * 3, rel=1e-12)
    assert ecmp.theta == pytest.approx(50.0, rel=1e-12)
    assert hashed.link_load == pytest.approx(ecmp.link_load, rel=1e-12)


def test_every_inter_leaf_flow_climbs_once_in_blocks(monkeypatch):
    # leaf_spine(3 leaves, 2 spines, 2 GPUs a leaf), all-to-all at 1 Gb/s, walked in blocks
    # of 5 flows: each of the 6 x 4 = 24 pairs of different leaves crosses exactly one
    # leaf-to-spine arc, whichever it draws, so those arcs carry 24 Gb/s in all in every
    # trial (in the trial whose loads the result keeps, times its theta).
    monkeypatch.setattr(hashing, "FLOW_BLOCK", 5)
    fab = fo.leaf_spine(leaves=3, spines=2, endpoints_per_leaf=2)
    r = fo.routed_flow(fab, routing="hash", trials=4, seed=3)
    up = sum(load for (u, v), load in r.link_load.items()
             if u.startswith("leaf") and v.startswith("spine"))
    assert up == pytest.approx(24.0 * r.theta, rel=1e-12)


def _short(monkeypatch, nbytes):
    monkeypatch.setattr(memory, "available_memory", lambda: Memory(nbytes, "a test's budget"))


def test_hashing_refuses_tables_that_do_not_fit(monkeypatch):
    # cluster(2 x DGX H100): its scale-out network routes towards the leaves of its 8 rails.
    # Memory just enough for the trials' loads (40 bytes per arc and trial, checked first)
    # is short of the walk (at least a block of 2 x 128 flows at 240 bytes each: 61,440).
    fab = fo.cluster(fo.dgx_h100(), nodes=2)
    loads = LOAD_BYTES_PER_ARC * 2 * GraphArrays.from_fabric(fab).n_arcs
    assert hashing.BYTES_PER_FLOW * 2 * 128 > loads  # 16 GPUs x 8 in other servers = 128
    _short(monkeypatch, loads)
    with pytest.raises(fo.InvalidParameterError, match=r"^routed_flow\(\): routing='hash' "
                                                       r"must fit .* hop tables of .* nodes x "
                                                       r"8 destination classes"):
        fo.routed_flow(fab, routing="hash", trials=2, seed=1)


def test_trials_whose_loads_do_not_fit_are_refused_first(monkeypatch):
    # ring(4): 8 arcs, 1,000 trials, 40 bytes a load: 320,000 bytes, refused under 0.1 MB
    # before anything is routed.
    fab = fo.ring(4)
    _short(monkeypatch, 10**5)
    with pytest.raises(fo.InvalidParameterError, match=r"trials must keep trials x arcs "
                                                       r"within .* trials=1,000 with 8 arcs"):
        fo.routed_flow(fab, routing="hash", trials=1000, seed=1)


def test_walk_bytes_counts_the_table_the_loads_and_a_block():
    # 1,000 nodes x 10 classes: 4 bytes each (40,000) plus the search in floats (80,000);
    # 5,000 member links x 20 trials x 3 arrays x 8 bytes (2,400,000); 100 pairs at 32 bytes
    # (3,200); their 100 flows in all 20 trials at once (2,000 flows x 10 out-arcs is within
    # WALK_BLOCK) at 240 bytes (480,000).
    assert hashing.walk_bytes(1_000, 10, 5_000, 20, 100, 1, 10) == (
        40_000 + 80_000 + 2_400_000 + 3_200 + 480_000)
    # Ten million flows a trial: a block of FLOW_BLOCK flows, whatever the trials.
    assert hashing.block_flows(10**7, 20, 10) == hashing.FLOW_BLOCK


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS as Linux applies it")
def test_512_gpus_hash_within_half_a_gigabyte_more():
    # cluster(64 x DGX H100), all-to-all hashed twice: 512 x 504 = 258,048 pairs between
    # servers. The walk that expanded every flow over every out-arc of its node at once held
    # about 750 MB more than the process at rest (numpy's _ArrayMemoryError under this limit;
    # 19.7 GB and killed at 2,048 GPUs); walked in blocks, about 170 MB.
    code = textwrap.dedent("""
        import os, resource
        import fabricopt as fo
        fab = fo.cluster(fo.dgx_h100(), nodes=64)
        with open("/proc/self/statm") as f:  # the address space mapped now, in pages
            mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        limit = mapped + 500 * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        r = fo.routed_flow(fab, routing="hash", trials=2, seed=1)
        print(r.status, len(r.thetas), r.pairs_by_network["scale-out"])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["exact", "2", "258048"]
