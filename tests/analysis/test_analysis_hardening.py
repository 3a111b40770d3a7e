"""Failure analysis refuses what it would have misread (third hardening pass): an intact solve
of another fabric with the same name, a failure probability under a misspelt tier, malformed
risk groups, and a command-line flag the chosen mode does not read."""

import numpy as np
import pytest

import fabricopt as fo
from fabricopt.cli import main
from fabricopt.cli.failures import EVERY_MODE_FLAGS, FAILURE_MODES, MODE_FLAGS


def two_leaves(gbps=400.0):
    # 2 leaves, 2 spines, 2 GPUs per leaf: the N-1 table's leaf-spine row loses a quarter
    # (docs: criticality's example; one uplink leaves 400 Gb/s for 2 GPUs that each send 2/3
    # of their traffic off the leaf, 400 / 2 / (2/3) = 300 of the intact 400 Gb/s per GPU).
    return fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2, link_gbps=gbps)


# -- an intact solve is recognised by its graph, not its name ----------------------------


def test_intact_of_a_fabric_with_the_same_name_and_faster_links_is_refused():
    fab, faster = two_leaves(), two_leaves(800.0)
    # The generator's name now carries the rate; a user's own twin may still share the name.
    twin = fo.Fabric(faster.graph, faster.endpoints, fab.name)
    assert fab.name == twin.name  # the name says nothing of the rates
    # Before: accepted, and every loss was taken against the twin's 800 Gb/s per GPU: an
    # uplink's 300 Gb/s left read as 1 - 300/800 = 62.5% lost (the truth is 25%).
    with pytest.raises(fo.InvalidParameterError,
                       match=r"single_failures\(\): intact must be .* solved on another graph: "
                             r"arc 'g0'->'leaf0' has 800 Gb/s there and 400 Gb/s here"):
        fo.single_failures(fab, intact=fo.max_concurrent_flow(twin))
    with pytest.raises(fo.InvalidParameterError, match=r"criticality\(\): intact .* another "
                       r"graph: it has 10 nodes and 20 arcs, this fabric 8 and 16"):
        # 3 GPUs a leaf: 2 more nodes; 2 more GPU links, 4 more arcs
        fo.criticality(fab, intact=fo.max_concurrent_flow(two_leaves_of_three()))


def two_leaves_of_three():
    return fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=3)


def test_intact_of_the_same_graph_is_taken_whatever_its_name_or_origin(tmp_path):
    fab = two_leaves()
    intact = fo.max_concurrent_flow(fab)
    renamed = fo.Fabric(fab.graph.copy(), fab.endpoints, "renamed")
    path = tmp_path / "fab.json"
    fo.write_json(fab, path)
    for same in (fab, renamed, fo.read_json(path)):
        table = fo.single_failures(same, intact=intact)
        lost = {r.representative: r.lost for r in table.rows}
        assert lost["link leaf0-spine0"] == pytest.approx(0.25)  # 300 of 400 (above)
        assert lost["link g0-leaf0"] == pytest.approx(1.0)  # g0 cut off: theta 0


def test_intact_without_a_certificate_or_with_other_traffic_is_refused():
    from dataclasses import replace

    fab = two_leaves()
    intact = fo.max_concurrent_flow(fab)
    with pytest.raises(fo.InvalidParameterError, match="with the certificate that names the "
                       "graph it was solved on"):
        fo.single_failures(fab, intact=replace(intact, certificate=None))
    with pytest.raises(fo.InvalidParameterError, match="with traffic 'all-to-all'; the one "
                       "given was solved with traffic 'permutation'"):
        fo.single_failures(fab, intact=fo.max_concurrent_flow(fab, fo.permutation(fab, seed=1)))
    with pytest.raises(fo.InvalidParameterError, match=r"intact must be None or the "
                       r"FlowResult of this fabric .*got 'int'"):
        fo.single_failures(fab, intact=3)


# -- failure probabilities by unit label or tier, every key checked -----------------------


def test_a_misspelt_tier_is_an_error_before_any_solve(monkeypatch):
    import importlib

    distribution = importlib.import_module("fabricopt.failures.distribution")
    def no_solve(*args, **kwargs):
        raise AssertionError("the intact fabric was solved before the model was checked")

    monkeypatch.setattr(distribution, "intact_solve", no_solve)
    fab = fo.fat_tree(4)
    # Before: 'leaf-spin' matched no unit label, so every link failed with probability 0.
    with pytest.raises(fo.InvalidParameterError,
                       match=r"Independent\(\): probability keys must be link labels such as "
                             r"'link g0-leaf0', or tiers of fabric 'fat_tree\(k=4\)' \(gpu-leaf, "
                             r"leaf-spine, spine-core\), got 'leaf-spin' \(did you mean "
                             r"'leaf-spine'\?\)"):
        fo.failure_distribution(fab, fo.Independent(probability={"leaf-spin": 0.01}),
                                trials=3, seed=1)
    with pytest.raises(fo.InvalidParameterError, match=r"got 'switch lef0' \(did you mean "
                       r"'switch leaf0'\?\)"):
        fo.failure_distribution(fab, fo.Independent("switches",
                                                    probability={"switch lef0": 0.1}), trials=3)
    with pytest.raises(fo.InvalidParameterError, match="must be switch labels"):
        fo.Independent("switches", probability={"link g0-leaf0": 0.5}).probabilities(fab)


def test_a_tier_gives_its_units_a_probability_and_a_label_overrides_it():
    fab = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=1)
    rng = np.random.default_rng(0)
    # Probability 1 on the tier: both leaf-spine links fail, no GPU link does.
    d = fo.Independent(probability={"leaf-spine": 1.0}).draw(fab, rng)
    assert sorted(sorted(pair) for pair in d.pattern.links) == [["leaf0", "spine0"],
                                                                 ["leaf1", "spine0"]]
    p = {label: q for label, _, q in fo.Independent(
        probability={"leaf-spine": 0.5, "link leaf1-spine0": 0.25}).probabilities(fab)}
    assert p == {"link g0-leaf0": 0.0, "link g1-leaf1": 0.0, "link leaf0-spine0": 0.5,
                 "link leaf1-spine0": 0.25}
    # Switches take the number of the tiers they touch: spine0 touches leaf-spine only.
    p = {label: q for label, _, q in fo.Independent(
        "switches", probability={"leaf-spine": 0.5, "switch leaf0": 0.1}).probabilities(fab)}
    assert p == {"switch leaf0": 0.1, "switch leaf1": 0.5, "switch spine0": 0.5}
    # leaf1 touches gpu-leaf and leaf-spine: two different numbers for one switch.
    with pytest.raises(fo.InvalidParameterError, match=r"gives 'switch leaf1' more than one "
                       r"number through its tiers \(gpu-leaf: 0.1, leaf-spine: 0.5\)"):
        fo.Independent("switches", probability={"gpu-leaf": 0.1, "leaf-spine": 0.5,
                                                "switch leaf0": 0.1}).probabilities(fab)


def test_a_label_outside_the_tiers_chosen_is_an_error():
    fab = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=1)
    model = fo.Independent(probability={"link g0-leaf0": 0.5}, tiers="leaf-spine")
    with pytest.raises(fo.InvalidParameterError, match=r"link labels \(of the tiers chosen by "
                       r"tiers=\) such as 'link leaf0-spine0'"):
        model.probabilities(fab)


@pytest.mark.parametrize(("probability", "words"), [
    ({}, "non-empty mapping"),
    ({3: 0.1}, "keys are unit labels"),
    ({"": 0.1}, "keys are unit labels"),
    ({"leaf-spine": 2.0}, "numbers from 0 to 1"),
])
def test_a_probability_mapping_is_checked_when_the_model_is_built(probability, words):
    with pytest.raises(fo.InvalidParameterError, match=r"Independent\(\): probability must"):
        fo.Independent(probability=probability)
    with pytest.raises(fo.InvalidParameterError, match=words):
        fo.Independent(probability=probability)


# -- risk groups: malformed parts, foreign nodes, names that collide, cycles ---------------


@pytest.fixture
def small():
    return fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=1)


@pytest.fixture
def racks(small):
    return fo.groups_by(small, {"g0": "r0", "leaf0": "r0", "g1": "r1", "leaf1": "r1"})


@pytest.mark.parametrize(("kwargs", "message"), [
    # each was accepted, and failed later with a raw TypeError (or failed nothing)
    ({"name": "x", "links": None}, r"links of group 'x' must be an iterable of links"),
    ({"name": "x", "switches": None}, r"switches of group 'x' must be an iterable of node"),
    ({"name": "x", "gpus": None}, r"gpus of group 'x' must be an iterable of node"),
    ({"name": "x", "switches": "leaf0"}, r"switches of group 'x' .* got 'leaf0'"),
    ({"name": "x", "links": ["g0"]}, r"each a pair of two different node names .* got 'g0'"),
    ({"name": "x", "links": [("g0", "g0")]}, r"each a pair of two different node names"),
    ({"name": "x", "switches": [["a"]]}, r"must be node names \(hashable\)"),
    ({"name": 3}, r"name must be a non-empty string, got 3"),
    ({"name": ""}, r"name must be a non-empty string"),
])
def test_a_risk_group_is_checked_when_it_is_made(kwargs, message):
    with pytest.raises(fo.InvalidParameterError, match=r"RiskGroup\(\): .*" + message):
        fo.RiskGroup(**kwargs)


def test_a_risk_group_keeps_its_parts_as_sets_of_node_pairs():
    grp = fo.RiskGroup("psu", links=[("g0", "leaf0"), ["leaf1", "spine0"]], switches=["leaf0"])
    assert grp.links == {frozenset(("g0", "leaf0")), frozenset(("leaf1", "spine0"))}
    assert grp.switches == frozenset(["leaf0"]) and grp.gpus == frozenset()
    assert grp.nodes == {"g0", "leaf0", "leaf1", "spine0"}


@pytest.mark.parametrize(("group", "message"), [
    (fo.RiskGroup("x", switches=["nope"]), r"group 'x' has nodes not in it \(switch 'nope'\)"),
    (fo.RiskGroup("x", switches=["lef0"]),
     r"has nodes not in it \(switch 'lef0' \(did you mean 'leaf0'\?\)\)"),
    (fo.RiskGroup("x", switches=["g0"]), r"group 'x' has switch 'g0', which is a GPU"),
    (fo.RiskGroup("x", gpus=["leaf0"]), r"group 'x' has GPU 'leaf0', which is not a GPU"),
    (fo.RiskGroup("x", links=[("g0", "spine0")]), r"group 'x' has link .*no link joins them"),
])
def test_groups_naming_what_the_fabric_lacks_are_refused_before_any_solve(small, group,
                                                                          message):
    # Before: KeyError from the graph while the group failed (after the intact solve).
    for model in (fo.GroupFailures([group]), fo.EverySingle("groups", groups=[group])):
        with pytest.raises(fo.InvalidParameterError, match=message):
            fo.failure_distribution(small, model, trials=None)


def test_group_lists_are_checked_when_the_model_is_made(racks):
    with pytest.raises(fo.InvalidParameterError, match=r"GroupFailures\(\): groups must be a "
                       r"list of RiskGroup .*; not str 'a'"):
        fo.GroupFailures(["a"])  # was an AttributeError when drawn
    with pytest.raises(fo.InvalidParameterError, match=r"GroupFailures\(\): groups must be a "
                       r"list of RiskGroup"):
        fo.GroupFailures(3)
    with pytest.raises(fo.InvalidParameterError, match=r"distinct names .* got 'r0' twice"):
        fo.GroupFailures([racks[0], racks[0]])  # two report lines of one name
    with pytest.raises(fo.InvalidParameterError, match=r"at least count=3 group\(s\), got 2"):
        fo.GroupFailures(racks, count=3)
    with pytest.raises(fo.InvalidParameterError, match=r"EverySingle\(\): groups must"):
        fo.EverySingle("groups", groups="r0")


def test_groups_by_refuses_labels_that_collide_and_mappings_that_group_nothing(small):
    with pytest.raises(fo.InvalidParameterError,
                       match=r"labels 1 and '1' both make the group name '1'"):
        fo.groups_by(small, {"g0": 1, "g1": "1"})  # was two groups named '1'
    for empty in ({}, {"g0": None}):  # None: the node is in no group, as for an attribute
        with pytest.raises(fo.InvalidParameterError, match="at least one node in a group"):
            fo.groups_by(small, empty)
    with pytest.raises(fo.InvalidParameterError, match=r"not nodes: \['leaf00'\] \(did you "
                       r"mean 'leaf0'\?\)"):
        fo.groups_by(small, {"leaf00": 1})
    # a None label leaves its node out; the others still group
    assert [g.name for g in fo.groups_by(small, {"g0": None, "g1": "a"})] == ["a"]


@pytest.mark.parametrize(("parent", "message"), [
    ({"r0": "r0"}, r"parent puts group 'r0' in itself"),
    ({"r0": "r1", "r1": "r0"}, r"'r0' -> 'r1' -> 'r0' a cycle"),
    ({"r0": "row", "row": "hall"}, r"keys naming groups"),  # 'row' is not a group yet
    ({"r0": "r1"}, r"'r1' is already a group's name"),
    ({}, r"non-empty mapping"),
    ({"r0": ""}, r"non-empty strings"),
])
def test_nest_groups_refuses_cycles_and_names_that_collide(small, racks, parent, message):
    # Before: each was accepted (a group nested in itself, two groups named 'r1').
    with pytest.raises(fo.InvalidParameterError, match=r"nest_groups\(\): .*" + message):
        fo.nest_groups(small, racks, parent)


def test_nest_groups_refuses_two_children_of_one_name_and_groups_of_another_fabric(small,
                                                                                   racks):
    other = fo.RiskGroup("r0", switches=["leaf1"])
    with pytest.raises(fo.InvalidParameterError, match="distinct names .* 'r0' twice"):
        fo.nest_groups(small, [racks[0], other], {"r0": "row"})
    with pytest.raises(fo.InvalidParameterError, match="has nodes not in it"):
        fo.nest_groups(fo.ring(3), racks, {"r0": "row"})
    # a valid nesting still works: both racks in one row, 2 GPUs (one per rack) go down
    (row,) = fo.nest_groups(small, racks, {"r0": "row", "r1": "row"})
    assert row.name == "row" and len(row.gpus) == 2


# -- the command line refuses a flag its mode would ignore ------------------------------

#: A valid value of every flag a mode may take (those that take one).
FLAG_VALUES = {"--kind": "links", "--tiers": "ring", "--fraction": "0.25", "--cut": "0.5",
               "--probability": "0.5", "--hours": "24", "--groups": "racks", "--trials": "2",
               "--seed": "1", "--metrics": "routed", "--plot": "x.png",
               # a job over the ring's 4 GPUs (one TP group), and what --mode select reads
               "--job": "model=llama3-8b,tp=4,global_batch=4,seq_len=1024", "--spares": "0",
               "--select": "tier=ring", "--weight": "capacity", "--count": "1"}


def mode_flag_pairs():
    return [pytest.param(mode, flag, id=f"{mode} {flag}") for mode in FAILURE_MODES
            for flag in FLAG_VALUES if flag not in MODE_FLAGS[mode]]


def test_the_flags_of_each_mode_are_the_parser_s_flags():
    from fabricopt.cli import build_parser

    sub = next(a for a in build_parser()._actions if hasattr(a, "choices")
               and isinstance(a.choices, dict) and "failures" in a.choices).choices["failures"]
    flags = {a.option_strings[0] for a in sub._actions if a.option_strings} - {"-h",
                                                                               "--mode"}
    # every flag is either some mode's or every mode's, and has a test value above
    assert flags == set(FLAG_VALUES) | {"--time-limit", "--progress"}
    assert set(EVERY_MODE_FLAGS) == {"--time-limit", "--progress"}
    assert set().union(*MODE_FLAGS.values()) == set(FLAG_VALUES)


@pytest.mark.parametrize(("mode", "flag"), mode_flag_pairs())
def test_a_flag_the_mode_does_not_read_is_one_line_exit_2(mode, flag, capsys, tmp_path,
                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)
    # Before: --mode criticality --trials 5 printed the table and exited 0, --trials unread.
    code = main(["failures", "ring", "n=4", "--mode", mode, flag, FLAG_VALUES[flag]])
    err = capsys.readouterr().err.strip().splitlines()
    takes = ", ".join(MODE_FLAGS[mode] + EVERY_MODE_FLAGS)
    assert code == 2 and len(err) == 1, err
    assert err[0] == (f"fabricopt failures: error: {flag} does not apply to --mode "
                      f"{'n-1 (the default)' if mode == 'n-1' else mode}, which takes {takes}")
    assert not (tmp_path / "x.png").exists()  # refused before any work


def test_the_default_mode_refuses_too_and_random_refuses_kind_groups(capsys):
    assert main(["failures", "ring", "n=4", "--trials", "5"]) == 2
    assert "--trials does not apply to --mode n-1 (the default)" in capsys.readouterr().err
    # --mode random drew links where --kind groups was asked for
    assert main(["failures", "ring", "n=4", "--mode", "random", "--kind", "groups",
                 "--probability", "0.5"]) == 2
    assert "--kind groups does not apply to --mode random" in capsys.readouterr().err


@pytest.mark.parametrize("mode", FAILURE_MODES)
def test_every_flag_of_a_mode_is_taken(mode, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    words = [w for flag in MODE_FLAGS[mode] for w in (flag, FLAG_VALUES[flag])]
    code = main(["failures", "ring", "n=4", "--mode", mode, "--time-limit", "60", *words])
    err = capsys.readouterr().err
    assert code == 0 and "error" not in err, err
