"""Fabric files: what a round trip keeps (claim, design tables, answers) and bad files."""

import json

import networkx as nx
import pytest

import fabricopt as fo
from fabricopt.cli import main

FORMATS = [(".json", fo.write_json, fo.read_json),
           (".graphml", fo.write_graphml, fo.read_graphml)]


def _round_trip(fab, tmp_path, fmt):
    suffix, write, read = fmt
    path = tmp_path / f"fabric{suffix}"
    write(fab, path)
    return read(path)


@pytest.mark.parametrize("fmt", FORMATS, ids=["json", "graphml"])
@pytest.mark.parametrize("make", [
    "fo.superpod(1)", "fo.torus((3, 4))", "fo.fat_tree(4)",
    "fo.cluster(scale_up=fo.dgx_h100(), nodes=2, scale_out='rail_optimized')",
])
def test_round_trip_keeps_the_claim_and_the_answer(make, fmt, tmp_path):
    fab = eval(make, {"fo": fo})
    back = _round_trip(fab, tmp_path, fmt)
    assert back.symmetry is not None and back.symmetry.n_orbits == fab.symmetry.n_orbits
    assert back.recipe == fab.recipe
    a = fo.max_concurrent_flow(fab)
    b = fo.max_concurrent_flow(back)
    assert b.method == "symmetric" and b.exact and fo.check_certificate(back, b).ok
    assert b.theta == pytest.approx(a.theta, rel=1e-9)


@pytest.mark.parametrize("fmt", FORMATS, ids=["json", "graphml"])
def test_an_edited_file_loses_the_claim(fmt, tmp_path):
    suffix, write, read = fmt
    fab = fo.fat_tree(4)
    path = tmp_path / f"f{suffix}"
    write(fab, path)
    # Halve one arc's capacity in the file: the recorded generator no longer rebuilds it.
    if suffix == ".json":
        data = json.loads(path.read_text())
        data["edges"][0]["capacity"] = 200.0
        path.write_text(json.dumps(data))
    else:
        g = nx.read_graphml(path)
        next(iter(g.edges(data=True)))[2]["capacity"] = 200.0
        nx.write_graphml(g, path)
    back = read(path)
    assert back.symmetry is None
    r = fo.max_concurrent_flow(back)
    # Solved without the stale claim: by the bounds stage or the LP, certified either way.
    assert r.method in ("bounds", "lp") and fo.check_certificate(back, r).ok


@pytest.mark.parametrize("fmt", FORMATS, ids=["json", "graphml"])
def test_failed_fabric_round_trip_keeps_what_was_removed(fmt, tmp_path):
    failed = fo.fat_tree(4).without(links=[("leaf0", "spine0.0")], switches=["core1.1"])
    back = _round_trip(failed, tmp_path, fmt)
    assert back.symmetry is None and back.params["edited"]
    assert back.removed == failed.removed


@pytest.mark.parametrize("fmt", FORMATS, ids=["json", "graphml"])
def test_design_tables_travel_with_the_file(fmt, tmp_path):
    design = tmp_path / "pod.toml"
    design.write_text('family = "fat_tree"\n[params]\nk = 4\nswitch_model = "qm9700"\n'
                      '[layout]\nrack_pitch_m = 2.4\nrow_pitch_m = 9.0\n'
                      '[catalog.switch.qm9700]\nprice_usd = 1.0\nsource = "a quote"\n'
                      'confidence = "estimate"\n')
    fab = fo.load_design(design)
    back = _round_trip(fab, tmp_path, fmt)
    assert back.design == fab.design
    before, after = fo.estimate_cost(fab), fo.estimate_cost(back)
    assert after.capex_usd == before.capex_usd and after.power_w == before.power_w
    # The tables matter: without them the default catalog prices the switches higher.
    assert fo.estimate_cost(fo.fat_tree(4, switch_model="qm9700")).capex_usd > before.capex_usd


def test_write_graphml_refuses_names_that_collide_as_strings(tmp_path):
    fab = fo.from_networkx(nx.Graph([(1, "1")]))
    with pytest.raises(fo.InvalidParameterError, match="both become '1'"):
        fo.write_graphml(fab, tmp_path / "x.graphml")


@pytest.mark.parametrize("read, suffix", [(fo.read_json, ".json"),
                                          (fo.read_graphml, ".graphml")])
def test_missing_path_or_directory_names_the_file(read, suffix, tmp_path):
    with pytest.raises(fo.DesignFileError, match=r"nope.*no such file"):
        read(tmp_path / f"nope{suffix}")
    with pytest.raises(fo.DesignFileError, match="is a directory"):
        read(tmp_path)


@pytest.mark.parametrize("fmt", FORMATS, ids=["json", "graphml"])
def test_truncated_file_names_the_file(fmt, tmp_path):
    suffix, write, read = fmt
    path = tmp_path / f"ring{suffix}"
    write(fo.ring(4), path)
    path.write_text(path.read_text()[:200])
    with pytest.raises(fo.DesignFileError, match=f"ring{suffix}"):
        read(path)


@pytest.mark.parametrize("mutate, match", [
    (lambda d: d["nodes"][0].pop("id"), "node 0 has no 'id'"),
    (lambda d: d["edges"][0].update(target="ghost"), "unknown node 'ghost'"),
    (lambda d: d.pop("edges"), "'nodes' and 'edges'"),
    (lambda d: d["graph"].update(endpoints=["ghost"]), "not a valid fabric"),
])
def test_corrupted_json_names_the_file_and_problem(mutate, match, tmp_path):
    path = tmp_path / "ring.json"
    fo.write_json(fo.ring(4), path)
    data = json.loads(path.read_text())
    mutate(data)
    path.write_text(json.dumps(data))
    with pytest.raises(fo.DesignFileError, match=match) as info:
        fo.read_json(path)
    assert "ring.json" in str(info.value)


def test_cli_accepts_saved_fabrics(tmp_path, capsys):
    for suffix, write, _ in FORMATS:
        path = tmp_path / f"ring{suffix}"
        write(fo.ring(6), path)
        assert main(["solve", str(path), "--throughput-only"]) == 0
        out = capsys.readouterr().out
        assert "symmetric" in out  # the claim came back, so the fast method ran
    assert main(["show", str(tmp_path / "ring.json"), "n=3"]) != 0
    assert "takes no key=value" in capsys.readouterr().err


# -- the data model's own checks --------------------------------------------------------

def test_validate_rejects_self_loops():
    fab = fo.ring(4)
    fab.graph.add_edge("n0", "n0", capacity=1e6, links=1, tier="ring")
    with pytest.raises(fo.InvalidFabricError, match="self-loop"):
        fab.validate()


@pytest.mark.parametrize("links", [0, -3, 1.5, "two", True, float("nan")])
def test_validate_and_from_networkx_reject_bad_link_counts(links):
    fab = fo.ring(4)
    fab.graph["n0"]["n1"]["links"] = links
    with pytest.raises(fo.InvalidFabricError, match="links must be a whole number"):
        fab.validate()
    G = nx.path_graph(3)
    G.edges[0, 1]["links"] = links
    with pytest.raises(fo.InvalidParameterError, match="links of edge 0-1"):
        fo.from_networkx(G)
