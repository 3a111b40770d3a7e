"""Pure functions that return a :class:`~fabricopt.Fabric`.

``GENERATORS`` maps each generator's name to the function, for the command line and design
files. The functions exported here record their call on the fabric they return
(:attr:`Fabric.recipe`, see :mod:`fabricopt.generators.recipe`), so files can replay it.
"""

from __future__ import annotations

from collections.abc import Callable

from ..fabric import Fabric
from .classic import complete, dragonfly, hypercube, jellyfish, ring, torus
from .clos import clos, fat_tree, leaf_spine
from .cluster import cluster, superpod
from .rail import rail_optimized
from .recipe import recording
from .scaleup import (
    dgx_b200,
    dgx_h100,
    gb200_nvl72,
    nvl576,
    nvlink_switch_system,
    nvswitch_domain,
    ualink_pod,
)

GENERATORS: dict[str, Callable[..., Fabric]] = {
    "ring": ring,
    "torus": torus,
    "hypercube": hypercube,
    "complete": complete,
    "dragonfly": dragonfly,
    "jellyfish": jellyfish,
    "fat_tree": fat_tree,
    "clos": clos,
    "leaf_spine": leaf_spine,
    "rail_optimized": rail_optimized,
    "nvswitch_domain": nvswitch_domain,
    "dgx_h100": dgx_h100,
    "dgx_b200": dgx_b200,
    "gb200_nvl72": gb200_nvl72,
    "nvlink_switch_system": nvlink_switch_system,
    "nvl576": nvl576,
    "ualink_pod": ualink_pod,
    "cluster": cluster,
    "superpod": superpod,
}

GENERATORS = {name: recording(name, func) for name, func in GENERATORS.items()}
globals().update(GENERATORS)  # the exported names are the recording ones

__all__ = ["GENERATORS", "clos", "cluster", "complete", "dgx_b200", "dgx_h100", "dragonfly",
           "fat_tree", "gb200_nvl72", "hypercube", "jellyfish", "leaf_spine", "nvl576",
           "nvlink_switch_system", "nvswitch_domain", "rail_optimized", "ring", "superpod",
           "torus", "ualink_pod"]
