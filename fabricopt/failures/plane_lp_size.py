"""Whether the planes' LP is begun: its size, counted off its routes before any row is
built, against what a time limit leaves.

The planes' LP (:mod:`fabricopt.failures.plane_lp`) takes seconds to assemble and, by its
nonzeros, seconds to minutes to solve. :func:`route_nonzeros` counts the nonzeros of its
route columns off the routes alone (milliseconds), a lower bound of the LP's; :func:`refused`
says whether an LP of so many nonzeros is begun at all. Both decide only whether the LP runs,
never a number it answers.
"""

from __future__ import annotations

from .plane_routes import Classes, PlaneRoutes, bounce_arcs
from .planes import Planes

#: CPU seconds the interior point takes per nonzero of the LP, measured on 2 cores: 34 s for
#: the 360,000 nonzeros of superpod(16) minus 1% of its leaf-spine links; superpod(64)'s
#: 2.4 million did not finish in 20 minutes under load. It decides only whether an LP is
#: begun in the time a limit leaves, never a number.
IPM_SECONDS_PER_NONZERO = 1e-4

#: Without a time limit, the most nonzeros the LP is begun with: its minutes would buy a
#: bracket the caller did not ask to wait for (the intact flow's stands; a ``time_limit``
#: lets a larger LP run in the time it gives).
UNTIMED_MAX_NONZEROS = 1_000_000


def refused(nonzeros: int, time_limit: float | None, built: float, reserve: float = 0.0
            ) -> bool:
    """Whether :func:`~fabricopt.failures.plane_lp.solve_planes` does not begin an LP of
    ``nonzeros`` nonzeros: above :data:`UNTIMED_MAX_NONZEROS` without a time limit; with
    one, when what is left of it after ``built`` seconds and ``reserve`` times as many for
    the proof is less than the LP is expected to take (:data:`IPM_SECONDS_PER_NONZERO`). A
    lower bound of the nonzeros refuses only LPs the count itself would refuse (the limit
    left only shrinks with the build).

    >>> refused(2_000_000, None, 0.0), refused(1_000, None, 0.0), refused(1_000, 1.0, 0.5, 1.0)
    (True, False, True)
    """
    if time_limit is None:
        return nonzeros > UNTIMED_MAX_NONZEROS
    left = time_limit - built * (1.0 + reserve)
    return left <= 0 or nonzeros * IPM_SECONDS_PER_NONZERO > left


def route_nonzeros(pl: Planes, cl: Classes, routes: PlaneRoutes) -> int:
    """The nonzeros of the route columns of the planes' LP over ``routes``
    (:func:`~fabricopt.failures.plane_lp.solve_planes`),
    counted off the routes without building a row: a lower bound of the LP's nonzeros
    (exact for those columns; the shares, volumes, hubs and loads of single routes are not
    counted), which lets an LP too large be refused before its assembly (:func:`refused`).

    Where a class has several routes to a plane, each route (out and in) is a column of its
    own that meets its volume's equality row, its server's NIC row on its leaf, and: the
    plane's arc (direct); the NIC rows of each class spanning the hop, down on one leaf and
    up on the other, and the next leaf's arc (relay); each distinct arc of its bounce. Those
    rows differ from one another, so none of these entries is summed with another.

    >>> import fabricopt as fo
    >>> from fabricopt.failures.planes import plane_structure
    >>> from fabricopt.failures.plane_routes import plane_routes, server_classes
    >>> fab = fo.cluster(fo.nvswitch_domain(4, 2, 4, 400.0), nodes=12, scale_out="clos",
    ...                  tiers=3, oversubscription=2, radix=8, whole_servers=False)
    >>> pl, _ = plane_structure(fab)
    >>> cl = server_classes(pl)
    >>> routes = plane_routes(pl, cl, [False] * pl.n_leaves)   # no leaf relays
    >>> sum(len(r) for r in routes.routes if len(r) > 1)   # spanning servers: two ways up
    24
    >>> route_nonzeros(pl, cl, routes)   # 24 direct routes, out and in, 2 + 1 rows each
    144
    """
    bounces: dict[tuple[int, int], int] = {}
    total = 0
    for (_, _, p), rts in zip(routes.keys, routes.routes, strict=True):
        if len(rts) < 2:
            continue
        for rt in rts:
            if rt.kind == "direct":
                rows = 1
            elif rt.kind == "relay":
                rows = 1 + 2 * len(cl.hops[(rt.leaf, rt.next)][0])
            else:
                key = (rt.leaf, p)
                if key not in bounces:
                    bounces[key] = len(bounce_arcs(pl, rt.leaf, p))
                rows = bounces[key]
            total += 2 * (2 + rows)  # out and in: the equality row, the own NIC, the rest
    return total


__all__ = ["IPM_SECONDS_PER_NONZERO", "UNTIMED_MAX_NONZEROS", "refused", "route_nonzeros"]
