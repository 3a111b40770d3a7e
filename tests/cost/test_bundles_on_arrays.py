"""Pricing's bundles on the arrays' reverse arcs: the bundles pricing finds itself."""

import numpy as np
import pytest

import fabricopt as fo


@pytest.mark.parametrize("fab", [fo.superpod(scalable_units=1), fo.gb200_nvl72(),
                                 fo.cluster("dgx_h100", 4, "clos", radix=8), fo.ring(5)],
                         ids=lambda f: f.name)
def test_bundles_on_the_arrays_reverse_are_the_bundles_found_here(fab):
    """Pricing's bundles take each arc's reverse from the arrays (validation found it): the
    same bundles, kinds and classes as the reverse found by pricing's own search."""
    from fabricopt._unchanged import unchanged
    from fabricopt.cost import reading

    with unchanged(fab):
        fab.validate()
        r = reading.read_fabric(fab, fo.Layout())
        columns = reading._Columns.of_fabric(fab)
        assert columns.reverse is not None
        for back in (columns.reverse, None):
            tier_code, tiers = columns.tier_codes()
            tech_code, techs = columns.tech_codes()
            roles = np.array([{"gpu": 0, "nic": 1}.get(x, 2) for x in columns.roles])
            t, h = columns.tail, columns.head
            pcie = ((roles[t] == 0) & (roles[h] == 1)) | ((roles[t] == 1) & (roles[h] == 0))
            b = reading._bundles(r.placement, fo.Layout(), r.in_server, columns.index, t, h,
                                 pcie, columns.links, columns.capacity / columns.links,
                                 tier_code, tiers, tech_code, techs, back)
            for name in ("u", "v", "links", "kind"):
                assert np.array_equal(getattr(b, name), getattr(r.bundles, name))
            assert b.classes == r.bundles.classes
        # Every link once: half the arcs that are no GPU-NIC PCIe link.
        assert len(r.bundles.u) == int((~pcie).sum()) // 2
