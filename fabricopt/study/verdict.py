"""The verdict of a comparison: a few sentences, computed from its table, that say which design
wins and why.

A reader of a comparison wants to know first which design gives the most for its money. The
verdict answers from the table alone (so it reads a saved ``results.jsonl`` as well as a fresh
:class:`~fabricopt.study.table.Comparison`):

- among **clusters** (designs with a network between scale-up domains), the lowest network
  capex per GPU per all-to-all Gb/s each GPU is proven to deliver
  (``usd_per_delivered_gbps``), what binds it (``binding_tier``) and the runner-up with the
  margin between them;
- among **single systems** (every link scale-up: one DGX, one NVL72, one UALink pod), ranked
  apart, because one box carries no network between boxes and would otherwise win every
  comparison; those whose switches are inside the server price (no network capex at all)
  are named, not ranked;
- with a training job (the ``training`` metric), the lowest cost per million tokens
  (``training_usd_per_million_tokens``), the parallel dimension and tier that bind its step,
  and its runner-up; when a smaller design wins it, why: less network capex per GPU (none
  between boxes for a single system), which every token pays a share of.

A figure read off a certified bracket is its lower end (what is proven delivered), so a
design never wins on a bandwidth no flow reaches; a design whose bracket stayed open is said
to deliver "at least" its figure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..tiers import SCALE_UP_TIERS
from .pareto import finite_number, records_of

__all__ = ["Ranking", "is_single_system", "rank", "verdict"]

#: The least MFU lead (a share: half a point) the per-token sentence names.
MFU_POINT = 0.005
#: What a binding tier means to a reader, by tier.
TIER_WORDS = {
    "gpu-leaf": "each GPU's own NIC link to its leaf",
    "leaf-spine": "the leaf-to-spine uplinks",
    "spine-core": "the spine-to-core links",
    "gpu-nvswitch": "each GPU's NVLink to its NVSwitches",
    "gpu-ualink-switch": "each accelerator's UALink ports",
    "nvswitch-l2": "the links between NVSwitch levels",
    "local": "the links within a dragonfly group",
    "global": "the links between dragonfly groups",
}
#: Parallel dimensions of a training step, as a reader says them.
DIMENSION_WORDS = {"tp": "tensor-parallel", "pp": "pipeline-parallel", "dp": "data-parallel",
                   "ep": "expert-parallel", "cp": "context-parallel",
                   "compute": "compute (no communication exposed)"}


@dataclass(frozen=True)
class Ranking:
    """Rows ranked by one column, best first: ``order`` holds row indices into the table."""

    column: str
    order: tuple[int, ...]
    values: tuple[float, ...]

    @property
    def margin(self) -> float | None:
        """How much dearer the runner-up is than the winner, as a fraction (0.17 = 17%)."""
        if len(self.values) < 2 or self.values[0] <= 0:
            return None
        return self.values[1] / self.values[0] - 1.0


def is_single_system(row: Mapping[str, Any]) -> bool:
    """Whether a row is one scale-up system: every link it counts (``links_<tier>``) is
    scale-up, or the ``cost`` metric found every link inside one server (``in_system_only``).

    >>> is_single_system({"links_gpu-ualink-switch": 64})
    True
    >>> is_single_system({"links_gpu-nvswitch": 8, "links_gpu-leaf": 64})
    False
    """
    if row.get("in_system_only"):
        return True
    tiers = [k[len("links_"):] for k, v in row.items()
             if k.startswith("links_") and finite_number(v)]
    return bool(tiers) and all(t in SCALE_UP_TIERS for t in tiers)


def rank(rows: Any, column: str, among: Sequence[int] | None = None) -> Ranking:
    """The rows with a positive value in ``column``, cheapest first (ties by row order).

    >>> rank([{"c": 3.0}, {"c": None}, {"c": 2.0}], "c").order
    (2, 0)
    """
    records = records_of("rank", rows)
    pick = range(len(records)) if among is None else among
    # A row that stopped on an error keeps the figures computed before it (a job that did
    # not fit leaves the network's figures as they were): those are ranked.
    scored = sorted((v, i) for i in pick
                    if (v := finite_number(records[i].get(column))) is not None and v > 0)
    return Ranking(column, tuple(i for _, i in scored), tuple(v for v, _ in scored))


def _money(value: float) -> str:
    """Dollars as a reader compares them: whole above $100, cents above $1, else three
    significant digits ($0.0428 per million tokens)."""
    if value >= 100:
        return f"${value:,.0f}"
    return f"${value:,.2f}" if value >= 1 else f"${value:.3g}"


def _gbps(row: Mapping[str, Any]) -> str:
    value = finite_number(row.get("all_to_all_gbps_per_gpu")) or 0.0
    open_ = row.get("all_to_all_exact") is False
    figure = f"{value:,.0f}" if value >= 100 else f"{value:.3g}"
    return f"{'at least ' if open_ else ''}{figure} Gb/s"


def _local_note(row: Mapping[str, Any]) -> str:
    """What the all-to-all figure holds besides the network, said beside it: it counts the
    traffic between GPUs of one scale-up domain (NVLink inside a server), so on a cluster of
    DGX it reads above the NIC's speed (406 Gb/s on 400G NICs). The network's own part
    (``all_to_all_network_gbps_per_gpu``) is given when the table has it."""
    network = finite_number(row.get("all_to_all_network_gbps_per_gpu"))
    if network is not None:
        figure = f"{network:,.0f}" if network >= 100 else f"{network:.3g}"
        return f" (incl. NVLink-local traffic; {figure} Gb/s over the network)"
    local = any(k.startswith("links_") and k[len("links_"):] in SCALE_UP_TIERS
                and finite_number(v) for k, v in row.items())
    return " (incl. NVLink-local traffic)" if local else ""


def _binds(row: Mapping[str, Any]) -> str:
    tier = row.get("binding_tier")
    if not tier:
        return "no single tier was named as binding"
    return f"what binds it: {TIER_WORDS.get(str(tier), f'its {tier} links')} ({tier})"


def _runner_up(records: list[dict[str, Any]], ranking: Ranking, unit: str,
               kind: str = "design") -> str:
    if len(ranking.order) < 2:
        return f"Runner-up: none; it is the only {kind} with this figure."
    second = records[ranking.order[1]]
    margin = ranking.margin or 0.0
    return (f"Runner-up: {second['name']} at {_money(ranking.values[1])}{unit}, "
            f"{margin:.0%} dearer" if margin >= 0.005 else
            f"Runner-up: {second['name']} at {_money(ranking.values[1])}{unit}, "
            "level with it (within 0.5%)") + "."


def _cluster_sentences(records: list[dict[str, Any]], clusters: list[int]) -> list[str]:
    ranking = rank(records, "usd_per_delivered_gbps", clusters)
    if not ranking.order:
        return []
    best = records[ranking.order[0]]
    unit = " per GPU per Gb/s"
    return [f"Cheapest cluster per delivered Gb/s: {best['name']}, "
            f"{_money(ranking.values[0])}{unit} of network capex "
            f"({_money(finite_number(best.get('capex_per_gpu_usd')) or 0.0)} per GPU for "
            f"{_gbps(best)} of all-to-all per GPU{_local_note(best)}, "
            f"{best.get('gpus', '?'):,} GPUs); "
            f"{_binds(best)}.",
            _runner_up(records, ranking, unit, "cluster"), *_sizes(records, clusters)]


def _sizes(records: list[dict[str, Any]], clusters: list[int]) -> list[str]:
    """A caution when the clusters differ much in size: more GPUs need more tiers, which
    cost more per GPU, so the smallest tends to win."""
    sizes = [g for i in clusters if isinstance(g := records[i].get("gpus"), int) and g > 0]
    if not sizes or max(sizes) < 4 * min(sizes):
        return []
    return [f"The clusters range from {min(sizes):,} to {max(sizes):,} GPUs, and a larger one "
            "needs more switch tiers per GPU: sort the table by GPUs to compare within a "
            "size."]


def _system_sentences(records: list[dict[str, Any]], systems: list[int]) -> list[str]:
    if not systems:
        return []
    ranking = rank(records, "usd_per_delivered_gbps", systems)
    in_price = [records[i]["name"] for i in systems
                if not records[i].get("capex_usd") and records[i].get("capex_usd") is not None]
    out: list[str] = []
    if ranking.order:
        best = records[ranking.order[0]]
        out.append(f"Among single systems (one scale-up domain, no network between boxes; "
                   f"ranked apart): {best['name']} costs least per delivered Gb/s, "
                   f"{_money(ranking.values[0])} per GPU per Gb/s for {_gbps(best)} per GPU; "
                   f"{_binds(best)}.")
    if in_price:
        out.append(", ".join(in_price) + (" has" if len(in_price) == 1 else " have")
                   + (" its" if len(in_price) == 1 else " their")
                   + " switches inside the server price (no network capex), so "
                   + ("it is" if len(in_price) == 1 else "they are") + " not ranked by it.")
    return out


def _training_sentences(records: list[dict[str, Any]]) -> list[str]:
    ranking = rank(records, "training_usd_per_million_tokens")
    if not ranking.order:
        return []
    best = records[ranking.order[0]]
    dim = str(best.get("training_binding_dimension") or "")
    tier = best.get("training_binding_tier")
    binds = DIMENSION_WORDS.get(dim, dim or "nothing named")
    if tier and dim != "compute":
        binds += f" communication over {TIER_WORDS.get(str(tier), str(tier))} ({tier})"
    tokens = finite_number(best.get("training_tokens_per_s"))
    plan = f", plan {best['training_plan']}" if best.get("training_plan") else ""
    return [f"Cheapest per token for the job: {best['name']}, "
            f"{_money(ranking.values[0])} per million tokens"
            + (f" at {tokens:,.0f} tokens/s" if tokens else "") + f"{plan}; its step is "
            f"bound by {binds}.",
            _runner_up(records, ranking, " per million tokens"),
            *_why_it_wins(records, ranking)]


def _why_it_wins(records: list[dict[str, Any]], ranking: Ranking) -> list[str]:
    """One sentence on what the cheapest per token has over its runner-up, from the columns
    a token's cost is made of: network capex per GPU (a token carries its share) and MFU (the
    share of the GPUs' time the step uses); nothing when it has neither over it."""
    if len(ranking.order) < 2:
        return []
    best, runner = records[ranking.order[0]], records[ranking.order[1]]
    parts = []
    own = finite_number(best.get("capex_per_gpu_usd"))
    theirs = finite_number(runner.get("capex_per_gpu_usd"))
    if own is not None and theirs is not None and own < theirs:
        parts.append(("its GPUs need no network between boxes" if is_single_system(best) else
                      f"its GPUs carry {_money(own)} of network capex each")
                     + f", where {runner['name']}'s carry {_money(theirs)}")
    mfu, other = finite_number(best.get("training_mfu")), finite_number(runner.get("training_mfu"))
    if mfu is not None and other is not None and mfu >= other + MFU_POINT:
        parts.append(f"its step uses {mfu:.1%} of the GPUs' peak (MFU), {other:.1%} there "
                     "(bubble, exposed communication)")
    if not parts:
        return []
    return [f"{best['name']} wins per token over {runner['name']}: " + "; ".join(parts)
            + ". Every token pays its share of the capex and of the GPUs' time."]


def verdict(rows: Any) -> list[str]:
    """A few sentences that say which design wins and why, computed from a comparison table.

    Parameters
    ----------
    rows : Comparison, list of dict, or an object with ``to_records()``
        One record per design, with the columns of the ``cost`` and ``all_to_all`` metrics
        (and of ``training``, for the sentences on cost per token).

    Returns
    -------
    list of str
        The cheapest cluster per delivered Gb/s per GPU, what binds it and the runner-up
        with the margin; the single systems ranked apart; with training columns, the
        cheapest per million tokens and what binds its step; and the designs that stopped
        on an error (ranked by the figures computed before it only). Empty when nothing
        could be ranked.

    Examples
    --------
    >>> rows = [{"name": "a", "gpus": 16, "capex_per_gpu_usd": 4000.0,
    ...          "all_to_all_gbps_per_gpu": 400.0, "usd_per_delivered_gbps": 10.0,
    ...          "binding_tier": "gpu-leaf", "links_gpu-leaf": 16},
    ...         {"name": "b", "gpus": 16, "capex_per_gpu_usd": 3000.0,
    ...          "all_to_all_gbps_per_gpu": 250.0, "usd_per_delivered_gbps": 12.0,
    ...          "binding_tier": "leaf-spine", "links_gpu-leaf": 16}]
    >>> first, second = verdict(rows)
    >>> first[:68]
    'Cheapest cluster per delivered Gb/s: a, $10.00 per GPU per Gb/s of n'
    >>> second
    'Runner-up: b at $12.00 per GPU per Gb/s, 20% dearer.'
    """
    records = records_of("verdict", rows)
    systems = [i for i, r in enumerate(records) if is_single_system(r)]
    clusters = [i for i in range(len(records)) if i not in set(systems)]
    out = _cluster_sentences(records, clusters)
    out += _system_sentences(records, systems)
    out += _training_sentences(records)
    failed = [r["name"] for r in records if r.get("error")]
    if failed:
        out.append(f"{len(failed)} design{'s' if len(failed) > 1 else ''} stopped on an error "
                   "(the table says which), ranked only by the figures computed before it: "
                   + ", ".join(str(n) for n in failed[:4])
                   + (" ..." if len(failed) > 4 else "") + ".")
    return out
