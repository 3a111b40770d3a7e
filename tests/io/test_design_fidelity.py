"""The shipped designs and their bills of materials agree with their published sources.

Checked for every file of ``topologies/``: it names the design it follows and where it departs;
its switches are of the family of its links' technology; scale-up silicon built into servers is
kept apart from the network; no switch is given more modules than it has cages. And sanity:
an oversubscribed fabric never costs more than the non-blocking one of the same size.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

import pytest

import fabricopt as fo
from fabricopt.tiers import is_scale_up_arc, tech_family

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
DESIGNS = sorted(TOPOLOGIES.glob("*.toml"))
IDS = [p.stem for p in DESIGNS]

# The two leaf-ratio sweeps do not name their source yet (their parameters are being
# revised); every other shipped file must name both.
@cache
def fabrics(path: Path) -> tuple[fo.Fabric, ...]:
    loaded = fo.load_design(path)
    return tuple(loaded if isinstance(loaded, list) else [loaded])


@cache
def estimates(path: Path) -> tuple[fo.cost.CostEstimate, ...]:
    return tuple(fo.estimate_cost(fab) for fab in fabrics(path))


def network_families(fab: fo.Fabric) -> set[str]:
    """Technology families of the fabric's scale-out links."""
    return {tech_family(d["tech"]) for _, _, d in fab.graph.edges(data=True)
            if not is_scale_up_arc(d)}


@pytest.mark.parametrize("path", DESIGNS, ids=IDS)
def test_every_design_file_names_its_source_and_departures(path):
    data = tomllib.loads(path.read_text())
    assert len(data.get("source", "").strip()) > 20, "a source naming the published design"
    assert data.get("departures", "").strip(), "where the file departs from its source"
    fab = fabrics(path)[0]
    assert fab.design["source"] == data["source"]
    assert fab.design["departures"] == data["departures"]


@pytest.mark.parametrize("path", DESIGNS, ids=IDS)
def test_switch_families_follow_the_link_technology(path):
    cat = fo.Catalog.default()
    for fab, est in zip(fabrics(path), estimates(path), strict=True):
        nets = network_families(fab)
        assert None not in nets, "every shipped design names its network technology"
        switches = {r.component for r in est.bom if r.kind == "switch"}
        families = {cat.switches[s]["family"] for s in switches}
        # Network switches are of the network's family; scale-up switches of theirs.
        scale_up = {tech_family(d["tech"]) for _, _, d in fab.graph.edges(data=True)
                    if is_scale_up_arc(d)} & {"nvlink", "ualink"}
        assert families <= nets | scale_up, (fab.name, switches)


def test_meta_roce_cluster_is_ethernet_only():
    # Meta's RoCE cluster (SIGCOMM 2024): Ethernet rack, cluster and aggregation switches; the
    # old model priced it on Quantum-X800 and QM9700 InfiniBand switches.
    path = TOPOLOGIES / "meta-24k-roce.toml"
    (fab,), (est,) = fabrics(path), estimates(path)
    cat = fo.Catalog.default()
    network = {r.component: r.count for r in est.bom
               if r.kind == "switch" and r.section == "network"}
    assert {cat.switches[s]["family"] for s in network} == {"ethernet"}
    # Counts from the paper and the design file's derivation: 3,072 nodes x 8 GPUs / 16 per
    # RTSW = 1,536 RTSWs of 16 down + 18 up (the paper's 1:1.125), 34 x 400G: more than a
    # 32-port 12.8 Tb/s switch, so a 51.2 Tb/s SN5600 in 128 x 400G breakout; 8 zones x 18
    # CTSWs = 144; 18 ATSWs (one per CTSW index) -> 162 chassis.
    assert network == {"sn5600": 1536, "eth_chassis_400g": 144 + 18}
    # Inside a zone 16 GPUs down, 18 up per RTSW; between zones 192:28 (7:1 asked).
    assert fab.summary().links_by_tier["leaf-spine"] == 1536 * 18
    assert fab.summary().links_by_tier["spine-core"] == 144 * 28
    # The top-of-rack build: DAC from the GPUs to the RTSW, single-mode optics above.
    assert est.policy_name.startswith("top-of-rack build")
    media = {cat.media[r.component]["type"] for r in est.bom
             if r.kind in ("transceiver", "cable") and r.section == "network"}
    assert media <= {"dac", "dr", "fr"} and "dac" in media


def test_scale_up_silicon_is_apart_in_servers_and_racks_alike():
    # DGX H100 SuperPOD (4 SU): 128 DGX x 4 NVSwitch gen 3 on the baseboards and the DGX's
    # own 1,024 ConnectX-7, in the server price: reported apart, out of capex. The network is
    # 48 QM9700 + links.
    est = estimates(TOPOLOGIES / "dgx-h100-superpod-4su.toml")[0]
    rows = {(r.component, r.section): r.count for r in est.bom if r.kind in ("switch", "nic")}
    assert rows == {("qm9700", "network"): 48, ("nvswitch3", "in_server"): 512,
                    ("cx7", "in_server"): 1024}
    # $7k a chip (estimate) and $1,599 an adapter (the catalog's cx7).
    assert est.scale_up_in_server_usd == pytest.approx(512 * 7000 + 1024 * 1599)
    assert est.capex_usd == pytest.approx(sum(r.total_usd for r in est.bom
                                              if r.section == "network"))
    assert est.capex_usd + est.scale_up_in_server_usd == pytest.approx(
        fo.estimate_cost(fabrics(TOPOLOGIES / "dgx-h100-superpod-4su.toml")[0],
                         include_in_server=True).capex_usd)
    # GB200 NVL72: the 18 chips are 9 NVLink Switch trays, part of the rack's price as a
    # DGX's NVSwitch chips are part of the server's: reported apart the same way, so the
    # per-GPU network cost of the two compares like with like.
    est = estimates(TOPOLOGIES / "gb200-nvl72.toml")[0]
    assert est.count("nvswitch4") == 18 and est.capex_usd == 0
    assert est.scale_up_in_server_usd == pytest.approx(18 * 15750)  # half a tray a chip


@pytest.mark.parametrize("path", DESIGNS, ids=IDS)
def test_no_switch_is_given_more_modules_than_cages(path):
    for est in estimates(path):
        assert est.over_cages() == [], est.fabric
        # Every switch whose catalog entry gives cages is accounted for.
        assert all(used >= 0 for used, _ in est.cages.values())


@pytest.mark.parametrize("name", ["dgx-h100-superpod-4su", "ethernet-rail-2tier-sn5600",
                                  "alibaba-hpn-dual-plane", "gb200-nvl72-superpod"])
def test_all_optics_fits_the_cages_with_twin_port_modules(name):
    # All optics at 400G on 800G twin-port cages (QM9700: 32 for 64 ports; SN5600: 64): the
    # switch ends take twin-port 800G modules, the NIC ends single-port ones.
    for fab in fabrics(TOPOLOGIES / f"{name}.toml"):
        est = fo.estimate_cost(fab, policy="all_optics")
        assert est.over_cages() == []
        full = max(used / cages for used, cages in est.cages.values())
        assert 0 < full <= 1.0


def test_the_cage_check_catches_single_port_modules_on_a_twin_port_switch():
    # Without twin-port modules in the catalog, a 4 SU SuperPOD's QM9700 leaves would take a
    # single-port 400G module per port: 64 modules in 32 cages. The check must say so.
    fab = fabrics(TOPOLOGIES / "dgx-h100-superpod-4su.toml")[0]
    est = fo.estimate_cost(fab, policy={"all_optics": True,
                                        "exclude": ("sr_800g", "dr_800g", "dr4x2_800g",
                                                    "fr_800g")})
    over = est.over_cages()
    assert over and all(used > cages == 32 for _, used, cages in over)
    assert "more modules than cages" in est.to_table()


@pytest.mark.parametrize("make", [
    # A Clos of 512 GPUs on 64-port switches, and a 3-SU rail-optimized DGX H100 fabric.
    lambda s: fo.clos(endpoints=512, radix=64, oversubscription=s, tech="ndr"),
    lambda s: fo.cluster("dgx_h100", 96, leaf_radix=64, oversubscription=s, tech="ndr",
                         switch_model="qm9700"),
], ids=["clos", "rail"])
def test_oversubscribed_never_costs_more_than_non_blocking(make):
    # Fewer uplinks can only remove switches, ports and links: capex and power at 2:1 (and
    # 3:1) are at most those at 1:1, and 2:1 is strictly cheaper here.
    est = {s: fo.estimate_cost(make(s)) for s in (1.0, 2.0, 3.0)}
    assert est[2.0].capex_usd < est[1.0].capex_usd
    assert est[3.0].capex_usd <= est[2.0].capex_usd
    assert est[2.0].power_w < est[1.0].power_w
    assert est[3.0].power_w <= est[2.0].power_w
