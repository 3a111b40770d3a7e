"""Cost and power: physical layout, media selection, bill of materials, priced from the
hardware catalog (:mod:`fabricopt.catalog`, re-exported here).

>>> import fabricopt as fo
>>> est = fo.estimate_cost(fo.ring(8, link_gbps=400))
>>> est.capex_usd > 0 and est.power_w > 0
True
"""

from ..catalog import CONFIDENCES, FIELDS, MEDIUM_TYPES, Catalog, CatalogError, Entry
from .bom import BomRow, CostEstimate, DeliveredCost, Totals, estimate_cost, length_bucket
from .layout import LEAF_PLACEMENTS, Layout, Placement, in_server_switches, place
from .media import POLICY_PRESETS, LinkMedium, MediaSelector, Policy
from .tco import ANNUAL_FAILURE_RATES, TcoEstimate, estimate_tco, tco_metrics

__all__ = [
    "ANNUAL_FAILURE_RATES",
    "TcoEstimate",
    "estimate_tco",
    "tco_metrics",
    "CONFIDENCES",
    "FIELDS",
    "LEAF_PLACEMENTS",
    "MEDIUM_TYPES",
    "POLICY_PRESETS",
    "BomRow",
    "Catalog",
    "CatalogError",
    "CostEstimate",
    "DeliveredCost",
    "Entry",
    "Layout",
    "LinkMedium",
    "MediaSelector",
    "Placement",
    "Policy",
    "Totals",
    "estimate_cost",
    "in_server_switches",
    "length_bucket",
    "place",
]
