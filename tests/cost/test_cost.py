"""Cost and power: catalog, layout, media selection, bill of materials.

Unit prices and powers quoted in comments come from ``fabricopt/data/catalog.toml`` (their
sources are there). Per-link shares follow ``fabricopt.cost.media``: a link of rate r on a
module or cable of rate R and split s uses max(r / R, 1 / s) of it at each end.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import fabricopt as fo
from fabricopt.cli import load_fabric, main
from fabricopt.cost import CONFIDENCES, MEDIUM_TYPES, CatalogError, length_bucket, place
from fabricopt.generators._builder import FabricBuilder

# -- helpers ----------------------------------------------------------------------------------


def two_tier(gbps: float = 400.0, tech: str = "ndr") -> fo.Fabric:
    """4 GPUs, 2 leaves (2 GPUs each), 1 spine; each leaf joins the spine with 2 links."""
    b = FabricBuilder("two-tier", {})
    for i in range(4):
        b.gpu(f"g{i}")
    b.switch("L0", 1, 4)
    b.switch("L1", 1, 4)
    b.switch("S0", 2, 4)
    for i in range(4):
        b.link(f"g{i}", f"L{i // 2}", gbps, "gpu-leaf", tech)
    for leaf in ("L0", "L1"):
        b.link(leaf, "S0", gbps, "leaf-spine", tech, links=2)
    return b.build()


def one_link(gbps: float = 800.0, tier: str = "x", tech: str = "800gbe") -> fo.Fabric:
    """Two switches and one link between them: media selection in isolation."""
    b = FabricBuilder("one-link", {})
    b.switch("A", 1, None)
    b.switch("B", 1, None)
    b.link("A", "B", gbps, tier, tech)
    return b.build()


def medium_at(length_m: float, gbps: float = 800.0, policy=None, catalog=None) -> str:
    est = fo.estimate_cost(one_link(gbps), layout=fo.Layout(length_m_by_tier={"x": length_m}),
                           policy=policy, catalog=catalog)
    (row,) = est.links
    return row["medium"]


def two_racks(leaf_link_gbps: float = 800.0) -> fo.Fabric:
    """16 GPUs (two servers of 8 by the ``node`` attribute), a leaf per server, leaves joined."""
    b = FabricBuilder("two-racks", {})
    for i in range(16):
        b.gpu(f"g{i}")
    b.switch("L0", 1, None)
    b.switch("L1", 1, None)
    for i in range(16):
        b.link(f"g{i}", f"L{i // 8}", 400, "gpu-leaf", "ndr")
    b.link("L0", "L1", leaf_link_gbps, "leaf-leaf", "xdr")
    fab = b.build()
    for i in range(16):
        fab.graph.nodes[f"g{i}"]["node"] = i // 8
    return fab


def dgx_like(nodes: int = 1, l2: bool = False) -> fo.Fabric:
    """DGX H100-like scale-up: 8 GPUs, 4 NVSwitch gen 3, each GPU's 18 NVLinks split 5/4/4/5.

    With ``l2``, each NVSwitch also sends 4 NVLinks to one second-level NVLink switch box.
    """
    b = FabricBuilder("dgx-like", {})
    if l2:
        b.switch("L2", 2, 128, model="nvlink4_switch")
    for n in range(nodes):
        for k in range(4):
            b.switch(f"nv{n}.{k}", 1, 64, model="nvswitch3")
        for r in range(8):
            b.gpu(f"g{n}.{r}", rail=r)
            for k, m in enumerate((5, 4, 4, 5)):
                b.link(f"g{n}.{r}", f"nv{n}.{k}", 200, "gpu-nvswitch", "nvlink4", links=m)
        if l2:
            for k in range(4):
                b.link(f"nv{n}.{k}", "L2", 200, "nvswitch-l2", "nvlink4", links=4)
    fab = b.build()
    for v in fab.endpoints:
        fab.graph.nodes[v]["node"] = int(v[1:].split(".")[0])
    return fab


def write(tmp_path, text: str, name: str = "cat.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


# -- catalog ----------------------------------------------------------------------------------


def test_default_catalog_entries_all_have_source_and_confidence():
    cat = fo.Catalog.default()
    assert len(cat.switches) >= 4 and len(cat.nics) >= 2 and len(cat.media) >= 10
    for e in cat:
        assert e.source.strip(), e.key
        assert e.confidence in CONFIDENCES
        assert e.confidence_of() == e.confidence  # entry confidence is the weakest figure
    # Every medium type of the issue is in the default catalog.
    assert {e["type"] for e in cat.media.values()} == set(MEDIUM_TYPES)


def test_default_catalog_figures_match_the_hardware_reference():
    cat = fo.Catalog.default()
    # QM9700: 64 x 400G, 747 W typical without optics (V/V2); SN5600 64 x 800G, 940 W (V/V2).
    assert (cat["switch.qm9700"]["radix"], cat["switch.qm9700"]["port_gbps"]) == (64, 400.0)
    assert cat["switch.qm9700"]["power_w"] == 747.0
    assert cat["switch.qm9700"].confidence_of("power_w") == "secondary"
    assert cat["switch.qm9700"].confidence_of("price_usd") == "estimate"  # R in the reference
    assert cat["switch.sn5600"]["power_w"] == 940.0
    # 800G DR8: 100 m, 17 W (V); SR4 400G: 50 m, 8 W (V); 2 x FR4: 2 km (V).
    assert (cat.media["dr_800g"]["reach_m"], cat.media["dr_800g"]["power_w_per_end"]) == \
        (100.0, 17.0)
    assert (cat.media["sr_400g"]["reach_m"], cat.media["sr_400g"]["power_w_per_end"]) == \
        (50.0, 8.0)
    assert cat.media["fr_800g"]["reach_m"] == 2000.0
    # ConnectX-7 $1,599 at NADDOD (V2).
    assert cat.nics["cx7"]["price_usd"] == 1599.0
    assert cat.nics["cx7"].confidence_of("price_usd") == "secondary"


# Figures revised against public sources, each with the words of its source that the catalog
# entry must carry: (entry, field, value, words in ``source``).
REVISED_FIGURES = [
    # QM9700 street price: public reseller figures of roughly $12k-16k, midpoint.
    ("switch.qm9700", "price_usd", 14000.0, "$12k-16k"),
    # SN5600 at the QM9700 price per port-Gb/s: $14k / 25.6 Tb/s x 51.2 Tb/s.
    ("switch.sn5600", "price_usd", 28000.0, "$14k / 25.6 Tb/s x 51.2 Tb/s = $28k"),
    # Q3400 at the same price per Gb/s: $14k / 25.6 x 115.2.
    ("switch.q3400", "price_usd", 63000.0, "$14k / 25.6 Tb/s x 115.2 Tb/s = $63k"),
    # AEC: 0-8 W per end in public notes, about 3 W for the retimer of one end.
    ("medium.aec_800g", "power_w_per_end", 3.0, "0-8 W per end"),
    # MMS4X00-NS: 17 W on NVIDIA's specifications page.
    ("medium.dr_800g", "power_w_per_end", 17.0, "MMS4X00-NS specifications"),
    # Cages: 32 twin-port OSFP on the QM9700 (QM97X0 manual), 64 OSFP on the SN5600 (SN5000
    # manual).
    ("switch.qm9700", "cages", 32, "32 twin-port OSFP cages"),
    ("switch.sn5600", "cages", 64, "64 x 800GbE OSFP cages"),
]


@pytest.mark.parametrize("ref, name, value, words", REVISED_FIGURES,
                         ids=[f"{r[0]}.{r[1]}" for r in REVISED_FIGURES])
def test_revised_figures_carry_their_source(ref, name, value, words):
    entry = fo.Catalog.default()[ref]
    assert entry[name] == value
    assert words in entry.source


def test_every_estimated_figure_says_how_it_was_estimated():
    # A figure of confidence "estimate" has no source to cite: its entry's source text must
    # say so and give the reasoning (the words below open every such explanation).
    words = ("estimate", "background knowledge", "not found", "not published", "not sourced")
    for e in fo.Catalog.default():
        guessed = [f for f in e.values if e.confidence_by_field.get(f, e.confidence) == "estimate"]
        assert not guessed or any(w in e.source for w in words), (e.key, guessed)


def test_switch_prices_per_port_gbps_are_consistent():
    # No single-chip 51.2T switch costs more per Gb/s than twice another of the catalog: the
    # old SN5600 figure ($150k) was 5x the QM9700 ($30k) for 2x its capacity.
    cat = fo.Catalog.default()
    per_gbps = {k: e["price_usd"] / (e["radix"] * e["port_gbps"])
                for k, e in cat.switches.items() if k in ("qm9700", "sn5600", "q3400")}
    assert max(per_gbps.values()) <= 2 * min(per_gbps.values()), per_gbps


MY_NIC = """
[nic.my_nic]
modes = [[1, 400.0]]
power_w = 10.0
price_usd = 900.0
source = "vendor datasheet X"
confidence = "vendor"
"""


def test_catalog_load_merges_over_defaults_and_records_the_source(tmp_path):
    path = write(tmp_path, """
[switch.qm9700]
price_usd = 20000.0
source = "our 2025 quote"
confidence = "vendor"
""" + MY_NIC)
    cat = fo.Catalog.load(path)
    qm = cat["switch.qm9700"]
    assert qm["price_usd"] == 20000.0
    assert qm["radix"] == 64 and qm["power_w"] == 747.0  # untouched figures kept
    assert qm.confidence_of("price_usd") == "vendor"
    assert qm.confidence_of("power_w") == "secondary"
    assert "our 2025 quote" in qm.source and "QM97X0" in qm.source
    assert str(path) in qm.source and qm.origin == str(path)
    assert "my_nic" in cat.nics and "cx7" in cat.nics
    only = fo.Catalog.load(path.parent / write(tmp_path, MY_NIC, "only.toml"), merge=False)
    assert list(only.nics) == ["my_nic"] and not only.switches


@pytest.mark.parametrize("text, match", [
    ('[switch.qm9700]\nprice_usd = -1.0\nsource = "x"\nconfidence = "vendor"\n',
     r"\[switch.qm9700\] price_usd must be a finite number >= 0, got -1.0"),
    ('[medium.m]\ntype = "laser"\nrate_gbps = 800.0\nreach_m = 5.0\npower_w_per_end = 1.0\n'
     'price_usd_per_end = 0.0\nsource = "x"\nconfidence = "vendor"\n',
     r"\[medium.m\] type must be one of 'dac'.*got 'laser'"),
    ('[medium.m]\ntype = "dac"\nrate_gbps = 800.0\npower_w_per_end = 1.0\n'
     'price_usd_per_end = 0.0\nsource = "x"\nconfidence = "vendor"\n',
     r"\[medium.m\] reach_m is required for a medium"),
    ('[medium.dac_800g]\nreach_m = 0.0\nsource = "x"\nconfidence = "vendor"\n',
     r"\[medium.dac_800g\] reach_m must be a finite number > 0"),
    ('[switch.qm9700]\nprice_usd = 1.0\n',
     r"\[switch.qm9700\] source is required"),
    ('[switch.qm9700]\nprice_usd = 1.0\nsource = "x"\nconfidence = "sure"\n',
     r"\[switch.qm9700\] confidence must be one of 'vendor'.*got 'sure'"),
    ('[switch.qm9700]\nprise_usd = 1.0\nsource = "x"\nconfidence = "vendor"\n',
     r"\[switch.qm9700\] unknown field 'prise_usd'"),
    ('[router.r1]\nprice_usd = 1.0\n', r"unknown section \[router\]"),
    ('[nic.n]\nmodes = [[0, 400.0]]\npower_w = 1.0\nprice_usd = 1.0\nsource = "x"\n'
     'confidence = "vendor"\n', r"\[nic.n\] modes must be a list of \[ports >= 1"),
    ('[switch.s]\nfamily = "infiniband"\nradix = 8\nport_gbps = 400.0\npower_w = 1.0\n'
     'price_usd = 1.0\nsource = "x"\nconfidence = "vendor"\n'
     'confidence_by_field = { radix = "maybe" }\n',
     r"\[switch.s\] confidence_by_field.radix must be one of"),
    ('[switch\n', r"not valid TOML"),
])
def test_invalid_catalog_files_name_file_entry_and_field(tmp_path, text, match):
    path = write(tmp_path, text)
    with pytest.raises(CatalogError, match=match) as info:
        fo.Catalog.load(path)
    assert str(path) in str(info.value)
    assert isinstance(info.value, ValueError)


def test_missing_catalog_file(tmp_path):
    with pytest.raises(CatalogError, match="no such catalog file"):
        fo.Catalog.load(tmp_path / "nope.toml")


# -- hand-computed bill of materials ----------------------------------------------------------


def test_small_fabric_bill_of_materials_by_hand():
    # Lengths fixed by tier: GPU-leaf 1 m, leaf-spine 40 m.
    est = fo.estimate_cost(two_tier(), layout=fo.Layout(
        length_m_by_tier={"gpu-leaf": 1.0, "leaf-spine": 40.0}))
    # Switches: 3, radix 4 at 400G NDR -> cheapest InfiniBand switch QM9700 ($14k, 747 W), 32
    # twin-port cages of 800G.
    # NICs: one 400G port per GPU -> ConnectX-7 ($1,599, 20 W) beats ConnectX-8 ($1,779).
    # GPU-leaf, 1 m, 400G: the leaf's 800G cage takes a twin-port dac_800g (a splitter to two
    #   400G NIC ports), 0.5 x $250 = $125 per link; a dac_400g would fill a whole cage for
    #   one port. 4 links -> 2 twin-port cables in the 1 m bucket, 2 x 0.1 W each.
    # Leaf-spine, 40 m, 400G: AOC reaches 30 m only. Both ends are 800G cages, so twin-port
    #   modules: sr_800g 2 x 0.5 x $1,000 + fibre (40 + 1 x 50 m bucket) = $1,090; dr_800g
    #   2 x 0.5 x 1,250 + 90 = $1,340 -> sr_800g: 4 links x 2 ends x 0.5 = 4 modules (15 W),
    #   4 fibres of 50 m at $90.
    got = [(r.component, r.kind, r.detail, r.count, r.unit_usd, r.unit_w) for r in est.bom]
    assert got == [
        ("qm9700", "switch", "", 3, 14000.0, 747.0),
        ("cx7", "nic", "", 4, 1599.0, 20.0),
        ("sr_800g", "transceiver", "", 4, 1000.0, 15.0),
        ("dac_800g", "cable", "1 m", 2, 250.0, 0.2),
        ("sr_800g", "fibre", "50 m", 4, 90.0, 0.0),
    ]
    capex = 3 * 14000 + 4 * 1599 + 4 * 1000 + 2 * 250 + 4 * 90  # = 53,256
    power = 3 * 747 + 4 * 20 + 4 * 15 + 2 * 0.2  # = 2,381.4
    assert est.capex_usd == pytest.approx(capex)
    assert est.power_w == pytest.approx(power)
    assert (est.n_endpoints, est.per_endpoint_usd) == (4, pytest.approx(capex / 4))
    assert est.per_endpoint_w == pytest.approx(power / 4)
    # Tiers: each leaf uses 2 GPU-leaf and 2 leaf-spine ports, so half of each leaf goes to
    # each tier; the spine is all leaf-spine.
    assert est.by_tier["gpu-leaf"].usd == pytest.approx(14000 + 4 * 1599 + 2 * 250)
    assert est.by_tier["leaf-spine"].usd == pytest.approx(28000 + 4 * 1000 + 4 * 90)
    # Each leaf uses 2 cages (one twin-port cable end, one twin-port module pair), the spine
    # 2 (4 ports of 400G, two per cage): no switch is given more than its 32 cages.
    assert est.cages == {"L0": (2.0, 32), "L1": (2.0, 32), "S0": (2.0, 32)}
    assert est.over_cages() == []
    assert est.by_tier["gpu-leaf"].links == 4 and est.by_tier["leaf-spine"].links == 4
    assert sum(t.usd for t in est.by_tier.values()) == pytest.approx(est.capex_usd)
    assert sum(t.w for t in est.by_tier.values()) == pytest.approx(est.power_w)
    assert est.by_medium["sr_800g"] == fo.cost.Totals(4360.0, 60.0, 4)
    assert est.by_medium["dac_800g"].links == 4
    assert est.links == [
        {"tier": "gpu-leaf", "medium": "dac_800g", "length_m": 1.0, "links": 4},
        {"tier": "leaf-spine", "medium": "sr_800g", "length_m": 50.0, "links": 4},
    ]


def test_every_row_traces_to_a_catalog_entry_with_source():
    cat = fo.Catalog.default()
    est = fo.estimate_cost(two_tier(), catalog=cat)
    kinds = {"switch": cat.switches, "nic": cat.nics, "transceiver": cat.media,
             "cable": cat.media, "fibre": cat.media}
    for r in est.bom:
        entry = kinds[r.kind][r.component]
        assert r.source == entry.source and r.confidence in CONFIDENCES
        assert r.total_usd == pytest.approx(r.count * r.unit_usd)


def test_scale_up_nvlink_uses_copper_without_transceivers():
    est = fo.estimate_cost(dgx_like())
    # 8 GPUs x 18 NVLinks = 144 copper links, 4 NVSwitch gen 3 ($7k, 120 W, estimates);
    # no NIC (no scale-out link), no module.
    assert [(r.component, r.kind, r.count, r.section) for r in est.bom] == [
        ("nvswitch3", "switch", 4, "in_server"), ("nvlink4_copper", "cable", 144, "in_server")]
    # The chips sit on the server's baseboard: the server price holds them, so the network
    # costs nothing and the chips are reported apart.
    assert est.capex_usd == 0 and est.power_w == 0
    assert (est.scale_up_in_server_usd, est.scale_up_in_server_w) == (4 * 7000, 4 * 120)
    assert "in the system price (scale-up silicon, NICs) 28,000 USD, 480 W" in est.to_table()
    whole = fo.estimate_cost(dgx_like(), include_in_server=True)
    assert (whole.capex_usd, whole.power_w) == (4 * 7000, 4 * 120)
    assert sum(t.usd for t in whole.by_tier.values()) == 4 * 7000
    # Policies do not touch NVLink copper inside the node.
    for policy in ("all_optics", "cpo", "lpo", "power"):
        assert fo.estimate_cost(dgx_like(), policy=policy).scale_up_in_server_usd == 4 * 7000
    with pytest.raises(fo.InvalidParameterError, match="include_in_server must be True or"):
        fo.estimate_cost(dgx_like(), include_in_server="yes")


def test_second_level_nvlink_between_racks_uses_catalog_media():
    # 2 DGX-like nodes, 16 NVLink 4 links each from their NVSwitches to an NVLink Switch box in
    # the central row: 200G links on 800G modules use 1/4 of a module (4 NVLinks per OSFP).
    est = fo.estimate_cost(dgx_like(nodes=2, l2=True),
                           layout=fo.Layout(length_m_by_tier={"nvswitch-l2": 20.0}))
    (l2,) = [row for row in est.links if row["tier"] == "nvswitch-l2"]
    assert l2["links"] == 32 and l2["medium"] == "aoc_800g"  # 20 m: AOC $1,000 x 1/4
    assert est.count("aoc_800g", "cable") == 8  # 32 links x 1/4
    assert est.count("nvlink4_switch", "switch") == 1 and est.count("nvswitch3") == 8


def test_dual_plane_gpu_gets_one_dual_port_nic():
    b = FabricBuilder("dual-plane", {})
    for i in range(2):
        b.gpu(f"g{i}")
    b.switch("P0", 1, 8)
    b.switch("P1", 1, 8)
    for i in range(2):
        b.link(f"g{i}", "P0", 400, "gpu-leaf", "400gbe")
        b.link(f"g{i}", "P1", 400, "gpu-leaf", "400gbe")
    est = fo.estimate_cost(b.build())
    # 2 x 400G per GPU: one ConnectX-8 in 2 x 400G mode ($1,779) beats two ConnectX-7 ($3,198).
    assert est.count("cx8", "nic") == 2 and est.count("cx7") == 0


def test_nic_nodes_are_counted_and_pcie_links_are_free():
    b = FabricBuilder("nic", {})
    b.gpu("g0")
    b.nodes["n0"] = {"role": "nic", "layer": 0, "model": "cx7"}
    b.switch("L0", 1, 8)
    b.link("g0", "n0", 512, "gpu-nic", "pcie5")
    b.link("n0", "L0", 400, "gpu-leaf", "ndr")
    est = fo.estimate_cost(b.build(), layout=fo.Layout(length_m_by_tier={"gpu-leaf": 1.0}))
    assert est.count("cx7", "nic") == 1
    assert "gpu-nic" not in est.by_tier
    assert est.by_tier["gpu-leaf"].links == 1


# -- media at reach boundaries ----------------------------------------------------------------


@pytest.mark.parametrize("length, medium", [
    (1.99, "dac_800g"), (2.01, "acc_800g"),      # passive DAC 800G: 2 m
    (4.99, "acc_800g"), (5.01, "aec_800g"),      # ACC: 5 m
    (6.99, "aec_800g"), (7.01, "aoc_800g"),      # AEC: 7 m
    (29.9, "aoc_800g"), (30.1, "sr_800g"),       # AOC: 30 m
    (49.9, "sr_800g"), (50.1, "dr_800g"),        # SR8: 50 m
    (99.9, "dr_800g"), (100.1, "dr4x2_800g"),    # DR8: 100 m
    (499.0, "dr4x2_800g"), (501.0, "fr_800g"),   # 2 x DR4: 500 m
    (1999.0, "fr_800g"),                         # 2 x FR4: 2 km
])
def test_media_selection_at_reach_boundaries(length, medium):
    # At 800G (share 1 of each 800G medium) the cheapest medium that reaches wins: DAC $250 <
    # ACC $500 < AEC $800 < AOC $1,000 < SR8 2 x $1,000 < DR8 2 x $1,250 < 2xDR4 2 x $1,400 <
    # 2xFR4 2 x $1,700 (plus fibres).
    assert medium_at(length) == medium


# At 400G, reach boundaries are inclusive: dac_800g 2 m, dac_400g 3 m, acc 5 m, aec 7 m,
# aoc 30 m, sr 50 m, dr 100 m, 2 x DR4 500 m, FR4 2 km (docs/hardware.md#media-reach-and-power).
@pytest.mark.parametrize(("length", "medium"), [
    (2.0, "dac_800g"), (2.01, "dac_400g"), (3.0, "dac_400g"), (3.01, "acc_800g"),
    (5.0, "acc_800g"), (5.01, "aec_800g"), (7.0, "aec_800g"), (7.01, "aoc_800g"),
    (30.0, "aoc_800g"), (30.01, "sr_800g"), (50.0, "sr_800g"), (50.01, "dr_800g"),
    (100.0, "dr_800g"), (100.01, "dr4x2_800g"), (500.0, "dr4x2_800g"), (500.01, "fr_800g"),
])
def test_400g_media_at_reach_boundaries(length, medium):
    sel = fo.cost.MediaSelector(fo.Catalog.default(), fo.cost.Policy())
    lm = sel.choose(400.0, length, "400g", "leaf-spine", (True, True), False)
    assert lm.medium.key == medium
    # Per-link power: two ends; a 400G link takes half of an 800G twin-port part.
    share = 400.0 / lm.medium["rate_gbps"]
    assert lm.w == pytest.approx(2 * share * lm.medium["power_w_per_end"])


def test_no_medium_reaches_gives_a_clear_error():
    with pytest.raises(fo.InvalidParameterError,
                       match=r"a medium for a 800 Gb/s 800gbe link of 2001 m in tier 'x'"):
        medium_at(2001.0)
    with pytest.raises(fo.InvalidParameterError, match="1600 Gb/s"):
        medium_at(1.0, gbps=1600.0)


def test_length_bucket():
    # Standard lengths: the shortest that covers the link, capped at the medium's reach.
    assert length_bucket(0.5) == 0.5 and length_bucket(0.51) == 1.0
    assert length_bucket(40.0) == 50.0 and length_bucket(40.0, reach_m=45.0) == 45.0
    assert length_bucket(2100.0) == 2100.0


# -- policies ---------------------------------------------------------------------------------


def test_policy_objective_power():
    # 6 m at 800G: AEC ($800, 2 x 3 W) is both the cheapest and the least power; an AEC of
    # 9 W per end (a user's figure) still wins on cost, but AOC ($1,000, 2 x 8 W) on power.
    assert medium_at(6.0) == medium_at(6.0, policy="power") == "aec_800g"
    hot = fo.Catalog.default().merged({"medium": {"aec_800g": {
        "power_w_per_end": 9.0, "source": "a hotter retimer", "confidence": "estimate"}}})
    assert medium_at(6.0, catalog=hot) == "aec_800g"
    assert medium_at(6.0, policy="power", catalog=hot) == "aoc_800g"


def test_policy_all_optics_and_lpo():
    # 1 m: a DAC by default; pluggable optics only: SR8 (2 x $1,000) is the cheapest.
    assert medium_at(1.0) == "dac_800g"
    assert medium_at(1.0, policy="all_optics") == "sr_800g"
    # 60 m: DR8 by default; with LPO allowed, 2 x $800 + fibre beats 2 x $1,250.
    assert medium_at(60.0) == "dr_800g"
    assert medium_at(60.0, policy="lpo") == "lpo_800g"
    # LPO reaches 500 m: beyond, the policy falls back to the usual optics.
    assert medium_at(600.0, policy="lpo") == "fr_800g"


def test_policy_cpo_replaces_switch_end_modules():
    lay = fo.Layout(length_m_by_tier={"x": 60.0})
    plain = fo.estimate_cost(one_link(), layout=lay)
    cpo = fo.estimate_cost(one_link(), layout=lay, policy="cpo")
    # Both ends are switches: 2 CPO ports (4.5 W, $700 each) instead of 2 DR8 (17 W, $1,250).
    assert plain.count("dr_800g", "transceiver") == 2
    assert cpo.count("cpo_800g", "transceiver") == 2 and cpo.count("dr_800g", "transceiver") == 0
    # Switch to switch, the link is all CPO, fibre included (same $40 + $1/m as the DR8's).
    assert cpo.count("cpo_800g", "fibre") == 1 and [r["medium"] for r in cpo.links] == \
        ["cpo_800g"]
    assert plain.power_w - cpo.power_w == pytest.approx(2 * (17.0 - 4.5))
    assert plain.capex_usd - cpo.capex_usd == pytest.approx(2 * (1250 - 700))
    # GPU to leaf: only the leaf end is CPO; the NIC end keeps its pluggable SR8 and fibre.
    est = fo.estimate_cost(two_tier(gbps=800, tech="800gbe"), policy="cpo",
                           layout=fo.Layout(length_m_by_tier={"gpu-leaf": 40.0,
                                                              "leaf-spine": 40.0}))
    # GPU-leaf: 4 links x 1 share: 4 SR8 at the NICs + 4 CPO ports at the leaves; leaf-spine:
    # 4 links, 8 CPO ports.
    assert est.count("sr_800g", "transceiver") == 4 and est.count("sr_800g", "fibre") == 4
    assert est.count("cpo_800g", "transceiver") == 12
    # A CPO switch has no electrical ports: a 1 m link to it is optical too (SR8 at the NIC).
    est = fo.estimate_cost(two_tier(gbps=800, tech="800gbe"), policy="cpo",
                           layout=fo.Layout(length_m_by_tier={"gpu-leaf": 1.0}))
    assert {r["medium"] for r in est.links if r["tier"] == "gpu-leaf"} == {"sr_800g"}
    assert est.count("dac_800g") == 0


def test_policy_aec_in_row():
    # Two leaves on top of neighbouring racks of one row: 0.6 m apart + 4 m slack = 4.6 m.
    fab = two_racks()
    est = fo.estimate_cost(fab, layout=fo.Layout(gpus_per_rack=8))
    assert [r["medium"] for r in est.links if r["tier"] == "leaf-leaf"] == ["acc_800g"]
    est = fo.estimate_cost(fab, layout=fo.Layout(gpus_per_rack=8), policy="aec_in_row")
    assert [r["medium"] for r in est.links if r["tier"] == "leaf-leaf"] == ["aec_800g"]


def test_policy_forces_medium_by_tier_and_switch_model():
    pol = fo.Policy(medium_by_tier={"leaf-spine": "dr_400g"}, switch_model="sn5600")
    est = fo.estimate_cost(two_tier(tech="400g"), policy=pol,
                           layout=fo.Layout(length_m_by_tier={"leaf-spine": 40.0}))
    assert [r["medium"] for r in est.links if r["tier"] == "leaf-spine"] == ["dr_400g"]
    assert est.count("sn5600", "switch") == 3 and est.count("qm9700") == 0
    with pytest.raises(fo.InvalidParameterError, match=r"medium_by_tier\['x'\] must be a "
                       "medium that carries a 800 Gb/s 800gbe link of 1 m"):
        medium_at(1.0, policy={"medium_by_tier": {"x": "dr_400g"}})


@pytest.mark.parametrize("policy, match", [
    ("fast", r"estimate_cost\(\): policy must be one of 'cost'"),
    ({"objective": "speed"}, r"Policy\(\): objective must be one of 'cost', 'power'"),
    ({"lpo": "yes"}, r"Policy\(\): lpo must be True or False"),
    ({"colour": 1}, r"unknown field 'colour'"),
    ({"medium_by_tier": {"x": "warp"}}, r"medium_by_tier\['x'\] must be a medium key"),
    ({"switch_model": "qm1"}, r"policy.switch_model must be a switch key"),
    (42, r"policy must be None, a Policy"),
])
def test_invalid_policies(policy, match):
    with pytest.raises(fo.InvalidParameterError, match=match):
        fo.estimate_cost(one_link(), policy=policy)


# -- catalog overrides change exactly what they should ----------------------------------------


def rows(est):
    return {(r.component, r.kind, r.detail): (r.count, r.unit_usd, r.unit_w) for r in est.bom}


def test_price_override_changes_only_that_component(tmp_path):
    lay = fo.Layout(length_m_by_tier={"gpu-leaf": 1.0, "leaf-spine": 40.0})
    base = fo.estimate_cost(two_tier(), layout=lay)
    cat = fo.Catalog.load(write(tmp_path, '[switch.qm9700]\nprice_usd = 10000.0\n'
                                'source = "quote"\nconfidence = "vendor"\n'))
    new = fo.estimate_cost(two_tier(), layout=lay, catalog=cat)
    # 3 switches, $4k cheaper each than the default $14k; nothing else moves.
    assert base.capex_usd - new.capex_usd == pytest.approx(3 * 4000)
    assert new.power_w == base.power_w
    a, b = rows(base), rows(new)
    assert a.pop(("qm9700", "switch", "")) == (3, 14000.0, 747.0)
    assert b.pop(("qm9700", "switch", "")) == (3, 10000.0, 747.0)
    assert a == b


def test_reach_override_switches_medium_at_the_new_boundary(tmp_path):
    assert medium_at(2.2) == "acc_800g"  # default DAC 800G reach: 2 m
    cat = fo.Catalog.load(write(tmp_path, '[medium.dac_800g]\nreach_m = 2.5\n'
                                'source = "cable vendor"\nconfidence = "vendor"\n'))
    assert medium_at(2.2, catalog=cat) == "dac_800g"
    assert medium_at(2.6, catalog=cat) == "acc_800g"


def test_new_medium_entry_is_used_when_cheaper(tmp_path):
    cat = fo.Catalog.load(write(tmp_path, """
[medium.cheap_sr]
type = "sr"
rate_gbps = 800.0
reach_m = 60.0
power_w_per_end = 12.0
price_usd_per_end = 500.0
source = "hypothetical"
confidence = "estimate"
"""))
    assert medium_at(40.0, catalog=cat) == "cheap_sr"
    assert medium_at(70.0, catalog=cat) == "dr_800g"  # beyond its 60 m reach


def test_catalog_path_accepted_by_estimate_cost(tmp_path):
    path = write(tmp_path, '[nic.cx7]\nprice_usd = 1000.0\nsource = "q"\nconfidence = "vendor"\n')
    est = fo.estimate_cost(two_tier(), catalog=str(path))
    assert est.count("cx7") == 4
    assert [r.unit_usd for r in est.bom if r.component == "cx7"] == [1000.0]
    with pytest.raises(fo.InvalidParameterError, match="catalog must be None, a Catalog"):
        fo.estimate_cost(two_tier(), catalog=3)


# -- switches ---------------------------------------------------------------------------------


def test_switch_selection_by_radix_rate_and_family():
    # The family follows the links' technology (fabricopt.tiers.tech_family), never the price:
    # 4 ports at 400G Ethernet take the 12.8T rack switch ($7k) over an SN5600 in breakout
    # ($28k); the same ports on NDR take the QM9700 ($14k), though the Ethernet one is cheaper.
    assert fo.estimate_cost(two_tier(tech="400gbe")).count("eth_12t8_tor") == 3
    assert fo.estimate_cost(two_tier(tech="roce")).count("eth_12t8_tor") == 3
    assert fo.estimate_cost(two_tier(tech="ndr")).count("qm9700") == 3
    # 800G ports: Ethernet gets the SN5600 (64 x 800G), XDR the Q3400 (144 x 800G); neither
    # crosses into the other family.
    assert fo.estimate_cost(two_tier(gbps=800, tech="800gbe")).count("sn5600") == 3
    assert fo.estimate_cost(two_tier(gbps=800, tech="xdr")).count("q3400") == 3
    # UALink switches are their own family.
    est = fo.estimate_cost(fo.ualink_pod(8, 2, 2))
    assert est.count("ualink_switch") == 2 and est.count("qm9700") == est.count("q3400") == 0


def test_unknown_or_mixed_technology_is_an_error():
    # A generic "400g" names no family: the cost model cannot choose a switch for it.
    with pytest.raises(fo.InvalidParameterError, match=r"tech of the links of switch 'L0'.*"
                       r"must be a link technology of a known family.*infiniband: ndr.*"
                       r"ethernet: ethernet, roce.*got '400g'"):
        fo.estimate_cost(two_tier(tech="400g"))
    # ... unless the switch's model or the policy's says what it is.
    assert fo.estimate_cost(two_tier(tech="400g"), policy={"switch_model": "qm9700"}
                            ).count("qm9700") == 3
    # A model of the wrong family is refused, whoever names it.
    fab = two_tier(tech="400gbe")
    fab.graph.nodes["L0"]["model"] = "qm9700"
    with pytest.raises(fo.InvalidParameterError, match=r"model of switch 'L0' must be a "
                       r"switch of family 'ethernet'.*qm9700 is infiniband"):
        fo.estimate_cost(fab)
    with pytest.raises(fo.InvalidParameterError, match=r"policy.switch_model must be a "
                       r"switch of family 'infiniband'.*sn5600 is ethernet"):
        fo.estimate_cost(two_tier(tech="ndr"), policy={"switch_model": "sn5600"})
    # One switch carrying InfiniBand and Ethernet links is no device.
    b = FabricBuilder("mixed", {})
    b.switch("A", 1, None)
    b.switch("B", 1, None)
    b.switch("C", 1, None)
    b.link("A", "B", 400, "x", "ndr")
    b.link("A", "C", 400, "x", "400gbe")
    with pytest.raises(fo.InvalidParameterError, match=r"links of switch 'A' must be links of "
                       r"one technology family.*got \['400gbe', 'ndr'\]"):
        fo.estimate_cost(b.build())


def test_switch_model_must_hold_the_ports_it_carries():
    # 64 nodes per SU on 128-port leaves: the 64-port QM9700 the superpod names cannot hold them.
    fab = fo.superpod(1, nodes_per_su=64, leaf_radix=128)
    with pytest.raises(fo.InvalidParameterError, match=r"a switch with 128 ports at >= 400 "
                       r"Gb/s; qm9700 offers 64 x 400 Gb/s"):
        fo.estimate_cost(fab)


def test_switch_model_must_carry_the_link_rate():
    # 800 Gb/s NICs on the QM9700, whose ports run at 400 Gb/s.
    fab = fo.superpod(1, nic_gbps=800)
    with pytest.raises(fo.InvalidParameterError, match=r"a switch with 64 ports at >= 800 "
                       r"Gb/s; qm9700 offers 64 x 400 Gb/s"):
        fo.estimate_cost(fab)


def test_switch_model_errors():
    fab = one_link()
    fab.graph.nodes["A"]["model"] = "qm1"
    with pytest.raises(fo.InvalidParameterError, match=r"model of switch 'A' must be a switch "
                       r"key of the catalog.*got 'qm1'"):
        fo.estimate_cost(fab)
    b = FabricBuilder("big", {})
    b.switch("S", 1, 200)
    b.switch("T", 1, None)
    b.link("S", "T", 400, "x", "ndr")
    with pytest.raises(fo.InvalidParameterError,
                       match=r"infiniband switch of >= 200 ports at >= 400 Gb/s"):
        fo.estimate_cost(b.build())


# -- layout -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, match", [
    ({"gpus_per_rack": 0}, r"Layout\(\): gpus_per_rack must be an integer >= 1, got 0"),
    ({"leaf_placement": "roof"}, r"Layout\(\): leaf_placement must be one of 'top_of_rack'"),
    ({"length_m_by_tier": {"x": -1.0}}, r"length_m_by_tier\['x'\] must be a finite number > 0"),
    ({"length_m_by_tier": [1.0]}, r"length_m_by_tier must be a mapping"),
    ({"slack_m": math.nan}, r"slack_m must be a finite number >= 0"),
    ({"row_pitch_m": "3"}, r"row_pitch_m must be a finite number > 0"),
])
def test_invalid_layouts(kwargs, match):
    with pytest.raises(fo.InvalidParameterError, match=match):
        fo.Layout(**kwargs)


def test_invalid_layout_argument():
    with pytest.raises(fo.InvalidParameterError, match="layout must be None, a Layout"):
        fo.estimate_cost(one_link(), layout="big")
    with pytest.raises(fo.InvalidParameterError, match="unknown field 'racks'"):
        fo.estimate_cost(one_link(), layout={"racks": 3})
    with pytest.raises(fo.InvalidParameterError, match="fab must be a Fabric"):
        fo.estimate_cost("ring")


def test_layout_lengths_per_placement():
    fab = two_racks()
    lay = fo.Layout(gpus_per_rack=8)
    gpu_leaf = lambda est: {r["length_m"] for r in est.links if r["tier"] == "gpu-leaf"}  # noqa
    # Top of rack: every GPU-leaf link stays in the rack (in_rack_m = 2 m).
    assert gpu_leaf(fo.estimate_cost(fab, layout=lay)) == {2.0}
    # End of row: the leaves sit in a network rack 0.6 m before slot 0; server 0 (slot 0):
    # 0.6 + 4 m slack = 4.6 -> 5 m bucket; server 1 (slot 1): 1.2 + 4 = 5.2 -> 7 m bucket.
    est = fo.estimate_cost(fab, layout=fo.Layout(gpus_per_rack=8, leaf_placement="end_of_row"))
    assert gpu_leaf(est) == {5.0, 7.0}
    # Central row: one compute row at y = 0, the network row at y = 3 m (row pitch); leaves in
    # network rack 0 at x = 0: 3 + 4 = 7 m from slot 0, 3.6 + 4 = 7.6 -> 10 m from slot 1.
    est = fo.estimate_cost(fab, layout=fo.Layout(gpus_per_rack=8, leaf_placement="central"))
    assert gpu_leaf(est) == {7.0, 10.0}
    # A tier override beats the layout; slack per tier changes only that tier.
    est = fo.estimate_cost(fab, layout=fo.Layout(gpus_per_rack=8,
                                                 length_m_by_tier={"gpu-leaf": 12.0}))
    assert gpu_leaf(est) == {15.0}
    est = fo.estimate_cost(fab, layout=fo.Layout(gpus_per_rack=8,
                                                 slack_m_by_tier={"leaf-leaf": 0.0}))
    assert [r["length_m"] for r in est.links if r["tier"] == "leaf-leaf"] == [1.0]  # 0.6 m


def test_layout_groups_servers_and_keeps_scale_up_domains_whole():
    # 3 DGX-like nodes of 8 GPUs, 16 GPUs per rack: the scale-up units are never split, so
    # racks hold nodes {0, 1} and {2}.
    fab = dgx_like(nodes=3)
    p = place(fab, fo.Layout(gpus_per_rack=16))
    racks = [int(p.rack[p.index[f"g{n}.0"]]) for n in range(3)]
    assert racks == [0, 0, 1]
    # NVSwitches sit with their GPUs: same unit, so GPU-NVSwitch links are in_node_m long.
    assert p.unit[p.index["nv2.3"]] == p.unit[p.index["g2.5"]]
    # A 72-GPU NVLink domain is larger than a 32-GPU rack: it gets one rack to itself.
    b = FabricBuilder("nvl72-like", {})
    for k in range(18):
        b.switch(f"s{k}", 1, 72, model="nvswitch4")
    for i in range(72):
        b.gpu(f"g{i}")
        for k in range(18):
            b.link(f"g{i}", f"s{k}", 400, "gpu-nvswitch", "nvlink5")
    p = place(b.build(), fo.Layout())
    assert p.racks == 1 and set(p.rack.tolist()) == {0}
    # Without node attributes or NVLink, GPUs form servers of gpus_per_server in order.
    p = place(fo.ring(12), fo.Layout(gpus_per_server=4, gpus_per_rack=8))
    assert p.unit.tolist() == [0] * 4 + [1] * 4 + [2] * 4
    assert p.rack.tolist() == [0] * 8 + [1] * 4


def test_nvl72_like_rack_costs_only_switch_chips():
    b = FabricBuilder("nvl72-like", {})
    for k in range(18):
        b.switch(f"s{k}", 1, 72)  # model None: chosen among NVLink switches by radix and rate
    for i in range(72):
        b.gpu(f"g{i}")
        for k in range(18):
            b.link(f"g{i}", f"s{k}", 400, "gpu-nvswitch", "nvlink5")
    est = fo.estimate_cost(b.build())
    # 72 x 18 = 1,296 NVLink 5 copper links, 18 NVLink 5 switch chips ($15,750, 270 W est.):
    # 72 GPUs are more than a server holds, so the chips are NVLink Switch trays, network.
    assert est.scale_up_in_server_usd == 0
    assert rows(est) == {("nvswitch4", "switch", ""): (18, 15750.0, 270.0),
                         ("nvlink5_copper", "cable", "0.5 m"): (1296, 0.0, 0.0)}


# -- output and ratios ------------------------------------------------------------------------


def test_outputs_table_csv_markdown():
    est = fo.estimate_cost(two_tier())
    table = est.to_table()
    assert "qm9700" in table and "capex" in table and str(est) == table
    parsed = list(csv.DictReader(io.StringIO(est.to_csv())))
    assert len(parsed) == len(est.bom)
    assert sum(float(r["total_usd"]) for r in parsed) == pytest.approx(est.capex_usd)
    assert all(r["source"] for r in parsed)
    md = est.to_markdown()
    assert md.startswith("### Bill of materials: two-tier")
    assert "| qm9700 | switch |" in md and "QM97X0" in md  # the source is listed


def test_per_delivered_gbps_and_network_share():
    est = fo.estimate_cost(two_tier())
    d = est.per_delivered_gbps(SimpleNamespace(per_endpoint_gbps=np.array([100.0, 300.0])))
    # mean 200 Gb/s per GPU
    assert d.per_endpoint_gbps == 200.0
    assert d.usd_per_gbps == pytest.approx(est.per_endpoint_usd / 200.0)
    assert d.w_per_gbps == pytest.approx(est.per_endpoint_w / 200.0)
    with pytest.raises(fo.InvalidParameterError, match="per_endpoint_gbps must be a number > 0"):
        est.per_delivered_gbps(SimpleNamespace(per_endpoint_gbps=0.0))
    with pytest.raises(fo.InvalidParameterError, match="an object with per_endpoint_gbps"):
        est.per_delivered_gbps(3.0)
    # 4 GPUs = half a DGX H100 at the catalog's $270k (the public estimate of its price):
    # share = capex / (capex + 135,000).
    assert est.network_share("dgx_h100") == pytest.approx(
        est.capex_usd / (est.capex_usd + 0.5 * 270000))
    with pytest.raises(fo.InvalidParameterError, match="system must be a catalog system "
                       "with price_usd"):
        est.network_share("dgx_b300")  # the catalog has its power, not its price
    # Power: 4 GPUs = half a DGX H100 at 10.2 kW (V2); the NVL72 rack has a power figure.
    assert est.network_share("dgx_h100", of="power") == pytest.approx(
        est.power_w / (est.power_w + 0.5 * 10200))
    assert 0 < est.network_share("gb200_nvl72", of="power") < 1
    with pytest.raises(fo.InvalidParameterError, match="of must be one of 'capex', 'power'"):
        est.network_share("dgx_h100", of="cooling")


@pytest.mark.parametrize("name, kwargs", [
    ("ring", {"n": 8, "link_gbps": 400}), ("torus", {"dims": (4, 4), "link_gbps": 200}),
    ("hypercube", {"d": 4, "link_gbps": 400}), ("complete", {"n": 5, "link_gbps": 100}),
])
def test_shipped_generators_have_a_bill_of_materials(name, kwargs):
    est = fo.estimate_cost(fo.GENERATORS[name](**kwargs))
    assert est.capex_usd > 0 and est.power_w > 0 and est.bom


DESIGNS = sorted((Path(__file__).resolve().parents[2] / "topologies").glob("*.toml"))


@pytest.mark.skipif(not DESIGNS, reason="no shipped design files yet")
@pytest.mark.parametrize("path", DESIGNS, ids=[p.stem for p in DESIGNS])
def test_shipped_designs_have_a_bill_of_materials(path):
    for fab in load_fabric(str(path), []):
        est = fo.estimate_cost(fab)
        # A single DGX has no network: its only parts are in-server silicon.
        assert est.capex_usd + est.scale_up_in_server_usd > 0
        assert est.power_w + est.scale_up_in_server_w > 0
        assert all(r.source and r.confidence in CONFIDENCES for r in est.bom)


def test_superpod_4su_bill_of_materials_counts():
    # DGX SuperPOD table (B200 RA, docs/hardware.md#dgx-superpod): 4 SU = 128 nodes, 1,024
    # node-leaf and 1,024 leaf-spine cables, 32 leaves and 16 spines: 48 QM9700. One cx7 per
    # GPU (1,024); 4 NVSwitch gen 3 per DGX H100 (128 x 4); 18 NVLinks per GPU on baseboard
    # copper (docs/hardware.md#nvlink-generations).
    est = fo.estimate_cost(fo.superpod(scalable_units=4))
    assert est.by_tier["gpu-leaf"].links == 1024
    assert est.by_tier["leaf-spine"].links == 1024
    assert est.count("qm9700") == 32 + 16
    assert est.count("cx7") == 1024
    assert est.count("nvswitch3") == 128 * 4
    assert est.count("nvlink4_copper") == 1024 * 18


def test_nvlink_switch_system_buys_eighteen_1u_switches():
    # DGX H100 SuperPOD NVLink Switch System: 18 x 1U NVLink Switch, 2 NVSwitch chips each
    # (docs/hardware.md#nvlink-switch-system, V/V2); the 32 x 4 NVSwitch chips inside the DGX nodes
    # stay chips.
    est = fo.estimate_cost(fo.nvlink_switch_system())
    assert est.count("nvlink4_switch") == 18


def test_leaf_spine_bill_of_materials_with_the_default_layout_by_hand():
    # Catalog: qm9700 $14,000 / 747 W (the cheapest InfiniBand switch with >= 3 ports at
    # 400G, for NDR links); cx7 1 x 400G $1,599 / 20 W.
    # Layout defaults: 4 GPUs in one rack, leaves top of rack -> GPU-leaf links 2.0 m
    # (in_rack_m) -> dac_800g (reach 2 m), half a twin-port cable per 400G link in the leaf's
    # 800G cage: 4 links -> 2 cables x $250, 0.1 W per end. Spine in the central row 3 m away
    # (row_pitch_m) + 4 m slack = 7 m -> aec_800g (reach 7 m), 2 links -> 1 cable x $800,
    # 2 x 3 W.
    est = fo.estimate_cost(fo.leaf_spine(2, 1, 2, tech="ndr"))
    rows = {(r.component, r.kind, r.detail): r.count for r in est.bom}
    assert rows == {("qm9700", "switch", ""): 3, ("cx7", "nic", ""): 4,
                    ("dac_800g", "cable", "2 m"): 2, ("aec_800g", "cable", "7 m"): 1}
    assert est.capex_usd == pytest.approx(3 * 14000 + 4 * 1599 + 2 * 250 + 800)
    assert est.power_w == pytest.approx(3 * 747 + 4 * 20 + 2 * 2 * 0.1 + 2 * 3)
    assert est.per_endpoint_usd == pytest.approx(est.capex_usd / 4)
    # Leaves have 2 down + 1 up ports: 2/3 of their price is gpu-leaf.
    assert est.by_tier["gpu-leaf"].usd == pytest.approx(2 * 14000 * 2 / 3 + 4 * 1599 + 500)
    assert est.by_tier["leaf-spine"].usd == pytest.approx(2 * 14000 / 3 + 14000 + 800)


def test_optical_nic_ends_get_a_whole_module_each():
    # leaf_spine(2, 1, 2) under all_optics, default layout (GPU-leaf 2 m, leaf-spine 7 m).
    # A cx7 port (one OSFP cage) takes a whole module: a single-port sr_400g ($700) rather
    # than a whole sr_800g ($1,000); the leaf end takes half of a twin-port sr_800g, two 400G
    # ports in one of the QM9700's 800G cages: 4 links -> 4 sr_400g and 2 sr_800g. Leaf-spine
    # links join switches: half a twin-port sr_800g per end, 2 links x 2 ends / 2 = 2 more.
    est = fo.estimate_cost(fo.leaf_spine(2, 1, 2, tech="ndr"), policy="all_optics")
    modules = {r.component: r.count for r in est.bom if r.kind == "transceiver"}
    assert modules == {"sr_400g": 4, "sr_800g": 4}
    # Cages: a leaf holds 2 x 0.5 (GPU links) + 0.5 (its uplink) = 1.5 twin-port modules, the
    # spine 2 x 0.5 = 1; the ledger says so.
    assert {v: used for v, (used, _) in est.cages.items()} == \
        {"leaf0": 1.5, "leaf1": 1.5, "spine0": 1.0}


TOTALS_FABRICS = [
    lambda: fo.leaf_spine(2, 1, 2, tech="ndr"),
    lambda: fo.cluster("dgx_h100", 2, planes=2, tech="ndr200"),
    lambda: fo.cluster("gb200_nvl72", 1, scale_out="fat_tree", tech="ndr"),
    lambda: fo.ring(8, link_gbps=400),
]


@pytest.mark.parametrize("make", TOTALS_FABRICS)
@pytest.mark.parametrize("policy", [None, "power", "all_optics", "lpo", "cpo", "aec_in_row"])
def test_totals_add_up(make, policy):
    fab = make()
    est = fo.estimate_cost(fab, policy=policy, layout={"leaf_placement": "end_of_row"})
    # The network rows make capex and power; the in-server rows (NVSwitch chips of a DGX
    # baseboard and their NVLink copper) make the in-server totals.
    network = [r for r in est.bom if r.section == "network"]
    in_server = [r for r in est.bom if r.section == "in_server"]
    assert len(network) + len(in_server) == len(est.bom)
    assert sum(r.total_usd for r in network) == pytest.approx(est.capex_usd)
    assert sum(r.total_w for r in network) == pytest.approx(est.power_w)
    assert sum(r.total_usd for r in in_server) == pytest.approx(est.scale_up_in_server_usd)
    assert sum(r.total_w for r in in_server) == pytest.approx(est.scale_up_in_server_w)
    assert sum(t.usd for t in est.by_tier.values()) == pytest.approx(est.capex_usd)
    assert sum(t.w for t in est.by_tier.values()) == pytest.approx(est.power_w)
    # by_medium holds links only: with switches and NICs it makes the whole.
    devices = [r for r in network if r.kind in ("switch", "nic")]
    assert (sum(r.total_usd for r in devices) + sum(t.usd for t in est.by_medium.values())
            == pytest.approx(est.capex_usd))
    assert (sum(r.total_w for r in devices) + sum(t.w for t in est.by_medium.values())
            == pytest.approx(est.power_w))
    assert {t: v.links for t, v in est.by_tier.items() if v.links} == \
        fab.summary().links_by_tier
    assert est.per_endpoint_w * len(fab.endpoints) == pytest.approx(est.power_w)


# -- command line -----------------------------------------------------------------------------


def test_cli_bom(capsys, tmp_path):
    assert main(["bom", "ring", "n=4", "link_gbps=400", "--format", "csv"]) == 0
    out = capsys.readouterr().out
    # One CSV for every fabric named, its first column naming each row's fabric.
    assert out.splitlines()[0].startswith("fabric,component,kind,detail,count")
    # The name carries the rate given away from ring's default of 1 Gb/s (CSV-quoted).
    assert all(line.startswith('"ring(4, link_gbps=400)",') for line in out.splitlines()[1:])
    assert main(["bom", "ring", "n=4", "link_gbps=400", "--policy", "all_optics"]) == 0
    # GPU ends cannot share a twin-port module, so each takes a whole one: a 400G SR module
    # ($700) beats a whole 800G SR module; 4 links x 2 ends = 8 transceivers.
    out = capsys.readouterr().out
    assert "sr_400g" in out and " transceiver              8 " in out
    assert main(["bom", "ring", "n=4", "--format", "markdown"]) == 0
    assert capsys.readouterr().out.startswith("### Bill of materials")
    bad = write(tmp_path, '[switch.qm9700]\nprice_usd = -5.0\nsource = "x"\n'
                'confidence = "vendor"\n')
    assert main(["bom", "ring", "n=4", "--catalog", str(bad)]) == 2
    assert "price_usd must be a finite number >= 0" in capsys.readouterr().err


def test_design_file_layout_and_catalog_tables_reach_the_estimate(tmp_path):
    # A design file's [catalog] table overrides the QM9700 price and its [layout] table moves
    # the leaves to the end of the row: the estimate must use both without being told.
    path = tmp_path / "ft.toml"
    path.write_text(
        'family = "fat_tree"\n'
        '[params]\nk = 4\ntech = "ndr"\n'
        '[layout]\nleaf_placement = "end_of_row"\n'
        '[catalog.switch.qm9700]\nprice_usd = 1000.0\n'
        'source = "test quote"\nconfidence = "vendor"\n')
    fab = fo.load_design(path)
    est = fo.estimate_cost(fab)
    row = next(r for r in est.bom if r.component == "qm9700")
    # k=4 fat-tree: 5 k^2 / 4 = 20 switches at the quoted $1,000 each.
    assert row.count == 20 and row.unit_usd == 1000.0
    # End-of-row leaves lengthen the GPU links, so the media differ from the default
    # top-of-rack layout and match an explicit end-of-row one.
    default = fo.estimate_cost(fo.fat_tree(4, tech="ndr"))
    placed = fo.estimate_cost(fo.fat_tree(4, tech="ndr"), layout={"leaf_placement": "end_of_row"})
    assert set(est.by_medium) == set(placed.by_medium) != set(default.by_medium)



def test_an_unnamed_switch_is_priced_as_one_of_its_link_generation():
    # An NVLink 4 domain whose switches name no model, needing 16 ports of 200 Gb/s each: the
    # NVSwitch gen 2 (36 ports, cheaper) has the port count and rate but speaks NVLink 3, so
    # the gen 3 chip is chosen; a DGX A100's own chips are gen 2.
    fab = fo.nvswitch_domain(gpus=8, switches=4, links_per_gpu=8, link_gbps=200)
    for v in fab.switches:
        fab.graph.nodes[v].pop("model", None)
    chips = [r.component for r in fo.estimate_cost(fab).bom if r.kind == "switch"]
    assert chips == ["nvswitch3"]
    a100 = [r.component for r in fo.estimate_cost(fo.dgx_a100()).bom if r.kind == "switch"]
    assert a100 == ["nvswitch2"]
