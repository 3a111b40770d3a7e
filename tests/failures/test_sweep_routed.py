"""A failure sweep's trial closes as a single solve does: an open answer within the gap waits
for the routed bounds where they are cheap (``flow.plan.WAIT_FOR_ROUTING_SECONDS``), so
the trial's bracket is the single solve's on the same failed fabric, certificates checked."""

import pytest

import fabricopt as fo
import fabricopt.flow.plan as plan_module
from fabricopt.failures.intact_flow import IntactFlow
from fabricopt.failures.sweep import intact_solve, solve_failed
from fabricopt.flow.problem import FlowProblem
from tests.flow_helpers import certified


@pytest.fixture(scope="module")
def rail_512():
    """A 512-GPU rail-optimized 2:1 cluster, its intact solve, the lengths and the flow a
    sweep's trials start from, and the cluster minus 1 % of its links (seed 1): the fabric
    on which the engine was first made to wait for cheap routing (2.7 million flow
    variables, expected 0.4 s at ``ECMP_SECONDS_PER_ENTRY``; the detours leave it
    [0.6912, 0.6944])."""
    fab = fo.cluster(fo.dgx_h100(), nodes=64, scale_out="rail_optimized", oversubscription=2)
    traffic = fo.all_to_all(fab)
    intact, warm = intact_solve(fab, traffic, "auto", True, {})
    flow = IntactFlow.of(fab, intact, traffic)
    return traffic, warm, flow, fo.fail_random(fab, 0.01, seed=1)


def test_a_trial_closes_like_a_single_solve(rail_512):
    traffic, warm, flow, failed = rail_512
    assert plan_module.waits_for_routing(FlowProblem.of(failed, traffic, bounds_first=True))
    single = certified(failed, fo.max_concurrent_flow(failed, traffic))
    trial = certified(failed, solve_failed(failed, traffic, "auto", {}, warm, flow))
    # The same bracket, closed by the same stage: the routed bounds prove both ends.
    assert trial.stages == single.stages == {"lower": "routed bounds",
                                             "upper": "routed bounds"}
    assert trial.lower == pytest.approx(single.lower, rel=1e-12)
    assert trial.upper == pytest.approx(single.upper, rel=1e-12)


def test_a_trial_does_not_wait_for_routing_expected_too_long(rail_512, monkeypatch):
    # With the threshold at 0 no routing is cheap enough: the trial's answer is the open
    # bracket the detours proved (within the 1 % gap, not exact), still certified; that
    # the trial above is exact is the routing's doing.
    traffic, warm, flow, failed = rail_512
    monkeypatch.setattr(plan_module, "WAIT_FOR_ROUTING_SECONDS", 0.0)
    trial = certified(failed, solve_failed(failed, traffic, "auto", {}, warm, flow),
                      exact=False)
    assert not trial.exact and "routed bounds" not in trial.stages.values()
    assert 0 < trial.upper - trial.lower <= 0.01 * trial.upper
