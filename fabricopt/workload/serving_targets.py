"""What a latency target can ask for: the fastest time per output token and time to first
token the serving plans reach, and the targets the capacity search can meet
(:func:`~fabricopt.serving_capacity` says them when no plan meets the targets given)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["TARGET_SPARE", "Fastest", "latency_floor", "target_below_floor"]

#: A plan is tried only when its analytic TPOT and TTFT are within this share of the
#: targets (a tenth to spare).
TARGET_SPARE = 0.9
#: The simulation's clock resolution (s): arrivals are read to the nanosecond.
CLOCK_S = 1e-9


@dataclass(frozen=True)
class Fastest:
    """The lowest time per output token and time to first token any plan tried reaches,
    each with its plan (described): analytic, a replica serving at that plan's batch, so a
    light load's percentiles come near them. The rate search takes a plan only when it beats
    a target by a tenth (:data:`TARGET_SPARE`), so a target from these over 0.9 is within
    its reach, one at a time (the fastest TPOT and the fastest TTFT may be different plans).

    >>> f = Fastest(0.0012, "tp=8, batch=1", 0.0064, "tp=8, batch=1")
    >>> print("\\n".join(f.lines(ttft_target_s=2.0, tpot_target_s=0.0001)))  # doctest: +ELLIPSIS
      fastest   TPOT 1.2 ms (tp=8, batch=1), TTFT 6.4 ms (tp=8, batch=1), analytic at the ...
      reachable --tpot 1.34ms or more (the search keeps a tenth in hand); --ttft 2s is reachable
    """

    tpot_s: float = math.inf
    tpot_plan: str | None = None
    ttft_s: float = math.inf
    ttft_plan: str | None = None
    #: True when the figures are one given plan's floor (:func:`latency_floor`): the caller
    #: fixed the plan, so no other batch or shape is offered.
    fixed: bool = False

    @staticmethod
    def given(r: Any, prompt_len: int, output_len: int, lengths: str) -> Fastest:
        """The floor of replica ``r``'s plan as the caller fixed it: no load of it goes
        below (:func:`latency_floor`)."""
        ttft, tpot = latency_floor(r, prompt_len, output_len, lengths)
        plan = r.plan.describe()
        return Fastest(tpot, plan, ttft, plan, fixed=True)

    def seen(self, plan: Any, th: Any) -> Fastest:
        """This record with ``plan``'s analytic steady state ``th`` (a ServingPlan and its
        Throughput) taken in where it is faster."""
        out = self
        if th.tpot_s < out.tpot_s:
            out = replace(out, tpot_s=th.tpot_s, tpot_plan=plan.describe())
        if th.ttft_s < out.ttft_s:
            out = replace(out, ttft_s=th.ttft_s, ttft_plan=plan.describe())
        return out

    def lines(self, ttft_target_s: float, tpot_target_s: float) -> list[str]:
        """What the fastest plans reach, and which targets the search can meet."""
        if self.tpot_plan is None or self.ttft_plan is None:
            return ["  fastest   none: no plan fits in memory"]
        if self.fixed:
            below = [f"{flag} {_duration(best, typed=True, up=True)}" for flag, best, target in (
                ("--tpot", self.tpot_s, tpot_target_s), ("--ttft", self.ttft_s, ttft_target_s))
                if target <= best]
            return [f"  floor     TPOT {_duration(self.tpot_s)}, TTFT {_duration(self.ttft_s)} "
                    f"({self.tpot_plan}, as given: one request alone; no load goes below)",
                    "  reachable " + (f"this plan needs {' and '.join(below)} or more (its "
                                      "floor)" if below else
                                      "the targets are above this plan's floor, yet its "
                                      "lightest load tried misses them")
                    + "; leave out the plan's flags to let the search choose batch and shape"]
        asks = []
        for flag, best, target in (("--tpot", self.tpot_s, tpot_target_s),
                                   ("--ttft", self.ttft_s, ttft_target_s)):
            least = best / TARGET_SPARE
            asks.append(f"{flag} {_duration(target, typed=True)} is reachable"
                        if target >= least else
                        f"{flag} {_duration(least, typed=True, up=True)} or more (the search "
                        "keeps a tenth in hand)")
        return [f"  fastest   TPOT {_duration(self.tpot_s)} ({self.tpot_plan}), TTFT "
                f"{_duration(self.ttft_s)} ({self.ttft_plan}), analytic at the batch shown",
                f"  reachable {'; '.join(asks)}"]


def latency_floor(r: Any, prompt_len: int, output_len: int, lengths: str,
                  ) -> tuple[float, float]:
    """(TTFT, TPOT) no request of a simulation of replica ``r`` goes below (s), whatever
    the load: a floor under every percentile the rate search reads, so a target below it is
    missed at any rate and needs no simulation.

    A step's time (:meth:`~fabricopt.workload.serving_replica.Replica.step_seconds`) grows
    with each of its arguments and is subadditive (a maximum of sums of linear terms with
    non-negative constants, and the concave expert read that is 0 at 0 tokens). A prompt of
    ``P`` tokens is prefilled in chunks whose steps carry at least its own tokens and its
    own causal (query, key) pairs, ``P^2 / 2`` in all, so its TTFT is at least one step of
    ``P`` tokens and ``P^2 / 2`` pairs; a decode step carries at least the request itself
    (one token, at least ``P`` cached), so its TPOT is at least that step. ``P`` is the
    prompt length when lengths are fixed, else 1 (the shortest drawn). TPOT is 0 for a mean of
    one output token (no TPOT is measured when every request has one); a mean above 1 draws
    requests with more. Both less a nanosecond: the simulation reads arrivals to the
    nanosecond, so a request's TTFT may come that much under its steps.

    The analytic figures of :func:`~fabricopt.workload.serving_capacity.throughput` are no
    such floor (its TPOT is at full load, above a light load's; its TTFT chunks the prompt
    one way among many).
    """
    prompt = float(prompt_len if lengths == "fixed" else 1)
    ttft = float(r.step_seconds(0.0, prompt, 0.0, prompt * prompt / 2)) - CLOCK_S
    tpot = 0.0 if output_len == 1 else float(r.step_seconds(1.0, 0.0, prompt, 0.0)) - CLOCK_S
    return max(ttft, 0.0), max(tpot, 0.0)


def target_below_floor(r: Any, prompt_len: int, output_len: int, lengths: str,
                       ttft_s: float, tpot_s: float) -> str:
    """Why no load of replica ``r`` meets the targets, read off :func:`latency_floor`, or
    '' when only a simulation can say."""
    ttft, tpot = latency_floor(r, prompt_len, output_len, lengths)
    return "; ".join(
        f"{name} is at least {_duration(value)} at any load (one request alone), above the "
        f"{_duration(target)} target" for name, value, target in (
            ("TTFT", ttft, ttft_s), ("TPOT", tpot, tpot_s)) if value > target)


def _duration(seconds: float, typed: bool = False, up: bool = False) -> str:
    """Seconds to three significant digits, in ms below a second; ``typed`` as a flag's
    value is typed (no space), ``up`` rounded up so the figure asked for is within reach.

    >>> _duration(0.0012), _duration(0.001333, typed=True, up=True), _duration(2.0, True)
    ('1.2 ms', '1.34ms', '2s')
    """
    value, unit = (seconds, "s") if seconds >= 1 else (seconds * 1e3, "ms")
    if up:
        step = 10.0 ** (math.floor(math.log10(value)) - 2)
        value = math.ceil(value / step - 1e-9) * step
    return f"{value:.3g}{'' if typed else ' '}{unit}"
