"""Symmetry: the claim a generator attaches, its verification, and the search that finds and
proves a fabric's automorphisms when nobody claimed them.

:mod:`~fabricopt.symmetry.claim` holds :class:`Symmetry` (part of the data model: a
:class:`~fabricopt.Fabric` carries one) and :func:`verify_symmetry`;
:mod:`~fabricopt.symmetry.search` finds generators by colour refinement
(:mod:`~fabricopt.symmetry.refinement`) and individualisation,
proves them, and reports orbits (:mod:`~fabricopt.symmetry.orbits`).
"""

from .claim import Symmetry, verify_symmetry
from .search import FoundSymmetry, find_symmetry, search_symmetry

__all__ = ["FoundSymmetry", "Symmetry", "find_symmetry", "search_symmetry", "verify_symmetry"]
