"""Write a Fabric to GraphML or node-link JSON and read it back.

GraphML holds only strings, numbers and booleans, so node names are written as strings and
list-valued attributes as JSON text (read back as lists). Node-link JSON keeps integer and
string names as they are and turns tuple names into lists, which are read back as tuples. The
fabric's name, endpoints and params travel in the graph attributes. A symmetry claim is not
written: it belongs to the generator that built the fabric.
"""

from __future__ import annotations

import json
import os
from collections.abc import Hashable
from typing import Any

import networkx as nx

from .errors import InvalidParameterError
from .fabric import Fabric

_JSON_PREFIX = "json:"


def _to_graphml_value(value: Any) -> Any:
    if isinstance(value, bool | int | float | str):
        return value
    return _JSON_PREFIX + json.dumps(value)


def _from_graphml_value(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(_JSON_PREFIX):
        return json.loads(value[len(_JSON_PREFIX):])
    return value


def write_graphml(fab: Fabric, path: str | os.PathLike[str]) -> None:
    """Write ``fab`` as GraphML (node names become strings).

    >>> import tempfile, os, fabricopt as fo
    >>> fab = fo.ring(4)
    >>> path = os.path.join(tempfile.mkdtemp(), "ring.graphml")
    >>> fo.write_graphml(fab, path)
    >>> fo.read_graphml(path).graph.number_of_edges()
    8
    """
    g = nx.DiGraph()
    for v, d in fab.graph.nodes(data=True):
        g.add_node(str(v), **{k: _to_graphml_value(x) for k, x in d.items() if x is not None})
    for u, v, d in fab.graph.edges(data=True):
        g.add_edge(str(u), str(v),
                   **{k: _to_graphml_value(x) for k, x in d.items() if x is not None})
    g.graph["fabric_name"] = fab.name
    g.graph["fabric_endpoints"] = json.dumps([str(e) for e in fab.endpoints])
    g.graph["fabric_params"] = json.dumps(fab.params, default=str)
    nx.write_graphml(g, path)


def read_graphml(path: str | os.PathLike[str]) -> Fabric:
    """Read a fabric written by :func:`write_graphml` (or any GraphML with capacities)."""
    g = nx.read_graphml(path)
    if not isinstance(g, nx.DiGraph) or g.is_multigraph():
        g = nx.DiGraph(g)
    for _, d in g.nodes(data=True):
        for k in list(d):
            d[k] = _from_graphml_value(d[k])
    for _, _, d in g.edges(data=True):
        for k in list(d):
            d[k] = _from_graphml_value(d[k])
    meta = dict(g.graph)
    g.graph.clear()
    endpoints = json.loads(meta["fabric_endpoints"]) if "fabric_endpoints" in meta else None
    params = json.loads(meta.get("fabric_params", "{}"))
    return Fabric(g, endpoints, meta.get("fabric_name"), params)


def _node_key(value: Any) -> Hashable:
    return tuple(_node_key(x) for x in value) if isinstance(value, list) else value


def to_json_data(fab: Fabric) -> dict[str, Any]:
    """The node-link dictionary of ``fab`` (``json.dumps`` accepts it)."""
    data = nx.node_link_data(fab.graph, edges="edges")
    data["graph"] = {"name": fab.name, "endpoints": list(fab.endpoints), "params": fab.params}
    return data


def from_json_data(data: dict[str, Any]) -> Fabric:
    """Rebuild a fabric from :func:`to_json_data` output."""
    if not isinstance(data, dict) or "nodes" not in data or "edges" not in data:
        raise InvalidParameterError(
            "from_json_data(): data must be a node-link dict with 'nodes' and 'edges'")
    data = json.loads(json.dumps(data))  # deep copy; we rewrite node ids below
    for node in data["nodes"]:
        node["id"] = _node_key(node["id"])
    for edge in data["edges"]:
        edge["source"] = _node_key(edge["source"])
        edge["target"] = _node_key(edge["target"])
    meta = data.get("graph", {})
    data["graph"] = {}
    g = nx.node_link_graph(data, directed=True, multigraph=False, edges="edges")
    endpoints = [_node_key(e) for e in meta.get("endpoints", [])] or None
    return Fabric(g, endpoints, meta.get("name"), meta.get("params", {}))


def write_json(fab: Fabric, path: str | os.PathLike[str]) -> None:
    """Write ``fab`` as node-link JSON.

    >>> import tempfile, os, fabricopt as fo
    >>> path = os.path.join(tempfile.mkdtemp(), "torus.json")
    >>> fo.write_json(fo.torus((3, 3)), path)
    >>> fo.read_json(path).endpoints[:2]
    ('n0.0', 'n0.1')
    """
    with open(path, "w", encoding="utf-8") as f:
        json.dump(to_json_data(fab), f, default=str)


def read_json(path: str | os.PathLike[str]) -> Fabric:
    """Read a fabric written by :func:`write_json`."""
    with open(path, encoding="utf-8") as f:
        return from_json_data(json.load(f))
