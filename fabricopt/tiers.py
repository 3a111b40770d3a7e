"""Link tiers and technologies: which links are scale-up, which are network, and of what family.

Every arc of a fabric carries a ``tier`` (where the link sits: ``"gpu-leaf"``,
``"leaf-spine"``, ...) and a ``tech`` (what it is made of: ``"nvlink4"``, ``"ndr"``,
``"800gbe"``, ...). This module is the one place that reads them; solvers, bounds and the cost
model ask it rather than testing strings of their own.

Tiers the generators build:

=======================  =============  =====================================================
tier                     kind           links
=======================  =============  =====================================================
``gpu-nvswitch``         scale-up       GPU to its NVSwitch (NVLink)
``gpu-ualink-switch``    scale-up       accelerator to its UALink switch
``nvswitch-l2``          scale-up       first- to second-level NVSwitch (NVLink Switch System)
``gpu-leaf``             scale-out      GPU (or its NIC) to a leaf or router
``leaf-spine``           scale-out      leaf to spine
``spine-core``           scale-out      spine to core (three-tier Clos)
``local``, ``global``    scale-out      dragonfly router links within and between groups
``switch-switch``        scale-out      switch to switch (Slim Fly, Jellyfish)
``ring``, ``torus``,     direct         GPU to GPU, scale-up or not by their ``tech``
``hypercube``,
``complete``
=======================  =============  =====================================================

A link is **scale-up** when its tier is a scale-up tier or its technology is of a scale-up
family (NVLink, UALink): such links are built into the accelerator (no NIC) and join GPUs
inside one scale-up domain. Every other link is scale-out network. A link without a ``tier``
counts as tier ``"link"``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ._checks import did_you_mean, fail

DEFAULT_TIER = "link"
"""Tier of an arc that names none (fabrics built from a plain graph)."""

SCALE_UP_ACCESS_TIERS = ("gpu-nvswitch", "gpu-ualink-switch")
"""Tiers from an accelerator to the first switch of its scale-up domain."""

SCALE_UP_TIERS = SCALE_UP_ACCESS_TIERS + ("nvswitch-l2",)
"""Tiers that join GPUs inside a scale-up domain (NVLink, UALink)."""

IN_SYSTEM_TIERS = ("gpu-nvswitch",)
"""Scale-up tiers whose links stay inside one server or rack-scale system (a DGX, an NVL72):
the GPUs they join are one physical unit. UALink is not among them: a UALink pod spans racks
(up to 1,024 accelerators), each accelerator sitting in a server of its own."""

SCALE_OUT_TIERS = ("gpu-leaf", "leaf-spine", "spine-core", "local", "global", "switch-switch")
"""Tiers of the switched scale-out network the generators build."""

DIRECT_TIERS = ("ring", "torus", "hypercube", "complete")
"""GPU-to-GPU tiers of direct topologies: scale-up or not by their technology."""

TIER_ORDER = ("gpu-nvswitch", "gpu-ualink-switch", "nvswitch-l2", "gpu-leaf", "leaf-spine",
              "spine-core")
"""Tiers in the order tables list them: from the GPU outwards, scale-up first."""

TECH_FAMILIES = ("nvlink", "ualink", "infiniband", "ethernet")
"""Technology families a link's ``tech`` can belong to."""

SCALE_UP_FAMILIES = ("nvlink", "ualink")
"""Families of scale-up links: built into the accelerator, no NIC at the GPU end."""

NVLINK_TECHS = ("nvlink", "nvlink1", "nvlink2", "nvlink3", "nvlink4", "nvlink5", "nvlink6")
"""``tech`` labels of NVLink links (by generation, or the family itself)."""

UALINK_TECHS = ("ualink", "ualink200")
"""``tech`` labels of UALink links (UALink 200G 1.0, or the family itself)."""

INFINIBAND_TECHS = ("ndr", "ndr200", "xdr", "hdr", "hdr100", "edr", "infiniband", "ib")
"""``tech`` labels of InfiniBand links (by generation, or the family itself)."""

ETHERNET_TECHS = ("ethernet", "roce", "rocev2", "25gbe", "50gbe", "100gbe", "200gbe", "400gbe",
                  "800gbe", "1.6tbe")
"""``tech`` labels of Ethernet links (RoCE included: by port rate, or the family itself)."""

FAMILY_TECHS = {"nvlink": NVLINK_TECHS, "ualink": UALINK_TECHS,
                "infiniband": INFINIBAND_TECHS, "ethernet": ETHERNET_TECHS}
"""The labels of each technology family: the one table :func:`tech_family` reads."""

_FAMILY_OF = {t: family for family, techs in FAMILY_TECHS.items() for t in techs}


def tier_of(arc: Mapping[str, Any]) -> str:
    """The tier of an arc's attributes, :data:`DEFAULT_TIER` when it names none.

    >>> tier_of({"tier": "leaf-spine"}), tier_of({})
    ('leaf-spine', 'link')
    """
    return str(arc.get("tier", DEFAULT_TIER))


def tech_family(tech: Any) -> str | None:
    """The technology family of a ``tech`` label, or None when it names none of
    :data:`TECH_FAMILIES` (generic labels such as ``"400g"``).

    The label is looked up, case ignored, in the explicit tables of :data:`FAMILY_TECHS`
    (:data:`NVLINK_TECHS`, :data:`UALINK_TECHS`, :data:`INFINIBAND_TECHS`,
    :data:`ETHERNET_TECHS`); nothing is guessed from a prefix or a suffix.

    >>> [tech_family(t) for t in ("nvlink5", "UALink", "ndr", "800gbe", "roce", "400g", None)]
    ['nvlink', 'ualink', 'infiniband', 'ethernet', 'ethernet', None, None]
    """
    return None if tech is None else _FAMILY_OF.get(str(tech).lower())


def require_tech_family(func: str, name: str, tech: Any) -> str:
    """The family of ``tech``, or an :class:`~fabricopt.errors.InvalidParameterError` naming
    the label and the labels each family allows (for code that must know the technology,
    such as the choice of a switch family in the cost model).

    >>> require_tech_family("estimate_cost", "tech", "XDR")
    'infiniband'
    >>> require_tech_family("estimate_cost", "tech", "400g")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fabricopt.errors.InvalidParameterError: estimate_cost(): tech must be a link technology \
of a known family (nvlink: nvlink, ...; ethernet: ethernet, roce, ...), got '400g'
    """
    family = tech_family(tech)
    if family is None:
        allowed = "; ".join(f"{fam}: {', '.join(techs)}" for fam, techs in FAMILY_TECHS.items())
        raise fail(func, name, f"a link technology of a known family ({allowed})", tech)
    return family


def is_scale_up(tier: Any = None, tech: Any = None) -> bool:
    """True for a scale-up link: a tier of :data:`SCALE_UP_TIERS` or a tech of a
    :data:`SCALE_UP_FAMILIES` family.

    >>> is_scale_up("gpu-ualink-switch"), is_scale_up(tech="nvlink4")
    (True, True)
    >>> is_scale_up("gpu-leaf", "ndr"), is_scale_up()
    (False, False)
    """
    return (tier is not None and str(tier) in SCALE_UP_TIERS) or \
        tech_family(tech) in SCALE_UP_FAMILIES


def is_scale_up_arc(arc: Mapping[str, Any]) -> bool:
    """:func:`is_scale_up` of an arc's attributes (``tier`` and ``tech``).

    >>> import fabricopt as fo
    >>> fab = fo.dgx_h100()
    >>> g = fab.endpoints[0]
    >>> all(is_scale_up_arc(d) for _, _, d in fab.graph.out_edges(g, data=True))
    True
    """
    return is_scale_up(arc.get("tier"), arc.get("tech"))


def scale_up_tiers(arcs: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """The tiers (:func:`tier_of`) among ``arcs`` that hold a scale-up link.

    >>> import fabricopt as fo
    >>> sorted(scale_up_tiers(d for _, _, d in fo.ualink_pod(8, 2, 2).graph.edges(data=True)))
    ['gpu-ualink-switch']
    """
    return frozenset(tier_of(d) for d in arcs if is_scale_up_arc(d))


def tier_rank(tier: str) -> tuple[int, str]:
    """Sort key of a tier: :data:`TIER_ORDER` first, any other tier after them by name.

    >>> sorted(["spine-core", "ring", "gpu-nvswitch", "gpu-leaf"], key=tier_rank)
    ['gpu-nvswitch', 'gpu-leaf', 'spine-core', 'ring']
    """
    return (TIER_ORDER.index(tier) if tier in TIER_ORDER else len(TIER_ORDER), tier)


__all__ = ["DEFAULT_TIER", "DIRECT_TIERS", "ETHERNET_TECHS", "FAMILY_TECHS", "INFINIBAND_TECHS",
           "IN_SYSTEM_TIERS", "NVLINK_TECHS", "SCALE_OUT_TIERS", "SCALE_UP_ACCESS_TIERS",
           "SCALE_UP_FAMILIES", "SCALE_UP_TIERS", "TECH_FAMILIES", "TIER_ORDER", "UALINK_TECHS",
           "is_scale_up", "is_scale_up_arc", "require_tech_family", "scale_up_tiers",
           "tech_family", "tier_of", "tier_rank"]


KNOWN_TIERS = (DEFAULT_TIER, *SCALE_UP_TIERS, *SCALE_OUT_TIERS, *DIRECT_TIERS)
"""Every tier the generators build, and the tier of an arc that names none."""


def check_tier_names(func: str, name: str, tiers: Iterable[str], fab: Any) -> None:
    """Raise for a tier in ``tiers`` that ``fab`` has not and no generator builds: a typo
    (``"leaf_spine"``) would otherwise be ignored. A known tier ``fab`` lacks is allowed, so
    one layout serves a sweep of two- and three-tier designs.

    >>> import fabricopt as fo
    >>> check_tier_names("estimate_cost", "layout.length_m_by_tier", ["ring"], fo.ring(4))
    >>> check_tier_names("estimate_cost", "layout.length_m_by_tier", ["leaf_spine"],
    ...                  fo.ring(4))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fabricopt.errors.InvalidParameterError: estimate_cost(): layout.length_m_by_tier key must \
be a tier of the fabric or one the generators build (did you mean 'leaf-spine'?)...
    """
    if not hasattr(getattr(fab, "graph", None), "edges"):  # the Fabric module imports this one
        raise fail(func, "fab", "a Fabric", type(fab).__name__)
    unknown = [t for t in tiers if t not in KNOWN_TIERS]
    if not unknown:  # the usual case: no need to read every arc of a 100k-GPU fabric
        return
    have = {tier_of(d) for _, _, d in fab.graph.edges(data=True)}
    for tier in unknown:
        if tier not in have:
            raise fail(func, f"{name} key", "a tier of the fabric or one the generators build"
                       + did_you_mean(tier, [*have, *KNOWN_TIERS]) + "; the fabric has "
                       + ", ".join(sorted(have)), tier)
