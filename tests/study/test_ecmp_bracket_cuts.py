"""The ECMP bracket that decides large asymmetric candidates of optimize: its upper end
includes the fabric's hierarchy cuts."""

from __future__ import annotations

import pytest

import fabricopt as fo
from fabricopt.flow.api import cheap_bracket
from fabricopt.study.metrics import ecmp_bracket


def test_hierarchy_cut_closes_what_the_distance_bound_leaves_open():
    # 16 DGX H100 behind a 3:1 Clos of radix 64: 48 ports down hold 6 whole servers, so
    # 3 leaves of 5, 5 and 6 servers (40, 40, 48 GPUs), 16 uplinks each: no symmetry.
    fab = fo.cluster(fo.dgx_h100(), nodes=16, scale_out="clos", radix=64, oversubscription=3)
    n = len(fab.endpoints)
    lower, upper = ecmp_bracket(fab)
    # A server's 8 GPUs send bw x 8 x 120 / 127 out over its 8 NICs of 400 Gb/s:
    # bw <= 3,200 x 127 / 960 = 423.33; the fullest leaf's 48 GPUs send bw x 48 x 80 / 127
    # over 16 uplinks: bw <= 6,400 x 127 / 3,840 = 211.67 Gb/s per GPU, the tighter cut; the
    # distance and endpoint-link bounds (NVLink counted) stay above 2,000.
    assert upper == pytest.approx(6400 * 127 / 3840, rel=1e-9)
    assert cheap_bracket(fab, fo.all_to_all(fab, gbps=1.0)).upper * (n - 1) > 2000
    # The certificate: the exact optimum lies inside the bracket.
    r = fo.max_concurrent_flow(fab)
    assert r.exact
    assert lower <= r.theta * (n - 1) * (1 + 1e-9)
    assert r.theta * (n - 1) <= upper * (1 + 1e-9)
