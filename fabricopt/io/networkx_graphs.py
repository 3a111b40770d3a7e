"""A networkx graph as a :class:`~fabricopt.Fabric`: any graph a user already has (a campus
network, a published topology, a graph of their own generator), its capacities read from an
edge attribute or a function and converted from the unit they are in."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Hashable, Iterable, Mapping

import networkx as nx

from .._checks import (
    MAX_LINK_GBPS,
    check_capacity_attribute,
    check_capacity_unit,
    check_label,
    unit_mistake,
)
from ..errors import InvalidParameterError
from ..fabric import Fabric, is_link_count, link_count


def from_networkx(G: nx.Graph, endpoints: Iterable[Hashable] | None = None,
                  capacity: str | Callable[[Hashable, Hashable, dict], float] = "capacity",
                  default_capacity: float = 1.0, name: str | None = None, *,
                  capacity_unit: str | None = None) -> Fabric:
    """Wrap any networkx graph as a Fabric.

    Parameters
    ----------
    G : networkx.Graph or networkx.DiGraph
        An undirected edge becomes two arcs with the same capacity; a directed graph keeps its
        arcs as they are (every arc needs its reverse to pass :meth:`Fabric.validate`).
        Multigraphs are merged: parallel edges add their capacities and link counts.
    endpoints : iterable, optional
        The traffic endpoints. By default the nodes whose ``role`` is ``"gpu"``, or every
        node when no node has a role (a direct network: every node forwards).
    capacity : str or callable
        Edge attribute holding Gb/s per direction, or ``f(u, v, data) -> Gb/s`` (in
        ``capacity_unit`` when it is given).
    default_capacity : float
        Capacity of an edge that lacks the attribute.
    name : str, optional
        Name of the fabric (default: the graph's name or ``"networkx"``).
    capacity_unit : str, optional
        The unit the capacities (and ``default_capacity``) are in, one of ``"bit/s"``,
        ``"kb/s"``, ``"Mb/s"``, ``"Gb/s"``, ``"Tb/s"``, ``"MB/s"``, ``"GB/s"``, ``"TB/s"``
        (bytes are 8 bits): they are converted to Gb/s, and the unit is kept in
        ``fab.params["capacity_unit"]``. Left out, capacities are in Gb/s, and one above
        :data:`MAX_LINK_GBPS` (1 Pb/s) per physical link is refused as bit/s given by
        mistake; given (even ``"Gb/s"``), the numbers are taken as stated.

    Returns
    -------
    Fabric
        Nodes get ``role`` (``"gpu"`` for endpoints, ``"switch"`` otherwise, unless set) and
        ``layer`` (0 for endpoints, 1 otherwise, unless set); arcs get ``capacity``,
        ``links`` (1 unless set) and ``tier`` (``"link"`` unless set).

    Examples
    --------
    >>> import networkx as nx
    >>> import fabricopt as fo
    >>> fab = fo.from_networkx(nx.star_graph(3), endpoints=[1, 2, 3])
    >>> fab.graph.nodes[0]["role"], fab.graph.number_of_edges()
    ('switch', 6)

    Capacities in bit/s (400e9 is 400 Gb/s) with their unit:

    >>> fab = fo.from_networkx(nx.star_graph(3), default_capacity=400e9, capacity_unit="bit/s")
    >>> fab.graph[0][1]["capacity"], fab.params["capacity_unit"]
    (400.0, 'bit/s')
    """
    func = "from_networkx"
    scale = 1.0 if capacity_unit is None else check_capacity_unit(func, capacity_unit)
    if not isinstance(G, nx.Graph):
        raise InvalidParameterError(f"{func}(): G must be a networkx graph, got {type(G)!r}")
    name = check_label(func, "name", name)
    if (isinstance(default_capacity, bool) or not isinstance(default_capacity, numbers.Real)
            or not math.isfinite(default_capacity) or default_capacity <= 0):
        raise InvalidParameterError(
            f"{func}(): default_capacity must be a finite number > 0, got {default_capacity!r}")
    if capacity_unit is None and default_capacity > MAX_LINK_GBPS:
        raise InvalidParameterError(unit_mistake(func, default_capacity, "default_capacity="))
    if not callable(capacity) and (not isinstance(capacity, str) or not capacity):
        # A number here is a mistake for default_capacity: refuse it rather than ignore it.
        raise InvalidParameterError(
            f"{func}(): capacity must be the name of an edge attribute (a str) or a function "
            f"(u, v, data) -> Gb/s, got {capacity!r}; a capacity for every edge is "
            f"default_capacity=")
    if endpoints is not None and (not isinstance(endpoints, Iterable)
                                  or isinstance(endpoints, str | bytes | Mapping)):
        raise InvalidParameterError(f"{func}(): endpoints must be None or an iterable of "
                                    f"nodes of G, got {endpoints!r}")
    if isinstance(capacity, str):
        check_capacity_attribute(func, G, capacity)
    if endpoints is None:
        roles = [d.get("role") for _, d in G.nodes(data=True)]
        if any(r is not None for r in roles):
            endpoints = [v for v, d in G.nodes(data=True) if d.get("role") == "gpu"]
        else:
            endpoints = list(G.nodes)
    endpoints = list(endpoints)
    unknown = [e for e in endpoints if e not in G]
    if unknown:
        raise InvalidParameterError(
            f"{func}(): endpoints must be nodes of G, got unknown {unknown[:5]!r}")
    endpoint_set = set(endpoints)

    D = nx.DiGraph(name=G.graph.get("name", ""))
    for v, d in G.nodes(data=True):
        attrs = dict(d)
        is_ep = v in endpoint_set
        attrs.setdefault("role", "gpu" if is_ep else "switch")
        attrs.setdefault("layer", 0 if is_ep else 1)
        D.add_node(v, **attrs)

    def cap_of(u: Hashable, v: Hashable, d: dict) -> float:
        value = capacity(u, v, d) if callable(capacity) else d.get(capacity, default_capacity)
        if (isinstance(value, bool) or not isinstance(value, numbers.Real)
                or not math.isfinite(value) or value <= 0):
            raise InvalidParameterError(
                f"{func}(): capacity of edge {u!r}-{v!r} must be a finite number > 0, "
                f"got {value!r}")
        gbps = float(value) * scale
        if capacity_unit is None and gbps / link_count(d) > MAX_LINK_GBPS:
            raise InvalidParameterError(unit_mistake(func, gbps / link_count(d),
                                                     f"edge {u!r}-{v!r} at ", " Gb/s"))
        return gbps

    edges = G.edges(keys=True, data=True) if G.is_multigraph() else (
        (u, v, 0, d) for u, v, d in G.edges(data=True))
    for u, v, _key, d in edges:
        if u == v:
            raise InvalidParameterError(f"{func}(): self-loop at {u!r} is not a link")
        if not is_link_count(d.get("links", 1)):
            raise InvalidParameterError(
                f"{func}(): links of edge {u!r}-{v!r} must be a whole number >= 1 of physical "
                f"links, got {d['links']!r}")
        c = cap_of(u, v, d)
        arcs = [(u, v)] if G.is_directed() else [(u, v), (v, u)]
        for a, b in arcs:
            if D.has_edge(a, b):
                D[a][b]["capacity"] += c
                D[a][b]["links"] += link_count(d)
            else:
                attrs = {k: val for k, val in d.items() if k != capacity}
                attrs["capacity"] = c
                attrs["links"] = link_count(d)
                attrs.setdefault("tier", "link")
                D.add_edge(a, b, **attrs)
    return Fabric(D, endpoints, name or G.graph.get("name") or "networkx",
                  {} if capacity_unit is None else {"capacity_unit": capacity_unit})


__all__ = ["from_networkx"]
