"""The verdict: sentences computed from a comparison table, checked against rows built by hand."""

import pytest

from fabricopt.errors import InvalidParameterError
from fabricopt.study.verdict import is_single_system, rank, verdict


def _row(name, usd_per_gbps, gbps, tier="gpu-leaf", gpus=512, **extra):
    return {"name": name, "gpus": gpus, "all_to_all_gbps_per_gpu": gbps,
            "capex_per_gpu_usd": usd_per_gbps * gbps, "usd_per_delivered_gbps": usd_per_gbps,
            "binding_tier": tier, "links_gpu-nvswitch": 8, "links_gpu-leaf": 8, **extra}


def test_cheapest_cluster_its_binding_tier_and_the_runner_up_with_the_margin():
    rows = [_row("tapered", 8.0, 300.0, tier="leaf-spine"),
            _row("full", 10.0, 400.0),
            _row("rail-only", 6.0, 400.0, all_to_all_exact=False),
            # Its job failed after the network's figures: they stand, the per-token one not.
            _row("broken", 9.0, 900.0, error="InvalidParameterError: training_metrics()")]
    sentences = verdict(rows)
    # rail-only: $6.00 per GPU per Gb/s for 400 Gb/s is $2,400 per GPU; its bracket stayed
    # open, so it delivers "at least" its lower end. tapered is next: 8 / 6 - 1 = 33% dearer.
    assert sentences[0] == ("Cheapest cluster per delivered Gb/s: rail-only, $6.00 per GPU per "
                            "Gb/s of network capex ($2,400 per GPU for at least 400 Gb/s of "
                            "all-to-all per GPU (incl. NVLink-local traffic), 512 GPUs); "
                            "what binds it: each GPU's own NIC "
                            "link to its leaf (gpu-leaf).")
    assert sentences[1] == "Runner-up: tapered at $8.00 per GPU per Gb/s, 33% dearer."
    # The row that stopped on an error is ranked by what it has, and named.
    assert sentences[-1] == ("1 design stopped on an error (the table says which), ranked "
                             "only by the figures computed before it: broken.")
    assert len(sentences) == 3


def test_the_headline_says_it_counts_nvlink_local_traffic_and_gives_the_network_part():
    # 1,024 GPUs in DGX H100s: 400 Gb/s NICs carry 400 x 1,016 / 1,016 to the 1,016 peers
    # outside the server, and the all-to-all per GPU adds the 7 peers on NVLink:
    # 400 x 1,023 / 1,016 = 402.76, above the NIC's speed (a new user's finding).
    pod = _row("pod", 5.0, 400 * 1023 / 1016, gpus=1024,
               all_to_all_network_gbps_per_gpu=400.0)
    assert "for 403 Gb/s of all-to-all per GPU (incl. NVLink-local traffic; 400 Gb/s over the " \
        "network), 1,024 GPUs)" in verdict([pod])[0]
    # Without the network column the wording alone says it, where the design has NVLink.
    assert "per GPU (incl. NVLink-local traffic), 512 GPUs" in verdict([_row("a", 5.0, 400)])[0]
    # A fat tree with no scale-up links: every Gb/s is the network's, nothing to add.
    plain = {k: v for k, v in _row("tree", 5.0, 400.0).items() if k != "links_gpu-nvswitch"}
    assert "of all-to-all per GPU, 512 GPUs" in verdict([plain])[0]


def test_single_systems_are_ranked_apart_and_in_server_switches_named():
    pod = {"name": "pod", "gpus": 128, "all_to_all_gbps_per_gpu": 3200.0,
           "capex_per_gpu_usd": 2750.0, "usd_per_delivered_gbps": 2750 / 3200,
           "binding_tier": "gpu-ualink-switch", "links_gpu-ualink-switch": 512}
    dgx = {"name": "DGX", "gpus": 8, "all_to_all_gbps_per_gpu": 3600.0, "capex_usd": 0.0,
           "capex_per_gpu_usd": 0.0, "usd_per_delivered_gbps": 0.0, "in_system_only": True,
           "binding_tier": "gpu-nvswitch"}
    rows = [_row("cluster", 7.0, 400.0), pod, dgx]
    assert [is_single_system(r) for r in rows] == [False, True, True]
    sentences = verdict(rows)
    # The pod costs 2,750 / 3,200 = $0.859 per Gb/s, far under the cluster's $7: it would
    # win one ranking (three significant digits below $1).
    assert sentences[0].startswith("Cheapest cluster per delivered Gb/s: cluster, $7.00")
    assert sentences[1] == "Runner-up: none; it is the only cluster with this figure."
    assert sentences[2].startswith("Among single systems (one scale-up domain, no network "
                                   "between boxes; ranked apart): pod costs least per "
                                   "delivered Gb/s, $0.859 per GPU per Gb/s")
    assert sentences[3] == ("DGX has its switches inside the server price (no network "
                            "capex), so it is not ranked by it.")


def test_cost_per_token_when_a_job_ran():
    rows = [_row("a", 7.0, 400.0, training_usd_per_million_tokens=1.25,
                 training_tokens_per_s=1.5e6, training_plan="tp8 pp4 dp16",
                 training_binding_dimension="dp", training_binding_tier="gpu-leaf"),
            _row("b", 8.0, 400.0, training_usd_per_million_tokens=1.0,
                 training_tokens_per_s=1.2e6, training_plan="tp8 pp8 dp8",
                 training_binding_dimension="pp", training_binding_tier="leaf-spine")]
    sentences = verdict(rows)
    # b is dearer per Gb/s but cheaper per token: 1.25 / 1.0 - 1 = 25% for the runner-up a.
    assert sentences[2] == ("Cheapest per token for the job: b, $1.00 per million tokens at "
                            "1,200,000 tokens/s, plan tp8 pp8 dp8; its step is bound by "
                            "pipeline-parallel communication over the leaf-to-spine uplinks "
                            "(leaf-spine).")
    assert sentences[3] == "Runner-up: a at $1.25 per million tokens, 25% dearer."


def test_sizes_far_apart_are_said_and_ties_are_level():
    rows = [_row("small", 5.0, 400.0, gpus=256), _row("twin", 5.0, 400.0, gpus=256),
            _row("big", 9.0, 400.0, gpus=16384)]
    sentences = verdict(rows)
    assert sentences[1] == "Runner-up: twin at $5.00 per GPU per Gb/s, level with it (within 0.5%)."
    assert sentences[2].startswith("The clusters range from 256 to 16,384 GPUs")


def test_rank_and_bad_rows():
    # Rows without a positive value are left out; ties keep the rows' order.
    r = rank([{"c": 2.0}, {"c": 0.0}, {"c": None}, {"c": 1.0}, {"c": 1.0}], "c")
    assert r.order == (3, 4, 0) and r.margin == 0.0
    assert verdict([]) == []
    with pytest.raises(InvalidParameterError, match=r"verdict\(\): rows"):
        verdict({"name": "a"})


def test_what_the_cheapest_per_token_has_over_its_runner_up_is_said():
    # "box" (8 GPUs, one scale-up system: no network between boxes) is cheapest per token;
    # its runner-up "pod" (1,024 GPUs) carries $7.00 x 400 = $2,800 of network capex per GPU.
    rows = [_row("pod", 7.0, 400.0, gpus=1024, training_usd_per_million_tokens=1.25),
            {"name": "box", "gpus": 8, "capex_per_gpu_usd": 0.0, "in_system_only": True,
             "training_usd_per_million_tokens": 1.0}]
    assert verdict(rows)[-1] == ("box wins per token over pod: its GPUs need no network "
                                 "between boxes, where pod's carry $2,800. Every token pays "
                                 "its share of the capex and of the GPUs' time.")
    # A cluster of the same size but a cheaper network ($5 x 400 = $2,000 a GPU) and a
    # higher MFU (36.4 % against 34.4 %: more micro-batches, less bubble): both are named,
    # and nothing is put down to size.
    rows[1] = _row("tapered", 5.0, 400.0, gpus=1024, training_usd_per_million_tokens=1.0,
                   training_mfu=0.364)
    rows[0]["training_mfu"] = 0.344
    last = verdict(rows)[-1]
    assert last.startswith("tapered wins per token over pod: its GPUs carry $2,000 of network "
                           "capex each, where pod's carry $2,800; its step uses 36.4% of")
    assert "smaller" not in last
    # A multi-box design priced at $0 of network is not called a single system.
    rows[1]["capex_per_gpu_usd"] = 0.0
    assert "need no network between boxes" not in verdict(rows)[-1]
    # The costlier network winning on neither: nothing to explain.
    rows[1].update(capex_per_gpu_usd=3000.0, training_mfu=0.344)
    assert not any("wins per token over" in s for s in verdict(rows))
