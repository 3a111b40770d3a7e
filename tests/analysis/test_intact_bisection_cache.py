"""A failed fabric's bisection reuses an exact bisection of its intact fabric whatever the
time limit: a command's shares differ on every call."""

import importlib

import fabricopt as fo

bisection = importlib.import_module("fabricopt.analysis.bisection")


def test_an_exact_intact_bisection_serves_any_limit(monkeypatch):
    monkeypatch.setattr(bisection, "_INTACT_BISECTIONS", {})
    fab = fo.fat_tree(4)
    first = fo.bisection_bandwidth(fab.without(links=[("leaf0", "spine0.0")]), time_limit=20.0)
    keys = set(bisection._INTACT_BISECTIONS)
    assert any(k[-1] == "exact" for k in keys)  # fat_tree(4)'s bisection is exact
    second = fo.bisection_bandwidth(fab.without(links=[("leaf1", "spine0.1")]), time_limit=21.0)
    # Nothing new cached: the second failed copy found the exact intact bisection.
    assert set(bisection._INTACT_BISECTIONS) == keys
    assert first.lower_gbps <= first.upper_gbps and second.lower_gbps <= second.upper_gbps
