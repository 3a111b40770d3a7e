"""Which catalog system (server or rack) a fabric's GPUs sit in, read from its scale-up domains:
the cost per token and the network's share of cluster cost price the servers by it."""

from __future__ import annotations

import itertools
from operator import methodcaller
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .._unchanged import once
from ..errors import InvalidFabricError
from ..fabric import Fabric
from ..graph_arrays import FabricShape

__all__ = ["SYSTEMS_BY_GPU_MODEL", "SYSTEMS_BY_SCALE_UP", "server_system"]


#: Catalog systems by the scale-up switch chip and the GPUs one scale-up domain holds.
SYSTEMS_BY_SCALE_UP = {("nvswitch2", 8): "dgx_a100", ("nvswitch3", 8): "dgx_h100",
                       ("nvswitch4", 8): "dgx_b200", ("nvswitch4", 72): "gb200_nvl72"}
#: The system a GPU model comes in where its chips alone do not say (an H800 or an H200
#: server has the NVSwitch chips of a DGX H100).
SYSTEMS_BY_GPU_MODEL = {"a100_sxm_40gb": "dgx_a100", "a100_sxm_80gb": "dgx_a100",
                        "h800_sxm": "hgx_h800", "h200_sxm": "dgx_h200"}


def server_system(fab: Fabric) -> str | None:
    """The catalog system whose GPUs the fabric's scale-up domains are: the NVSwitch model and
    the GPUs one domain (GPUs joined through NVSwitch chips) holds; None for other fabrics.

    >>> import fabricopt as fo
    >>> server_system(fo.superpod(scalable_units=1)), server_system(fo.ring(4))
    ('dgx_h100', None)
    >>> server_system(fo.cluster(fo.hgx_h800(), nodes=2))   # the GPUs name their model
    'hgx_h800'
    """
    # Read once in a study row (an optimizer prices one fabric under several policies).
    return once(fab, "server_system", lambda: _server_system(fab))


def _server_system(fab: Fabric) -> str | None:
    system = _system_by_chips(fab)
    if system is None:
        return None
    # The attribute dicts themselves, by C-level maps (a view lookup per GPU was most of
    # this reading on a 24,576-GPU cluster).
    gpu_models = set(map(methodcaller("get", "gpu_model"),
                         map(fab.graph._node.__getitem__, fab.endpoints)))
    if len(gpu_models) == 1:
        return SYSTEMS_BY_GPU_MODEL.get(gpu_models.pop(), system)
    return system


def _system_by_chips(fab: Fabric) -> str | None:
    g = fab.graph
    models = list(map(methodcaller("get", "model", ""), g._node.values()))
    try:  # each distinct model asked once (a few per fabric)
        chip = {m: str(m).startswith("nvswitch") for m in set(models)}
        is_chip = np.fromiter(map(chip.__getitem__, models), dtype=bool, count=len(models))
    except TypeError:  # an unhashable model: asked node by node
        is_chip = np.array([str(m).startswith("nvswitch") for m in models], dtype=bool)
    if not is_chip.any():
        return None
    try:
        shape = FabricShape.of(fab)  # shared with the row's other metrics
    except InvalidFabricError:  # (a self-loop, say): the walk below does without the arrays
        shape = None
    if shape is not None:
        return _system_on_arrays(shape, is_chip, models)
    chips = [v for v, chip in zip(g.nodes, is_chip, strict=True) if chip]
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
    chip_models = {g.nodes[c]["model"] for c in chips}
    if len(sizes) != 1 or len(chip_models) != 1:
        return None
    return SYSTEMS_BY_SCALE_UP.get((chip_models.pop(), sizes.pop()))


def _system_on_arrays(shape: FabricShape, is_chip: np.ndarray, models: list[Any]
                      ) -> str | None:
    """:func:`server_system` on the fabric's arrays: the scale-up domains that hold a chip
    (:class:`~fabricopt.graph_arrays.FabricShape`), found without a walk per chip."""
    n = shape.arrays.n_nodes
    is_ep = np.zeros(n, dtype=bool)
    is_ep[shape.endpoint_index] = True
    label = shape.domain
    with_chip = np.unique(label[is_chip])
    sizes = set(np.bincount(label, weights=is_ep, minlength=n)[with_chip].astype(int).tolist())
    chip_models = set(map(models.__getitem__, np.flatnonzero(is_chip).tolist()))
    if len(sizes) != 1 or len(chip_models) != 1:
        return None
    return SYSTEMS_BY_SCALE_UP.get((chip_models.pop(), sizes.pop()))
