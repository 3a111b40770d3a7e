"""Pure functions that return a :class:`~fabricopt.Fabric`.

``GENERATORS`` maps each generator's name to the function, for the command line and design
files.
"""

from __future__ import annotations

from collections.abc import Callable

from ..fabric import Fabric
from .classic import complete, dragonfly, hypercube, jellyfish, ring, torus

GENERATORS: dict[str, Callable[..., Fabric]] = {
    "ring": ring,
    "torus": torus,
    "hypercube": hypercube,
    "complete": complete,
    "dragonfly": dragonfly,
    "jellyfish": jellyfish,
}

__all__ = ["GENERATORS", "complete", "dragonfly", "hypercube", "jellyfish", "ring", "torus"]
