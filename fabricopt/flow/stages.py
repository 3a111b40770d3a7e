"""What a stage of the engine is, the bracket the stages share, and a plan of them.

A **stage** proves something about one problem record — a
:class:`~fabricopt.flow.problem.FlowProblem` (theta, ``max_concurrent_flow``) or a
:class:`~fabricopt.flow.two_phase.problem.TwoPhaseProblem` (a two-phase rate,
``valiant_rate``): it says whether it applies (and why not), what it would cost, and runs.
A stage of the engine's own writes its proofs into the shared :class:`Bracket`, or returns
a certified :class:`~fabricopt.flow.result.FlowResult` (the answer when it is closed; else
kept, and each end of the answer taken from it where tighter, with its proof), so a new
stage needs no other code to count; a stage handed in by a caller
(``max_concurrent_flow(..., stages=...)``: the failure layer's answer from the intact
fabric) returns a certified :class:`~fabricopt.flow.result.FlowResult` or
None, and the engine takes it when it is exact, within the gap asked, or the fabric is too
large for anything better (:func:`~fabricopt.flow.from_intact.acceptable`).

A **plan** is the order in which stages are tried, then the solvers, the first that
applies being the one run; ``print(plan)`` shows what each would do and why
(:func:`~fabricopt.flow.plan.plan`, ``docs/throughput.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from .result import FlowResult

__all__ = ["Bracket", "Plan", "Stage"]

#: The problem record a stage reads (``FlowProblem``, ``TwoPhaseProblem``).
P = TypeVar("P", contravariant=True)


@runtime_checkable
class Stage(Protocol[P]):
    """One step of the engine (see the module notes); ``Stage[FlowProblem]`` for
    ``max_concurrent_flow``'s, ``Stage[TwoPhaseProblem]`` for the two-phase rate's."""

    #: A short name, as the plan prints it and ``result.stages`` reports it.
    name: str

    def applies(self, problem: P) -> tuple[bool, str]:
        """Whether the stage runs on ``problem``, and why not."""
        ...

    def cost(self, problem: P) -> str:
        """What running it would cost, in words a plan prints (sizes, measured seconds)."""
        ...

    def run(self, problem: P, bracket: Bracket) -> FlowResult | None:
        """Run: a certified result (the answer when it is closed; else each of its ends
        proves the answer's where tighter), or None (the stage wrote ``bracket`` itself)."""
        ...


@dataclass
class Bracket:
    """What the stages have proven so far, and the answer once one is reached.

    ``bounds`` is the bounds stage's certified bracket (solve units), which never lets a
    solver's answer be wider (:func:`~fabricopt.flow.brackets.tighter_bracket`); ``hose``
    the two-phase rate that floors the answer's lower end
    (:func:`~fabricopt.flow.brackets.with_hose_floor`); ``model`` and ``lengths`` what the
    bounds were proven on (the model the solver then solves, the arc lengths offered to its
    certificate); ``routed`` the routed stage's ``(model, lengths, bracket)``, reused by
    the solver's own bounds; ``found`` the symmetry search that ran.
    """

    bounds: FlowResult | None = None
    hose: Any = None
    model: Any = None
    lengths: list[np.ndarray] = field(default_factory=list)
    routed: Any = None
    found: Any = None
    answer: Any = None
    #: Certified brackets stages returned that did not answer alone (caller's units): each
    #: end of the answer is taken from them where tighter, with its proof
    #: (:func:`~fabricopt.flow.brackets.with_stage_ends`).
    proven: list[FlowResult] = field(default_factory=list)
    #: An answer a stage reached that waits for the next stage, expected to be cheap, which
    #: may close it (:class:`~fabricopt.flow.plan.FromIntact`'s, for the routed bounds): the
    #: answer unless that stage does better.
    held: FlowResult | None = None
    #: A number's ends, for stages that prove one value each (the two-phase rate's,
    #: :mod:`fabricopt.flow.two_phase.plan`): the best proven so far, the stage that proved
    #: it (None: nothing yet) and its proof.
    lower: float = 0.0
    upper: float = np.inf
    lower_by: str | None = None
    upper_by: str | None = None
    lower_proof: Any = None
    upper_proof: Any = None

    @property
    def done(self) -> bool:
        """True once a stage has answered."""
        return self.answer is not None

    def prove_lower(self, value: float, by: str, proof: Any = None) -> bool:
        """Keep ``value`` as the lower end, proven by stage ``by`` with ``proof``, when it
        is higher than the one kept, or nothing was proven yet; True when kept.

        >>> b = Bracket()
        >>> b.prove_lower(2.0, "flows"), b.prove_lower(1.0, "LP"), b.lower, b.lower_by
        (True, False, 2.0, 'flows')
        """
        if self.lower_by is not None and not value > self.lower:
            return False
        self.lower, self.lower_by, self.lower_proof = value, by, proof
        return True

    def prove_upper(self, value: float, by: str, proof: Any = None) -> bool:
        """Keep ``value`` as the upper end (see :meth:`prove_lower`): when lower than the
        one kept, or nothing was proven yet; True when kept."""
        if self.upper_by is not None and not value < self.upper:
            return False
        self.upper, self.upper_by, self.upper_proof = value, by, proof
        return True

    @property
    def stages(self) -> dict[str, str]:
        """The stage that proved each end (``"none"`` for an end nothing proved), as a
        result's ``stages`` reports it."""
        return {"lower": self.lower_by or "none", "upper": self.upper_by or "none"}

    @staticmethod
    def good_enough(result: FlowResult, gap: float, approximate: bool) -> bool:
        """Whether ``result`` answers: closed, or (for the approximate method, which was
        asked for a gap) as close as ``gap``.

        >>> r = FlowResult(None, 0.995, 1.0, "inexact", "bounds", "none", 0.0, 0.0)
        >>> Bracket.good_enough(r, 0.01, True), Bracket.good_enough(r, 0.01, False)
        (True, False)
        """
        return result.exact or (approximate and result.upper - result.lower
                                <= gap * result.upper)


@dataclass(frozen=True)
class Plan:
    """The stages tried in order, then the solvers (the first that applies runs), for one
    problem; ``str(plan)`` says what each would do on it, and why not."""

    method: str
    stages: tuple[Any, ...]
    solvers: tuple[Any, ...]
    problem: Any = field(default=None, repr=False, compare=False)

    def lines(self) -> list[str]:
        """One line per stage and solver: applies or not (why), and its cost."""
        out = [f"plan for method={self.method!r}:"]
        for i, stage in enumerate(self.stages, 1):
            out.append(f"  {i}. {_said(stage, self.problem)}")
        if self.solvers:
            out.append("  then the first solver that applies:")
            for solver in self.solvers:
                out.append(f"     - {_said(solver, self.problem)}")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


def _said(stage: Any, problem: Any) -> str:
    """``stage``'s line in a printed plan."""
    if problem is None:
        return stage.name
    ok, why = stage.applies(problem)
    if ok:
        return f"{stage.name}: runs ({stage.cost(problem)})"
    return f"{stage.name}: skipped ({why})"
