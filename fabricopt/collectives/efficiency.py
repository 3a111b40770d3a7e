"""The calibrated expected figure: efficiency profiles measured by nccl-tests and the
labelled estimate they give (``docs/collectives.md#expected-efficiency-not-a-bound``); never a
bound."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._checks import check_choice, check_positive
from ..errors import InvalidParameterError
from ..fabric import Fabric
from ..graph_arrays import arc_labels
from .nccl import all_reduce_algorithms, domains_of, ring_latency_us
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
#: nvlink3 (8 x A100, 300 GB/s per GPU): ring about 230 GB/s at 8 GB (NVIDIA/nccl-tests
#: issue 149, an NCCL maintainer: 12 links of 25 GB/s carry about 20 GB/s each with 128-byte
#: payloads, 240 GB/s, other limits on the GPU leave about 230); NVSwitch gen 2 does no NVLink
#: SHARP, so its ``nvls`` (nvlink4's, kept for the profile's shape) never applies.
#: nvlink4 (8 x H100, 450 GB/s per GPU): ring about 370 GB/s and NVLS about 480 GB/s
#: (NVIDIA/nccl-tests issue 212, an NCCL maintainer; NVIDIA/nccl issue 1455 measures 365-370
#: and 480). nvlink5 (8 x B300, 900 GB/s per GPU; no B200 figure was found and a DGX B200 has
#: the same per-GPU NVLink): ring 695 and NVLS 845 GB/s (NVIDIA/nccl issue 2140).
#: nvlink5-rack (GB200 NVL72, all 72 GPUs): 834.6 GB/s out of place at 8 GiB (the GB200
#: NVL72 example of CoreWeave's nccl-tests fork, pull request 43), read as NVLS (NCCL's
#: default there). The network figure, 0.94, is the midpoint of NVIDIA's guidance for
#: all-reduce over NDR InfiniBand, 46-48 GB/s per 400 Gb/s NIC (50 GB/s); multi-node
#: measurements check it (``tests/collectives/test_collectives_fidelity.py``).
EFFICIENCY_PROFILES: dict[str, dict[str, float]] = {
    "nvlink3": {"scale_up": 230.0 / 300.0, "nvls": 480.0 / 700.0, "network": 0.94},
    "nvlink4": {"scale_up": 370.0 / 450.0, "nvls": 480.0 / 700.0, "network": 0.94},
    "nvlink5": {"scale_up": 695.0 / 900.0, "nvls": 845.0 / 1400.0, "network": 0.94},
    "nvlink5-rack": {"scale_up": 695.0 / 900.0,
                     "nvls": 834.57 / (900.0 * (2 * 71 / 72) / (1 + 1 / 72)),
                     "network": 0.94},
}

#: The profile used when the fabric's scale-up links name no NVLink generation.
DEFAULT_EFFICIENCY = EFFICIENCY_PROFILES["nvlink4"]


def profile_for(p: Problem, fab: Fabric) -> tuple[str, dict[str, float]]:
    """The calibrated profile for the participants' scale-up links: by NVLink generation
    (``nvlink3`` when all of them are NVLink 3, ``nvlink4`` by default), and the rack-scale
    one when a reducing domain holds more than 8 of them."""
    labels = arc_labels(fab)  # in the order of p's arcs (collective_problem)
    techs = {str(labels.labels[c][1]).lower() for c in np.unique(labels.code[p.scale_up_arc])}
    if any(t.startswith("nvlink5") for t in techs):
        domains, _ = reduce_domains(p, reducing_switches(p, False)[0])
        big = any(len(d) > 8 for d in domains)
        name = "nvlink5-rack" if big else "nvlink5"
    elif techs and all(t.startswith("nvlink3") for t in techs):
        name = "nvlink3"
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
    """The labelled expected figure, never a bound.

    All-reduce: the fastest of NCCL's algorithms at this size (:mod:`.nccl`), each at the
    calibrated efficiencies; all-gather and reduce-scatter: NCCL's ring; all-to-all and
    broadcast: the best schedule at the efficiency of the links that bind. Whatever the
    algorithm, the figure is never faster than the fabric's bound at the efficiency of its
    binding links, so an oversubscribed network slows it as it slows the bound."""
    name = "custom"
    if profile == "auto":
        name, effs = profile_for(ask.p, ask.fab)
    elif isinstance(profile, str):
        name, effs = profile, dict(EFFICIENCY_PROFILES[profile])
    else:
        effs = profile
    plain = [b for b in out.bounds if b.kind in ("lower", "exact") and "SHARP" not in b.name]
    side = binding_side(ask.p, max(plain, key=lambda b: b.time_s) if plain else out.lower)
    floor = out.lower.time_s / effs[side] + alpha_s
    bus = bus_factor(ask.collective, ask.n)
    algorithms: dict[str, float] = {}
    limits: dict[str, str] = {}
    if ask.collective in ("all_reduce", "all_gather", "reduce_scatter"):
        d = domains_of(ask.p, *ask.reducing())
        found = all_reduce_algorithms(d, ask.size, ask.n, effs)
        if ask.collective != "all_reduce":  # NCCL runs these as a ring: n - 1 steps
            ring, _, limit = found["ring"]
            found = {"ring": (ring, ring_latency_us(d, ask.n, 1) * 1e-6
                              + (ask.size * bus / (ring * 1e9) if ring > 0 else math.inf),
                              limit)}
        algorithms = {a: t for a, (_, t, _) in found.items()}
        limits = {a: limit for a, (_, _, limit) in found.items()}
    if not algorithms or not all(math.isfinite(t) for t in algorithms.values()):
        best = out.achievable_s if out.achievable_s is not None else out.lower.time_s
        algorithms = {"best schedule": best / effs[side] + alpha_s}
    algorithm, t_alg = min(algorithms.items(), key=lambda kv: kv[1])
    t = max(t_alg, floor)
    limit = side.replace("_", "-") if floor > t_alg else limits.get(algorithm, side)
    limit = limit.replace("_", "-")
    key = {"scale-up": "scale_up", "NVLS": "nvls", "network": "network"}[limit]
    held = " (held to the fabric's bound)" if floor > t_alg else ""
    busbw = ask.size / t / 1e9 * bus
    label = f"{algorithm}{held}, {limit} efficiency {effs[key]:.3g}"
    return {"busbw_GBps": busbw, "time_s": t, "profile": name, "algorithm": algorithm,
            "algorithm_times_s": algorithms, "efficiency": effs,
            "label": f"expected ({name} profile: {label}; as NCCL runs it, calibrated on "
                     "nccl-tests, not a bound)"}


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
