"""The arrays' first look at validity never passes a fabric the full check faults, and
passes the fabrics the generators build."""

import networkx as nx
import pytest
from flow_helpers import random_fabric

import fabricopt as fo
from fabricopt.graph_arrays import looks_valid


def _mutations():
    """Each breaks one rule of Fabric.validate (what it breaks, a function doing it)."""
    def cap(value):
        def edit(f):
            f.graph["n0"]["n1"]["capacity"] = value
        return edit

    def links(value):
        def edit(f):
            f.graph["n0"]["n1"]["links"] = value
        return edit

    return [
        ("capacity 0", cap(0)), ("capacity -1", cap(-1.0)), ("capacity inf", cap(float("inf"))),
        ("capacity nan", cap(float("nan"))), ("capacity bool", cap(True)),
        ("capacity text", cap("400")), ("links 0", links(0)), ("links 1.5", links(1.5)),
        ("links bool", links(True)),
        ("one direction", lambda f: f.graph.remove_edge("n1", "n0")),
        ("self-loop", lambda f: f.graph.add_edge("n0", "n0", capacity=1.0)),
        ("unknown role", lambda f: f.graph.nodes["n2"].update(role="router")),
        ("unhashable role", lambda f: f.graph.nodes["n2"].update(role=["gpu"])),
        ("endpoint not a gpu", lambda f: f.graph.nodes["n0"].update(role="switch")),
        ("endpoint gone", lambda f: f.graph.remove_node("n3")),
    ]


@pytest.mark.parametrize(("what", "edit"), _mutations(), ids=[m[0] for m in _mutations()])
def test_every_broken_rule_is_left_to_the_full_check(what, edit):
    fab = fo.ring(4)
    edit(fab)
    assert fab.problems(), what          # the rule is one the full check names
    assert looks_valid(fab) is None      # and the first look never passes it


def test_a_switch_over_its_radix_is_left_to_the_full_check():
    # leaf_spine(2, 2, 2): each leaf uses 2 host ports and 2 uplinks; a radix of 3 is broken.
    fab = fo.leaf_spine(2, 2, 2)
    fab.graph.nodes["leaf0"]["radix"] = 3
    assert fab.problems() and looks_valid(fab) is None


@pytest.mark.parametrize("make", [lambda: fo.fat_tree(4), lambda: fo.superpod(1),
                                  lambda: fo.cluster(fo.dgx_h100(), nodes=3),
                                  lambda: random_fabric(3), lambda: random_fabric(7)])
def test_valid_fabrics_pass_with_their_capacities(make):
    fab = make()
    assert not fab.problems()
    cap = looks_valid(fab)
    assert cap is not None
    assert sorted(cap.tolist()) == sorted(c for _, _, c in fab.graph.edges(data="capacity"))


def test_a_graph_the_arrays_cannot_read_is_left_to_the_full_check():
    fab = fo.ring(4)
    fab.graph = nx.MultiDiGraph(fab.graph)
    assert looks_valid(fab) is None


def test_values_the_arrays_cannot_hold_are_left_to_the_full_check():
    # 2**70 links is a whole number >= 1 (valid), but no int64: the first look declines
    # rather than fail, and validate decides.
    fab = fo.ring(4)
    fab.graph["n0"]["n1"]["links"] = 2**70
    assert looks_valid(fab) is None
    assert fab.validate() is fab
