"""Which catalog system (server or rack) a fabric's GPUs sit in, read from its scale-up domains:
the cost per token and the network's share of cluster cost price the servers by it."""

from __future__ import annotations

import itertools

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..fabric import Fabric

__all__ = ["SYSTEMS_BY_SCALE_UP", "server_system"]


#: Catalog systems by the scale-up switch chip and the GPUs one scale-up domain holds.
SYSTEMS_BY_SCALE_UP = {("nvswitch3", 8): "dgx_h100", ("nvswitch4", 8): "dgx_b200",
                       ("nvswitch4", 72): "gb200_nvl72"}


def server_system(fab: Fabric) -> str | None:
    """The catalog system whose GPUs the fabric's scale-up domains are: the NVSwitch model and
    the GPUs one domain (GPUs joined through NVSwitch chips) holds; None for other fabrics.

    >>> import fabricopt as fo
    >>> server_system(fo.superpod(scalable_units=1)), server_system(fo.ring(4))
    ('dgx_h100', None)
    """
    g = fab.graph
    chips = [v for v, d in g.nodes(data=True) if str(d.get("model", "")).startswith("nvswitch")]
    if not chips:
        return None
    endpoints = set(fab.endpoints)
    # Scale-up domains: components of the chips and the endpoints wired to them (arcs read
    # both ways), found on index arrays: a Python search is seconds at 100k GPUs.
    index = {c: i for i, c in enumerate(chips)}
    heads, tails = [], []
    for c in chips:
        for u in itertools.chain(g.succ[c], g.pred[c]):
            if u in endpoints or u in index:
                heads.append(index[c])
                tails.append(index.setdefault(u, len(index)))
    n = len(index)
    adjacency = sp.coo_matrix((np.ones(len(heads)), (heads, tails)), shape=(n, n))
    _, label = connected_components(adjacency, directed=True, connection="weak")
    is_endpoint = np.array([v in endpoints for v in index])
    sizes = set(np.bincount(label, weights=is_endpoint).astype(int).tolist())
    models = {g.nodes[c]["model"] for c in chips}
    if len(sizes) != 1 or len(models) != 1:
        return None
    return SYSTEMS_BY_SCALE_UP.get((models.pop(), sizes.pop()))
