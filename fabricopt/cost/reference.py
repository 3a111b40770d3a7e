"""The default media policy: each link priced the way the reference build of its design family
is cabled, and the name of that build, printed with every estimate.

* **DGX SuperPOD** (servers whose NVSwitch chips are on the baseboard, DGX/HGX H100 or B200,
  on an InfiniBand or Ethernet scale-out): NVIDIA's reference architecture cables every
  scale-out link, NIC-leaf and leaf-spine (and spine-core), with twin-port OSFP transceivers
  and fibre; the server brings two NIC ports out on each 800G twin-port cage. That is
  :data:`~fabricopt.cost.media.POLICY_PRESETS` ``"reference"``: 2.0 modules per GPU on two
  tiers, 3.0 on three.
* **GB200 NVL72 SuperPOD** (racks whose NVLink Switch trays reach the GPUs): OSFP
  transceivers and fibre on every scale-out link; one single-port module per ConnectX-7 at
  the compute tray.
* **Top-of-rack builds** (every GPU's first network switch in the GPU's own rack, or every
  server's GPUs on one first switch in the rack of some of its servers, as in Meta's
  24K-GPU RoCE clusters, whatever the taper): copper DAC from the GPUs to the rack switch
  and single-mode pluggable optics above it (the paper's rack and cluster tiers); no
  multimode or active cables. A link that leaves its rack (the fifth server of a 2:1 leaf)
  takes the medium its length needs.
* Anything else has no reference build: each link takes the cheapest medium that reaches
  (``Policy()``), and the name says so.

A policy given to :func:`~fabricopt.estimate_cost` replaces the default and is named by its
preset, or ``"custom"``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .media import POLICY_PRESETS, Policy
from .reading import FabricReading

SUPERPOD = "DGX SuperPOD reference build: twin-port OSFP transceivers and fibre on every " \
    "scale-out link"
GB200 = "GB200 NVL72 SuperPOD reference build: OSFP transceivers and fibre on every " \
    "scale-out link"
TOP_OF_RACK = "top-of-rack build (Meta's RoCE clusters): copper DAC from the GPUs to the rack " \
    "switch, single-mode optics above"
NO_REFERENCE = "cheapest medium per link (no reference build for this design family)"


def default_policy(reading: FabricReading) -> tuple[str, Policy]:
    """The reference policy of a fabric's design family and its name (module notes)."""
    trays = any(reading.node_data[i].get("tray") is not None for i in reading.switches
                if reading.nodes[i] in reading.in_server)
    servers = any(reading.node_data[i].get("tray") is None for i in reading.switches
                  if reading.nodes[i] in reading.in_server)
    scale_out = any(use is not None for use in reading.nic_port_use)
    if trays and scale_out:
        return GB200, Policy(all_optics=True)
    if servers and scale_out and _top_of_rack(reading):
        return TOP_OF_RACK, Policy(exclude=("sr", "aoc", "aec", "acc"))
    if servers and scale_out:
        return SUPERPOD, Policy(**POLICY_PRESETS["reference"])
    return NO_REFERENCE, Policy()


def policy_name(policy: Any) -> str:
    """How a policy given by the caller is named in the estimate.

    >>> policy_name("lpo"), policy_name(Policy(all_optics=True)), policy_name({"lpo": True})
    ('lpo', 'all_optics', 'lpo')
    """
    coerced = Policy.coerce(policy)
    for name, fields in POLICY_PRESETS.items():
        if coerced == Policy(**fields):
            return name
    return "custom"


def _top_of_rack(reading: FabricReading) -> bool:
    """Whether every link from a GPU or NIC to its first switch stays in one rack, or every
    server sends all its GPUs (or NICs) to one first switch, each such switch in the rack of
    some of its servers.

    The second keeps the build of a leaf above whole servers whatever its taper: a 1:1 leaf
    of 64 ports holds four 8-GPU servers, one rack, and a 2:1 leaf five, one rack and a spill
    into the next; a 2:1 taper is priced as the 1:1 fabric it thins (each link's medium still
    follows its length). A leaf placed at the end of a row or centrally is in no server's
    rack: that is not a top-of-rack build, whatever the servers.
    """
    b, rack, unit = reading.bundles, reading.placement.rack, reading.placement.unit
    first = [k for k, c in enumerate(b.classes) if c[0] in ("gpu-leaf", "nic-leaf")]
    sel = np.isin(b.kind, first)
    if not sel.any():
        return False
    u, v = b.u[sel], b.v[sel]
    if np.all(rack[u] == rack[v]):
        return True
    below = unit[u] >= 0  # the GPU or NIC end carries its server (switches carry -1)
    server, switch = np.where(below, unit[u], unit[v]), np.where(below, v, u)
    if np.any(server < 0):
        return False
    pairs = np.unique(np.stack([server, switch]), axis=1)
    if len(np.unique(pairs[0])) != pairs.shape[1]:  # a server on two first switches
        return False
    in_a_server_rack = np.unique(switch[rack[u] == rack[v]])
    return bool(np.isin(pairs[1], in_a_server_rack).all())
