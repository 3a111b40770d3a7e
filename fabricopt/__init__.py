"""fabricopt: design GPU-cluster interconnects and compute what they can carry, with proof.

>>> import fabricopt as fo
>>> fo.ring(8).summary().endpoints
8
"""

from ._version import __version__
from .cost import Catalog, CatalogError, CostEstimate, Layout, Policy, estimate_cost
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
from .generators import GENERATORS, complete, hypercube, ring, torus
from .symmetry import Symmetry, verify_symmetry

__all__ = [
    "GENERATORS",
    "BackendUnavailableError",
    "Catalog",
    "CatalogError",
    "CostEstimate",
    "DesignFileError",
    "Fabric",
    "FabricOptError",
    "FabricSummary",
    "InvalidFabricError",
    "InvalidParameterError",
    "Layout",
    "Policy",
    "Symmetry",
    "TrafficError",
    "__version__",
    "complete",
    "estimate_cost",
    "from_networkx",
    "hypercube",
    "read_graphml",
    "read_json",
    "ring",
    "torus",
    "write_graphml",
    "verify_symmetry",
    "write_json",
]
