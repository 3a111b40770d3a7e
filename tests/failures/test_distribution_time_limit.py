"""A failure distribution under a command's time limit stops drawing once the limit is out,
and what it returns is still a certified bracket; a model's drawer gives the draws of
``draw`` itself."""

import math

import numpy as np
import pytest

import fabricopt as fo
from fabricopt.failures.distribution import failure_distribution
from fabricopt.failures.models import EverySingle, Independent, Mixture
from fabricopt.flow.time_budget import TimeBudget, spending

#: A ring of 6 unit links: intact all-to-all 10/9 Gb/s per node; any one failed link leaves
#: a path carrying 1/9 per pair, 5/9 per node (the doctest of failure_distribution derives it).
RING_ONE_DOWN = 5 / 9


def test_a_spent_limit_leaves_random_draws_undrawn_and_claims_nothing():
    model = Independent("links", probability=0.5)
    with spending(TimeBudget(0.0, solves=1)):  # spent before the first draw
        d = failure_distribution(fo.ring(6), model, trials=8, seed=3)
    assert d.outcomes == [] and d.not_solved == 8 and d.solves == 0
    # No sample, no claim: the bracket is everything a throughput can be.
    assert d.percentile(5) == (0.0, math.inf) and d.mean() == (0.0, math.inf)
    assert "8 draws undrawn" in str(d)


def test_listed_patterns_left_unsolved_keep_their_weight_with_no_claim():
    with spending(TimeBudget(0.0, solves=1)):
        d = failure_distribution(fo.ring(6), EverySingle("links"), trials=None)
    assert d.not_solved == 6 and d.solves == 0
    assert [o.status for o in d.outcomes] == ["time_limit"] * 6
    assert sum(o.weight for o in d.outcomes) == pytest.approx(1.0)
    lo, hi = d.percentile(50)
    # The bracket still holds the true median (every single failure leaves 5/9).
    assert lo <= RING_ONE_DOWN <= hi and hi == math.inf
    assert d.worst is None  # an unsolved pattern is never named the worst
    assert "[0, inf)" in str(d) and "6 patterns unsolved" in str(d)


def test_without_a_limit_every_pattern_is_solved_and_exact():
    d = failure_distribution(fo.ring(6), EverySingle("links"), trials=None)
    assert d.not_solved == 0 and len(d.outcomes) == 6
    assert d.percentile(50) == pytest.approx((RING_ONE_DOWN, RING_ONE_DOWN))


@pytest.mark.parametrize("model", [
    Independent("links", probability={"leaf-spine": 0.2}),
    Mixture([(0.5, Independent("links", probability=0.1)),
             (0.5, Independent("switches", probability=0.1))]),
])
def test_a_drawer_draws_what_draw_draws(model):
    fab = fo.leaf_spine(leaves=4, spines=2, endpoints_per_leaf=2)
    drawer = model.drawer(fab)
    for seed in range(6):
        a = model.draw(fab, np.random.default_rng(seed))
        b = drawer(np.random.default_rng(seed))
        assert (a.pattern, a.label) == (b.pattern, b.label)


def test_the_bisection_metric_is_its_certified_lower_end():
    # A ring of 6 without one link is a path: its bisection is one link (1 Gb/s, exact), so
    # its certified lower end per GPU is 1/6, the number the distribution reports.
    d = failure_distribution(fo.ring(6), EverySingle("links"), trials=None,
                             metrics=["bisection"])
    failed = fo.ring(6).without(links=[("n0", "n1")])
    b = fo.bisection_bandwidth(failed)
    assert b.lower_gbps == pytest.approx(1.0)
    assert d.percentile(50, "bisection") == pytest.approx((b.lower_gbps / 6,) * 2)
