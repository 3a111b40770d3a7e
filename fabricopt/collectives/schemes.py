"""One function per collective: the bounds of all-gather, reduce-scatter, all-reduce (volume,
cuts, in-network reduction), all-to-all and broadcast on one problem."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..analysis.cuts import min_cut
from ..fabric import Fabric
from ..failures.engine import max_concurrent_flow  # with the failure floor's stages
from ..traffic import all_to_all
from .parts import Partition, all_reduce_volume_s, part_cut_s, partition
from .problem import (
    FORESTCOLL_MAX_CUTS,
    Problem,
    balanced_forwarders,
    describe_cut,
    forestcoll_ratio,
    pair_cut_min,
    reduce_domains,
    reducing_switches,
    reversed_problem,
    reversible_arcs,
    scale_out_gbps,
    scatter_ratio,
    transfer_time,
)
from .results import GBPS_TO_BYTES, Bound, CutInfo, bus_factor


@dataclass
class Ask:
    """One collective asked of one problem: the buffer, its participants and the notes the
    computation leaves for the caller."""

    fab: Fabric
    p: Problem
    collective: str
    size: float
    in_network_reduction: bool | str = "auto"
    notes: list[str] = field(default_factory=list)
    _balanced: bool | None = None
    scale_out_reduction: bool = False

    def reducing(self) -> tuple[np.ndarray, np.ndarray]:
        """(scale-up, scale-out) masks of the switches that reduce in this computation
        (:func:`reducing_switches`), both empty when in-network reduction is off."""
        if self.in_network_reduction is False:
            none = np.zeros(self.p.ga.n_nodes, dtype=bool)
            return none, none
        return reducing_switches(self.p, self.scale_out_reduction)

    @property
    def n(self) -> int:
        return len(self.p.gpus)

    @property
    def chunk(self) -> float:
        return self.size / self.n

    def forwarders_balanced(self) -> bool:
        """Whether ForestColl's schedules apply (:func:`balanced_forwarders`); the first
        answer No leaves a note."""
        if self._balanced is None:
            self._balanced = balanced_forwarders(self.p)
            if not self._balanced:
                self.notes.append("some forwarding node has unequal capacity in and out, so "
                                  "the ForestColl optimum is a lower bound only (its schedules "
                                  "need balanced switches); no achievable time is claimed for "
                                  "all-gather/reduce-scatter")
        return self._balanced

    def bound(self, name: str, t: float, kind: str, why: str,
              cut: CutInfo | None = None) -> Bound:
        """A time bound of this collective with its algbw and busbw."""
        algbw = self.size / t / 1e9 if t > 0 else math.inf
        return Bound(name, t, algbw, algbw * bus_factor(self.collective, self.n), kind, why, cut)


@dataclass
class Outcome:
    """What one collective's function finds: its binding (largest) lower bound, the best
    achievable time, and every bound computed."""

    lower: Bound
    achievable_s: float | None
    bounds: list[Bound]
    in_network_reduction: bool = False
    #: Phase times of the in-network reduction schedule: {"nvls": s, "network": s}.
    inr_phases_s: dict[str, float] | None = None


def forestcoll_bound(ask: Ask, problem: Problem, name: str, direction: str,
                     found: tuple[float, np.ndarray, bool | None] | None = None,
                     ) -> tuple[float | None, Bound]:
    """The ForestColl all-gather optimum on ``problem`` (the reversed graph gives
    reduce-scatter): its bound, and its time when a schedule reaches it (balanced switches).
    ``found`` is :func:`forestcoll_ratio`'s answer on ``problem`` when the caller has it."""
    # Reversing every arc keeps each node's capacity in and out: one answer serves both.
    balanced = ask.forwarders_balanced()
    ratio, side, proven = forestcoll_ratio(problem) if found is None else found
    t = ask.chunk * ratio / GBPS_TO_BYTES
    if proven is None:
        # Stopped at its work limit: a real cut, so a lower bound on the time, but maybe not
        # the largest, so no schedule is claimed to reach it.
        ask.notes.append(f"{name}: the cut search stopped at its work limit "
                         f"({FORESTCOLL_MAX_CUTS:,} minimum cuts); the cut found is real, but "
                         "a tighter one may exist")
        balanced = False
    elif not proven:
        ask.notes.append(f"{name}: the max-flow search was rounded; the cut found is real, "
                         "but a slightly tighter one may exist")
    bound = ask.bound(name, t, "exact" if balanced else "lower",
                      "ForestColl cut formula (forwarding-only switches)",
                      describe_cut(problem, side, direction))
    return (t if balanced else None), bound


def _all_gather(ask: Ask) -> Outcome:
    t, b = forestcoll_bound(ask, ask.p, "all-gather optimum", "leaving")
    return Outcome(b, t, [b])


def _reduce_scatter(ask: Ask) -> Outcome:
    t, b = forestcoll_bound(ask, reversed_problem(ask.p), "reduce-scatter optimum", "entering")
    return Outcome(b, t, [b])


def partitions(p: Problem, combining: np.ndarray) -> list[Partition]:
    """The two partitions the volume bounds use: the finest (each reducing switch joined with
    the combining nodes it links to; GPUs linked directly stay parts of their own, so without
    reducing switches it is one part per GPU) and the scale-up one (also joined through every
    scale-up link, so a whole NVLink domain is one part)."""
    ga = p.ga
    reducer = combining.copy()
    reducer[p.gpus] = False
    direct = combining[ga.tail] & combining[ga.head] & (reducer[ga.tail] | reducer[ga.head])
    return [partition(ga, combining, direct, "finest"),
            partition(ga, combining, direct | p.scale_up_arc, "scale-up domains")]


def volume_bound(ask: Ask, groups: Sequence[np.ndarray], combining: np.ndarray,
                  reducing: bool, parts: list[Partition] | None = None) -> Bound:
    """The all-reduce volume bound over parts (``docs/collectives.md#volume-over-parts``):
    the larger over the finest and the scale-up partition (``parts``: the two
    :func:`partitions` of ``combining``, when the caller has them)."""
    best_t, best = 0.0, None
    for part in partitions(ask.p, combining) if parts is None else parts:
        t = all_reduce_volume_s(part, groups, ask.size)
        if t > best_t:
            best_t, best = t, part
    parts = 0 if best is None else len(np.unique(best.label[groups[0]]))
    inside = "reducing parts" if reducing else "parts"
    why = (f"{parts} {inside} per group ({best.name if best else '-'}); the parts together "
           "send and receive 2(m-1) times the buffer (Patarasuk and Yuan)")
    # The boundary of the first participant's part stands for the links that bind.
    cut = None if best is None else describe_cut(ask.p, best.label == best.label[groups[0][0]],
                                               "leaving")
    return ask.bound("volume", best_t, "lower", why, cut)


def _sharp_single_switch(ask: Ask, red_out: np.ndarray) -> bool:
    """True when the GPUs that aggregate together in the scale-out (those of one ``rail``,
    or all participants when they name none) reach one common reducing switch directly: the
    aggregation then needs no switch-to-switch link and runs at the NICs' rate."""
    p, ga = ask.p, ask.p.ga
    graph = ask.fab.graph
    rails: dict[Any, list[int]] = {}
    for name, g in zip(p.gpu_names, p.gpus, strict=True):
        rails.setdefault(graph.nodes[name].get("rail"), []).append(int(g))
    for members in rails.values():
        common: set[int] | None = None
        for g in members:
            arcs = ga.tail == g
            here = {int(h) for h in ga.head[arcs] if red_out[h]}
            common = here if common is None else common & here
        if not common:
            return False
    return True


def _all_reduce(ask: Ask) -> Outcome:
    """Reduce-scatter + all-gather, the volume and any-scheme cut bounds, and in-network
    reduction where switches reduce (see the module docstring)."""
    p, n, size = ask.p, ask.n, ask.size
    gathered = forestcoll_ratio(p)
    t_ag, b_ag = forestcoll_bound(ask, p, "all-gather optimum", "leaving", gathered)
    # Where every arc has a reverse of its capacity, a set sends out what it takes in: the
    # reversed graph's search maximises the same ratio, and the set it would find is one of
    # this one's optima (on a 24,576-GPU cluster the second search was a fifth of the bound).
    reversible = reversible_arcs(p.ga)
    t_rs, b_rs = forestcoll_bound(ask, reversed_problem(p), "reduce-scatter optimum", "entering",
                                  gathered if reversible else None)
    cut_min, cut_side = pair_cut_min(p, int(p.gpus[0]), reversible=reversible)
    t_sum = math.inf if t_rs is None or t_ag is None else t_rs + t_ag
    b_sum = ask.bound("reduce-scatter + all-gather", t_sum, "achievable",
                      "ForestColl reduce-scatter then all-gather")
    red_up, red_out = ask.reducing()
    domains, b_up = reduce_domains(p, red_up)
    if domains and max(len(d) for d in domains) < 2:
        domains = []  # one participant per reducing domain: nothing to reduce in a switch
    sharp = bool(red_out.any())
    use_inr = (bool(domains) or sharp) and ask.in_network_reduction in ("auto", True)
    if ask.in_network_reduction is True and not use_inr:
        ask.notes.append("in-network reduction asked for, but no participant reaches a switch "
                         "with reduce=True")
    participants = np.zeros(p.ga.n_nodes, dtype=bool)
    participants[p.gpus] = True
    combining = participants | ((red_up | red_out) if use_inr else False)
    parts = partitions(p, combining)
    b_vol = volume_bound(ask, [p.gpus], combining, use_inr, parts)
    # The boundary of each scale-up domain is a cut too (one a pair search may not meet).
    part_t, part_q = part_cut_s(parts[1], [p.gpus], size, "all_reduce")
    t_cut = transfer_time(size, cut_min)
    cut_why = "every GPU-separating cut carries the buffer both ways"
    cut_info = describe_cut(p, cut_side, "leaving") if cut_side is not None else None
    if part_t > t_cut:
        side = parts[1].label == part_q
        t_cut, cut_info = part_t, describe_cut(p, side, "leaving")
    b_cut = ask.bound("any-scheme cut", t_cut, "lower", cut_why, cut_info)
    bounds = [b_rs, b_ag] + ([b_vol] if b_vol.time_s > 0 else []) + [b_cut] + (
        [b_sum] if math.isfinite(t_sum) else [])
    if not use_inr:
        lower = max([b_rs, b_ag, b_vol, b_cut], key=lambda b: b.time_s)
        return Outcome(lower, t_sum if math.isfinite(t_sum) else None, bounds)
    # Reduce inside each scale-up domain in its switches (S + S/g per GPU each way as NCCL
    # runs NVLS), combine the S/g shards across the k domains over the scale-out (a ring of
    # 2(k-1)/k S/g per NIC, or S/g each way with SHARP aggregating in the switches), and
    # multicast back. The phases use different links, so pipelined over chunks the time
    # tends to the slowest phase.
    k = len(domains) if domains else n
    g = min(len(d) for d in domains) if domains else 1
    shard = size / g
    t_in = transfer_time(size + size / g, b_up) if domains else 0.0
    t_in_ideal = transfer_time(size, b_up) if domains else 0.0
    b_out = scale_out_gbps(p, red_up)
    if k == 1:
        t_out = 0.0
    elif sharp:
        t_out = transfer_time(shard, b_out)
    else:
        t_out = transfer_time(2 * (k - 1) / k * shard, b_out)
    names = (["NVLink SHARP"] if domains else []) + (["InfiniBand SHARP"] if sharp and k > 1
                                                     else [])
    out_phase = ("" if k == 1 else "; scale-out " + (
        "S/g per GPU each way, aggregated in the switches" if sharp
        else "ring of 2(k-1)/k S/g per GPU"))
    kind = "achievable"
    if sharp and k > 1 and not _sharp_single_switch(ask, red_out):
        kind = "model"
        ask.notes.append("scale-out SHARP: the GPUs that aggregate together do not share one "
                         "reducing switch, so the aggregation trees cross switch-to-switch "
                         "links; the SHARP figure assumes those run at the NICs' rate "
                         "(a model, not a proven schedule)")
    if k > 1 and not sharp:
        ask.notes.append("the scale-out phase of the hierarchical schedule assumes the network "
                         "carries every NIC at line rate at once (non-blocking)")
    b_nvls = ask.bound(" + ".join(names) + " (as NCCL runs it)", max(t_in, t_out), kind,
                       (f"S + S/g per GPU each way through the reducing switches (g = {g})"
                        if domains else "no scale-up reduction") + out_phase
                       + "; phases pipelined")
    b_ideal = ask.bound("ideal in-switch reduction", max(t_in_ideal, t_out), "model",
                        "S per GPU each way through the reducing switches" + out_phase)
    achievable = [t for t in (t_sum, b_nvls.time_s if kind == "achievable" else math.inf)
                  if math.isfinite(t)]
    # With reduction in the switches the ForestColl bounds assume too little; the any-scheme
    # cut and the volume over reducing parts hold.
    lower = max([b_vol, b_cut], key=lambda b: b.time_s)
    return Outcome(lower, min(achievable) if achievable else None,
                    bounds + [b_nvls, b_ideal], True, {"nvls": t_in, "network": t_out})


def _all_to_all(ask: Ask) -> Outcome:
    r = max_concurrent_flow(ask.fab, all_to_all(ask.fab, endpoints=ask.p.gpu_names, gbps=1.0))
    lower = ask.bound("all-to-all throughput", transfer_time(ask.chunk, r.upper), "lower",
                      f"max-concurrent-flow theta <= {r.upper:.6g} per Gb/s of demand "
                      f"(binding tier {r.binding_tier})")
    ask.notes.append(f"throughput solve: {r.status} ({r.method})")
    return Outcome(lower, transfer_time(ask.chunk, r.lower) if r.lower > 0 else None, [lower])


def _broadcast(ask: Ask) -> Outcome:
    """The root cut bound; scatter + all-gather (van de Geijn) is achievable."""
    p = ask.p
    root = int(p.gpus[0])
    cut_root = math.inf
    side_best = None
    for v in p.gpus[1: 1 + (1 if p.symmetric else 64)]:
        cut = min_cut(p.ga, np.array([root]), np.array([v]))
        if cut.capacity < cut_root:
            cut_root, side_best = cut.capacity, cut.side
    lower = ask.bound("root cut", transfer_time(ask.size, cut_root), "lower",
                      "the buffer must cross every cut between the root and another GPU",
                      describe_cut(p, side_best, "leaving") if side_best is not None else None)
    t_ag, _ = forestcoll_bound(ask, p, "all-gather optimum", "leaving")
    if t_ag is None:
        return Outcome(lower, None, [lower])
    ratio, _, _ = scatter_ratio(p, root)
    achievable = ask.chunk * ratio / GBPS_TO_BYTES + t_ag
    return Outcome(lower, achievable, [lower, ask.bound(
        "scatter + all-gather", achievable, "achievable",
        "van de Geijn: scatter S/n per GPU, then all-gather")])


BY_COLLECTIVE = {"all_gather": _all_gather, "reduce_scatter": _reduce_scatter,
                  "all_reduce": _all_reduce, "all_to_all": _all_to_all, "broadcast": _broadcast}
