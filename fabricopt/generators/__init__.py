"""Pure functions that return a :class:`~fabricopt.Fabric`.

``GENERATORS`` maps each generator's name to the function, for the command line and design
files.
"""

from __future__ import annotations

from collections.abc import Callable

from ..fabric import Fabric
from .classic import complete, dragonfly, hypercube, jellyfish, ring, torus
from .clos import clos, fat_tree, leaf_spine
from .cluster import cluster, superpod
from .rail import rail_optimized

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
    "cluster": cluster,
    "superpod": superpod,
}

__all__ = ["GENERATORS", "clos", "cluster", "complete", "dragonfly", "fat_tree", "hypercube",
           "jellyfish", "leaf_spine", "rail_optimized", "ring", "superpod", "torus"]
