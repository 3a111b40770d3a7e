"""The engine handed the failure floor's stages: fo.max_concurrent_flow answers a failed copy
of a generated fabric from its intact fabric and narrows it through its planes, the bare engine
does not, and the intact solves live in the IntactSolves their owner holds (nothing registered
on import)."""

import pytest

import fabricopt as fo
from fabricopt.failures import IntactSolves, RerouteFromIntact
from fabricopt.failures.engine import FAILURE_STAGES
from fabricopt.failures.intact_flow import FROM_INTACT, SEARCHED_DETOURS
from fabricopt.failures.plane_bracket import THROUGH_PLANES, ThroughPlanes
from fabricopt.flow import max_concurrent_flow as bare_engine


def _failed():
    # superpod(1) with three NICs of server n3 cut: the cut around that server binds,
    # 5 x 400 / (8 x 248) of all-to-all (8 GPUs, 5 NICs left, 248 peers outside).
    return fo.superpod(1).without_links([(f"n3.gpu{i}", f"r{i}.l0") for i in range(3)])


def test_the_face_hands_the_failure_stage_and_registers_nothing():
    assert fo.max_concurrent_flow is not bare_engine
    assert FAILURE_STAGES == (FROM_INTACT, THROUGH_PLANES, SEARCHED_DETOURS)
    assert SEARCHED_DETOURS.solves is FROM_INTACT.solves  # the intact flow solved once
    failed = _failed()
    r = fo.max_concurrent_flow(failed)
    assert r.stages == {"lower": "intact flow rerouted", "upper": "intact flow rerouted"}
    assert r.exact and r.theta == pytest.approx(5 * 400 / (8 * 248), rel=1e-6)
    assert fo.check_certificate(failed, r).ok
    assert len(FROM_INTACT.solves) == 1  # the package's intact solve, kept for the next copy
    # The bare engine is handed nothing: it answers by its own stages.
    assert "intact flow rerouted" not in bare_engine(failed).stages.values()


def test_a_caller_owns_its_intact_solves():
    solves = IntactSolves(kept=1)
    failed = _failed()
    r = fo.max_concurrent_flow(failed, stages=[RerouteFromIntact(solves)])
    assert r.exact and len(solves) == 1 and not FROM_INTACT.solves  # the caller's stage ran
    assert next(iter(solves)).fab.name == "SuperPOD(1 SU x 32 x DGX H100)"
    solves.clear()
    assert len(solves) == 0


def test_the_stage_says_when_it_does_not_apply():
    stage = RerouteFromIntact()
    intact = fo.superpod(1)

    class Problem:  # the fields of flow.problem.FlowProblem the stage reads
        def __init__(self, fab):
            self.fab, self.traffic = fab, fo.all_to_all(fab)

    assert stage.applies(Problem(intact)) == (
        False, "not a failed copy of a generated fabric (made by without)")
    small = fo.ring(6).without_links([("n0", "n1")])
    ok, why = stage.applies(Problem(small))
    assert not ok and "its own LP is small" in why
    assert stage.applies(Problem(_failed()))[0]
    with pytest.raises(fo.InvalidParameterError, match=r"IntactSolves\(\): kept"):
        IntactSolves(kept=0)


def test_the_planes_are_a_handed_stage_that_narrows():
    # superpod(4) minus 1% of its leaf-spine links (seed 1): the intact flow's detours leave
    # it open (a SuperPOD's units: their even spread only), the planes' small LP of whole
    # groups closes it at the hierarchy cut (both ends re-proven by check_certificate). The
    # engine does not import the planes: the failure floor hands them in, after the intact
    # flow, as a stage that narrows.
    assert isinstance(THROUGH_PLANES, ThroughPlanes) and hasattr(THROUGH_PLANES, "narrow")
    assert FAILURE_STAGES.index(THROUGH_PLANES) > FAILURE_STAGES.index(FROM_INTACT)
    failed = fo.fail_random(fo.superpod(4), 0.01, seed=1, tiers=["leaf-spine"])
    r = fo.max_concurrent_flow(failed)
    assert r.stages == {"lower": "planes", "upper": "planes"} and r.exact
    assert fo.check_certificate(failed, r).ok
    ok, why = THROUGH_PLANES.applies(type("P", (), {"edited": False})())
    assert not ok and why == "not a failed fabric (made by without or fail_random)"
