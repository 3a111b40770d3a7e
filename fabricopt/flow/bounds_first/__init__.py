"""Bounds first: certified brackets proven before (or instead of) a solve — the hierarchy's
cuts above, routed flows below (``docs/bounds-first.md``).

:mod:`.brackets` makes the stage's brackets; the routings it proves as points of the LP are
:mod:`.tor_routing` (between the switches endpoints attach to), :mod:`.domain_relays`
(servers relaying at both ends), :mod:`.tier_routing` (each pair below the lowest tier
joining it, also from orbit roots) and :mod:`.rebalance` (WCMP with its splits tuned). The
hierarchy's cuts and the ECMP point are :mod:`fabricopt.flow.bounds`, which the failure and
bisection floors read too. (Nothing is imported here: :mod:`fabricopt.flow.bounds` imports
the routings, and :mod:`.brackets` imports it.)
"""
