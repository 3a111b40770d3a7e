"""What a fabric is read from refuses what it would misread (third hardening pass): a folder
where a design file goes, and link rates in bit/s where Gb/s are meant."""

import warnings

import networkx as nx
import pytest

import fabricopt as fo
from fabricopt.cli import main
from fabricopt.fabric import MAX_LINK_GBPS
from fabricopt.io.design_files import design_points
from fabricopt.io.search_files import load_search

# -- a folder is not a design file ------------------------------------------------------


def test_a_folder_given_to_load_design_says_compare_takes_folders(tmp_path):
    for name in ("a.toml", "b.toml", "notes.txt"):
        (tmp_path / name).write_text('family = "ring"\n[params]\nn = 4\n')
    # Before: "cannot read the design file: [Errno 21] Is a directory".
    for read in (fo.load_design, design_points):
        with pytest.raises(fo.DesignFileError) as info:
            read(tmp_path)
        text = str(info.value)
        assert text.startswith(f"{tmp_path}: is a folder (it holds 2 .toml files), not a "
                               "design file: load_design reads one file, such as "
                               f"{tmp_path / 'NAME.toml'}")
        assert "fo.compare(folder) and `fabricopt compare FOLDER` take a folder" in text
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(fo.DesignFileError, match=r"empty: is a folder, not a design file"):
        fo.load_design(empty)


def test_a_folder_given_as_a_search_file_is_named_so(tmp_path):
    with pytest.raises(fo.DesignFileError, match=r": is a folder, not a search file; optimize "
                       r"reads one search file"):
        load_search(tmp_path)


# -- link rates: Gb/s, and a rate above 1 Pb/s per link is a unit mistake -----------------


@pytest.mark.parametrize(("call", "message"), [
    (lambda: fo.ring(4, link_gbps=4e11), r"ring\(\): link_gbps=4e\+11 is above 1e\+06 Gb/s"),
    (lambda: fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2, link_gbps=400e9),
     r"leaf_spine\(\): link_gbps=4e\+11"),
    # superpod builds through cluster: the error names what the caller called
    (lambda: fo.superpod(scalable_units=1, nodes_per_su=2, nic_gbps=400e9),
     r"superpod\(\): nic_gbps=4e\+11"),
    (lambda: fo.nvswitch_domain(gpus=2, switches=1, links_per_gpu=1, link_gbps=2e9),
     r"nvswitch_domain\(\): link_gbps=2e\+09"),
])
def test_a_generator_refuses_a_rate_in_bit_per_second(call, message):
    # Before: a warning, then every figure 1e9 times too large.
    with pytest.raises(fo.InvalidParameterError, match=message) as info:
        call()
    assert "(1 Pb/s) per link, faster than any link; rates are in Gb/s per direction" in str(
        info.value)


def test_the_bound_is_one_petabit_per_second_per_link():
    assert MAX_LINK_GBPS == 1e6  # 1 Pb/s = 10**15 bit/s = 10**6 Gb/s
    # At the bound a link is taken (a petabit trunk, not a unit mistake); just above, not.
    assert fo.ring(3, link_gbps=1e6).validate().graph["n0"]["n1"]["capacity"] == 1e6
    with pytest.raises(fo.InvalidParameterError, match=r"link_gbps=1000001.0 is above 1e\+06"):
        fo.ring(3, link_gbps=1.000001e6)


def test_the_command_line_refuses_bit_per_second_in_one_line(capsys, tmp_path):
    # Before: exit 0 with theta 1.3e11 and busbw 5e10 GB/s.
    assert main(["solve", "leaf_spine", "leaves=2", "spines=2", "endpoints_per_leaf=2",
                 "link_gbps=400e9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["fabricopt solve: error: leaf_spine(): link_gbps=4e+11 is above 1e+06 Gb/s "
                   "(1 Pb/s) per link, faster than any link; rates are in Gb/s per direction "
                   "(4e+11 bit/s would be 400 Gb/s)"]
    design = tmp_path / "ring.toml"
    design.write_text('family = "ring"\n[params]\nn = 4\nlink_gbps = 4e11\n')
    with pytest.raises(fo.DesignFileError, match=r"ring.toml: ring: ring\(\): link_gbps=4e\+11"):
        fo.load_design(design)


def test_from_networkx_refuses_bit_per_second_unless_the_unit_is_given():
    with pytest.raises(fo.InvalidParameterError, match=r"from_networkx\(\): default_capacity="
                       r"4e\+11 is above .*; give capacity_unit="):
        fo.from_networkx(nx.cycle_graph(4), default_capacity=400e9)
    g = nx.cycle_graph(4)
    nx.set_edge_attributes(g, 400e9, "bw")
    with pytest.raises(fo.InvalidParameterError, match=r"edge 0-1 at 4e\+11 Gb/s is above"):
        fo.from_networkx(g, capacity="bw")
    # With its unit, 400e9 bit/s is 400 Gb/s; a ring of 4 at 400 carries theta
    # 400 x 8 / 4^2 = 200 (unit ring: 8 / n^2, docs/throughput.md).
    fab = fo.from_networkx(g, capacity="bw", capacity_unit="bit/s")
    assert fab.graph[0][1]["capacity"] == 400.0 and fab.params == {"capacity_unit": "bit/s"}
    assert fo.max_concurrent_flow(fab).theta == pytest.approx(200.0)
    # NVLink figures in bytes: 50 GB/s is 400 Gb/s
    assert fo.from_networkx(nx.cycle_graph(3), default_capacity=50,
                            capacity_unit="GB/s").graph[0][1]["capacity"] == 400.0
    with pytest.raises(fo.InvalidParameterError, match=r"capacity_unit must be one of 'bit/s'.*"
                       r"got 'gb/s' \(did you mean 'Gb/s'\?\)"):
        fo.from_networkx(g, capacity="bw", capacity_unit="gb/s")


def test_an_explicit_unit_keeps_large_numbers_as_stated():
    # "Gb/s" said outright: 4e8 Gb/s is meant (the flow engine solves in any unit), and
    # validate takes it without a warning (up to fabric.REPRESENTABLE_GBPS, 1 Eb/s).
    fab = fo.from_networkx(nx.cycle_graph(4), default_capacity=4e8, capacity_unit="Gb/s")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fab.validate() is fab
    # the same graph wrapped by hand, with no unit: refused where it is validated
    with pytest.raises(fo.InvalidFabricError, match=r"fabric 'fabric': arc 0->1 at 4e\+08 Gb/s "
                       r"is above .*\(8 such arc\(s\)\); give capacities in Gb/s, or build the "
                       r"fabric with fo.from_networkx\(G, capacity_unit='bit/s'\)"):
        fo.Fabric(fab.graph).validate()


def test_a_bundle_may_exceed_the_bound_when_its_links_do_not():
    # 1,000 parallel 1.6 Tb/s links: 1.6e6 Gb/s per arc, 1,600 per link.
    g = nx.Graph()
    g.add_node("a", role="gpu")
    g.add_node("b", role="gpu")
    g.add_edge("a", "b", capacity=1.6e6, links=1000)
    fab = fo.from_networkx(g)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "bit/s given by mistake?" either
        fab.validate()
    g["a"]["b"]["links"] = 1  # one link of 1.6 Pb/s
    with pytest.raises(fo.InvalidParameterError, match=r"edge 'a'-'b' at 1.6e\+06 Gb/s is above"):
        fo.from_networkx(g)
