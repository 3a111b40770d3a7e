"""Bounds first: certified brackets proven before (or instead of) a solve — the hierarchy's
cuts above, routed flows below (``docs/bounds-first.md``)."""

from .brackets import (
    arc_tiers,
    bounds_stage,
    build_and_bound,
    cut_bracket,
    root_routing_bracket,
    uniform_gbps,
    with_root_routing,
)

__all__ = ["arc_tiers", "bounds_stage", "build_and_bound", "cut_bracket",
           "root_routing_bracket", "uniform_gbps", "with_root_routing"]
