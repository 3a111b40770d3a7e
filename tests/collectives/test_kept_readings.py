"""Readings of the collective bounds kept or regrouped for speed give what they gave before:
the same groups, from the same problem and switches only."""

import numpy as np
import pytest

import fabricopt as fo
from fabricopt.collectives import problem as pr


def _groups_by_dict(items, label):
    """_groups_in_order as a dict append per item: groups in order of first label, each in
    the items' order."""
    groups = {}
    for item, key in zip(items.tolist(), label.tolist(), strict=True):
        groups.setdefault(key, []).append(item)
    return list(groups.values())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_groups_in_order_are_the_dict_appends(seed):
    rng = np.random.default_rng(seed)
    items = rng.permutation(200)
    label = rng.integers(0, 1 + 30 * seed, size=200)  # seed 0: one group of all
    assert pr._groups_in_order(items, label) == _groups_by_dict(items, label)
    assert pr._groups_in_order(items[:0], label[:0]) == []


def test_reduce_domains_kept_only_for_the_same_problem_and_switches():
    fab = fo.cluster("dgx_h100", 2, "clos", radix=8)
    p = pr.collective_problem(fab, fab.endpoints)
    red_up = pr.reducing_switches(p, False)[0]
    fresh = pr._reduce_domains(p, red_up)
    # Two DGX H100 servers: two domains of 8 GPUs (their NVSwitches reduce).
    assert [len(d) for d in fresh[0]] == [8, 8]
    assert pr.reduce_domains(p, red_up) == fresh
    assert pr.reduce_domains(p, red_up) is pr.reduce_domains(p, red_up)  # kept
    # Other switches, then another problem (half the GPUs): computed again, not the kept one.
    assert pr.reduce_domains(p, np.zeros_like(red_up)) == ([], 0.0)
    half = pr.collective_problem(fab, fab.endpoints[::2])
    groups, bw = pr.reduce_domains(half, red_up)
    assert (groups, bw) == pr._reduce_domains(half, red_up)
    assert [len(d) for d in groups] == [4, 4]  # every other GPU: 4 of each server's 8
    assert pr.reduce_domains(p, red_up) == fresh


def test_arcs_into_a_participant_as_a_stable_sort_by_head_lists_them():
    """The cut search reads the arcs into a GPU when first asked for it: the arcs a stable
    sort of the arcs by head lists for it, in arc order (min_cut sums them in that order)."""
    fab = fo.superpod(1)
    ga = pr.GraphArrays.from_fabric(fab)
    gpus = np.array([ga.index[e] for e in fab.endpoints])
    search = pr._CutsToOneGpu(ga, gpus, 1.0 / 400)
    by_head = np.argsort(ga.head, kind="stable")
    for w in gpus[::37].tolist():
        want = by_head[ga.head[by_head] == w]
        assert np.array_equal(search._into(w), want)
        assert search._into(w) is search._into(w)  # read once
        # A DGX H100 GPU: one arc from each of its server's 4 NVSwitches (5+4+4+5 = 18
        # NVLinks bundled) and one from its leaf.
        assert len(want) == 5
