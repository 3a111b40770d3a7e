"""Row values of an all-reduce column for a comparison: the bound, the achievable schedule
and the expected figure side by side, each labelled for what it is."""

from __future__ import annotations

from typing import Any

from ..fabric import Fabric
from .bounds import collective_bounds


def all_reduce_expected_metrics(fab: Fabric, message_bytes: float = 2**30,
                                **options: Any) -> dict[str, Any]:
    """All-reduce busbw three ways: ``_bound`` (no algorithm is faster), ``_achievable`` (a
    schedule that exists, ideal routing), ``_expected`` (as NCCL runs it, calibrated on
    nccl-tests: the measurement-like figure), with the algorithm NCCL would pick.

    ``options`` go to :func:`~fabricopt.collective_bounds` (``scale_out_reduction``...).

    >>> import networkx as nx, fabricopt as fo
    >>> fab = fo.from_networkx(nx.star_graph(8), endpoints=range(1, 9),
    ...                        default_capacity=3600.0)
    >>> row = all_reduce_expected_metrics(fab)
    >>> round(row["all_reduce_bound_busbw_GBps"], 6), row["all_reduce_expected_algorithm"]
    (450.0, 'ring')
    """
    c = collective_bounds(fab, "all_reduce", message_bytes=message_bytes, expected=True,
                          **options)
    e = c.expected or {}
    return {"all_reduce_bound_busbw_GBps": c.busbw_GBps,
            "all_reduce_achievable_busbw_GBps": c.achievable_busbw_GBps,
            "all_reduce_expected_busbw_GBps": e.get("busbw_GBps"),
            "all_reduce_expected_algorithm": e.get("algorithm"),
            "all_reduce_expected_label": e.get("label")}
