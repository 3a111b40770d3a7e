"""Pure functions that return a :class:`~fabricopt.Fabric`.

``GENERATORS`` maps each generator's name to the function, for the command line and design
files.
"""

from __future__ import annotations

from collections.abc import Callable

from ..fabric import Fabric
from .classic import complete, hypercube, ring, torus
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
    "nvswitch_domain": nvswitch_domain,
    "dgx_h100": dgx_h100,
    "dgx_b200": dgx_b200,
    "gb200_nvl72": gb200_nvl72,
    "nvlink_switch_system": nvlink_switch_system,
    "nvl576": nvl576,
    "ualink_pod": ualink_pod,
}

__all__ = ["GENERATORS", "complete", "dgx_b200", "dgx_h100", "gb200_nvl72", "hypercube", "nvl576",
           "nvlink_switch_system", "nvswitch_domain", "ring", "torus", "ualink_pod"]
