"""The all-reduce bound as a metric of a failure distribution.

:func:`~fabricopt.failure_distribution` (in the analysis floor, below the collectives) takes
extra metrics as functions ``f(failed_fabric, gpus_up) -> Gb/s per GPU``; this module builds
the one for all-reduce, so each failure pattern reports how fast an all-reduce over the GPUs
still up can run at best. A ring of 4 unit links bounds all-reduce busbw by a GPU's 2 Gb/s
out; every single failed link leaves a path whose bound is 1.5 Gb/s:

>>> import fabricopt as fo
>>> d = fo.failure_distribution(fo.ring(4), fo.EverySingle("links"), trials=None,
...                             metrics={"all_reduce": fo.all_reduce_metric(2**30)})
>>> [round(x, 6) for x in d.percentile(50, "all_reduce")]
[1.5, 1.5]
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

from .._checks import check_bool, check_choice, check_message_bytes
from ..fabric import Fabric
from .bounds import collective_bounds

#: Bits per byte: busbw is reported in GB/s, a failure distribution in Gb/s per GPU.
BITS_PER_BYTE = 8.0


def all_reduce_metric(message_bytes: float = 2**30, *,
                      in_network_reduction: bool | str = "auto",
                      ) -> Callable[[Fabric, Sequence[Hashable]], float]:
    """A metric for :func:`~fabricopt.failure_distribution`: the all-reduce bus bandwidth
    bound of the GPUs still up, in Gb/s per GPU (8 x the busbw bound in GB/s).

    The bound is :func:`~fabricopt.collective_bounds`'s (no algorithm on the failed fabric
    is faster), over the GPUs still up; 0 when fewer than two are up or one is cut off.

    Parameters
    ----------
    message_bytes : float
        Buffer size in bytes (default 1 GiB, where bandwidth dominates).
    in_network_reduction : {"auto", True, False}
        As in :func:`~fabricopt.collective_bounds`.

    Examples
    --------
    A ring of 4 unit links: all-reduce moves 2(n-1)/n of the buffer through each GPU's
    2 links of 1 Gb/s each way, so busbw is bounded by 2 Gb/s (0.25 GB/s).

    >>> import fabricopt as fo
    >>> f = all_reduce_metric(2**30)
    >>> fab = fo.ring(4)
    >>> round(f(fab, fab.endpoints), 6)
    2.0
    """
    func = "all_reduce_metric"
    size = check_message_bytes(func, "message_bytes", message_bytes)
    if not isinstance(in_network_reduction, str):
        check_bool(func, "in_network_reduction", in_network_reduction)
    else:
        check_choice(func, "in_network_reduction", in_network_reduction, ("auto",))

    def all_reduce_gbps(failed: Fabric, up: Sequence[Hashable]) -> float:
        up = list(up)
        if len(up) < 2:
            return 0.0
        c = collective_bounds(failed, "all_reduce", message_bytes=size, endpoints=up,
                              in_network_reduction=in_network_reduction)
        return BITS_PER_BYTE * c.busbw_GBps

    return all_reduce_gbps


__all__ = ["BITS_PER_BYTE", "all_reduce_metric"]
