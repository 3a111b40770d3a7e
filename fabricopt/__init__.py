"""fabricopt: design GPU-cluster interconnects and compute what they can carry, with proof.

>>> import fabricopt as fo
>>> fo.ring(8).summary().endpoints
8
"""

from ._version import __version__
from .errors import (
    BackendUnavailableError,
    DesignFileError,
    FabricOptError,
    InvalidFabricError,
    InvalidParameterError,
    TrafficError,
)
from .fabric import Fabric, FabricSummary, from_networkx
from .fabric_io import read_graphml, read_json, write_graphml, write_json
from .generators import (
    GENERATORS,
    clos,
    complete,
    fat_tree,
    hypercube,
    leaf_spine,
    rail_optimized,
    ring,
    torus,
)
from .symmetry import Symmetry, verify_symmetry

__all__ = [
    "GENERATORS",
    "BackendUnavailableError",
    "DesignFileError",
    "Fabric",
    "FabricOptError",
    "FabricSummary",
    "InvalidFabricError",
    "InvalidParameterError",
    "Symmetry",
    "TrafficError",
    "__version__",
    "clos",
    "complete",
    "fat_tree",
    "from_networkx",
    "hypercube",
    "leaf_spine",
    "rail_optimized",
    "read_graphml",
    "read_json",
    "ring",
    "torus",
    "write_graphml",
    "verify_symmetry",
    "write_json",
]
