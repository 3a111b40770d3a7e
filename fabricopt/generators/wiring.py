"""Sizing and wiring of the scale-out switch tiers, shared by every generator that builds them.

Two plans: a folded Clos (:class:`ClosPlan`, sized by :func:`clos_plan` from the switch radix,
wired by :func:`add_clos`) and a rail-optimized fabric (:class:`RailPlan`, :func:`rail_plan`,
:func:`add_rail_scale_out`), whose rail-only form (no spine) makes each rail a Clos of its own
when a rail needs several leaves. The wiring functions hang the switches above attachment points
already in a builder, so the stand-alone generators (:func:`~fabricopt.clos`,
:func:`~fabricopt.rail_optimized`) and the cluster generators (:func:`~fabricopt.cluster`,
:func:`~fabricopt.superpod`), whose GPUs sit in scale-up domains, build the same network.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._checks import check_int, check_int_sequence, check_positive, fail
from ..errors import InvalidParameterError
from ._builder import FabricBuilder

# Ratios such as 1/3 are not exact in binary; without this slack floor(64 * s / (1 + s)) would
# give 15 down ports for s = 1/3 instead of the 16 the user means.
_RATIO_SLACK = 1e-9


def split_ports(func: str, radix: int, oversubscription: float) -> tuple[int, int]:
    """Leaf ports towards endpoints (down) and towards spines (up) for a down:up ratio.

    ``down = floor(radix * s / (1 + s))`` and ``up = radix - down``: every port is used and the
    ratio built, ``down / up``, never exceeds the ``s`` asked for.

    >>> split_ports("clos", 64, 1.0), split_ports("clos", 64, 3.0), split_ports("clos", 64, 2.0)
    ((32, 32), (48, 16), (42, 22))
    """
    # s / (1 + s) first: radix * s overflows to inf for an s near the float maximum.
    down = math.floor(radix * (oversubscription / (1 + oversubscription)) + _RATIO_SLACK)
    if down < 1:
        raise InvalidParameterError(
            f"{func}(): radix={radix} at oversubscription={oversubscription!r} leaves no leaf "
            f"port for endpoints (down = floor(radix * s / (1 + s)) = 0)")
    if down >= radix:
        raise InvalidParameterError(
            f"{func}(): radix={radix} at oversubscription={oversubscription!r} leaves no spine "
            f"port (down = floor(radix * s / (1 + s)) = {down} = radix, up = 0)")
    return down, radix - down


def leaf_uplinks(func: str, radix: int, oversubscription: float, down: int) -> int:
    """Uplinks a leaf with ``down`` endpoint ports needs to build the ratio asked.

    ``up = ceil(down / s)``: the ratio built, ``down / up``, is the largest not above ``s``
    (the nearest from below), and a leaf whose endpoints leave ports free keeps them idle
    rather than adding uplinks the ratio does not ask for. ``down + up`` must fit the radix.

    >>> leaf_uplinks("clos", 64, 2.0, 32), leaf_uplinks("clos", 64, 3.0, 32)
    (16, 11)
    """
    # At least one uplink: a ratio above ``down`` asks for less than one, and a leaf without
    # an uplink would cut its endpoints off.
    need = down / oversubscription  # inf for a tiny s: more than any radix, no ceil() of it
    up = max(1, math.ceil(need - _RATIO_SLACK)) if need <= radix else None
    if up is None or down + up > radix:
        raise InvalidParameterError(
            f"{func}(): a leaf with {down} endpoint ports needs {up or f'{need:.4g}'} uplinks at "
            f"oversubscription={oversubscription!r} (up = ceil(down / s)), more than the "
            f"{radix - down} ports its radix {radix} leaves")
    return up


def fewest_uppers(lower: int, up: int, upper_radix: int) -> int:
    """Fewest switches of ``upper_radix`` ports that take ``up`` links from each of ``lower``
    switches: ``ceil(lower * up / upper_radix)``, at least one.

    Bundles need not be equal (see :func:`bundle_links`): 8 leaves of 11 uplinks fit two
    64-port spines.

    >>> fewest_uppers(8, 11, 64), fewest_uppers(8, 32, 64), fewest_uppers(24, 16, 64)
    (2, 4, 6)
    """
    return max(1, -(-lower * up // upper_radix))


def bundle_links(i: int, j: int, up: int, uppers: int) -> int:
    """Links between lower switch ``i`` and upper switch ``j`` when every lower switch spreads
    ``up`` links over ``uppers`` upper switches.

    Each pair gets ``up // uppers`` links; the ``e = up % uppers`` extra links of lower switch
    ``i`` go to the ``e`` upper switches ``i * e, ..., i * e + e - 1`` (mod ``uppers``). These
    windows tile the cycle, so the upper switches differ by at most one link: the busiest one
    takes ``ceil(lower * up / uppers)``, which fits its radix whenever ``uppers`` is
    :func:`fewest_uppers`.

    >>> [[bundle_links(i, j, 3, 2) for j in range(2)] for i in range(4)]
    [[2, 1], [1, 2], [2, 1], [1, 2]]
    """
    base, extra = divmod(up, uppers)
    return base + int((j - i * extra) % uppers < extra)


@dataclass(frozen=True)
class UpperTiers:
    """How the leaves of a fabric are joined above: spines, and pods under a core.

    Attributes
    ----------
    tiers : int
        Switch tiers built: 1 (a single leaf), 2 (leaves and spines) or 3 (pods and a core).
    up : int
        Uplinks of every leaf.
    leaves_per_pod, pods : int
        Three tiers: the spine's down ports (``spine_radix // 2`` at 1:1) leaves per pod, the
        last pod possibly partly filled. Otherwise the leaf count and 1.
    spines : int
        Two tiers: the fewest spines that take every uplink (:func:`fewest_uppers`), leaf
        ``i`` joined to spine ``j`` by :meth:`leaf_spine_links_of` links. Three tiers: spines
        per pod, ``up``, one link to each leaf of the pod.
    spine_up, cores_per_group : int
        Three tiers: uplinks of every spine, and the fewest cores of a group taking them:
        spine ``j`` of every pod joins the cores of group ``j`` (pod ``p`` to core ``m`` by
        :meth:`spine_core_links_of` links). Otherwise 0.
    spine_radix, core_radix : int
        Ports of spines and cores (0 where the tier is not built).
    """

    tiers: int
    up: int
    leaves_per_pod: int
    pods: int
    spines: int
    spine_up: int = 0
    cores_per_group: int = 0
    spine_radix: int = 0
    core_radix: int = 0
    starts: tuple[int, ...] | None = None

    @property
    def leaf_spine_links(self) -> int:
        """Links between a leaf and a spine (of its pod): the smaller bundle when they differ."""
        return self.up // self.spines if self.tiers == 2 else int(self.tiers == 3)

    @property
    def spine_core_links(self) -> int:
        """Links between a spine and a core of its group (the smaller bundle); 0 below 3 tiers."""
        return self.spine_up // self.cores_per_group if self.tiers == 3 else 0

    @property
    def equal_bundles(self) -> bool:
        """True when every leaf-spine and spine-core bundle holds the same number of links."""
        if self.tiers == 2:
            return self.up % self.spines == 0
        return self.tiers != 3 or self.spine_up % self.cores_per_group == 0

    @property
    def symmetric(self) -> bool:
        """True when the bundles are equal, or unequal in the rotation-invariant pattern of
        ``starts`` (see :func:`rotation_starts`)."""
        return self.equal_bundles or (self.tiers == 2 and self.starts is not None)

    def leaf_spine_links_of(self, i: int, j: int) -> int:
        """Links between leaf ``i`` (index in wiring order) and spine ``j``."""
        if self.tiers != 2:
            return 1
        if self.starts is None:
            return bundle_links(i, j, self.up, self.spines)
        base, extra = divmod(self.up, self.spines)
        return base + int((j - self.starts[i]) % self.spines < extra)

    def leaf_spine_orbit(self, i: int, j: int) -> str | None:
        """Orbit label of the bundle of leaf ``i`` and spine ``j`` under the rotations of
        ``starts``; None where the tier is one orbit (equal bundles, or no pattern)."""
        if self.tiers != 2 or self.equal_bundles or self.starts is None:
            return None
        return f"leaf-spine:{(j - self.starts[i]) % self.spines}"

    def leaf_spine_pairs(self, leaves: Sequence[Hashable], spines: Sequence[Hashable]
                         ) -> tuple[list[Hashable], list[Hashable], list[int], list[str] | None]:
        """The bundles of a two-tier plan, leaf by leaf and spine by spine: each pair's
        leaf, spine, :meth:`leaf_spine_links_of` and :meth:`leaf_spine_orbit` (None for all
        when every pair's is None), pairs without links left out. As arrays: a method call
        per pair was most of the wiring of a 15,360-GPU pod (7,200 pairs a plane).

        >>> plan = UpperTiers(tiers=2, up=3, leaves_per_pod=0, pods=0, spines=2)
        >>> plan.leaf_spine_pairs(["a", "b"], ["x", "y"])
        (['a', 'a', 'b', 'b'], ['x', 'y', 'x', 'y'], [2, 1, 1, 2], None)
        """
        k = len(spines)
        i = np.repeat(np.arange(len(leaves), dtype=np.int64), k)
        j = np.tile(np.arange(k, dtype=np.int64), len(leaves))
        if self.tiers != 2 or not len(i):
            counts = np.ones(len(i), dtype=np.int64)
        else:
            base, extra = divmod(self.up, self.spines)
            start = (i * extra if self.starts is None
                     else np.asarray(self.starts, dtype=np.int64)[i])
            counts = base + ((j - start) % self.spines < extra)
        keep = np.flatnonzero(counts)
        orbits = None
        if self.tiers == 2 and not self.equal_bundles and self.starts is not None:
            labels = [f"leaf-spine:{r}" for r in range(self.spines)]
            rotation = (j - np.asarray(self.starts, dtype=np.int64)[i]) % self.spines
            orbits = list(map(labels.__getitem__, rotation[keep].tolist()))
        return (list(map(leaves.__getitem__, i[keep].tolist())),
                list(map(spines.__getitem__, j[keep].tolist())), counts[keep].tolist(), orbits)

    def with_rotations(self, shape: Sequence[int]) -> UpperTiers:
        """This plan with unequal leaf-spine bundles laid out by :func:`rotation_starts` for
        leaves indexed by a grid of ``shape`` (row-major), when that fits the spines."""
        if self.tiers != 2 or self.equal_bundles:
            return self
        starts = rotation_starts(shape, self.up, self.spines, self.spine_radix)
        return dataclasses.replace(self, starts=starts)

    def spine_core_links_of(self, p: int, m: int) -> int:
        """Links between spine ``j`` of pod ``p`` and core ``m`` of group ``j``."""
        return bundle_links(p, m, self.spine_up, self.cores_per_group)


def rotation_starts(shape: Sequence[int], up: int, uppers: int, upper_radix: int
                    ) -> tuple[int, ...] | None:
    """Where each lower switch's extra links start, so that rotations act on the wiring.

    Lower switches are indexed by a grid ``shape`` (for rail leaves: rails x leaves per rail),
    row-major. Each spreads ``up`` links over ``uppers`` upper switches, ``up // uppers`` to
    each and one more to the ``e = up % uppers`` upper switches from its start (mod
    ``uppers``). With step ``a_k = uppers / gcd(uppers, n_k)`` per axis of size ``n_k``, the
    start of switch ``(c_1, c_2, ...)`` is ``sum c_k a_k``: rotating axis ``k`` by one and the
    upper switches by ``a_k`` is then an automorphism (``n_k a_k`` is a multiple of
    ``uppers``), and the bundle of lower ``c`` and upper ``j`` lies in the orbit
    ``(j - start(c)) mod uppers``. None when an upper switch would need more than
    ``upper_radix`` ports.

    >>> rotation_starts((8, 3), 32, 12, 64)[:4]    # 3 SU of DGX: 8 rails x 3 leaves
    (0, 4, 8, 3)
    """
    steps = [uppers // math.gcd(uppers, n) for n in shape]
    starts = [0]
    for n, step in zip(shape, steps, strict=True):
        starts = [(s + c * step) % uppers for s in starts for c in range(n)]
    base, extra = divmod(up, uppers)
    load = [base * len(starts)] * uppers
    for s in starts:
        for t in range(extra):
            load[(s + t) % uppers] += 1
    return tuple(starts) if max(load) <= upper_radix else None


def upper_tiers(func: str, leaves: int, up: int, tiers: int, spine_radix: int, core_radix: int,
                spine_oversubscription: float = 1.0) -> UpperTiers:
    """Size the tiers above ``leaves`` leaves of ``up`` uplinks each; arguments assumed checked.

    Two tiers: :func:`fewest_uppers` spines. Three tiers: pods of ``h`` leaves under ``up``
    spines each, ``h, u = spine_ports(spine_radix, s)`` spine ports down and up, and core
    groups of :func:`fewest_uppers` cores. A tier above a single switch of the tier below
    carries no traffic and is not built: one leaf stands alone, one pod is a leaf-spine. The
    caller checks the reach (two tiers: ``leaves <= spine_radix``; three: ``pods <=
    core_radix``).

    >>> t = upper_tiers("clos", 8, 11, 2, 64, 64)
    >>> t.spines, t.equal_bundles, [t.leaf_spine_links_of(0, j) for j in range(2)]
    (2, False, [6, 5])
    """
    if leaves == 1:
        return UpperTiers(1, up, 1, 1, 0)
    if tiers == 3:
        per_pod, spine_up = spine_ports(func, spine_radix, spine_oversubscription)
        pods = -(-leaves // per_pod)
        if pods > 1:
            return UpperTiers(3, up, per_pod, pods, up, spine_up,
                              fewest_uppers(pods, spine_up, core_radix), spine_radix, core_radix)
    return UpperTiers(2, up, leaves, 1, fewest_uppers(leaves, up, spine_radix), 0, 0,
                      spine_radix)


class _ReadsUpperTiers:
    """A plan whose tiers, up, spines, pods, leaves_per_pod, ... are its ``upper`` tiers'."""

    upper: UpperTiers

    def __getattr__(self, name: str) -> Any:
        if name == "upper":  # not set yet (copying, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.upper, name)


@dataclass(frozen=True)
class ClosPlan(_ReadsUpperTiers):
    """The sizes of a folded Clos, as :func:`clos_plan` derives them.

    Attributes
    ----------
    endpoints, radix : int
        Endpoint count and leaf radix.
    down : int
        Leaf ports the ratio allows towards endpoints (``floor(r * s / (1 + s))``, or the
        count given); the leaf count is ``ceil(endpoints / down)``.
    leaves, unit : int
        Leaf ``i`` holds endpoints ``leaf_endpoints(i)``, spread evenly in whole units of
        ``unit`` (a server's; ``down`` a multiple of it), so a leaf may use fewer ports.
    upper : UpperTiers
        Uplinks per leaf (``ceil(fullest leaf / s)``), spines, pods and cores; its fields
        (``tiers``, ``up``, ``spines``, ``pods``, ...) read as the plan's own.
    ratio_built : float
        The leaf down:up ratio built: the fullest leaf's endpoints over its uplinks.
    symmetric : bool
        True when every leaf and pod is alike (the leaf count divides the endpoints, every pod
        is full, and bundles are equal), so pod, leaf, spine, core and endpoint permutations
        act transitively on the endpoints.
    """

    endpoints: int
    radix: int
    down: int
    leaves: int
    upper: UpperTiers
    ratio_built: float
    symmetric: bool
    unit: int = 1

    def leaf_endpoints(self, i: int) -> range:
        """The endpoints under leaf ``i``: units (of ``unit`` endpoints) spread evenly over
        the leaves (counts differ by at most one), as a cabling plan balances them.

        >>> p = clos_plan("clos", 100, 64, 2, 2.0)  # 42 down: 3 leaves
        >>> [len(p.leaf_endpoints(i)) for i in range(p.leaves)]
        [33, 33, 34]
        """
        n, k, u = self.endpoints // self.unit, self.leaves, self.unit
        return range(i * n // k * u, (i + 1) * n // k * u)


def per_tier(radix: int | Sequence[int], tiers: int, oversubscription: float | Sequence[float]
             ) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """Radix of each tier and oversubscription of each tier but the top, from either form.

    A single radix serves every tier; a single oversubscription applies at the leaf, the
    spine of a three-tier fabric being 1:1. Arguments are assumed checked.

    >>> per_tier(64, 3, 2.0), per_tier([32, 220, 64], 3, [1.0, 7.0])
    (((64, 64, 64), (2.0, 1.0)), ((32, 220, 64), (1.0, 7.0)))
    """
    radices = (radix,) * tiers if isinstance(radix, int) else tuple(radix)
    if isinstance(oversubscription, int | float):
        overs = (float(oversubscription),) + (1.0,) * (tiers - 2)
    else:
        overs = tuple(float(x) for x in oversubscription)
    return radices, overs


def spine_ports(func: str, radix: int, oversubscription: float) -> tuple[int, int]:
    """Spine ports towards leaves (one per leaf of the pod) and towards the core.

    ``down = floor(r * s / (1 + s))`` as at a leaf, and ``up = min(r - down, ceil(down / s))``:
    no more up ports than the ratio needs, so at 1:1 an odd radix leaves a port unused.

    >>> spine_ports("clos", 64, 1.0), spine_ports("clos", 220, 7.0), spine_ports("clos", 5, 1.0)
    ((32, 32), (192, 28), (2, 2))
    """
    down, rest = split_ports(func, radix, oversubscription)
    return down, min(rest, math.ceil(down / oversubscription - _RATIO_SLACK))


def clos_reach(func: str, radix: int | Sequence[int], tiers: int,
               oversubscription: float | Sequence[float], down: int | None = None) -> int:
    """Largest endpoint count ``tiers`` tiers reach (see :func:`clos`); ``down`` fixes the
    leaf's endpoint ports instead of the ratio.

    >>> clos_reach("clos", 64, 2, 1.0), clos_reach("clos", [32, 220, 64], 3, [1.0, 7.0])
    (2048, 196608)
    """
    radices, overs = per_tier(radix, tiers, oversubscription)
    if down is None:
        down, _ = split_ports(func, radices[0], overs[0])
    if tiers == 2:
        return radices[1] * down
    return radices[2] * spine_ports(func, radices[1], overs[1])[0] * down


def clos_plan(func: str, endpoints: int, radix: int | Sequence[int], tiers: int,
              oversubscription: float | Sequence[float], down: int | None = None,
              unit: int = 1) -> ClosPlan:
    """Size the smallest folded Clos of radix-``radix`` switches for ``endpoints`` endpoints.

    Arguments are assumed checked; ``radix`` and ``oversubscription`` may be given per tier
    (see :func:`per_tier`); ``down``, when given, fixes the leaf's endpoint ports (a SuperPOD
    puts one scalable unit on a leaf); ``func`` names the caller in errors. See :func:`clos`
    for the formulas. ``unit`` endpoints in a row (a server) stay under one leaf when they can.

    >>> p = clos_plan("clos", 2048, 64, 2, 1.0)
    >>> p.leaves, p.spines, p.leaf_spine_links
    (64, 32, 1)
    >>> p = clos_plan("clos", 96, 64, 2, 2.0)   # 3 leaves of 32: 2:1 is 16 uplinks, not 22
    >>> p.leaves, p.up, p.spines, p.ratio_built
    (3, 16, 1, 2.0)
    """
    radices, overs = per_tier(radix, tiers, oversubscription)
    leaf_radix = radices[0]
    unit, down = (unit, split_ports(func, leaf_radix, overs[0])[0]) if down is None else (1, down)
    whole = down - down % unit  # whole servers under a leaf: 40 of 42 ports at 2:1, radix 64
    if endpoints % unit or not whole or endpoints > clos_reach(func, radices, tiers, overs, whole):
        unit = 1  # a server cannot stay whole: endpoints spread one by one
    down -= down % unit
    reach = clos_reach(func, radices, tiers, overs, down)
    if endpoints > reach:
        shown = radices[0] if len(set(radices)) == 1 else list(radices)
        ratio = overs[0] if len(overs) == 1 or overs[1:] == (1.0,) else list(overs)
        raise InvalidParameterError(
            f"{func}(): {tiers} tiers of radix-{shown} switches reach at most {reach} endpoints "
            f"at oversubscription {ratio!r}, got endpoints={endpoints}")
    leaves = -(-endpoints // down)
    fullest = -(-(endpoints // unit) // leaves) * unit
    up = leaf_uplinks(func, leaf_radix, overs[0], fullest)
    upper = upper_tiers(func, leaves, up, tiers, radices[1],
                        radices[2] if tiers == 3 else 0, overs[1] if tiers == 3 else 1.0
                        ).with_rotations((leaves,))
    # Endpoints spread evenly make all leaves alike when the count divides; pods must be full.
    symmetric = ((endpoints // unit) % leaves == 0 and leaves % upper.leaves_per_pod == 0
                 and upper.symmetric)
    return ClosPlan(endpoints, leaf_radix, down, leaves, upper, fullest / up, symmetric, unit)


def wire_upper_tiers(b: FabricBuilder, leaves: Sequence[Hashable], upper: UpperTiers,
                     layer: int, gbps: float, tech: str, switch_model: str | None,
                     names: tuple[str, str, str], **attrs: Any) -> None:
    """Add the spines (and pods and cores) of ``upper`` above ``leaves`` (in pod order).

    ``names`` formats the spine of two tiers (``{j}``), the spine of three (``{p}``, ``{j}``)
    and the core (``{j}``, ``{m}``); spines sit at ``layer``, cores above; ``attrs`` go on
    every switch. In three tiers the leaves and spines get ``pod``.
    """
    # Links go to the builder a tier at a time (FabricBuilder.add_links: one call per link
    # was most of the wiring of a 24,576-GPU cluster), in the order of one call per link.
    if upper.tiers == 2:
        spines = [b.switch(names[0].format(j=j), layer, upper.spine_radix, switch_model,
                           **attrs) for j in range(upper.spines)]
        lower, higher, counts, orbits = upper.leaf_spine_pairs(leaves, spines)
        if lower:
            b.add_links(lower, higher, gbps, "leaf-spine", tech, links=counts, orbit=orbits)
        return
    if upper.tiers != 3:
        return
    cores = [[b.switch(names[2].format(j=j, m=m), layer + 1, upper.core_radix, switch_model,
                       **attrs) for m in range(upper.cores_per_group)]
             for j in range(upper.spines)]
    per_pod = upper.leaves_per_pod
    for p in range(upper.pods):
        spines = [b.switch(names[1].format(p=p, j=j), layer, upper.spine_radix, switch_model,
                           pod=p, **attrs) for j in range(upper.spines)]
        pod_leaves = leaves[p * per_pod:(p + 1) * per_pod]
        b.set_each(pod_leaves, "pod", [p] * len(pod_leaves))
        wire_complete_bipartite(b, pod_leaves, spines, gbps, "leaf-spine", tech, 1)
        pairs = [(spine, core, n) for j, spine in enumerate(spines)
                 for m, core in enumerate(cores[j]) if (n := upper.spine_core_links_of(p, m))]
        if pairs:
            lower, higher, counts = map(list, zip(*pairs, strict=True))
            b.add_links(lower, higher, gbps, "spine-core", tech, links=counts)


def add_clos(b: FabricBuilder, attach: Sequence[Hashable], plan: ClosPlan, link_gbps: float,
             tech: str, switch_model: str | None = None) -> list[Hashable]:
    """Wire the switches of ``plan`` above the attachment points ``attach``; return the leaves.

    Parameters
    ----------
    b : FabricBuilder
        Holds the attachment points already; switches and links are added to it.
    attach : sequence of nodes
        ``plan.endpoints`` nodes (GPUs, or the NIC side of GPUs), in leaf order.
    plan : ClosPlan
        From :func:`clos_plan`.
    link_gbps, tech, switch_model
        Rate and label of every link, catalog key of every switch.

    Returns
    -------
    list
        The leaves, leaf ``i`` above ``attach[j]`` for ``j`` in ``plan.leaf_endpoints(i)``.

    Notes
    -----
    Switches are ``"leaf{i}"`` (global index), ``"spine{j}"`` (two tiers) or
    ``"spine{p}.{j}"`` (pod ``p``, three tiers) and ``"core{j}.{m}"`` (core ``m`` of group
    ``j``, joined to spine ``j`` of every pod). Leaves sit one layer above the highest attachment
    point. In three tiers, leaves, spines and attachment points get ``pod``. Every switch
    keeps the radix of its tier, its idle ports included.

    Examples
    --------
    >>> b = FabricBuilder("demo", {})
    >>> gpus = [b.gpu(f"g{i}") for i in range(4)]
    >>> add_clos(b, gpus, clos_plan("demo", 4, 4, 2, 1.0), 400.0, "400g")
    ['leaf0', 'leaf1']
    >>> sorted(v for v, d in b.nodes.items() if d["role"] == "switch")
    ['leaf0', 'leaf1', 'spine0']
    """
    if len(attach) != plan.endpoints:
        raise InvalidParameterError(
            f"add_clos(): attach must hold {plan.endpoints} nodes, got {len(attach)}")
    base = max(b.nodes[a]["layer"] for a in attach)
    leaves = [b.switch(f"leaf{i}", base + 1, plan.radix, switch_model)
              for i in range(plan.leaves)]
    leaf_of = [leaf for i, leaf in enumerate(leaves) for _ in plan.leaf_endpoints(i)]
    lower = [attach[j] for i in range(plan.leaves) for j in plan.leaf_endpoints(i)]
    if plan.tiers == 3:
        per_pod = plan.leaves_per_pod
        b.set_each(lower, "pod", [i // per_pod for i in range(plan.leaves)
                                  for _ in plan.leaf_endpoints(i)])
    b.add_links(lower, leaf_of, link_gbps, "gpu-leaf", tech)
    wire_upper_tiers(b, leaves, plan.upper, base + 2, link_gbps, tech, switch_model,
                     ("spine{j}", "spine{p}.{j}", "core{j}.{m}"))
    return leaves



def wire_complete_bipartite(b: FabricBuilder, lower: Sequence[Hashable],
                            upper: Sequence[Hashable], gbps: float, tier: str, tech: str,
                            links: int) -> None:
    """Join every node of ``lower`` to every node of ``upper`` by a bundle of ``links`` links.

    >>> b = FabricBuilder("demo", {})
    >>> for v in "ab":
    ...     _ = b.switch(v, 1, 4)
    >>> for v in "xy":
    ...     _ = b.switch(v, 2, 4)
    >>> wire_complete_bipartite(b, "ab", "xy", 400.0, "leaf-spine", "400g", 2)
    >>> len(b.arcs), b.arcs[("a", "x")]["capacity"]
    (8, 800.0)
    """
    b.add_links([u for u in lower for _ in upper], [v for _ in lower for v in upper], gbps,
                tier, tech, links)


def check_tiers(func: str, radix: Any, tiers: int, oversubscription: Any
                ) -> tuple[int | tuple[int, ...], float | tuple[float, ...]]:
    """Check ``radix`` (an int >= 2 or one per tier) and ``oversubscription`` (a number > 0 or
    one per tier below the top) for ``tiers`` tiers; return them as int/tuple, float/tuple.

    >>> check_tiers("clos", [32, 220, 64], 3, [1, 7])
    ((32, 220, 64), (1.0, 7.0))
    """
    if isinstance(radix, Sequence) and not isinstance(radix, str):
        radix = check_int_sequence(func, "radix", radix, minimum=2, length=tiers)
    else:
        radix = check_int(func, "radix", radix, minimum=2)
    if isinstance(oversubscription, Sequence) and not isinstance(oversubscription, str):
        if len(oversubscription) != tiers - 1:
            raise fail(func, "oversubscription", f"a number > 0 or a sequence of {tiers - 1} "
                       f"(one per tier below the top)", oversubscription)
        oversubscription = tuple(check_positive(func, "oversubscription", x)
                                 for x in oversubscription)
    else:
        oversubscription = check_positive(func, "oversubscription", oversubscription)
    return radix, oversubscription


@dataclass(frozen=True)
class RailPlan(_ReadsUpperTiers):
    """The sizes of a rail-optimized fabric, as :func:`rail_plan` derives them.

    Attributes
    ----------
    nodes, rails, planes, radix : int
        Servers, GPUs (rails) per server, independent planes, leaf and spine radix.
    down : int
        Leaf ports the ratio allows towards GPUs (all of them without a spine); a rail has
        ``leaves_per_rail = ceil(nodes / down)`` leaves in each plane.
    leaves_per_rail : int
        Leaf ``i`` of a rail holds nodes ``leaf_nodes(i)``: the servers spread evenly, so a
        leaf may use fewer than ``down`` ports.
    upper : UpperTiers
        The tiers above the leaves of a plane (their fields read as the plan's own: ``tiers``,
        ``up``, ``spines``, ``pods``, ...). Two tiers join the leaves of all rails to
        ``spines`` spines; three tiers order a plane's leaves by server group then rail (leaf
        ``i`` of rails 0, 1, ...) into pods, so a pod holds the rails of whole server groups.
    ratio_built : float
        The leaf down:up ratio built (the fullest leaf's servers over its uplinks; 0 without
        uplinks).
    symmetric : bool
        True when all leaves are alike (the servers divide evenly among a rail's leaves),
        bundles are equal, and in three tiers pods are full and hold whole groups of rails or
        whole rails of groups (``nested([rails, leaves_per_pod])``); for a rail-only plan of
        several leaves per rail, when each rail's Clos is (:attr:`ClosPlan.symmetric`).
    per_rail : bool
        True for rail-only (no spine joining the rails) with more servers than a leaf holds:
        ``upper`` then describes the tiers above the leaves of *one* rail, and every rail
        gets its own copy, a folded Clos of its own (as "How to Build Low-cost Networks for
        Large Language Models (without Sacrificing Performance)" builds it), so rails still
        meet only inside servers.
    """

    nodes: int
    rails: int
    planes: int
    radix: int
    down: int
    leaves_per_rail: int
    upper: UpperTiers
    ratio_built: float
    symmetric: bool
    per_rail: bool = False


    @property
    def leaves(self) -> int:
        """Leaves per plane."""
        return self.rails * self.leaves_per_rail

    def leaf_nodes(self, i: int) -> range:
        """The servers under leaf ``i`` of each rail: the ``nodes`` spread evenly over the
        rail's leaves (counts differ by at most one), as a cabling plan balances them.

        >>> p = rail_plan("rail_optimized", 128, 8, 64, True, 2.0)  # 42 down, 4 leaves
        >>> [len(p.leaf_nodes(i)) for i in range(p.leaves_per_rail)]
        [32, 32, 32, 32]
        """
        n, k = self.nodes, self.leaves_per_rail
        return range(i * n // k, (i + 1) * n // k)


def rail_reach(leaf_radix: int, rails: int, down: int, tiers: int) -> int:
    """Largest server count a rail-optimized fabric of ``tiers`` tiers reaches.

    Two tiers: the leaves of all rails share one spine layer, ``rails * leaves_per_rail <=
    r``. Three tiers: at most ``r`` pods of ``r // 2`` leaves.

    >>> rail_reach(64, 8, 32, 2), rail_reach(64, 8, 32, 3)
    (256, 8192)
    """
    leaves = leaf_radix if tiers == 2 else leaf_radix * (leaf_radix // 2)
    return (leaves // rails) * down


def rail_plan(func: str, nodes: int, rails: int, leaf_radix: int, spine: bool,
              oversubscription: float, planes: int = 1, tiers: int | None = None,
              down: int | None = None) -> RailPlan:
    """Size a rail-optimized fabric; arguments are assumed checked.

    Without a spine (rail-only), a rail whose servers fit one leaf (``nodes <= down``, ``down
    = r`` unless given) is that leaf, every port towards GPUs; with more servers each rail is
    a folded Clos of its own, sized by :func:`clos_plan` for ``nodes`` endpoints at ratio
    ``s`` (``tiers`` None: the fewest that reach), and rails meet only inside servers.

    Leaf ports: with a spine ``down = floor(r * s / (1 + s))`` (see :func:`split_ports`, or
    ``down`` as given); without, ``down = r``. Each rail has ``ceil(nodes / down)`` leaves,
    the servers spread evenly over them; every leaf takes ``up = ceil(fullest / s)``
    uplinks (:func:`leaf_uplinks`), its other ports idle. The tiers above follow
    :func:`upper_tiers` with radix ``r`` everywhere (spines 1:1 in three tiers); ``tiers``
    None takes the fewest that reach (:func:`rail_reach`). One leaf per plane needs no spine.

    >>> p = rail_plan("rail_optimized", 32, 8, 64, True, 1.0)
    >>> p.leaves, p.spines, p.leaf_spine_links
    (8, 4, 8)
    >>> p = rail_plan("rail_optimized", 32, 8, 64, True, 4.0)   # 8 uplinks: one spine
    >>> p.up, p.spines, p.ratio_built
    (8, 1, 4.0)
    >>> rail_plan("rail_optimized", 512, 8, 64, True, 1.0).tiers
    3
    >>> p = rail_plan("rail_only", 2048, 8, 64, False, 1.0)   # 16,384 GPUs, rail-only
    >>> p.per_rail, p.tiers, p.leaves_per_rail, p.spines     # per rail: 64 leaves, 32 spines
    (True, 2, 64, 32)
    """
    if not spine:
        if nodes <= (down or leaf_radix):  # one leaf per rail, every port towards GPUs
            return RailPlan(nodes, rails, planes, leaf_radix, down or leaf_radix, 1,
                            UpperTiers(1, 0, rails, 1, 0), 0.0, True)
        return _rail_only_plan(func, nodes, rails, leaf_radix, oversubscription, planes,
                               tiers, down)
    if down is None:
        down, _ = split_ports(func, leaf_radix, oversubscription)
    if tiers is None:
        tiers = 2 if nodes <= rail_reach(leaf_radix, rails, down, 2) else 3
    reach = rail_reach(leaf_radix, rails, down, tiers)
    if nodes > reach:
        hint = ("; three tiers (tiers=3) reach " f"{rail_reach(leaf_radix, rails, down, 3)}"
                if tiers == 2 else "")
        raise InvalidParameterError(
            f"{func}(): {tiers} tiers of radix-{leaf_radix} switches reach at most {reach} "
            f"nodes of {rails} GPUs at oversubscription {oversubscription!r}{hint}, "
            f"got nodes={nodes}")
    per_rail = -(-nodes // down)
    fullest = -(-nodes // per_rail)
    up = leaf_uplinks(func, leaf_radix, oversubscription, fullest)
    upper = upper_tiers(func, rails * per_rail, up, tiers, leaf_radix, leaf_radix
                        ).with_rotations((rails, per_rail))
    symmetric = nodes % per_rail == 0 and upper.symmetric  # evenly spread: leaves alike
    if upper.tiers == 3:
        symmetric = (symmetric and (rails * per_rail) % upper.leaves_per_pod == 0
                     and _nested_pair(rails, upper.leaves_per_pod))
    return RailPlan(nodes, rails, planes, leaf_radix, down, per_rail, upper, fullest / up,
                    symmetric)


def _rail_only_plan(func: str, nodes: int, rails: int, leaf_radix: int,
                    oversubscription: float, planes: int, tiers: int | None,
                    down: int | None) -> RailPlan:
    """A rail-only plan whose rails are folded Clos networks of ``nodes`` endpoints each."""
    if down is None:
        down, _ = split_ports(func, leaf_radix, oversubscription)
    if tiers is None:
        tiers = 2 if nodes <= clos_reach(func, leaf_radix, 2, oversubscription, down) else 3
    reach = clos_reach(func, leaf_radix, tiers, oversubscription, down)
    if nodes > reach:
        hint = (f"; three tiers (tiers=3) reach "
                f"{clos_reach(func, leaf_radix, 3, oversubscription, down):,}"
                if tiers == 2 else "")
        raise InvalidParameterError(
            f"{func}(): rail-only (spine=False) builds each rail as a folded Clos of "
            f"radix-{leaf_radix} switches; {tiers} tiers reach at most {reach:,} nodes at "
            f"oversubscription {oversubscription!r}{hint}, got nodes={nodes:,}")
    c = clos_plan(func, nodes, leaf_radix, tiers, oversubscription, down=down)
    return RailPlan(nodes, rails, planes, leaf_radix, c.down, c.leaves, c.upper,
                    c.ratio_built, c.symmetric, per_rail=True)


def _nested_pair(a: int, b: int) -> bool:
    return max(a, b) % min(a, b) == 0


def add_rail_scale_out(b: FabricBuilder, attach: Sequence[Sequence[Hashable]], plan: RailPlan,
                       nic_gbps: float, tech: str, switch_model: str | None = None
                       ) -> list[list[list[Hashable]]]:
    """Wire the rail-optimized switches of ``plan`` below the attachment points ``attach``;
    return the leaves.

    Parameters
    ----------
    b : FabricBuilder
        Holds the attachment points already; switches and links are added to it.
    attach : sequence of sequences of nodes
        ``attach[node][rail]``: the NIC-side node (a GPU, or a NIC) of each server's rail.
    plan : RailPlan
        From :func:`rail_plan`.
    nic_gbps : float
        Rate of each NIC per direction; each of the ``plan.planes`` planes gets
        ``nic_gbps / planes`` per NIC, and switch-to-switch links run at that rate too.
    tech, switch_model
        Label of every link, catalog key of every switch.

    Returns
    -------
    list
        ``leaves[plane][rail][i]``: leaf ``i`` of a rail holds the servers
        ``plan.leaf_nodes(i)``.

    Notes
    -----
    Leaves ``"r{rail}.l{i}"``, spines ``"s{j}"`` (two tiers) or ``"s{p}.{j}"`` (pod ``p``,
    three tiers) and cores ``"c{j}.{m}"`` (group ``j``, joined to spine ``j`` of every pod),
    preceded by ``"p{plane}."`` when there are several planes. A rail-only plan of several
    leaves per rail (``plan.per_rail``) gives each rail its own spines and cores, named
    ``"r{rail}.s{j}"``, ``"r{rail}.s{p}.{j}"``, ``"r{rail}.c{j}.{m}"`` and carrying
    ``rail``. Leaves carry ``rail`` and ``plane``, spines and cores ``plane``, and in three
    tiers leaves and spines ``pod``; leaves sit one layer above the highest attachment
    point, spines one above the leaves.

    Examples
    --------
    >>> b = FabricBuilder("demo", {})
    >>> attach = [[b.gpu(f"n{n}.g{r}") for r in range(2)] for n in range(2)]
    >>> add_rail_scale_out(b, attach, rail_plan("demo", 2, 2, 4, True, 1.0), 400.0, "400g")
    [[['r0.l0'], ['r1.l0']]]
    >>> sorted(v for v, d in b.nodes.items() if d["role"] == "switch")
    ['r0.l0', 'r1.l0', 's0']
    """
    if len(attach) != plan.nodes or any(len(row) != plan.rails for row in attach):
        raise InvalidParameterError(
            f"add_rail_scale_out(): attach must be {plan.nodes} rows of {plan.rails} nodes")
    base = max(b.nodes[a]["layer"] for row in attach for a in row)
    gbps = nic_gbps / plan.planes
    out = []
    for plane in range(plan.planes):
        name = f"p{plane}." if plan.planes > 1 else ""
        leaves = [[b.switch(f"{name}r{rail}.l{i}", base + 1, plan.radix, switch_model,
                            rail=rail, plane=plane) for i in range(plan.leaves_per_rail)]
                  for rail in range(plan.rails)]
        b.add_links([attach[node][rail] for rail in range(plan.rails)
                     for i in range(plan.leaves_per_rail) for node in plan.leaf_nodes(i)],
                    [leaf for rail_leaves in leaves for i, leaf in enumerate(rail_leaves)
                     for _ in plan.leaf_nodes(i)], gbps, "gpu-leaf", tech)
        if plan.per_rail:  # rail-only: each rail a Clos of its own, rails never meet
            for rail, rail_leaves in enumerate(leaves):
                at = f"{name}r{rail}."
                wire_upper_tiers(b, rail_leaves, plan.upper, base + 2, gbps, tech,
                                 switch_model, (at + "s{j}", at + "s{p}.{j}", at + "c{j}.{m}"),
                                 plane=plane, rail=rail)
            out.append(leaves)
            continue
        # Two tiers: rail-major order; three: server group first, so pods hold whole groups.
        order = ([leaf for row in leaves for leaf in row] if plan.tiers == 2 else
                 [leaves[r][i] for i in range(plan.leaves_per_rail) for r in range(plan.rails)])
        wire_upper_tiers(b, order, plan.upper, base + 2, gbps, tech, switch_model,
                         (name + "s{j}", name + "s{p}.{j}", name + "c{j}.{m}"), plane=plane)
        out.append(leaves)
    return out
