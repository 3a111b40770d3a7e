"""The calibrated expected figure: efficiency profiles measured by nccl-tests and the
labelled estimate they give (``docs/collectives.md#expected-efficiency-not-a-bound``); never a
bound."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._checks import check_choice, check_positive
from ..errors import InvalidParameterError
from ..fabric import Fabric
from .problem import Problem, reduce_domains, reducing_switches
from .results import Bound, bus_factor
from .schemes import Ask, Outcome

#: Efficiency profiles for ``expected=True``, calibrated on published nccl-tests all-reduce
#: busbw at large sizes (``docs/collectives.md#expected-efficiency-not-a-bound``). Each is the
#: measured busbw over this module's figure for the algorithm that ran:
#:
#: * ``"scale_up"``: a ring over NVLink, against the bound (the per-GPU NVLink bandwidth);
#: * ``"nvls"``: NVLink SHARP, against its schedule as NCCL runs it (``S + S/g`` per GPU);
#: * ``"network"``: the scale-out phase over the NICs.
#:
#: nvlink4 (8 x H100, 450 GB/s per GPU): ring about 370 GB/s and NVLS about 480 GB/s
#: (NVIDIA/nccl-tests issue 212, an NCCL maintainer; NVIDIA/nccl issue 1455 measures 365-370
#: and 480). nvlink5 (8 x B300, 900 GB/s per GPU; no B200 figure was found and a DGX B200 has
#: the same per-GPU NVLink): ring 695 and NVLS 845 GB/s (NVIDIA/nccl issue 2140).
#: nvlink5-rack (GB200 NVL72, all 72 GPUs): 834.6 GB/s out of place at 8 GiB (the GB200
#: NVL72 example of CoreWeave's nccl-tests fork, pull request 43), read as NVLS (NCCL's
#: default there). The network figure, 0.94, is inside the 92-96% of NIC line rate reported
#: for tuned InfiniBand rings: an estimate without a cited measurement.
EFFICIENCY_PROFILES: dict[str, dict[str, float]] = {
    "nvlink4": {"scale_up": 370.0 / 450.0, "nvls": 480.0 / 700.0, "network": 0.94},
    "nvlink5": {"scale_up": 695.0 / 900.0, "nvls": 845.0 / 1400.0, "network": 0.94},
    "nvlink5-rack": {"scale_up": 695.0 / 900.0,
                     "nvls": 834.57 / (900.0 * (2 * 71 / 72) / (1 + 1 / 72)),
                     "network": 0.94},
}

#: The profile used when the fabric's scale-up links name no NVLink generation.
DEFAULT_EFFICIENCY = EFFICIENCY_PROFILES["nvlink4"]


def profile_for(p: Problem, fab: Fabric) -> tuple[str, dict[str, float]]:
    """The calibrated profile for the participants' scale-up links: by NVLink generation, and
    the rack-scale one when a reducing domain holds more than 8 of them."""
    techs = {str(fab.graph[u][v].get("tech", "")).lower()
             for a, (u, v) in enumerate(p.ga.arcs) if p.scale_up_arc[a]}
    if any(t.startswith("nvlink5") for t in techs):
        domains, _ = reduce_domains(p, reducing_switches(p, False)[0])
        big = any(len(d) > 8 for d in domains)
        name = "nvlink5-rack" if big else "nvlink5"
    else:
        name = "nvlink4"
    return name, dict(EFFICIENCY_PROFILES[name])


def efficiency_profile(func: str, expected: Any) -> dict[str, float] | str | None:
    """None, the name of a profile (``"auto"`` for ``True``), or a checked custom dict."""
    if expected is None or expected is False:
        return None
    if expected is True:
        return "auto"
    if isinstance(expected, str):
        return check_choice(func, "expected", expected, tuple(EFFICIENCY_PROFILES))
    if not isinstance(expected, dict):
        raise InvalidParameterError(f"{func}(): expected must be None, True, a profile name "
                                    f"or a dict of efficiencies, got {expected!r}")
    for k, v in expected.items():
        check_choice(func, "a key of expected", k, tuple(DEFAULT_EFFICIENCY))
        value = check_positive(func, f"expected[{k!r}]", v)
        if value > 1:
            raise InvalidParameterError(f"{func}(): expected[{k!r}] must be an efficiency in "
                                        f"(0, 1] (a fraction of a bound), got {v!r}")
    return {**DEFAULT_EFFICIENCY, **expected}



def expected_figure(ask: Ask, out: Outcome, profile: dict[str, float] | str,
              alpha_s: float) -> dict[str, Any]:
    """The labelled expected figure: the faster of the ring (the best schedule without
    in-network reduction, or the bound, at the efficiency of the links that bind) and NVLink
    SHARP (each phase at its own efficiency); never a bound."""
    name = "custom"
    if profile == "auto":
        name, effs = profile_for(ask.p, ask.fab)
    elif isinstance(profile, str):
        name, effs = profile, dict(EFFICIENCY_PROFILES[profile])
    else:
        effs = profile
    ring = next((b.time_s for b in out.bounds if b.name == "reduce-scatter + all-gather"),
                None)
    if ring is None:
        ring = out.achievable_s if out.achievable_s is not None else out.lower.time_s
    plain = [b for b in out.bounds if b.kind in ("lower", "exact") and "SHARP" not in b.name]
    side = binding_side(ask.p, max(plain, key=lambda b: b.time_s) if plain else out.lower)
    candidates = {f"ring, {side.replace('_', '-')} efficiency {effs[side]:.3g}":
                  ring / effs[side]}
    if out.in_network_reduction and out.inr_phases_s is not None:
        phases = out.inr_phases_s
        candidates[f"NVLink SHARP efficiency {effs['nvls']:.3g}, network "
                   f"{effs['network']:.3g}"] = max(phases["nvls"] / effs["nvls"],
                                                   phases["network"] / effs["network"])
    label, t = min(candidates.items(), key=lambda kv: kv[1])
    t += alpha_s
    busbw = ask.size / t / 1e9 * bus_factor(ask.collective, ask.n)
    return {"busbw_GBps": busbw, "time_s": t, "profile": name,
            "efficiency": effs,
            "label": f"expected ({name} profile: {label}; calibrated on nccl-tests, not a bound)"}



def binding_side(p: Problem, bound: Bound) -> str:
    """"scale_up" or "network": the kind (:mod:`fabricopt.tiers`) of the tier that carries
    most of the binding cut, or of the participants' own links when the bound has no cut
    (volume bounds)."""
    if bound.cut is not None and bound.cut.tiers:
        tiers = dict(bound.cut.tiers)
    else:
        gpu = np.zeros(p.ga.n_nodes, dtype=bool)
        gpu[p.gpus] = True
        tiers = {}
        for a in np.flatnonzero(gpu[p.ga.tail]):
            tiers[p.tiers[a]] = tiers.get(p.tiers[a], 0.0) + float(p.ga.capacity[a])
    if not tiers:
        return "network"
    tier = max(tiers.items(), key=lambda kv: kv[1])[0]
    return "scale_up" if tier in p.scale_up_tiers else "network"
