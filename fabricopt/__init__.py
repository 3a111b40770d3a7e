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
    complete,
    dgx_b200,
    dgx_h100,
    gb200_nvl72,
    hypercube,
    nvl576,
    nvlink_switch_system,
    nvswitch_domain,
    ring,
    torus,
    ualink_pod,
)
from .specs import load_design
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
    "complete",
    "dgx_b200",
    "dgx_h100",
    "from_networkx",
    "gb200_nvl72",
    "hypercube",
    "load_design",
    "nvl576",
    "nvlink_switch_system",
    "nvswitch_domain",
    "read_graphml",
    "read_json",
    "ring",
    "torus",
    "ualink_pod",
    "write_graphml",
    "verify_symmetry",
    "write_json",
]
