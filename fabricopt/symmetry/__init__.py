"""Symmetry: the claim a generator attaches, its verification, and the search that finds and
proves a fabric's automorphisms when nobody claimed them.

:class:`Symmetry` lives on the data model's floor (:mod:`fabricopt.symmetry_claim`: a
:class:`~fabricopt.Fabric` carries one); :mod:`~fabricopt.symmetry.verify` proves a claim on
a small fabric;
:mod:`~fabricopt.symmetry.search` finds generators by colour refinement and individualisation,
proves them, and reports orbits.
"""

from ..symmetry_claim import Symmetry
from .search import FoundSymmetry, find_symmetry, search_symmetry
from .verify import verify_symmetry

__all__ = ["FoundSymmetry", "Symmetry", "find_symmetry", "search_symmetry", "verify_symmetry"]
