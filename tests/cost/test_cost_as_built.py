"""Costs as built: reference builds per design family, modules per port fitted, catalog
ranges and capex ranges, and the total cost of ownership worked by hand."""

import pytest

import fabricopt as fo


# -- costs as built: reference policies, modules per port fitted, ranges --------------------------
@pytest.mark.parametrize("units, modules_per_gpu", [
    # Two tiers (4 SU): half a twin-port OSFP at the DGX's cage + half at the leaf + one
    # leaf-spine link per GPU at 1:1 with half a module at each end = 0.5 + 0.5 + 1 = 2.0.
    (4, 2.0),
    # Three tiers (16 SU): one more 1:1 hop, spine-core, adds 1.0: 3.0 modules per GPU.
    (16, 3.0),
])
def test_superpod_reference_build_fits_modules_per_port(units, modules_per_gpu):
    fab = fo.superpod(scalable_units=units)
    est = fo.estimate_cost(fab)
    assert est.policy_name.startswith("DGX SuperPOD reference build")
    modules = sum(r.count for r in est.bom if r.kind == "transceiver")
    assert modules / len(fab.endpoints) == pytest.approx(modules_per_gpu)
    # No link of the reference build is copper or AOC: every network link has optics.
    assert not any(r.kind == "cable" and r.section == "network" for r in est.bom)
    assert est.policy_name in est.to_table()


def test_other_families_name_how_they_were_priced():
    est = fo.estimate_cost(fo.fat_tree(4))
    assert est.policy_name.startswith("cheapest medium per link")
    assert fo.estimate_cost(fo.fat_tree(4), policy="all_optics").policy_name == "all_optics"
    gb = fo.estimate_cost(fo.cluster(scale_up=fo.gb200_nvl72(), nodes=2,
                                     scale_out="rail_optimized"))
    assert gb.policy_name.startswith("GB200 NVL72 SuperPOD reference build")


def test_every_estimated_price_and_power_has_a_range():
    # A figure read in a source stands alone; an estimated one gives the spread of public
    # figures it was taken from, so capex can be reported as a range.
    from fabricopt.catalog import PRICED_FIELDS

    cat = fo.Catalog.default()
    # Every entry of every kind (GPUs, systems, switches, NICs, media).
    missing = [(e.key, f) for e in cat for f in PRICED_FIELDS
               if e.get(f) and e.confidence_of(f) == "estimate" and f not in e.range_by_field]
    assert missing == []
    # AOC power is the published 2-4 W per end, not a multiple of it.
    assert cat.media["aoc_800g"].range_of("power_w_per_end") == (2.0, 4.0)
    assert 2.0 <= cat.media["aoc_800g"]["power_w_per_end"] <= 4.0


def test_capex_range_by_hand_on_a_ring():
    # ring(4): four ConnectX-8 (price read in a source, no range) and two 0.5 m twin-port DACs
    # whose $250 is an estimate in [100, 400]: capex 4 x 1779 + 2 x 250, range from
    # 4 x 1779 + 2 x 100 to 4 x 1779 + 2 x 400. Power: cx8 30 W in [25, 40], DAC 0.1 W a
    # vendor figure.
    est = fo.estimate_cost(fo.ring(4, link_gbps=400))
    assert est.capex_usd == pytest.approx(4 * 1779 + 2 * 250)
    assert est.capex_usd_range == pytest.approx((4 * 1779 + 2 * 100, 4 * 1779 + 2 * 400))
    dac_w = 2 * 2 * 0.1
    assert est.power_w_range == pytest.approx((4 * 25 + dac_w, 4 * 40 + dac_w))
    lo, hi = est.capex_usd_range
    assert lo <= est.capex_usd <= hi


def test_range_must_hold_the_value():
    with pytest.raises(fo.CatalogError, match="range_by_field.price_usd must be"):
        fo.Catalog.default().merged({"switch": {"qm9700": {
            "price_usd": 20000.0, "range_by_field": {"price_usd": [1.0, 2.0]},
            "source": "x", "confidence": "estimate"}}})


def test_two_to_one_never_costs_more_under_the_reference_build():
    full = fo.estimate_cost(fo.superpod(scalable_units=4))
    half = fo.estimate_cost(fo.superpod(scalable_units=4, oversubscription=2.0))
    assert half.capex_usd < full.capex_usd and half.power_w < full.power_w
    assert half.capex_usd_range[1] < full.capex_usd_range[1]


# -- total cost of ownership ----------------------------------------------------------------------
def test_tco_by_hand_on_a_ring():
    # ring(4): capex 4 x 1779 (cx8) + 2 x 250 (twin-port DACs) = 7,616 USD; power 4 x 30 W +
    # 2 DACs x 2 ends x 0.1 W = 120.4 W.
    tco = fo.estimate_tco(fo.ring(4, link_gbps=400), years=5, usd_per_kwh=0.1, pue=1.3,
                          maintenance=0.1, mttr_hours=24.0)
    kwh_year = 120.4 / 1000 * 8766
    energy = kwh_year * 5 * 1.3 * 0.1                     # 686.03 USD
    maintenance = 0.1 * 7616 * 5                           # 3,808 USD
    # DACs fail at 0.1% a year (ANNUAL_FAILURE_RATES["dac"]): 2 x 0.001 x 5 years x 250 USD.
    replacements = 2 * 0.001 * 5 * 250
    assert tco.capex_usd == pytest.approx(7616)
    assert tco.network_kwh_per_year == pytest.approx(kwh_year)
    assert tco.energy_usd == pytest.approx(energy)
    assert tco.maintenance_usd == pytest.approx(maintenance)
    assert tco.replacement_usd == pytest.approx(replacements)
    assert tco.total_usd == pytest.approx(7616 + energy + maintenance + replacements)
    assert tco.per_gpu_per_year_usd == pytest.approx(tco.total_usd / 4 / 5)
    # Four DAC links, each down while its cable waits 24 h: 4 x 0.001 x 24 / 8766.
    assert tco.expected_failed_links == pytest.approx(4 * 0.001 * 24 / 8766)
    assert "per GPU per year" in str(tco)
    # The kWh shown is the network's own draw, 120.4 W x 8,766 h = 1,055 kWh a year; PUE
    # multiplies it after (1,055 x 1.3 = 1,372 would be the facility's): the text says so.
    assert "1,055 kWh a year drawn, x PUE 1.3" in str(tco)


def test_tco_counts_optics_failures_at_both_ends():
    # Reference SuperPOD (4 SU, 1,024 GPUs): every one of its 2,048 scale-out links has a
    # module at each end at 0.9% a year; 2,048 modules (2.0 per GPU) fail 0.9% a year.
    fab = fo.superpod(scalable_units=4)
    tco = fo.estimate_tco(fab, years=1, mttr_hours=24.0)
    links = sum(run["links"] for run in tco.cost.links if run["tier"] != "gpu-nvswitch")
    assert links == 2 * 1024
    assert tco.expected_failed_links == pytest.approx(links * 2 * 0.009 * 24 / 8766)
    # The fraction a failure sweep takes: those links out of the 2,048 network links.
    assert tco.failed_link_fraction == pytest.approx(2 * 0.009 * 24 / 8766)
    assert sum(tco.replacements.values()) == pytest.approx(2048 * 0.009)
    from fabricopt.cost import tco_metrics

    row = tco_metrics(fab, years=1)
    assert row["tco_usd"] == pytest.approx(tco.total_usd)


@pytest.mark.parametrize("kwargs, match", [
    ({"pue": 0.9}, "pue must be a power usage effectiveness >= 1"),
    ({"years": 0}, "years must be a finite number > 0"),
    ({"usd_per_kwh": -1}, "usd_per_kwh must be a finite number >= 0"),
    ({"estimate": "x"}, "estimate must be a CostEstimate"),
])
def test_tco_rejects(kwargs, match):
    with pytest.raises(fo.InvalidParameterError, match=match):
        fo.estimate_tco(fo.ring(4), **kwargs)
