"""The two-phase (Valiant) rate: what every traffic within the hose gets when each pair's
demand is first spread over hubs, then carried from the hubs to its destination
(``docs/two-phase.md``).

:mod:`.rate` is :func:`~fabricopt.flow.two_phase.rate.valiant_rate` and its LPs;
:mod:`.bounds` the bounds it tries first (a cut of the hierarchy above, WCMP phase-1 flows
below); :mod:`.domains` the two-phase LP with alike scale-up domains merged. (Nothing is
imported here: :mod:`fabricopt.flow` gathers the public names.)
"""
