"""The NetGraph side of the table: its ``MaximumSupportedDemand`` search on the same fabric.

NetGraph (``pip install 'fabricopt[bench]'``) finds the largest multiplier alpha at which a
demand set still places fully, by bracketing and bisection over placements. The fabric goes
to it as a scenario: every node by name, every link once with its capacity (NetGraph links
carry both directions), and one pairwise demand set over the GPUs.
"""

from __future__ import annotations

import re
import time


def scenario_yaml(fab) -> str:
    """The NetGraph scenario of ``fab`` with uniform pairwise all-to-all over its GPUs."""
    import yaml

    name = {v: re.sub(r"[^A-Za-z0-9_]", "_", str(v)) for v in fab.graph}
    eps = set(fab.endpoints)
    nodes = {name[v]: {"attrs": {"role": "gpu" if v in eps else "switch"}} for v in fab.graph}
    links, seen = [], set()
    for u, v, d in fab.graph.edges(data=True):
        if frozenset((u, v)) in seen:
            continue
        seen.add(frozenset((u, v)))
        links.append({"source": name[u], "target": name[v], "capacity": float(d["capacity"]),
                      "cost": 1})
    gpus = "^(" + "|".join(re.escape(name[e]) for e in fab.endpoints) + ")$"
    # A pairwise demand's volume is shared by its pairs: 1 Gb/s per ordered pair, so alpha
    # reads as fabricopt's theta of all_to_all (tiny volumes fall under NetGraph's tolerance).
    n = len(fab.endpoints)
    doc = {"network": {"nodes": nodes, "links": links},
           "demands": {"default": [{"source": gpus, "target": gpus,
                                    "volume": float(n * (n - 1)), "mode": "pairwise"}]},
           "workflow": [{"type": "MaximumSupportedDemand", "name": "msd",
                         "demand_set": "default"}]}
    return yaml.safe_dump(doc)


def netgraph_msd(fab) -> tuple[float, float]:
    """``(alpha_star, seconds)`` of NetGraph's search on ``fab`` (scenario build included)."""
    from ngraph.scenario import Scenario

    start = time.perf_counter()
    scenario = Scenario.from_yaml(scenario_yaml(fab))
    scenario.run()
    alpha = scenario.results.to_dict()["steps"]["msd"]["data"]["alpha_star"]
    return float(alpha), time.perf_counter() - start
