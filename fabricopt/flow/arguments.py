"""The arguments of :func:`~fabricopt.max_concurrent_flow`, checked before any work."""

from __future__ import annotations

from typing import Any

from .._checks import check_bool, check_choice, check_int, check_positive
from ..errors import InvalidParameterError
from ..fabric import check_fabric
from ..traffic import Traffic, checked_traffic
from .approx import check_gap
from .backends import BACKENDS

#: The methods of :func:`~fabricopt.max_concurrent_flow`.
METHODS = ("auto", "lp", "symmetric", "approx")


def checked_arguments(fab: Any, traffic: Any, method: Any, backend: Any, time_limit: Any,
                       include_endpoint_links: Any, gap: Any, progress: Any
                       ) -> tuple[Traffic, bool, float, bool | None]:
    """The arguments of :func:`max_concurrent_flow`, checked before any work."""
    func = "max_concurrent_flow"
    check_fabric(func, fab)
    check_choice(func, "method", method, METHODS)
    check_choice(func, "backend", backend, BACKENDS)
    include_endpoint_links = check_bool(func, "include_endpoint_links", include_endpoint_links)
    if time_limit is not None:
        check_positive(func, "time_limit", time_limit)
    gap = check_gap(func, gap)
    if progress is not None:
        progress = check_bool(func, "progress", progress)
    traffic = checked_traffic(func, fab, traffic)
    return traffic, include_endpoint_links, gap, progress


def check_stage_and_work(backend: str, bounds_first: Any, work_limit: Any,
                          backend_options: dict[str, Any]
                          ) -> tuple[bool | None, int | None, dict[str, Any]]:
    """``bounds_first`` and ``work_limit`` checked, and the backend options with the
    iteration limit ``work_limit`` sets (the caller's own options win)."""
    if bounds_first is not None:
        bounds_first = check_bool("max_concurrent_flow", "bounds_first", bounds_first)
    if work_limit is not None:
        # HiGHS keeps iteration limits in a 32-bit int.
        work_limit = check_int("max_concurrent_flow", "work_limit", work_limit, minimum=1,
                               maximum=2**31 - 1)
        backend_options = {**work_limit_options("max_concurrent_flow", backend, work_limit),
                           **backend_options}
    return bounds_first, work_limit, backend_options


def work_limit_options(func: str, backend: str, work_limit: int) -> dict[str, Any]:
    """The backend options that cap an LP solve at ``work_limit`` iterations."""
    if backend == "highs":
        return {"maxiter": work_limit}
    if backend == "highspy":
        return {"simplex_iteration_limit": work_limit, "ipm_iteration_limit": work_limit}
    raise InvalidParameterError(f"{func}(): work_limit needs backend 'highs' or 'highspy', "
                                f"got backend={backend!r}")


__all__ = ["METHODS", "check_stage_and_work", "checked_arguments", "work_limit_options"]
