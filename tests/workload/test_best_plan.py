"""The best plan: what the search keeps is the best, what it prunes is proven unable to win,
and the question is checked before any work."""

import dataclasses
import itertools
import re

import pytest

import fabricopt as fo
from fabricopt.cli import main
from fabricopt.errors import InvalidParameterError
from fabricopt.workload import plan_walk
from fabricopt.workload.memory import memory_per_gpu
from fabricopt.workload.plan_search import plan_label

#: Llama 3 8B on one DGX H100: 16 sequences of 2,048 tokens (a search of under a second).
SMALL = {"model": "llama3-8b", "global_batch": 16, "seq_len": 2048}
PLAN = ("tp", "cp", "ep", "pp", "virtual_stages", "dp", "micro_batch", "zero", "recompute",
        "overlap")


@pytest.fixture(scope="module")
def dgx():
    return fo.dgx_h100()


@pytest.fixture(scope="module")
def small(dgx):
    return fo.best_plan(dgx, **SMALL)


def job_of(row, **job):
    """The TrainingJob of a table row."""
    return fo.TrainingJob(**job, **{k: row[k] for k in PLAN})


def solved(rows):
    return [r for r in rows if r["step_s"] is not None]


def test_the_best_is_first_and_no_solved_plan_beats_it(small):
    best = small.table[0]
    assert best["verdict"] == "best" and small.job.tp == best["tp"]
    assert small.step.step_s == best["step_s"]
    assert all(small.step.step_s <= r["step_s"] for r in solved(small.table))
    # The whole fabric: tp x cp x ep x pp x dp = 8 GPUs of the DGX, none idle.
    assert small.job.gpus == 8 and best["idle_gpus"] == 0
    # Every plan tried has one verdict; counts add up to the table.
    assert sum(small.counts.values()) == len(small.table)
    assert set(small.counts) <= set(plan_walk.STATUSES)


def test_pruned_plans_are_proven_unable_to_win(dgx, small):
    best = small.step.step_s
    pruned = [r for r in small.table if r["verdict"] == "pruned: bound"]
    assert pruned
    for r in pruned:  # the certificate: its bound is at or above the best step
        assert r["bound_s"] >= best and r["bound_s_lower"] <= r["bound_s"]
    # And each bound holds: the plans pruned with the lowest bounds, solved after all, are no
    # faster than their bound (expected step) nor their peak bound (certified step).
    for r in sorted(pruned, key=lambda r: r["bound_s"])[:12]:
        try:
            s = fo.training_step(dgx, job_of(r, **SMALL))
        except InvalidParameterError:
            continue  # does not fit either
        assert s.step_s >= r["bound_s"] * (1 - 1e-9) >= best * (1 - 1e-9)
        assert s.step_s_lower >= r["bound_s_lower"] * (1 - 1e-9)


def test_bounds_hold_where_experts_cross_servers():
    # Mixtral 8x7B on 32 DGX H100: with tp = 2 an expert group of 8 ranks spans two servers
    # (ranks count tensor fastest), so its all-to-all leaves the NVLink domain; every plan's
    # bound, solved, is no more than its step, the certified one no more than its lower bound.
    pod = fo.superpod(1)
    question = {"model": "mixtral-8x7b", "global_batch": 256, "seq_len": 4096}
    p = fo.best_plan(pod, **question, constraints={
        "pp": 1, "cp": 1, "micro_batch": 1, "recompute": "none", "min_ep": 2})
    assert {(r["tp"], r["ep"]) for r in p.table} >= {(2, 8), (1, 8)}
    for r in p.table:
        if r["verdict"] in ("pruned: bound", "slower", "best"):
            s = fo.training_step(pod, job_of(r, **question))
            assert s.step_s >= r["bound_s"] * (1 - 1e-9)
            assert s.step_s_lower >= r["bound_s_lower"] * (1 - 1e-9)


def test_memory_pruned_plans_do_not_fit(dgx, small):
    rows = [r for r in small.table if r["verdict"] == "pruned: memory"]
    assert rows
    for r in rows:
        # 80 GB of HBM per H100 SXM (the catalog's figure).
        assert memory_per_gpu(job_of(r, **SMALL), 80).total_gb == pytest.approx(r["memory_gb"])
        assert r["memory_gb"] > 80 and r["reason"].startswith("needs ")
        with pytest.raises(InvalidParameterError, match="HBM"):
            fo.training_step(dgx, job_of(r, **SMALL))


def test_brute_force_over_a_small_space_finds_the_same_best(dgx):
    tiny = {"recompute": ["none", "full"], "max_virtual_stages": 2}
    found = fo.best_plan(dgx, **SMALL, constraints=tiny)
    every = fo.best_plan(dgx, **SMALL, constraints=tiny, prune=False)
    assert "pruned: bound" not in every.counts
    assert every.step.step_s == pytest.approx(found.step.step_s, rel=1e-12)
    # By hand, without the search: every (tp, pp, dp) filling 8 GPUs (tp x pp x dp = 8), the
    # micro-batches dividing the 16 / dp sequences, v = 1 or 2, both recomputations.
    best = None
    for tp, pp in itertools.product([1, 2, 4, 8], [1, 2, 4, 8]):
        if 8 % (tp * pp):
            continue
        dp = 8 // (tp * pp)
        for mb, v, rc in itertools.product([1, 2, 4, 8, 16], [1, 2], ["none", "full"]):
            if (16 // dp) % mb or (v > 1 and pp == 1):
                continue
            job = fo.TrainingJob("llama3-8b", tp=tp, pp=pp, dp=dp, micro_batch=mb,
                                 virtual_stages=v, recompute=rc, global_batch=16,
                                 seq_len=2048)
            try:
                step = fo.training_step(dgx, job).step_s
            except InvalidParameterError:
                continue  # does not fit in memory
            best = step if best is None else min(best, step)
    assert best == pytest.approx(found.step.step_s, rel=1e-12)


def test_constraints_are_respected(dgx):
    p = fo.best_plan(dgx, **SMALL, constraints={"tp": 2, "pp": [1, 2], "recompute": "full",
                                                "overlap": "full"})
    tried = [r for r in p.table if r["verdict"] != "invalid"]
    assert {r["tp"] for r in tried} == {2} and {r["pp"] for r in tried} <= {1, 2}
    assert {r["recompute"] for r in tried} == {"full"}
    assert {r["overlap"] for r in tried} == {"full"} and p.job.overlap == "full"
    assert p.job.tp == 2 and p.job.dp == 8 // (2 * p.job.pp)
    # A field no dimension searches, listed: it becomes a column and each value is tried.
    q = fo.best_plan(dgx, **SMALL, constraints={"sequence_parallel": [True, False],
                                                "max_pp": 1})
    assert {r["sequence_parallel"] for r in q.table} == {True, False}
    assert {r["pp"] for r in q.table} == {1}


def test_tensor_parallelism_stays_in_the_domain_unless_allowed():
    pod = fo.superpod(1)  # 32 DGX H100: scale-up domains of 8 GPUs
    cheap = {"recompute": ["none"], "max_pp": 1, "micro_batch": 1}
    p = fo.best_plan(pod, "llama3-8b", global_batch=256, seq_len=8192, constraints=cheap)
    assert max(r["tp"] for r in p.table) == 8
    # max_tp=16 lets a tensor group span two servers (16 divides the 32 heads, 256 GPUs).
    wide = fo.best_plan(pod, "llama3-8b", global_batch=256, seq_len=8192,
                        constraints={**cheap, "max_tp": 16})
    assert max(r["tp"] for r in wide.table) == 16
    # Sequences of 8,192 tokens: context parallelism 1 or 2 (each rank keeps >= 4,096).
    assert {r["cp"] for r in p.table} == {1, 2}
    assert {r["ep"] for r in p.table} == {1}  # a dense model has no experts to spread


def test_min_mfu_rejects_and_prunes(dgx, small):
    # Half-way between the best plan's MFU and the slowest solved plan's: some solved plans
    # fall below it (rejected), the best stays.
    low = min(r["mfu"] for r in solved(small.table))
    floor = (small.step.mfu + low) / 2
    p = fo.best_plan(dgx, **SMALL, constraints={"min_mfu": floor})
    assert p.step.mfu >= floor and p.job == small.job
    for r in p.table:
        if r["verdict"] == "rejected":
            assert r["mfu"] < floor
    with pytest.raises(InvalidParameterError, match="no plan reaches min_mfu"):
        fo.best_plan(dgx, **SMALL, constraints={"min_mfu": 0.99, "tp": 8})


def test_a_few_gpus_idle_only_when_no_plan_takes_them_all(dgx):
    # 3 sequences on 8 GPUs with tp <= 2 and no pipeline: dp = 8 / tp = 8 or 4 splits no
    # batch of 3, so dp = 3 and 8 - 3 tp GPUs stay idle; the note says so.
    p = fo.best_plan(dgx, "llama3-8b", global_batch=3, seq_len=2048,
                     constraints={"max_tp": 2, "max_pp": 1})
    assert p.job.dp == 3 and p.table[0]["idle_gpus"] == 8 - 3 * p.job.tp
    assert any("leave some idle" in n for n in p.notes)
    # With a batch that splits, no plan leaves a GPU idle.
    assert fo.best_plan(dgx, **SMALL, constraints={"max_tp": 2, "max_pp": 1}).job.gpus == 8


@pytest.mark.parametrize("kwargs, message", [
    ({"constraints": {"max_tpp": 2}}, "did you mean 'max_tp'"),
    ({"constraints": {"recompute": "sometimes"}}, "constraints['recompute'] must be one of"),
    ({"constraints": {"pp": []}}, "one value or a non-empty list"),
    ({"constraints": {"min_tp": 4, "max_tp": 2}}, "at most max_tp = 2"),
    ({"constraints": {"global_batch": 8}}, "global_batch is best_plan's own argument"),
    ({"constraints": {"min_mfu": 1.5}}, "a fraction in (0, 1]"),
    ({"constraints": "tp=8"}, "constraints must be None or a mapping"),
    ({"model": "llama3-8"}, "did you mean 'llama3-8b'"),
    ({"global_batch": 0}, "global_batch must be an integer >= 1"),
    ({"seq_len": -1}, "seq_len must be an integer >= 1"),
    ({"objective": "tokens"}, "did you mean 'tokens_per_s'"),
    # 16 tensor ranks on 8 GPUs.
    ({"constraints": {"tp": 16}}, "too few for any plan"),
    # dp = 3 divides no batch of 16 (and leaves 8 - 3 x tp x pp GPUs): no valid plan at all.
    ({"constraints": {"dp": 3}}, "must be a multiple of"),
])
def test_bad_questions_are_refused_before_any_work(dgx, kwargs, message):
    args = {**SMALL, **kwargs}
    with pytest.raises(InvalidParameterError, match=re.escape(message)):
        fo.best_plan(dgx, **args)


def test_no_plan_fits_names_the_closest_and_by_how_much(dgx):
    # Llama 3 405B: 405.8e9 weights x (2 + 2 + 12) bytes of mixed-precision Adam = 6.5 TB at
    # least, and 8 GPUs of 80 GB hold 640 GB: no plan fits.
    with pytest.raises(InvalidParameterError, match=r"no plan of llama3-405b fits in 80 GB "
                       r"per GPU on DGX H100; the closest, .* too much"):
        fo.best_plan(dgx, "llama3-405b", global_batch=16, seq_len=2048)


def test_experts_are_spread_only_over_divisors_of_their_count():
    # Mixtral 8x7B on 256 GPUs; kept small: no tensor or pipeline parallelism, one
    # micro-batch, no recomputation. Expert ranks divide the 8 experts; dp = 256 / ep.
    pod = fo.superpod(1)
    p = fo.best_plan(pod, "mixtral-8x7b", global_batch=256, seq_len=4096,
                     constraints={"tp": 1, "pp": 1, "cp": 1, "micro_batch": 1,
                                  "recompute": "none", "zero": [1, 3]})
    assert {r["ep"] for r in p.table} == {1, 2, 4, 8}
    assert all(r["dp"] * r["ep"] == 256 for r in p.table)
    assert p.job.ep in (1, 2, 4, 8)


def test_a_step_below_its_bound_drops_the_bound_and_the_search_stays_exact(dgx, monkeypatch):
    # A step model that (wrongly, for the bounds) runs every step 10% faster: on one DGX the
    # step is nearly all compute, so the first step solved falls below its schedule and
    # compute bounds, pruning falls back to compute at peak (at most 0.58 of the step, the
    # H100's BF16 efficiency in the catalog, so below 0.9 of it), and what was pruned is
    # solved after all: the search finds what a search without pruning finds.
    real = fo.training_step

    def faster(fab, job):
        s = real(fab, job)
        return dataclasses.replace(s, step_s=s.step_s * 0.9, step_s_lower=s.step_s_lower * 0.9)

    monkeypatch.setattr(plan_walk, "training_step", faster)
    tiny = {"recompute": ["none", "full"], "max_virtual_stages": 2}
    p = fo.best_plan(dgx, **SMALL, constraints=tiny)
    assert any("fell below its bound" in n and "pruning now by compute at peak" in n
               for n in p.notes)
    every = fo.best_plan(dgx, **SMALL, constraints=tiny, prune=False)
    assert p.step.step_s == pytest.approx(every.step.step_s, rel=1e-12)
    # What is still pruned is pruned by a bound the faster steps respect.
    steps = {tuple(r[k] for k in PLAN): r["step_s"] for r in solved(every.table)}
    pruned = [r for r in p.table if r["verdict"] == "pruned: bound"]
    assert pruned
    for r in pruned:
        assert steps.get(tuple(r[k] for k in PLAN), r["bound_s"]) >= r["bound_s"] >= \
            p.step.step_s


def test_the_table_prints_and_becomes_a_frame(small):
    text = str(small)
    assert text.startswith("best plan on DGX H100 (tokens_per_s): llama3-8b: TP ")
    table = small.to_table(3).splitlines()
    assert table[0].split()[:3] == ["verdict", "tp", "cp"]
    assert table[1].startswith("best") and table[-1].startswith("... ")
    pd = pytest.importorskip("pandas")
    frame = small.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) == len(small.table)


def test_cost_objective_ranks_alike_and_prices_every_solved_plan(dgx, small):
    p = fo.best_plan(dgx, **SMALL, objective="usd_per_million_tokens")
    # The fabric costs the same per second whatever the plan: the cheapest per token is the
    # fastest, and each price is that cost over the plan's tokens per second.
    assert p.job == small.job and p.objective == "usd_per_million_tokens"
    usd_per_s = fo.token_cost(dgx, small.step.tokens_per_s, "h100_sxm").usd_per_s
    for r in solved(p.table):
        assert r["usd_per_million_tokens"] == pytest.approx(1e6 * usd_per_s / r["tokens_per_s"])


def test_a_plan_search_judges_each_fabric_in_compare(dgx, small):
    job = {"plan": "best", **SMALL}
    [row] = fo.compare([dgx], metrics=["training"], job=job)
    assert row["training_plan"] == plan_label(small.job)
    assert row["training_tokens_per_s"] == pytest.approx(small.step.tokens_per_s)
    search = fo.PlanSearch(**SMALL)
    assert search.run(dgx).job == small.job
    with pytest.raises(InvalidParameterError, match="did you mean 'max_tp'"):
        fo.PlanSearch.from_mapping({"plan": "best", "model": "llama3-8b", "max_tpp": 2})


def test_a_plan_search_judges_each_candidate_in_optimize():
    dom = {"family": "nvswitch_domain", "gpus": 2, "switches": 1, "links_per_gpu": 2,
           "link_gbps": 200}
    space = {"family": ["rail_optimized"], "scale_up": [dom], "leaf_radix": [8],
             "oversubscription": [1.0]}
    search = fo.PlanSearch("llama3-8b", global_batch=16, seq_len=2048,
                           constraints={"max_pp": 1, "recompute": "none"})
    res = fo.optimize(16, space=space, job=search)
    best = res.best
    assert best["training_plan"].startswith("TP ")
    assert best["training_tokens_per_s"] > 0


def test_cli_train_plan_best(capsys):
    assert main(["train", "dgx_h100", "--model", "llama3-8b", "--global-batch", "16",
                 "--seq-len", "2048", "--plan", "best", "--tp", "2", "--constraint",
                 "max_pp=1", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "best plan      TP 2, PP 1, DP 4" in out
    assert "tokens/s" in out and "plans " in out
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("verdict"))
    assert lines[head + 1].startswith("best")
    assert main(["train", "dgx_h100", "--model", "llama3-8b", "--plan", "best",
                 "--constraint", "max_tpp=2"]) == 2
    assert "did you mean 'max_tp'" in capsys.readouterr().err
