"""Design-space search: a hand-worked optimum, shortfalls, pruning, the written winner."""

import pytest

import fabricopt as fo
from fabricopt.study.search import GroupTask, evaluate_group

# 8 servers of 2 GPUs (one NVSwitch each), 400G NICs, radix-8 rail leaves: 16 GPUs.
DOMAIN = {"family": "nvswitch_domain", "gpus": 2, "switches": 1, "links_per_gpu": 2,
          "link_gbps": 200}
SPACE = {"family": ["rail_optimized", "clos"], "scale_up": [DOMAIN], "leaf_radix": [4, 8],
         "oversubscription": [1.0, 2.0, 3.0]}


def test_hand_worked_optimum():
    # Rail leaves of radix 8: at 1:1 4 ports down, 2 leaves per rail of 4 servers and 4
    # uplinks each; at 2:1 5 down, still 4 servers a leaf, ceil(4 / 2) = 2 uplinks.
    # All-to-all per GPU: traffic leaving a 2-GPU domain crosses its NIC, bw x 14 / 15 <= 400,
    # so 428.6 at most; the 8 GPUs of one leaf index (4 servers x 2 rails) send
    # bw x 8 x 8 / 15 over 2 rails x up x 400: 2:1 gives 1600 x 15 / 64 = 375.
    res = fo.optimize(16, space=SPACE, constraints={"all_to_all_gbps_per_gpu": 300})
    best = res.best
    assert best["all_to_all_gbps_per_gpu"] == pytest.approx(375, rel=1e-6)
    assert best["oversubscription_built"] == 2.0
    # Printed, the result names the winner with its capex and rate.
    assert f"best: {best['name']}, {best['capex_usd']:,.0f} USD" in str(res)
    # The non-blocking design costs more: once 2:1 is known to meet the target, 1:1 is
    # priced but not solved (it can be neither the best nor on the front up to the best).
    one = next(r for r in res.rows if r["name"].startswith("rail_optimized")
               and " r8 1:1" in r["name"])
    assert one["outcome"] == "pruned" and "priced, not solved" in one["reason"]
    assert one["capex_usd"] > best["capex_usd"]
    assert "all_to_all_gbps_per_gpu" not in one
    # Asked for the whole front, it is solved: it delivers the NIC bound.
    res_all = fo.optimize(16, space=SPACE, constraints={"all_to_all_gbps_per_gpu": 300},
                          full_front=True)
    one = next(r for r in res_all.rows if r["name"] == one["name"])
    assert one["all_to_all_gbps_per_gpu"] == pytest.approx(400 * 15 / 14, rel=1e-6)
    # Asking for 400 leaves only 1:1 designs.
    res = fo.optimize(16, space=SPACE, constraints={"all_to_all_gbps_per_gpu": 400})
    assert res.best["all_to_all_gbps_per_gpu"] == pytest.approx(400 * 15 / 14, rel=1e-6)
    # The front runs from cheap and slow to dear and fast; the rail and Clos 1:1 designs
    # are the same two-tier radix-8 fabric in price and rate (their LP optima differ in the
    # last bits only), so both are on it.
    front = res.front
    for a, b in zip(front, front[1:], strict=False):
        assert a["capex_usd"] <= b["capex_usd"]
        if a["capex_usd"] == b["capex_usd"]:
            assert a["all_to_all_gbps_per_gpu"] == pytest.approx(
                b["all_to_all_gbps_per_gpu"], rel=1e-9)
        else:
            assert a["all_to_all_gbps_per_gpu"] < b["all_to_all_gbps_per_gpu"]
    assert [r["name"] for r in front][-2:] == ["rail_optimized nvswitch_domain r8 1:1 default",
                                               "clos nvswitch_domain r8 1:1 default"]


def test_infeasible_constraints_report_the_shortfall():
    # 500 Gb/s per GPU is beyond the NIC bound 400 x 15 / 14 = 428.6 of every candidate.
    res = fo.optimize(16, space=SPACE, constraints={"all_to_all_gbps_per_gpu": 500})
    assert res.best is None and res.nearest
    short = res.nearest[0]["shortfall"]["all_to_all_gbps_per_gpu"]
    assert short == pytest.approx((500 - 400 * 15 / 14) / 500, rel=1e-6)
    # A budget below every design: the capex constraint is named with its excess.
    res = fo.optimize(16, space=SPACE, constraints={"capex_usd": 1000.0})
    assert res.best is None
    assert all("capex_usd" in r["shortfall"] for r in res.nearest)


@pytest.mark.parametrize("full_front", [False, True])
@pytest.mark.parametrize("constraints", [
    {"all_to_all_gbps_per_gpu": 300},
    {"all_to_all_gbps_per_gpu": 100, "capex_usd": 300_000},
    {"all_to_all_gbps_per_gpu": 200},
    {},
])
def test_pruning_never_drops_a_winner(constraints, full_front):
    space = {**SPACE, "policy": ["cost", "all_optics"], "tiers": [None, 2]}
    pruned = fo.optimize(16, space=space, constraints=constraints, full_front=full_front)
    full = fo.optimize(16, space=space, constraints=constraints, prune=False,
                       full_front=full_front)
    assert (pruned.best or {}).get("capex_usd") == (full.best or {}).get("capex_usd")
    key = [(r["capex_usd"], r["all_to_all_gbps_per_gpu"]) for r in full.front]
    front = [(r["capex_usd"], r["all_to_all_gbps_per_gpu"]) for r in pruned.front]
    if full_front or "all_to_all_gbps_per_gpu" not in constraints:
        assert front == key
    else:  # a search for the best prunes designs whose bound misses the target: the front
        # it returns is the full one's without some of those, the best and all that meet
        # the target kept
        target = constraints["all_to_all_gbps_per_gpu"]
        assert set(front) <= set(key)
        assert {k for k in key if k[1] >= target * (1 - 1e-9)} <= set(front)
    # Every bound holds against the evaluated figures.
    for r in full.rows:
        if r["outcome"] == "evaluated":
            assert r["capex_usd_bound"] <= r["capex_usd"]
            assert r["capex_lower_usd"] == r["capex_usd_bound"]  # its old name, for a release
            assert r["all_to_all_gbps_per_gpu"] <= r["all_to_all_gbps_per_gpu_bound"] * (
                1 + 1e-6)
    # The default front stops at the best design; the full one may go on past it.
    if full.best and not full_front:
        assert all(r["capex_usd"] <= full.best["capex_usd"] for r in full.front)


def test_designs_alike_are_evaluated_once():
    # tiers None resolves to 2 for 16 GPUs: "t2" is the same fabric, named once.
    space = {**SPACE, "family": ["rail_optimized"], "tiers": [None, 2]}
    res = fo.optimize(16, space=space, prune=False)
    twins = [r for r in res.rows if " t2 " in r["name"]
             and not r["reason"].startswith("cannot be built")]
    assert twins and all(r["reason"].startswith("the same design as") for r in twins)
    assert all(r["outcome"] == "pruned" for r in twins)


def test_policies_of_one_topology_share_its_solve():
    space = {**SPACE, "family": ["rail_optimized"], "leaf_radix": [8],
             "policy": ["cost", "all_optics"]}
    res = fo.optimize(16, space=space, prune=False)
    by = {r["name"]: r for r in res.rows}
    cost, optics = (by[f"rail_optimized nvswitch_domain r8 2:1 {p}"] for p in
                    ("cost", "all_optics"))
    assert cost["topology"] == optics["topology"]
    assert cost["all_to_all_gbps_per_gpu"] == optics["all_to_all_gbps_per_gpu"]
    # Each is priced under its own policy: the same as estimate_cost on the built fabric.
    fab = res.candidates[optics["name"]].build()
    assert optics["capex_usd"] == fo.estimate_cost(fab, policy="all_optics").capex_usd
    assert cost["capex_usd"] == fo.estimate_cost(fab, policy="cost").capex_usd


def test_unsolved_candidates_stay_off_the_front(monkeypatch):
    # A solve that stops with nothing proven (lower bound 0) for the 1:1 designs.
    import dataclasses

    import fabricopt.study.metrics as api

    real = api.max_concurrent_flow

    def stopped(fab, *args, **kwargs):
        r = real(fab, *args, **kwargs)
        if fab.params.get("oversubscription") == 1.0:
            return dataclasses.replace(r, theta=None, lower=0.0, status="time_limit")
        return r

    monkeypatch.setattr(api, "max_concurrent_flow", stopped)
    res = fo.optimize(16, space=SPACE, prune=False, full_front=True)
    unsolved = [r for r in res.rows if r["outcome"] == "unsolved"]
    assert unsolved and all(r["all_to_all_status"] == "time_limit" for r in unsolved)
    assert all(" 1:1 " in r["name"] for r in unsolved)
    assert not any(r["outcome"] == "unsolved" for r in res.front)
    assert all(r["all_to_all_gbps_per_gpu"] > 0 for r in res.front)
    # Asked for what only 1:1 delivers (above the 375 of 2:1): nothing is proven to meet it.
    res = fo.optimize(16, space=SPACE, constraints={"all_to_all_gbps_per_gpu": 400})
    assert res.best is None


def test_failure_constraint_tried_on_what_could_win():
    constraints = {"all_to_all_gbps_per_gpu": 100, "all_to_all_after_failure_gbps": 50,
                   "failure_fraction": 0.05}
    pruned = fo.optimize(16, space=SPACE, constraints=constraints)
    full = fo.optimize(16, space=SPACE, constraints=constraints, prune=False)
    assert pruned.best["name"] == full.best["name"]
    assert pruned.best["all_to_all_after_failure_gbps"] >= 50
    # Failing links cannot add bandwidth: the trial is at most the intact design's figure.
    assert (pruned.best["all_to_all_after_failure_gbps"]
            <= pruned.best["all_to_all_gbps_per_gpu_upper"] * (1 + 1e-6))
    untried = [r for r in full.rows if r.get("reason", "").startswith("failure trial not run")]
    assert all(r["capex_usd"] >= full.best["capex_usd"] and r["meets"] is None
               for r in untried)


def test_written_design_reloads_to_the_same_fabric(tmp_path):
    res = fo.optimize(16, space=SPACE, constraints={"all_to_all_gbps_per_gpu": 300})
    path = res.write_design(tmp_path / "best.toml")
    fab = fo.load_design(path)
    built = res.candidates[res.best["name"]].build()
    assert sorted(fab.graph.nodes(data=True), key=str) == sorted(built.graph.nodes(data=True),
                                                                 key=str)
    assert sorted(fab.graph.edges(data=True), key=str) == sorted(built.graph.edges(data=True),
                                                                 key=str)
    # Priced under the candidate's policy (the space's "cost"), not the family's default.
    policy = res.candidates[res.best["name"]].policy
    assert fo.estimate_cost(fab, policy=policy).capex_usd == res.best["capex_usd"]


def test_oversubscribed_design_costs_less():
    # An architect's check: 2:1 must cost less than 1:1, in the whole default space.
    dom = fo.dgx_h100()
    res = fo.optimize(512, space={"family": ["superpod", "rail_optimized"],
                                  "scale_up": [dom], "oversubscription": [1.0, 2.0]},
                      prune=False)
    by = {r["name"]: r for r in res.rows}
    for fam in ("superpod", "rail_optimized"):
        one = next(r for n, r in by.items() if n.startswith(fam) and " 1:1" in n)
        two = next(r for n, r in by.items() if n.startswith(fam) and " 2:1" in n)
        assert two["capex_usd"] < one["capex_usd"]


@pytest.mark.parametrize("kwargs, match", [
    ({"gpus": 1}, "gpus must be"),
    ({"gpus": 16, "objective": "speed"}, "objective must be one of"),
    ({"gpus": 16, "constraints": {"speed": 1}}, "constraints key must be one of"),
    ({"gpus": 16, "constraints": {"capex_usd": -1}}, "must be a number >= 0"),
    ({"gpus": 16, "space": {"colour": [1]}}, "space must be a mapping with keys"),
    ({"gpus": 16, "space": {"family": ["torus"]}}, "family'] must be one of"),
    ({"gpus": 15, "space": SPACE}, "a space with candidates for 15 GPUs"),
    # A misspelt name is answered with the nearest allowed one (one letter dropped or added).
    ({"gpus": 16, "constraints": {"all_to_all_gbps_per_gp": 1}},
     "did you mean 'all_to_all_gbps_per_gpu'"),
    ({"gpus": 16, "objective": "capex_us"}, "did you mean 'capex_usd'"),
    ({"gpus": 16, "space": {"family": ["closs"]}}, "did you mean 'clos'"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(fo.InvalidParameterError, match=match):
        fo.optimize(**kwargs)


def test_evaluate_is_the_public_path():
    res = fo.optimize(16, space=SPACE, constraints={"all_to_all_gbps_per_gpu": 300})
    c = res.candidates[res.best["name"]]
    [row] = evaluate_group(GroupTask((c,), ()))
    fab = c.build()
    assert row["capex_usd"] == fo.estimate_cost(fab, policy=c.policy).capex_usd


def test_cli_optimize_prints_the_front_and_writes_the_winner(tmp_path, capsys):
    from fabricopt.cli import main

    search = tmp_path / "s.toml"
    search.write_text('gpus = 16\n[space]\nfamily = ["rail_optimized"]\n'
                      'scale_up = [{family = "nvswitch_domain", gpus = 2, switches = 1, '
                      'links_per_gpu = 2, link_gbps = 200}]\nleaf_radix = [8]\n'
                      'oversubscription = [1.0, 2.0]\n[constraints]\n'
                      'all_to_all_gbps_per_gpu = 300\n')
    out = tmp_path / "best.toml"
    assert main(["optimize", str(search), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Pareto front" in text and "best: rail_optimized" in text
    # The whole front goes on past the best (2:1, 375 Gb/s) to the dearer 1:1 design.
    assert main(["optimize", str(search), "-o", str(out), "--full-front"]) == 0
    assert "r8 1:1" in capsys.readouterr().out.split("Pareto front")[1].split("best:")[0]
    assert len(fo.load_design(out).endpoints) == 16
    # Beyond every design: exit code 1 and the shortfall.
    search.write_text(search.read_text().replace("= 300", "= 500"))
    assert main(["optimize", str(search), "-o", str(out)]) == 1
    assert "all_to_all_gbps_per_gpu misses by" in capsys.readouterr().out


def test_cli_optimize_all_says_what_each_evaluated_design_delivered(tmp_path, capsys):
    from fabricopt.cli import main

    search = tmp_path / "s.toml"
    search.write_text('gpus = 16\n[space]\nfamily = ["rail_optimized"]\n'
                      'scale_up = [{family = "nvswitch_domain", gpus = 2, switches = 1, '
                      'links_per_gpu = 2, link_gbps = 200}]\nleaf_radix = [8]\n'
                      'oversubscription = [2.0]\n[constraints]\n'
                      'all_to_all_gbps_per_gpu = 300\n')
    # The 2:1 design carries 375 Gb/s per GPU (test above): it meets 300, misses 500 by
    # (500 - 375) / 500 = 25%; --all prints its capex, its all-to-all and that verdict.
    assert main(["optimize", str(search), "--all", "-o", str(tmp_path / "b.toml")]) == 0
    line = capsys.readouterr().out.split("r8 2:1")[-1].splitlines()[0]
    assert "evaluated (" in line and "all-to-all 375.0 Gb/s per GPU; meets every" in line
    # At 500 it misses by 25% (its bound, 375, alone no longer prunes it: it could be on the
    # front); solved with prune=False too.
    from fabricopt.cli import _evaluated_figures

    space = {"family": ["rail_optimized"], "leaf_radix": [8], "oversubscription": [2.0],
             "scale_up": [{"family": "nvswitch_domain", "gpus": 2, "switches": 1,
                           "links_per_gpu": 2, "link_gbps": 200}]}
    res = fo.optimize(16, space=space, constraints={"all_to_all_gbps_per_gpu": 500},
                      prune=False)
    [row] = [r for r in res.rows if r["outcome"] == "evaluated"]
    # No policy given: the build pricing chose is named (fabricopt.cost.reference).
    assert _evaluated_figures(row, res).endswith(
        f"USD by the {row['pricing'].split(':')[0]}, all-to-all 375.0 Gb/s per GPU; "
        "all_to_all_gbps_per_gpu misses by 25.0%")


def test_cli_optimize_takes_several_search_files(tmp_path, capsys, monkeypatch):
    from fabricopt.cli import main

    monkeypatch.chdir(tmp_path)  # each best design goes to <stem>-best.toml here
    head = ('gpus = 16\n[space]\nfamily = ["rail_optimized"]\n'
            'scale_up = [{family = "nvswitch_domain", gpus = 2, switches = 1, '
            'links_per_gpu = 2, link_gbps = 200}]\nleaf_radix = [8]\n'
            'oversubscription = [1.0, 2.0]\n[constraints]\n')
    # 300 Gb/s is met (the 2:1 design carries 375, test above); 500 is beyond the 400 Gb/s
    # NICs: all-to-all <= 400 x (16 - 1) / (16 - 2) = 428.6 Gb/s per GPU.
    (tmp_path / "a.toml").write_text(head + "all_to_all_gbps_per_gpu = 300\n")
    (tmp_path / "b.toml").write_text(head + "all_to_all_gbps_per_gpu = 500\n")
    # One search without a design meeting it: exit code 1, the other's winner still written.
    assert main(["optimize", "a.toml", "b.toml"]) == 1
    text = capsys.readouterr().out
    assert "best: rail_optimized" in text and "all_to_all_gbps_per_gpu misses by" in text
    assert (tmp_path / "a-best.toml").exists() and not (tmp_path / "b-best.toml").exists()
    # One -o for two searches is refused before any search runs.
    assert main(["optimize", "a.toml", "b.toml", "-o", "x.toml"]) == 2
    assert "-o names one design file" in capsys.readouterr().err


@pytest.mark.parametrize("constraints", [
    {"all_to_all_gbps_per_gpu": 300},
    {"all_to_all_gbps_per_gpu": 200},
    {"all_to_all_gbps_per_gpu": 100, "capex_usd": 300_000},
    {},
])
def test_asymmetric_plans_beyond_the_limit_are_decided_by_the_ecmp_bracket(monkeypatch,
                                                                            constraints):
    import importlib

    opt = importlib.import_module("fabricopt.study.search")
    # The exact LP of every candidate, below the limit.
    exact = {r["name"]: r for r in fo.optimize(16, space=SPACE, constraints=constraints,
                                               prune=False, full_front=True).rows}
    monkeypatch.setattr(opt, "ASYMMETRIC_GPUS_LIMIT", 8)
    res = fo.optimize(16, space=SPACE, constraints=constraints, prune=False, full_front=True)
    bracketed = [r for r in res.rows if r.get("all_to_all_method") == "ecmp bound"]
    # Radix-4 rail leaves at 3:1 hold 3 servers each, 8 servers spread 3, 3, 2: unequal.
    assert any(" r4 3:1 " in r["name"] for r in bracketed)
    target = constraints.get("all_to_all_gbps_per_gpu")
    for r in bracketed:
        e = exact[r["name"]]
        assert e["all_to_all_method"] != "ecmp bound" and e["all_to_all_status"] == "optimal"
        # The optimum lies inside the certified bracket.
        assert r["all_to_all_gbps_per_gpu"] <= e["all_to_all_gbps_per_gpu"] * (1 + 1e-6)
        assert e["all_to_all_gbps_per_gpu"] <= r["all_to_all_gbps_per_gpu_upper"] * (1 + 1e-6)
        assert r["capex_usd"] == e["capex_usd"]  # built and priced as the others are
        if r["outcome"] == "unsolved":
            assert r["reason"].startswith("undecided") and r["meets"] is None
            assert r["all_to_all_gbps_per_gpu"] < target <= r["all_to_all_gbps_per_gpu_upper"]
        else:
            # Decided: the exact LP agrees.
            assert r["outcome"] == "evaluated" and r["meets"] == e["meets"]
    assert not any(r["outcome"] == "unsolved" for r in res.front)
    # The front shows a bracketed row's lower end as such.
    shown = sum(r.get("all_to_all_method") == "ecmp bound" for r in res.front)
    assert res.to_markdown().count("(ECMP, at least)") == shown
    # A design declared best meets the constraints by the exact LP too, and pruning keeps
    # what evaluating everything finds.
    if res.best is not None:
        assert exact[res.best["name"]]["meets"]
    pruned = fo.optimize(16, space=SPACE, constraints=constraints, full_front=True)
    assert (pruned.best or {}).get("name") == (res.best or {}).get("name")
    key = [(r["capex_usd"], r["all_to_all_gbps_per_gpu"]) for r in res.front]
    assert [(r["capex_usd"], r["all_to_all_gbps_per_gpu"]) for r in pruned.front] == key


def test_undecided_candidates_are_closed_by_the_flow_engine(monkeypatch):
    import importlib

    opt = importlib.import_module("fabricopt.study.search")
    # The candidate alone (nothing cheaper and feasible that would make its solve moot).
    space = {**SPACE, "family": ["rail_optimized"], "leaf_radix": [4], "oversubscription": [3.0]}
    name = "rail_optimized nvswitch_domain r4 3:1 default"
    exact = next(r for r in fo.optimize(16, space=space, prune=False).rows if r["name"] == name)
    monkeypatch.setattr(opt, "ASYMMETRIC_GPUS_LIMIT", 8)
    row = next(r for r in fo.optimize(16, space=space, prune=False).rows if r["name"] == name)
    lower, upper = row["all_to_all_gbps_per_gpu"], row["all_to_all_gbps_per_gpu_upper"]
    assert row["outcome"] == "evaluated" and lower < upper  # an open ECMP bracket
    # A target strictly inside it: the flow engine solves the candidate and its certified
    # optimum decides (the same figure as the candidate solved below the limit).
    target = (lower + upper) / 2
    res = fo.optimize(16, space=space, prune=False, constraints={"all_to_all_gbps_per_gpu": target})
    row = next(r for r in res.rows if r["name"] == name)
    assert row["outcome"] == "evaluated" and row["all_to_all_method"] != "ecmp bound"
    assert row["all_to_all_gbps_per_gpu"] == pytest.approx(exact["all_to_all_gbps_per_gpu"],
                                                           rel=1e-9)
    assert row["meets"] == (exact["all_to_all_gbps_per_gpu"] >= target)


def test_candidates_the_flow_engine_leaves_open_stay_unsolved(monkeypatch):
    import importlib

    opt = importlib.import_module("fabricopt.study.search")
    monkeypatch.setattr(opt, "ASYMMETRIC_GPUS_LIMIT", 8)
    space = {**SPACE, "family": ["rail_optimized"], "leaf_radix": [4], "oversubscription": [3.0]}
    name = "rail_optimized nvswitch_domain r4 3:1 default"
    row = next(r for r in fo.optimize(16, space=space, prune=False).rows if r["name"] == name)
    lower, upper = row["all_to_all_gbps_per_gpu"], row["all_to_all_gbps_per_gpu_upper"]
    # A flow solve that ran out of time, leaving the same bracket: it decides nothing.
    left_open = {k: v for k, v in row.items() if k.startswith("all_to_all")}
    monkeypatch.setattr(opt, "closed_all_to_all", lambda c, limit, *a: left_open)
    res = fo.optimize(16, space=space, prune=False,
                      constraints={"all_to_all_gbps_per_gpu": (lower + upper) / 2})
    row = next(r for r in res.rows if r["name"] == name)
    assert row["outcome"] == "unsolved" and "the flow engine did not close it" in row["reason"]
    assert row is not res.best and row not in res.front


def test_an_executor_gives_the_same_answer():
    import concurrent.futures as cf

    constraints = {"all_to_all_gbps_per_gpu": 300}
    alone = fo.optimize(16, space=SPACE, constraints=constraints)
    with cf.ThreadPoolExecutor(max_workers=2) as pool:
        shared = fo.optimize(16, space=SPACE, constraints=constraints, executor=pool)
    assert shared.best["name"] == alone.best["name"]
    assert [r["name"] for r in shared.front] == [r["name"] for r in alone.front]


def test_finishing_order_does_not_change_the_answer(monkeypatch):
    # Rail leaves of radix 8 at 2:1 and 3:1 both get ceil(4 / 2) = ceil(4 / 3) = 2 uplinks:
    # the same fabric, the same price and 375 Gb/s per GPU (see test_hand_worked_optimum).
    # Which one is "best" must not depend on which result an executor hands back first.
    # Here two workers finish the cheap Clos first and then the 3:1 rail before the 2:1 sent
    # ahead of it (as a thread pool did on a loaded machine).
    import concurrent.futures as cf
    import importlib

    execution = importlib.import_module("fabricopt.study.execution")
    first = ["clos nvswitch_domain r8 3:1 default",
             "rail_optimized nvswitch_domain r8 3:1 default"]
    names = {}

    class Immediate(cf.Executor):
        _max_workers = 2

        def submit(self, fn, /, *args, **kwargs):
            future = cf.Future()
            future.set_result(fn(*args, **kwargs))
            names[future] = args[0].candidates[0].name
            return future

    def wait(fs, return_when=None):
        fs = list(fs)
        done = min(fs, key=lambda f: (first.index(names[f]) if names[f] in first else 9))
        return [done], set(fs) - {done}

    constraints = {"all_to_all_gbps_per_gpu": 300}
    alone = fo.optimize(16, space=SPACE, constraints=constraints)
    monkeypatch.setattr(execution.cf, "wait", wait)
    shared = fo.optimize(16, space=SPACE, constraints=constraints, executor=Immediate())
    assert alone.best["name"] == "rail_optimized nvswitch_domain r8 2:1 default"
    assert shared.best["name"] == alone.best["name"]
    assert [r["name"] for r in shared.front] == [r["name"] for r in alone.front]


def _on_immediate_workers(monkeypatch, last_first, **kwargs):
    """``optimize(16, space=SPACE, **kwargs)`` on two "workers" that run each task as it is
    sent and hand back the last one sent first (or the first): the result, and the stage of
    every task sent."""
    import concurrent.futures as cf
    import importlib

    execution = importlib.import_module("fabricopt.study.execution")
    sent, stages = [], []

    class Immediate(cf.Executor):
        _max_workers = 2

        def submit(self, fn, /, *args, **kw):
            future = cf.Future()
            future.set_result(fn(*args, **kw))
            sent.append(future)
            stages.append(args[0].stage)
            return future

    def wait(fs, return_when=None):
        fs = sorted(fs, key=sent.index)
        done = fs[-1] if last_first else fs[0]
        return [done], set(fs) - {done}

    with monkeypatch.context() as m:
        m.setattr(execution.cf, "wait", wait)
        return fo.optimize(16, space=SPACE, executor=Immediate(), **kwargs), stages


def _rows(res):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in res.rows]


@pytest.mark.parametrize("last_first", [False, True])
def test_workers_give_the_rows_one_process_gives(monkeypatch, last_first):
    # On workers, pricing and solving are tasks of their own and free workers work ahead
    # (search.DesignSearch._evaluate_split); the topologies are still decided in one
    # process's order against the designs before them, so every row (priced out, pruned by
    # its bound, evaluated; reasons naming the same design) is the row one process gives,
    # whichever task finishes first: here the last one sent, or the first.
    for constraints in ({"all_to_all_gbps_per_gpu": 300}, {"all_to_all_gbps_per_gpu": 100}):
        alone = fo.optimize(16, space=SPACE, constraints=constraints)
        # Both searches price some topologies out and prune others by their bound.
        reasons = [r["reason"] for r in alone.rows]
        assert any(x.endswith("priced, not solved)") for x in reasons)
        assert any(x.startswith("costs more than") and "priced" not in x for x in reasons)
        shared, _ = _on_immediate_workers(monkeypatch, last_first, constraints=constraints)
        assert _rows(shared) == _rows(alone)


@pytest.mark.parametrize("options", [{"full_front": True}, {"prune": False},
                                     {"objective": "power_w"}])
def test_workers_solve_ahead_and_still_give_one_process_rows(monkeypatch, options):
    # Where no ceiling prices a topology out (the whole front, no pruning, an objective
    # other than capex), every solve is needed and free workers solve ahead of pricing;
    # the rows are still one process's, whichever task finishes first.
    constraints = {"all_to_all_gbps_per_gpu": 300}
    alone = fo.optimize(16, space=SPACE, constraints=constraints, **options)
    shared, stages = _on_immediate_workers(monkeypatch, True, constraints=constraints,
                                           **options)
    assert _rows(shared) == _rows(alone)
    assert {"both", "price", "solve"} <= set(stages)


def test_bracketed_failure_trial_is_a_lower_bound(monkeypatch):
    import importlib

    opt = importlib.import_module("fabricopt.study.search")
    constraints = {"all_to_all_gbps_per_gpu": 100, "all_to_all_after_failure_gbps": 150,
                   "failure_fraction": 0.05}
    exact = fo.optimize(16, space=SPACE, constraints=constraints, prune=False)
    monkeypatch.setattr(opt, "ASYMMETRIC_GPUS_LIMIT", 8)
    res = fo.optimize(16, space=SPACE, constraints=constraints, prune=False)
    by = {r["name"]: r for r in exact.rows}
    tried = [r for r in res.rows if r.get("all_to_all_method") == "ecmp bound"
             and r.get("all_to_all_after_failure_gbps") is not None]
    assert tried
    for r in tried:
        # ECMP on the failed fabric is a feasible flow: never above the optimum after the
        # same failures, and a pass by it is a pass.
        assert r["all_to_all_after_failure_gbps"] <= by[r["name"]][
            "all_to_all_after_failure_gbps"] * (1 + 1e-6)
        if r["meets"]:
            assert by[r["name"]]["meets"]


def test_report_cautions_about_cheaper_undecided_candidates():
    # A best design at 100 USD and an unsolved one at 90 whose bracket [107, 178] Gb/s holds
    # the 150 target: the cheaper one may meet it, so the report says the best is only the
    # cheapest proven design. A dearer unsolved one (120 USD) is not a rival.
    from fabricopt.study.optimize import OptimizeResult

    best = {"name": "b", "outcome": "evaluated", "capex_usd": 100.0, "power_w": 1.0,
            "all_to_all_gbps_per_gpu": 180.0, "meets": True, "shortfall": {}}
    cheap = {"name": "u", "outcome": "unsolved", "capex_usd": 90.0,
             "all_to_all_gbps_per_gpu": 107.0, "all_to_all_gbps_per_gpu_upper": 178.0}
    dear = {**cheap, "name": "d", "capex_usd": 120.0}
    res = OptimizeResult(16, "capex_usd", {"all_to_all_gbps_per_gpu": 150},
                         [best, cheap, dear], [best], best, [], 0.1)
    assert res.undecided_cheaper() == [cheap]
    text = str(res)
    assert "caution: 1 cheaper candidate(s) undecided" in text and "[107.0, 178.0]" in text


def test_misspelled_space_key_gets_a_suggestion():
    with pytest.raises(fo.FabricOptError, match="did you mean 'oversubscription'"):
        fo.optimize(16, space={"oversubscripton": [1.0]})


def _scaled_all_to_all(monkeypatch, factor):
    """Every all-to-all figure the search computes (both ends of a bracket) times
    ``factor(fabric name)``, as another solve path's last bits would move it."""
    import importlib

    search = importlib.import_module("fabricopt.study.search")
    real = search.compute_metrics

    def scaled(fab, names, ctx, row=None):
        out = dict(real(fab, names, ctx, row))
        for key in ("all_to_all_gbps_per_gpu", "all_to_all_gbps_per_gpu_upper"):
            if out.get(key) is not None:
                out[key] *= factor(fab.name)
        return out

    monkeypatch.setattr(search, "compute_metrics", scaled)


def _decisions(res):
    """What a search decided: every row's outcome, reason and verdict, the front, the best."""
    return ([(r["name"], r["outcome"], r["reason"], r.get("meets"), sorted(r.get("shortfall")
              or {})) for r in res.rows], [r["name"] for r in res.front],
            (res.best or {}).get("name"), [r["name"] for r in res.nearest])


def _sign(name):  # a fixed +1 or -1 per fabric, so designs move apart or together
    import hashlib

    return 1 if hashlib.sha1(name.encode()).digest()[0] % 2 else -1


@pytest.mark.parametrize("constraints", [
    {"all_to_all_gbps_per_gpu": 300},
    # Floors exactly at candidates' rates: rail 2:1 delivers 1600 x 15 / 64 = 375, every
    # 1:1 design the NIC bound 400 x 15 / 14 (test_hand_worked_optimum).
    {"all_to_all_gbps_per_gpu": 375},
    {"all_to_all_gbps_per_gpu": 400 * 15 / 14},
    {"all_to_all_gbps_per_gpu": 500},
    {"all_to_all_gbps_per_gpu": 100, "capex_usd": 300_000},
])
def test_last_bits_of_a_throughput_change_no_decision(monkeypatch, constraints):
    # A faster or different LP path moves a certified rate by about 1e-13 relative
    # (presolve or not, BLAS threads): 1e-12 up, down, or up for some fabrics and down for
    # others must leave every row's outcome and reason, the front, the best and the nearest
    # misses as they were. Ties are real here: rail and Clos 1:1 at radix 8 cost the same
    # and both carry 428.57 (test_hand_worked_optimum), rail 2:1 and 3:1 are one fabric.
    space = {**SPACE, "policy": ["cost", "all_optics"]}
    for full_front in (False, True):
        before = _decisions(fo.optimize(16, space=space, constraints=constraints,
                                        full_front=full_front))
        for factor in (lambda n: 1 + 1e-12, lambda n: 1 - 1e-12,
                       lambda n: 1 + 1e-12 * _sign(n), lambda n: 1 - 1e-12 * _sign(n)):
            with monkeypatch.context() as m:
                _scaled_all_to_all(m, factor)
                after = fo.optimize(16, space=space, constraints=constraints,
                                    full_front=full_front)
            assert _decisions(after) == before


def test_a_difference_beyond_the_tolerance_still_decides(monkeypatch):
    # The 1:1 rail and Clos designs tie (same capex, 428.57 Gb/s each): the rail, listed
    # first in the space, is the best, and both are on the front. 1e-7 more for the Clos
    # is a real difference (100x the relative tolerance 1e-9): the Clos wins and the rail
    # leaves the front; 1e-10 more is none.
    rail, clos = ("rail_optimized nvswitch_domain r8 1:1 default",
                  "clos nvswitch_domain r8 1:1 default")
    constraints = {"all_to_all_gbps_per_gpu": 400}
    res = fo.optimize(16, space=SPACE, constraints=constraints)
    assert res.best["name"] == rail and {rail, clos} <= {r["name"] for r in res.front}
    for more, best, front in ((1e-10, rail, {rail, clos}), (1e-7, clos, {clos})):
        with monkeypatch.context() as m:
            _scaled_all_to_all(m, lambda n, more=more: 1 + more * ("clos" in n))
            res = fo.optimize(16, space=SPACE, constraints=constraints)
        assert res.best["name"] == best
        assert {rail, clos} & {r["name"] for r in res.front} == front


def test_floors_and_ceilings_hold_within_the_tolerance():
    from fabricopt.study.search import shortfalls

    floor, ceiling = {"all_to_all_gbps_per_gpu": 150.0}, {"capex_usd": 1e6}
    # 1e-12 relative below a floor (above a ceiling) meets it; 1e-6 misses, by that much.
    assert shortfalls({"all_to_all_gbps_per_gpu": 150 * (1 - 1e-12)}, floor) == {}
    assert shortfalls({"capex_usd": 1e6 * (1 + 1e-12)}, ceiling) == {}
    short = shortfalls({"all_to_all_gbps_per_gpu": 150 * (1 - 1e-6)}, floor)
    assert short["all_to_all_gbps_per_gpu"] == pytest.approx(1e-6)
    assert shortfalls({"capex_usd": 1e6 * (1 + 1e-6)}, ceiling)["capex_usd"] == pytest.approx(
        1e-6)


def test_nearest_misses_are_ordered_by_a_key_even_along_a_chain_of_near_totals():
    from fabricopt.study.search import TOL, _by_total_shortfall

    # Totals 1, 1 + 0.6 TOL, 1 + 1.2 TOL, 1 + 1.8 TOL: each within TOL of the next, so the
    # old "equal within TOL" comparator was not transitive. Grouped from the least up: the
    # first two are level (row order kept), the next two a group of their own (1.2 TOL from
    # the least), level with each other.
    totals = [1 + 1.8 * TOL, 1 + 1.2 * TOL, 1 + 0.6 * TOL, 1.0]
    rows = [{"name": i, "shortfall": {"capex_usd": t}} for i, t in enumerate(totals)]
    order = [r["name"] for r in _by_total_shortfall(rows)]
    assert order == [2, 3, 0, 1]
    # The same whatever order the rows come in, up to the row order kept within a group.
    assert [r["name"] for r in _by_total_shortfall(rows[::-1])] == [3, 2, 1, 0]
    # Clear gaps: plain ascending order.
    far = [{"name": i, "shortfall": {"gbps": t}} for i, t in enumerate([0.3, 0.1, 0.2])]
    assert [r["name"] for r in _by_total_shortfall(far)] == [1, 2, 0]
