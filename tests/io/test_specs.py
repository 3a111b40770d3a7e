"""Design files: shipped topologies load, sweeps expand, malformed files give clear errors."""

import re
from pathlib import Path

import pytest

import fabricopt as fo
from fabricopt.cli import main
from fabricopt.io.design_files import design_points

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
DESIGN_FILES = sorted(TOPOLOGIES.glob("*.toml"))


def write(tmp_path, text, name="design.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_topologies_are_shipped():
    names = {p.name for p in DESIGN_FILES}
    assert {"dgx-h100.toml", "dgx-b200.toml", "gb200-nvl72.toml",
            "ualink-pod-sweep.toml"} <= names


@pytest.mark.parametrize("path", DESIGN_FILES, ids=[p.name for p in DESIGN_FILES])
def test_every_design_file_loads_and_validates(path):
    loaded = fo.load_design(path)
    fabs = loaded if isinstance(loaded, list) else [loaded]
    assert fabs
    for fab in fabs:
        fab.validate()
        assert fab.design["file"] == str(path)
        assert fab.design["family"] in fo.GENERATORS
        assert fab.design["description"]


def test_design_file_matches_the_generator():
    fab = fo.load_design(TOPOLOGIES / "dgx-h100.toml")
    ref = fo.dgx_h100()
    assert fab.name == "DGX H100"
    assert fab.params == ref.params
    assert sorted(fab.graph.edges(data=True)) == sorted(ref.graph.edges(data=True))
    assert fab.symmetry is not None


def test_sweep_gives_one_fabric_per_value_named_by_it():
    fabs = fo.load_design(TOPOLOGIES / "ualink-pod-sweep.toml")
    # accelerators = [16, 32, 64, 128]: four fabrics.
    assert [f.name for f in fabs] == [f"UALink pod [accelerators={n}]" for n in (16, 32, 64, 128)]
    assert [len(f.endpoints) for f in fabs] == [16, 32, 64, 128]


def test_sweep_grid_order_and_string_values(tmp_path):
    path = write(tmp_path, """
family = "nvswitch_domain"
[params]
switches = 2
link_gbps = 200
[sweep]
gpus = [2, 4]
links_per_gpu = [2, 4, 6]
tech = ["a"]
""")
    fabs = fo.load_design(path)
    # 2 x 3 x 1 combinations, last key fastest; no name key: the generator's name plus values.
    assert len(fabs) == 6
    assert [(f.params["gpus"], f.params["links_per_gpu"]) for f in fabs] == \
        [(2, 2), (2, 4), (2, 6), (4, 2), (4, 4), (4, 6)]
    # (The generator's own name carries its options away from their defaults.)
    assert fabs[0].name == "nvswitch_domain(2 GPUs, 2 switches, links_per_gpu=2, " \
        "link_gbps=200, tech=a) [gpus=2, links_per_gpu=2, tech='a']"


def test_layout_and_catalog_pass_through(tmp_path):
    path = write(tmp_path, """
family = "ring"
[params]
n = 4
[layout]
rack_pitch_m = 0.6
[catalog]
"switch.qm9700" = { price_usd = 30000 }
""")
    fab = fo.load_design(path)
    assert fab.design["layout"] == {"rack_pitch_m": 0.6}
    assert fab.design["catalog"] == {"switch.qm9700": {"price_usd": 30000}}
    assert fab.copy().design == fab.design  # copy() keeps the design record
    copied = fab.copy()
    copied.design["layout"]["rack_pitch_m"] = 1.0
    assert fab.design["layout"]["rack_pitch_m"] == 0.6  # and does not share it


def test_overrides_replace_params_and_fix_swept_keys():
    fab = fo.load_design(TOPOLOGIES / "dgx-h100.toml", in_network_reduction=False)
    assert {fab.graph.nodes[s]["reduce"] for s in fab.switches} == {False}
    fabs = fo.load_design(TOPOLOGIES / "ualink-pod-sweep.toml", accelerators=8)
    assert len(fabs) == 1 and len(fabs[0].endpoints) == 8


@pytest.mark.parametrize("text, match", [
    ('famly = "ring"\n',
     r"design.toml: key 'famly' is not allowed \(did you mean 'family'\?\); allowed keys: "
     r"name, family, description, "
     r"source, departures, params, sweep, layout, catalog"),
    ('name = "x"\n', r"design.toml: key 'family' is missing; it names the generator, one of: "
     r".*dgx_h100"),
    ('family = "rign"\n', r"design.toml: key 'family' must name a generator, one of: .*ring.*; "
     r"got 'rign'"),
    ('family = 3\n', r"key 'family' must name a generator"),
    ('family = "ring"\nname = 3\n[params]\nn = 4\n', r"key 'name' must be a string"),
    ('family = "ring"\nsource = 3\n[params]\nn = 4\n', r"key 'source' must be a string"),
    ('family = "ring"\ndepartures = []\n[params]\nn = 4\n',
     r"key 'departures' must be a string"),
    ('family = "ring"\nparams = 4\n', r"key 'params' must be a table \(\[params\]\)"),
    ('family = "ring"\nlayout = [1]\n[params]\nn = 4\n', r"key 'layout' must be a table"),
    # The layout's own fields are checked when the file loads, not when the cost is estimated.
    ('family = "ring"\n[params]\nn = 4\n[layout]\nleaf_placment = "central"\n',
     r"design.toml: \[layout\]: .*unknown field 'leaf_placment'"),
    ('family = "ring"\n[params]\nn = 4\nsize = 3\n',
     r"design.toml: \[params\] key 'size' is not a parameter of ring; allowed: n, link_gbps, "
     r"tech"),
    ('family = "ring"\n[params]\nn = 4\n[sweep]\nsize = [3]\n',
     r"\[sweep\] key 'size' is not a parameter of ring"),
    ('family = "ring"\n[sweep]\nn = 4\n',
     r"design.toml: \[sweep\] key 'n' must be a non-empty list of values, got 4"),
    ('family = "ring"\n[sweep]\nn = []\n', r"\[sweep\] key 'n' must be a non-empty list"),
    ('family = "ring"\n[params]\nn = 4\n[sweep]\nn = [4, 8]\n',
     r"key 'n' is in both \[params\] and \[sweep\]"),
    ('family = "ring"\n', r"\[params\] is missing required parameter\(s\) of ring: n"),
    ('family = "ring"\n[params\nn = 4\n', r"design.toml: not valid TOML"),
    # A generator with open-ended options (cluster's **fabric_options) rejects them itself.
    ('family = "cluster"\n[params]\nscale_up = "dgx_h100"\nnodes = 2\nleaf_radx = 4\n',
     r"design.toml: cluster: cluster\(\): fabric_options must be options of "
     r"scale_out='rail_optimized' .*got \['leaf_radx'\]"),
    ('family = "ring"\n[params]\nn = 1\n',
     r"design.toml: ring: ring\(\): n must be an integer >= 2, got 1"),
    ('family = "ualink_pod"\n[params]\nswitches = 4\nports_per_accelerator = 4\n'
     '[sweep]\naccelerators = [64, 2048]\n',
     r"design.toml: ualink_pod: ualink_pod\(\): accelerators must be an integer >= 2 <= 1024"),
])
def test_malformed_design_files(tmp_path, text, match):
    path = write(tmp_path, text)
    with pytest.raises(fo.DesignFileError, match=match):
        fo.load_design(path)


def test_design_file_not_in_utf8(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'family = "ring"\nname = "caf\xe9"\n[params]\nn = 4\n')  # Latin-1 e-acute
    with pytest.raises(fo.DesignFileError, match=r"latin1.toml: not valid TOML: the file is not "
                       r"UTF-8"):
        fo.load_design(path)


def test_missing_file_and_bad_override(tmp_path):
    with pytest.raises(fo.DesignFileError, match="nope.toml: no such design file"):
        fo.load_design(tmp_path / "nope.toml")
    with pytest.raises(fo.DesignFileError, match="override key 'k' is not a parameter of "
                       "dgx_h100; allowed: in_network_reduction, name"):
        fo.load_design(TOPOLOGIES / "dgx-h100.toml", k=8)


def test_a_misspelt_file_name_gets_the_nearest_file_beside_it(tmp_path, capsys):
    # The user typed dgx-h10.toml for the shipped dgx-h100.toml: each entry point names the
    # file they most likely meant, from the same folder; a name near nothing gets no guess.
    typo = str(TOPOLOGIES / "dgx-h10.toml")
    meant = repr(str(TOPOLOGIES / "dgx-h100.toml"))
    with pytest.raises(fo.DesignFileError, match=f"no such design file \\(did you mean "
                       f"{re.escape(meant)}\\?\\)"):
        fo.load_design(typo)
    with pytest.raises(fo.InvalidParameterError, match=f"did you mean {re.escape(meant)}"):
        fo.compare([typo])
    assert main(["solve", typo]) != 0
    assert f"did you mean {meant}" in capsys.readouterr().err
    (tmp_path / "ring.json").write_text("{}")
    with pytest.raises(fo.DesignFileError, match=r"rnig.json: no such file \(did you mean"):
        fo.read_json(tmp_path / "rnig.json")
    with pytest.raises(fo.DesignFileError, match=r"zzzz.toml: no such design file$"):
        fo.load_design(tmp_path / "zzzz.toml")


def test_cli_show_design_file(capsys):
    assert main(["show", str(TOPOLOGIES / "dgx-h100.toml")]) == 0
    out = capsys.readouterr().out
    assert "fabric      DGX H100" in out and "gpu-nvswitch" in out
    assert main(["show", str(TOPOLOGIES / "ualink-pod-sweep.toml"), "accelerators=8"]) == 0
    assert "endpoints   8" in capsys.readouterr().out


def test_cli_reports_design_errors(tmp_path, capsys):
    path = write(tmp_path, 'family = "ring"\n[params]\nn = 1\n')
    assert main(["show", str(path)]) == 2
    assert "n must be an integer >= 2" in capsys.readouterr().err


def test_overrides_name_the_fabric_and_design_points_list_the_sweep():
    # An override names the fabric, as a swept value does, so two variants never share a name.
    fab = fo.load_design(TOPOLOGIES / "dgx-h100.toml", in_network_reduction=False)
    assert fab.name == "DGX H100 [in_network_reduction=False]"
    # ualink-pod-sweep.toml sweeps accelerators over 16, 32, 64, 128.
    points = design_points(TOPOLOGIES / "ualink-pod-sweep.toml")
    assert points == [{"accelerators": n} for n in (16, 32, 64, 128)]
    # Each point loaded alone is the same fabric, with the same name, as in the whole sweep.
    whole = fo.load_design(TOPOLOGIES / "ualink-pod-sweep.toml")
    alone = [fo.load_design(TOPOLOGIES / "ualink-pod-sweep.toml", **p)[0] for p in points]
    assert [f.name for f in alone] == [f.name for f in whole]
    assert [len(f.endpoints) for f in alone] == [16, 32, 64, 128]
    assert design_points(TOPOLOGIES / "dgx-h100.toml") == [{}]


def test_misspelled_override_suggests_the_parameter():
    with pytest.raises(fo.DesignFileError, match=r"'acelerators' is not a parameter of "
                       r"ualink_pod \(did you mean 'accelerators'\?\); allowed: accelerators"):
        fo.load_design(TOPOLOGIES / "ualink-pod-sweep.toml", acelerators=8)


def test_source_and_departures_are_kept_on_the_fabric(tmp_path):
    path = write(tmp_path, 'family = "ring"\nsource = "a paper"\ndepartures = "none"\n'
                 '[params]\nn = 4\n')
    fab = fo.load_design(path)
    assert (fab.design["source"], fab.design["departures"]) == ("a paper", "none")
    # Both are optional for a file of one's own.
    fab = fo.load_design(write(tmp_path, 'family = "ring"\n[params]\nn = 4\n', "b.toml"))
    assert (fab.design["source"], fab.design["departures"]) == ("", "")
