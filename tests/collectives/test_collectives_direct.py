"""The all-reduce volume bound on direct-connect fabrics (GPUs linked to GPUs, no switch).

With no switch that reduces, one part per GPU is a valid partition (docs/collectives.md,
"Volume over parts"): the n parts send 2(n-1) S bytes in all over n b bytes/s of egress, b a
GPU's injection, so busbw = 2(n-1)/n S / T <= b. Joining adjacent GPUs into one part (as the
volume bound once did through the GPU-GPU arcs) voids it: the binding bound fell back to the
any-scheme cut, 175 GB/s on ring(8, 400) against a schedule at 100.
"""

import pytest

import fabricopt as fo


@pytest.mark.parametrize(("fab", "gpu_gbps"), [
    (fo.ring(8, link_gbps=400), 2 * 400),           # two ring links per GPU
    (fo.torus((3, 3), link_gbps=400), 4 * 400),     # four torus links per GPU
    (fo.hypercube(3, link_gbps=400), 3 * 400),      # d = 3 links per GPU
])
def test_per_gpu_volume_bound_closes_the_bracket(fab, gpu_gbps):
    bounds = fo.collective_bounds(fab, "all_reduce", message_bytes=2**30)
    b = gpu_gbps / 8  # GB/s each way
    assert bounds.busbw_GBps == pytest.approx(b, rel=1e-9)  # the upper bound of busbw
    assert bounds.achievable_busbw_GBps == pytest.approx(b, rel=1e-9)  # a schedule reaches it
    volume = next(x for x in bounds.bounds if x.name == "volume")
    assert volume.busbw_GBps == pytest.approx(b, rel=1e-9)
    assert f"{len(fab.endpoints)} parts" in volume.why  # one part per GPU
