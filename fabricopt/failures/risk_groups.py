"""Shared-risk groups: parts of a fabric that fail together.

A :class:`RiskGroup` names links (bundles, as unordered node pairs), switches (nodes that go
with all their links) and GPUs (that go down with it and leave the traffic). They come from
:func:`risk_groups` (declared ``risk_group`` attributes, else each switch, server and cable
bundle), or from :func:`~fabricopt.groups_by` and :func:`~fabricopt.nest_groups`.

A group checks its parts when it is made (:meth:`RiskGroup.__post_init__`), and against a
fabric where it is used (:func:`check_groups`), before any solve; a list of groups has
distinct names (:func:`check_group_names`).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .._checks import did_you_mean, fail
from ..errors import InvalidParameterError
from ..fabric import Fabric, check_fabric

Link = frozenset  # an unordered pair of nodes: one physical bundle, both arcs


@dataclass(frozen=True)
class RiskGroup:
    """Parts of a fabric that fail together.

    ``links`` are bundles (unordered node pairs, every parallel link of each); ``switches`` are
    nodes that go with all their links; ``gpus`` are GPUs that go down with the group (a
    rack, a server): the failure models of :mod:`~fabricopt.failures.models` take them
    out of the traffic and fail their links.
    """

    name: str
    links: frozenset[Link] = frozenset()
    switches: frozenset[Hashable] = frozenset()
    gpus: frozenset[Hashable] = frozenset()

    def __post_init__(self) -> None:
        """Check the parts and keep them as frozensets (``links`` of node pairs given as
        tuples or sets too): a part that is None, text, or not node names is an error here,
        not a ``TypeError`` when the group fails. Whether the nodes are a fabric's is checked
        when the group is used on one (:func:`check_groups`)."""
        if not isinstance(self.name, str) or not self.name:
            raise fail("RiskGroup", "name", "a non-empty string", self.name)
        object.__setattr__(self, "links", _link_set(self.name, self.links))
        for part in ("switches", "gpus"):
            object.__setattr__(self, part, _node_set(self.name, part, getattr(self, part)))

    @property
    def nodes(self) -> frozenset[Hashable]:
        """Every node the group names: its switches, its GPUs and the ends of its links."""
        return self.switches | self.gpus | frozenset().union(*self.links)


def _node_set(group: str, part: str, value: Any) -> frozenset[Hashable]:
    """``value`` (an iterable of node names, not text) as a frozenset, else the error
    naming the group and the part."""
    if type(value) is frozenset:  # the common case, built by this module: hashable already
        return value
    if value is None or isinstance(value, str | bytes | Mapping) \
            or not isinstance(value, Iterable):
        raise InvalidParameterError(f"RiskGroup(): {part} of group {group!r} must be an "
                                    "iterable of node names (frozenset() for none), got "
                                    f"{value!r}")
    try:
        return frozenset(value)
    except TypeError:
        raise InvalidParameterError(f"RiskGroup(): {part} of group {group!r} must be node "
                                    f"names (hashable), got {value!r}") from None


def _link_set(group: str, value: Any) -> frozenset[Link]:
    """``value`` (an iterable of node pairs) as a frozenset of frozenset pairs, else the
    error naming the group."""
    rule = ("an iterable of links, each a pair of two different node names such as "
            "('leaf0', 'spine0')")
    if value is None or isinstance(value, str | bytes | Mapping) \
            or not isinstance(value, Iterable):
        raise InvalidParameterError(f"RiskGroup(): links of group {group!r} must be {rule}"
                                    f"{' (frozenset() for none)' if value is None else ''}, "
                                    f"got {value!r}")
    out = []
    for pair in value:
        if type(pair) is frozenset and len(pair) == 2:
            out.append(pair)
            continue
        ends = tuple(pair) if isinstance(pair, Iterable) and not isinstance(
            pair, str | bytes | Mapping) else ()
        try:
            link = frozenset(ends)
        except TypeError:
            link = frozenset()
        if len(ends) != 2 or len(link) != 2:
            raise InvalidParameterError(f"RiskGroup(): links of group {group!r} must be "
                                        f"{rule}, got {pair!r}")
        out.append(link)
    return frozenset(out)


def check_groups(func: str, fab: Fabric, groups: Iterable[RiskGroup]) -> None:
    """Raise naming ``func`` unless every group's parts are ``fab``'s: switches are nodes
    that are not GPUs, GPUs are nodes whose role is ``"gpu"``, links join two nodes joined in
    its graph.
    The closest node name is suggested for a misspelt one."""
    g = fab.graph
    nodes = g._node  # node -> attributes, read by C-level lookups

    def is_gpu(v: Hashable) -> bool:
        return nodes[v].get("role") == "gpu"

    for grp in groups:
        for w in grp.switches:
            if w not in nodes or is_gpu(w):
                raise _not_of(func, fab, grp, "switch", w, w in nodes)
        for v in grp.gpus:
            if v not in nodes or not is_gpu(v):
                raise _not_of(func, fab, grp, "GPU", v, v in nodes)
        for pair in grp.links:
            u, v = tuple(pair)
            for end in (u, v):
                if end not in g:
                    raise _not_of(func, fab, grp, "link end", end, False)
            if not (g.has_edge(u, v) or g.has_edge(v, u)):
                raise InvalidParameterError(
                    f"{func}(): groups must be risk groups of fabric {fab.name!r}: group "
                    f"{grp.name!r} has link {u!r}-{v!r}, but no link joins them")


def _not_of(func: str, fab: Fabric, grp: RiskGroup, part: str, node: Hashable,
            other_role: bool) -> InvalidParameterError:
    """The error of :func:`check_groups` for a node the group names wrongly."""
    head = f"{func}(): groups must be risk groups of fabric {fab.name!r}: group {grp.name!r}"
    if other_role:
        why = "a GPU" if part == "switch" else "not a GPU"
        return InvalidParameterError(f"{head} has {part} {node!r}, which is {why}")
    return InvalidParameterError(f"{head} has nodes not in it ({part} {node!r}"
                                 + did_you_mean(str(node), map(str, fab.graph)) + ")")


def check_group_names(func: str, name: str, groups: Any) -> tuple[RiskGroup, ...]:
    """``groups`` as a tuple of :class:`RiskGroup` with distinct names, else the error
    naming ``func`` and the argument ``name``."""
    if isinstance(groups, str | bytes | Mapping | RiskGroup) or not isinstance(groups, Iterable):
        raise fail(func, name, "a list of RiskGroup (from risk_groups, groups_by or "
                   "nest_groups)", groups)
    out = tuple(groups)
    wrong = next((grp for grp in out if not isinstance(grp, RiskGroup)), None)
    if wrong is not None:
        raise fail(func, name, "a list of RiskGroup (from risk_groups, groups_by or "
                   f"nest_groups); not {type(wrong).__name__} {wrong!r}", groups)
    seen: set[str] = set()
    for grp in out:
        if grp.name in seen:
            raise InvalidParameterError(
                f"{func}(): {name} must have distinct names (a failure is reported by its "
                f"group's name), got {grp.name!r} twice")
        seen.add(grp.name)
    return out


def _bundles(fab: Fabric) -> list[tuple[Hashable, Hashable, int, str]]:
    """Every bundle once, in graph order: ``(u, v, physical links, tier)``."""
    seen: set[Link] = set()
    out = []
    for u, v, d in fab.graph.edges(data=True):
        key = frozenset((u, v))
        if key in seen:
            continue
        seen.add(key)
        out.append((u, v, int(d.get("links", 1)), str(d.get("tier", "link"))))
    return out


def risk_groups(fab: Fabric) -> list[RiskGroup]:
    """The shared-risk groups of ``fab``: declared ones if any, else derived ones.

    Declared: a node or arc attribute ``risk_group`` holding a label (or a list of labels,
    for parts in several groups: a power feed and a rack). All parts with the same label form
    one group; a switch in a group fails whole, a GPU's links fail (GPUs stay, as traffic
    endpoints), an arc fails with its reverse (the bundle).

    Derived, when nothing is declared, in this order:

    * each switch, with its links;
    * each server: the nodes sharing a ``node`` attribute (a DGX, a compute tray), its switches
      and every link leaving it (a server that loses power);
    * each cable bundle: all parallel links between two devices.

    Racks, rows and power feeds are not in the graph: declare them with ``risk_group``.

    Examples
    --------
    >>> import fabricopt as fo
    >>> groups = risk_groups(fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=1))
    >>> [g.name for g in groups]   # 3 switches, then 4 bundles (no servers in a leaf-spine)
    ['switch leaf0', 'switch leaf1', 'switch spine0', 'bundle g0-leaf0', 'bundle g1-leaf1', \
'bundle leaf0-spine0', 'bundle leaf1-spine0']
    """
    check_fabric("risk_groups", fab)
    g = fab.graph
    declared: dict[str, tuple[set[Link], set[Hashable]]] = {}

    def labels(value: Any) -> list[str]:
        if value is None:
            return []
        return [str(x) for x in value] if isinstance(value, list | tuple) else [str(value)]

    for v, d in g.nodes(data=True):
        for label in labels(d.get("risk_group")):
            links, switches = declared.setdefault(label, (set(), set()))
            if d.get("role") == "gpu":
                links.update(frozenset((v, w)) for w in g.successors(v))
                links.update(frozenset((w, v)) for w in g.predecessors(v))
            else:
                switches.add(v)
    for u, v, d in g.edges(data=True):
        for label in labels(d.get("risk_group")):
            declared.setdefault(label, (set(), set()))[0].add(frozenset((u, v)))
    if declared:
        return [RiskGroup(label, frozenset(links), frozenset(switches))
                for label, (links, switches) in declared.items()]

    groups = [RiskGroup(f"switch {w}", switches=frozenset([w])) for w in fab.switches]
    servers: dict[Any, list[Hashable]] = {}
    for v, server in g.nodes(data="node"):
        if server is not None:
            servers.setdefault(server, []).append(v)
    for server, members in servers.items():
        inside = set(members)
        leaving = {frozenset((u, w)) for u in members for w in g.successors(u)
                   if w not in inside}
        boxes = frozenset(v for v in members if g.nodes[v].get("role") != "gpu")
        groups.append(RiskGroup(f"server {server}", frozenset(leaving), boxes))
    groups += [RiskGroup(f"bundle {u}-{v}", links=frozenset([frozenset((u, v))]))
               for u, v, _, _ in _bundles(fab)]
    return groups


__all__ = ["Link", "RiskGroup", "check_group_names", "check_groups", "risk_groups"]
