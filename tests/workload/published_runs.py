"""Published training runs, with their plans and figures: the tests of the job layer.

Each row is a run someone published with enough of its plan to rebuild it: the fabric it ran
on (as near as fabricopt's generators come), the plan, the published figure, its source, and
what the source leaves out and was assumed. ``docs/validation.md`` is this table, its
figures recomputed by ``benchmarks/validation.py``; ``test_validation.py`` keeps each row
within 10 % of its published figure and its certified lower bound below the measured step.

:data:`CALIBRATES` names the rows that set the catalog's efficiencies (their geometric-mean
ratio is 1 at the catalog's figures); every other row checks a model the fit never saw.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

import fabricopt as fo

LLAMA3 = "The Llama 3 Herd of Models (Llama Team, 2024), Table 4 and section 3.3.2"
NEMO = ("NVIDIA DGX Cloud benchmarking recipes, release 25.02 (H100 SXM, NeMo / Megatron-Core; "
        "the same plan in BF16 and FP8)")
NARAYANAN = ("Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM "
             "(Narayanan et al., SC'21)")
NEMOTRON = "Nemotron-4 340B Technical Report (NVIDIA, 2024), Table 2"

#: Llama 3's plan as assumed here: the paper gives TP, CP, PP, DP, the sequence and batch, no
#: activation recomputation, FSDP sharding gradients and optimizer state (ZeRO-2 here), one
#: layer less on the first and last pipeline rank; it does not give the micro-batch (1
#: here), the virtual stages (4 here) or the micro-batch group N of its schedule (8 here).
LLAMA3_PLAN = {"model": "llama3-405b", "tp": 8, "pp": 16, "micro_batch": 1,
               "first_stage_layers": 7, "last_stage_layers": 7, "virtual_stages": 4,
               "microbatch_group": 8, "zero": 2, "recompute": "none"}
#: NVIDIA's recipes: distributed optimizer (ZeRO-1), every overlap Transformer Engine and
#: Megatron-Core offer, BF16 gradients, micro-batch 1.
NEMO_PLAN = {"micro_batch": 1, "zero": 1, "overlap": "full", "grad_precision": "bf16",
             "recompute": "none"}
#: Megatron-LM's published runs (2021): full recomputation, no distributed optimizer, no
#: FlashAttention yet, FP16 at the same 312 TFLOP/s peak as BF16 (its scripts say ``--fp16``).
MEGATRON_PLAN = {"recompute": "full", "zero": 0, "overlap": "default",
                 "flash_attention": False}


@dataclass(frozen=True)
class Run:
    """One published run: ``fabric`` names a fabric of :func:`fabric`, ``metric`` is
    ``"mfu"`` (model FLOPs over the peak), ``"step_s"`` or ``"hardware_tflops"``
    (per GPU, recomputation counted)."""

    name: str
    source: str
    fabric: str
    job: dict[str, Any]
    metric: str
    published: float
    assumed: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


FABRICS = {
    "superpod(8)": lambda: fo.superpod(8),
    "superpod(9)": lambda: fo.superpod(9),
    "superpod(24)": lambda: fo.superpod(24),
    "superpod(32)": lambda: fo.superpod(32),
    "superpod(64)": lambda: fo.superpod(64),
    "192 x DGX A100": lambda: fo.cluster(fo.dgx_a100(), nodes=192, nic_gbps=200),
    "240 x DGX A100": lambda: fo.cluster(fo.dgx_a100(), nodes=240, nic_gbps=200),
    "315 x DGX A100": lambda: fo.cluster(fo.dgx_a100(), nodes=315, nic_gbps=200),
    "384 x DGX A100": lambda: fo.cluster(fo.dgx_a100(), nodes=384, nic_gbps=200),
    "48 x DGX A100": lambda: fo.cluster(fo.dgx_a100(), nodes=48, nic_gbps=200),
    "96 x DGX A100": lambda: fo.cluster(fo.dgx_a100(), nodes=96, nic_gbps=200),
}


@cache
def fabric(name: str) -> fo.Fabric:
    """The fabric a row runs on (built once per test session)."""
    return FABRICS[name]()


RUNS: list[Run] = [
    # -- Llama 3 405B on 16K H100 (BF16) ------------------------------------------------------
    Run("Llama 3 405B, 8,192 H100, TP 8 PP 16 DP 64, seq 8K", LLAMA3, "superpod(32)",
        {**LLAMA3_PLAN, "global_batch": 2048, "seq_len": 8192}, "mfu", 0.43,
        assumed="micro-batch 1, v 4, N 8, ZeRO-2"),
    Run("Llama 3 405B, 16,384 H100, TP 8 PP 16 DP 128, seq 8K", LLAMA3, "superpod(64)",
        {**LLAMA3_PLAN, "global_batch": 2048, "seq_len": 8192}, "mfu", 0.41,
        assumed="micro-batch 1, v 4, N 8, ZeRO-2; sets H100 "
        "bf16_efficiency"),
    Run("Llama 3 405B, 16,384 H100, TP 8 CP 16 PP 16 DP 8, seq 131K", LLAMA3, "superpod(64)",
        {**LLAMA3_PLAN, "cp": 16, "global_batch": 128, "seq_len": 131072}, "mfu", 0.38,
        assumed="as above; sets H100 attention_efficiency"),
    # -- NVIDIA's recipes on 2K H100, BF16 and FP8 ----------------------------------------------
    Run("GPT-3 175B, 2,048 H100, TP 4 PP 8 VP 12, BF16", NEMO, "superpod(8)",
        {**NEMO_PLAN, "model": "gpt3-175b", "tp": 4, "pp": 8, "virtual_stages": 12,
         "global_batch": 4096, "seq_len": 2048}, "step_s", 8.49),
    Run("GPT-3 175B, 2,048 H100, TP 4 PP 8 VP 12, FP8", NEMO, "superpod(8)",
        {**NEMO_PLAN, "model": "gpt3-175b", "tp": 4, "pp": 8, "virtual_stages": 12,
         "global_batch": 4096, "seq_len": 2048, "precision": "fp8"}, "step_s", 5.96,
        assumed="sets H100 fp8_efficiency"),
    Run("Llama 3 70B, 2,048 H100, TP 4 PP 4 CP 2 VP 5, BF16", NEMO, "superpod(8)",
        {**NEMO_PLAN, "model": "llama3-70b", "tp": 4, "pp": 4, "cp": 2, "virtual_stages": 5,
         "global_batch": 4096, "seq_len": 8192}, "step_s", 14.84),
    Run("Llama 3 70B, 2,048 H100, TP 4 PP 4 CP 2 VP 5, FP8", NEMO, "superpod(8)",
        {**NEMO_PLAN, "model": "llama3-70b", "tp": 4, "pp": 4, "cp": 2, "virtual_stages": 5,
         "global_batch": 4096, "seq_len": 8192, "precision": "fp8"}, "step_s", 10.99),
    Run("Llama 3.1 405B, 2,304 H100, TP 8 PP 9 CP 2 VP 7, BF16", NEMO, "superpod(9)",
        {**NEMO_PLAN, "model": "llama3-405b", "tp": 8, "pp": 9, "cp": 2, "virtual_stages": 7,
         "global_batch": 1008, "seq_len": 8192}, "step_s", 17.70),
    Run("Llama 3.1 405B, 2,304 H100, TP 8 PP 9 CP 2 VP 7, FP8", NEMO, "superpod(9)",
        {**NEMO_PLAN, "model": "llama3-405b", "tp": 8, "pp": 9, "cp": 2, "virtual_stages": 7,
         "global_batch": 1008, "seq_len": 8192, "precision": "fp8"}, "step_s", 11.20),
    Run("Nemotron-4 340B, 2,048 H100, TP 8 PP 8 VP 12, BF16", NEMO, "superpod(8)",
        {**NEMO_PLAN, "model": "nemotron4-340b", "tp": 8, "pp": 8, "virtual_stages": 12,
         "global_batch": 512, "seq_len": 4096}, "step_s", 4.84),
    Run("Nemotron-4 340B, 2,048 H100, TP 8 PP 8 VP 12, FP8", NEMO, "superpod(8)",
        {**NEMO_PLAN, "model": "nemotron4-340b", "tp": 8, "pp": 8, "virtual_stages": 12,
         "global_batch": 512, "seq_len": 4096, "precision": "fp8"}, "step_s", 3.49),
    Run("Nemotron-4 340B, 6,144 H100, TP 8 PP 12 DP 64, batch 2,304", NEMOTRON, "superpod(24)",
        {"model": "nemotron4-340b", "tp": 8, "pp": 12, "virtual_stages": 4, "micro_batch": 1,
         "global_batch": 2304, "seq_len": 4096, "zero": 1, "grad_precision": "bf16",
         "overlap": "full"}, "step_s", 8.0,
        assumed="v 4, micro-batch 1, every overlap of NVIDIA's recipes"),
    # -- Megatron-LM on DGX A100 (TFLOP/s per GPU count recomputation) ---------------------------
    Run("145.6B, 1,536 A100, TP 8 PP 8 DP 24, v 2, micro-batch 2", NARAYANAN + ", Table 1",
        "192 x DGX A100",
        {**MEGATRON_PLAN, "model": "megatron-145b", "tp": 8, "pp": 8, "virtual_stages": 2,
         "micro_batch": 2, "global_batch": 2304, "seq_len": 2048}, "hardware_tflops", 148,
        assumed="sets A100 bf16_efficiency"),
    Run("310.1B, 1,920 A100, TP 8 PP 16 DP 15, v 2", NARAYANAN + ", Table 1", "240 x DGX A100",
        {**MEGATRON_PLAN, "model": "megatron-310b", "tp": 8, "pp": 16, "virtual_stages": 2,
         "micro_batch": 1, "global_batch": 2160, "seq_len": 2048}, "hardware_tflops", 155),
    Run("529.6B, 2,520 A100, TP 8 PP 35 DP 9, v 3", NARAYANAN + ", Table 1", "315 x DGX A100",
        {**MEGATRON_PLAN, "model": "megatron-530b", "tp": 8, "pp": 35, "virtual_stages": 3,
         "micro_batch": 1, "global_batch": 2520, "seq_len": 2048}, "hardware_tflops", 163),
    Run("1T, 3,072 A100, TP 8 PP 64 DP 6", NARAYANAN + ", Table 1", "384 x DGX A100",
        {**MEGATRON_PLAN, "model": "megatron-1t", "tp": 8, "pp": 64, "micro_batch": 1,
         "global_batch": 3072, "seq_len": 2048}, "hardware_tflops", 163),
    Run("GPT-3 175B, 384 A100, TP 8 PP 12 DP 4", NARAYANAN + ", Table 2", "48 x DGX A100",
        {**MEGATRON_PLAN, "model": "gpt3-175b", "tp": 8, "pp": 12, "micro_batch": 1,
         "global_batch": 1536, "seq_len": 2048}, "hardware_tflops", 153,
        assumed="TP 8 x PP 12 (the paper gives model-parallel size 96), no interleaving"),
    Run("GPT-3 175B, 768 A100, TP 8 PP 12 DP 8", NARAYANAN + ", Table 2", "96 x DGX A100",
        {**MEGATRON_PLAN, "model": "gpt3-175b", "tp": 8, "pp": 12, "micro_batch": 1,
         "global_batch": 1536, "seq_len": 2048}, "hardware_tflops", 149,
        assumed="as above"),
    Run("GPT-3 175B, 1,536 A100, TP 8 PP 12 DP 16", NARAYANAN + ", Table 2", "192 x DGX A100",
        {**MEGATRON_PLAN, "model": "gpt3-175b", "tp": 8, "pp": 12, "micro_batch": 1,
         "global_batch": 1536, "seq_len": 2048}, "hardware_tflops", 141,
        assumed="as above"),
]


#: Which rows set which efficiency: (GPU key, catalog field) -> row names.
CALIBRATES = {
    ("h100_sxm", "bf16_efficiency"): ["Llama 3 405B, 16,384 H100, TP 8 PP 16 DP 128, seq 8K",
                                      "GPT-3 175B, 2,048 H100, TP 4 PP 8 VP 12, BF16"],
    ("h100_sxm", "attention_efficiency"): [
        "Llama 3 405B, 16,384 H100, TP 8 CP 16 PP 16 DP 8, seq 131K"],
    ("h100_sxm", "fp8_efficiency"): ["GPT-3 175B, 2,048 H100, TP 4 PP 8 VP 12, FP8",
                                     "Llama 3.1 405B, 2,304 H100, TP 8 PP 9 CP 2 VP 7, FP8"],
    ("a100_sxm_80gb", "bf16_efficiency"): [
        "145.6B, 1,536 A100, TP 8 PP 8 DP 24, v 2, micro-batch 2",
        "1T, 3,072 A100, TP 8 PP 64 DP 6"],
    # Megatron-LM's 2021 runs computed attention's whole score matrix as matrix multiplies.
    ("a100_sxm_80gb", "attention_efficiency"): [
        "145.6B, 1,536 A100, TP 8 PP 8 DP 24, v 2, micro-batch 2",
        "1T, 3,072 A100, TP 8 PP 64 DP 6"],
}


def role(run: Run) -> str:
    """"calibration" for a row that sets an efficiency, else "check"."""
    calibration = {n for names in CALIBRATES.values() for n in names}
    return "calibration" if run.name in calibration else "check"


@dataclass(frozen=True)
class Outcome:
    """fabricopt's figure for a row, the ratio to the published one, and the step the
    published figure implies beside fabricopt's certified lower bound."""

    run: Run
    figure: float
    ratio: float
    step_s: float
    step_s_lower: float
    published_step_s: float
    memory_gb: float


def evaluate(run: Run, catalog: fo.Catalog | None = None) -> Outcome:
    """Rebuild ``run`` (its GPU's figures from ``catalog``) and compare."""
    s = fo.training_step(fabric(run.fabric), fo.TrainingJob(**run.job), catalog=catalog)
    if run.metric == "mfu":
        figure = s.mfu
        published_step = s.step_s * s.mfu / run.published
    elif run.metric == "hardware_tflops":
        figure = s.hardware_tflops_per_gpu
        published_step = s.step_s * figure / run.published
    else:
        figure = s.step_s
        published_step = run.published
    # ratio: published over fabricopt's figure for rates, fabricopt's over published for
    # times, so > 1 always means fabricopt is slower than the run was.
    ratio = run.published / figure if run.metric != "step_s" else figure / run.published
    return Outcome(run, figure, ratio, s.step_s, s.step_s_lower, published_step,
                   s.memory.total_gb)


#: Rail-only: A Low-Cost High-Performance Network for Training LLMs with Trillion Parameters
#: (Wang et al.): a rail-only network trains dense models in the same iteration time as a
#: full-bisection one, with 38-77 % less network cost and 37-75 % less network power.
RAIL_ONLY = {"source": "Rail-only: A Low-Cost High-Performance Network for Training LLMs with "
                       "Trillion Parameters (Wang et al., 2023)",
             "step_ratio": 1.0, "cost_saving": (0.38, 0.77), "power_saving": (0.37, 0.75),
             "job": {"model": "llama3-70b", "tp": 8, "pp": 4, "virtual_stages": 5,
                     "global_batch": 512, "seq_len": 8192}}


def rail_only() -> dict[str, float]:
    """The rail-only comparison on two scalable units of DGX H100 (512 GPUs), the largest
    a rail-only design of one switch per rail holds: step-time ratio and network capex and
    power saved."""
    full = fo.superpod(2)
    rail = fo.superpod(2, spine=False)
    job = fo.TrainingJob(**RAIL_ONLY["job"])
    a, b = fo.training_step(full, job), fo.training_step(rail, job)
    ca, cb = fo.estimate_cost(full), fo.estimate_cost(rail)
    return {"step_ratio": b.step_s / a.step_s, "step_s": a.step_s,
            "cost_saving": 1 - cb.capex_usd / ca.capex_usd,
            "power_saving": 1 - cb.power_w / ca.power_w}


# -- Reliability (docs/goodput.md) -------------------------------------------------------------
LLAMA3_RELIABILITY = ("The Llama 3 Herd of Models (Llama Team, 2024), section 3.3.4 and "
                      "Table 5")
META_RELIABILITY = ("Revisiting Reliability in Large-Scale Machine Learning Research Clusters "
                    "(Kokolis et al., arXiv 2410.21680)")
#: What the Llama 3 paper does not give about its recovery and is assumed: a failure noticed
#: in a minute (its collective library's fast timeouts), a restart in five minutes (it says
#: job startup and checkpointing time were reduced), a 10 s pause per checkpoint (its 405B
#: state, about 5 TB, at the 2 TB/s its storage sustains), and its 47 planned interruptions.
LLAMA3_RECOVERY = {"detection_s": 60.0, "restart_s": 300.0, "checkpoint_write_s": 10.0,
                   "planned_per_day": 47 / 54}
#: Revisiting Reliability: RSC-1 fails at about 6.5 node failures per 1,000 node-days, which
#: the paper projects to a mean time to failure of 1.8 h for a 16,384-GPU job (2,048 nodes).
META_NODE_FAILURES_PER_DAY = 6.5e-3


@dataclass(frozen=True)
class ReliabilityRow:
    """One reliability figure: ``low <= fabricopt <= high`` is the spread the source allows."""

    name: str
    source: str
    key: str
    published: str
    low: float
    high: float
    assumed: str


RELIABILITY = [
    # 419 unexpected interruptions in 54 days: 7.76 a day; a Poisson count of 419 has a
    # standard deviation of sqrt(419) = 20.5, so two of them allow 7.76 x (1 +- 0.098).
    ReliabilityRow("Llama 3 405B on 16,384 H100: unexpected interruptions per day",
                   LLAMA3_RELIABILITY, "interruptions_per_day", "419 in 54 days (7.76)",
                   419 / 54 * (1 - 2 * 419 ** -0.5), 419 / 54 * (1 + 2 * 419 ** -0.5),
                   "the shipped failure rates (derived from the same Table 5: a calibration)"),
    ReliabilityRow("Llama 3 405B on 16,384 H100: network interruptions (share)",
                   LLAMA3_RELIABILITY, "network_share", "8.4 % (35 of 419)",
                   0.084 * (1 - 2 * 35 ** -0.5), 0.084 * (1 + 2 * 35 ** -0.5),
                   "a SuperPOD stands in for Meta's RoCE cluster: 512 leaves of 32 GPUs "
                   "where Meta has 1,024 rack switches of 16"),
    ReliabilityRow("Llama 3 405B on 16,384 H100: effective training time", LLAMA3_RELIABILITY,
                   "ettr", "higher than 90 %", 0.90, 1.0,
                   "detection 60 s, restart 300 s, 10 s per checkpoint, Young/Daly interval, "
                   "47 planned interruptions"),
    ReliabilityRow("16,384-GPU job at 6.5 node failures per 1,000 node-days: mean time to "
                   "failure (h)", META_RELIABILITY, "mttf_16k_h", "1.8 h", 1.75, 1.85,
                   "the paper's per-node rate as the only failure (its model: nodes in series)"),
]


@cache
def reliability() -> dict[str, float]:
    """fabricopt's figures for the :data:`RELIABILITY` rows, on the 16K SuperPOD with Llama 3
    405B's plan (the steps of failures that leave the job running are not solved: none of
    these figures reads them)."""
    fab = fabric("superpod(64)")
    job = fo.TrainingJob(**{**LLAMA3_PLAN, "global_batch": 2048, "seq_len": 8192})
    g = fo.training_goodput(fab, job, solve=False, **LLAMA3_RECOVERY)
    unexpected = g.interruptions_per_day - LLAMA3_RECOVERY["planned_per_day"]
    network = sum(c["interruptions_per_day"] for c in g.components
                  if c["component"] in ("switch", "cable", "transceiver"))
    per_node_year = META_NODE_FAILURES_PER_DAY * 365
    rates = fo.FailureRates().merged({"reliability": {"host": {
        "per": "server", "failures_per_year": per_node_year, "repair_h": 0.0,
        "source": META_RELIABILITY, "confidence": "secondary"}}}, origin="RSC-1")
    meta = fo.training_goodput(fab, job, failure_model=rates, failures=g.failures)
    return {"interruptions_per_day": unexpected, "network_share": network / unexpected,
            "ettr": g.ettr, "mttf_16k_h": meta.mtbi_h}


# -- serving ------------------------------------------------------------------------------------
MLPERF = ("MLPerf Inference v4.1, Data Center, closed division: NVIDIA DGX H100 (8 x H100 SXM "
          "80 GB), TensorRT-LLM, FP8, llama2-70b-99.9")
#: Llama 2 70B (Llama 2: Open Foundation and Fine-Tuned Chat Models, Table 1 and section 2.2:
#: 80 layers, hidden 8,192, 64 heads, 8 KV heads, SwiGLU 28,672, vocabulary 32,000).
LLAMA2_70B = {"name": "llama2-70b", "layers": 80, "hidden": 8192, "ffn": 28672, "heads": 64,
              "kv_heads": 8, "vocab": 32000}
#: OPT-66B (OPT: Open Pre-trained Transformer Language Models, Table 1: 64 layers, hidden
#: 9,216, 72 heads, multi-head attention, ReLU MLP of 4 x hidden, vocabulary 50,272).
OPT_66B = {"name": "opt-66b", "layers": 64, "hidden": 9216, "ffn": 36864, "heads": 72,
           "vocab": 50272, "gated_mlp": False, "tied_embeddings": True}
#: The benchmark's requests: output tokens per request are the published tokens per second
#: over samples per second (24,525 / 84.2 = 291); the prompts are taken as long (assumed).
MLPERF_PROMPT, MLPERF_OUTPUT = 295, 291
#: The first Blackwell figures: NVIDIA's preview-category submission to MLPerf Inference v4.1,
#: one B200 (180 GB), TensorRT-LLM, FP4.
MLPERF_B200 = ("Tom's Hardware, 'Nvidia publishes first Blackwell B200 MLPerf results: Up to 4X "
               "faster than its H100 predecessor, when using FP4' (2024), its table of NVIDIA's "
               "MLPerf Inference v4.1 Llama 2 70B submissions: one B200 180 GB, FP4, 11,264 "
               "tokens/s Offline and 10,755 Server")
B200_OFFLINE = "Llama 2 70B, one B200, FP4, MLPerf Offline"


@dataclass(frozen=True)
class ServingRun:
    """One published serving figure: ``metric`` is ``"offline_tokens_per_s"`` (the best plan's
    steady state, no latency target), ``"server_tokens_per_s"`` (:func:`fabricopt.
    serving_capacity` at the benchmark's p99 targets), ``"tokens_per_s_per_user"`` (one
    request alone: 1 / TPOT) or ``"kv_gbps"`` (the KV-cache traffic of disaggregated
    serving at a request rate)."""

    name: str
    source: str
    fabric: str
    model: dict[str, Any] | str
    metric: str
    published: float
    settings: dict[str, Any] = field(default_factory=dict)
    assumed: str = ""


SERVING_RUNS: list[ServingRun] = [
    ServingRun("Llama 2 70B, DGX H100, FP8, MLPerf Offline", MLPERF, "dgx_h100", LLAMA2_70B,
               "offline_tokens_per_s", 24525,
               {"prompt_len": MLPERF_PROMPT, "output_len": MLPERF_OUTPUT, "precision": "fp8"},
               assumed="prompts of 295 tokens; the best plan of tp 1-8, batch and chunk"),
    # The 8-GPU Server figure is not in our sources; the same round's 4 x H100 submission
    # gives Server / Offline = 9,522 / 10,700 = 0.890, applied to the 8-GPU Offline figure:
    # 24,525 x 9,522 / 10,700 = 21,825 tokens/s. The row checks the latency model's Server
    # over Offline, not an absolute rate.
    ServingRun("Llama 2 70B, DGX H100, FP8, MLPerf Server (TTFT p99 2 s, TPOT p99 200 ms)",
               MLPERF + "; Server over Offline from the same round's 4 x H100 submission "
               "(9,522 and 10,700 tokens/s in the table of Tom's Hardware, 'Nvidia publishes "
               "first Blackwell B200 MLPerf results', 2024)",
               "dgx_h100", LLAMA2_70B, "server_tokens_per_s", 24525 * 9522 / 10700,
               {"prompt_len": MLPERF_PROMPT, "output_len": MLPERF_OUTPUT, "precision": "fp8",
                "ttft_s": 2.0, "tpot_s": 0.2},
               assumed="Poisson arrivals, fixed lengths, the Offline row's plan; the 8-GPU "
               "Server figure is the Offline one times the 4-GPU submission's Server/Offline"),
    ServingRun("Llama 3.1 70B, HGX H200, FP8, TP 8, one request", "NVIDIA technical blog, "
               "'Low Latency Inference Chapter 1: Up to 1.9x Higher Llama 3.1 Performance "
               "with Medusa on NVIDIA HGX H200 with NVLink Switch' (2024): 268 tokens/s per "
               "user with Medusa, over 1.5x the same without", "dgx_h200", "llama3-70b",
               "tokens_per_s_per_user", 268 / 1.5,
               {"prompt_len": 128, "output_len": 128, "precision": "fp8", "tp": 8},
               assumed="the published figure is 268 / 1.5 = 179 tokens/s (the speed-up is "
               "'over 1.5x'); a 128-token prompt"),
    ServingRun("OPT-66B, 512-token requests at 10 per second: KV-cache traffic", "DistServe: "
               "Disaggregating Prefill and Decoding for Goodput-optimized Large Language Model "
               "Serving (Zhong et al., OSDI 2024), section 4: 1.13 GB per request, 90 Gbps",
               "superpod(1)", OPT_66B, "kv_gbps", 90,
               {"prompt_len": 512, "rate": 10.0, "precision": "bf16"},
               assumed="FP16 cache (2 bytes), the paper's GB read as 2^30 bytes"),
    ServingRun(B200_OFFLINE, MLPERF_B200, "dgx_b200", LLAMA2_70B, "offline_tokens_per_s", 11264,
               {"prompt_len": MLPERF_PROMPT, "output_len": MLPERF_OUTPUT, "precision": "fp4",
                "per_gpu": True},
               assumed="one GPU's figure against a DGX B200's over its 8 GPUs (one replica per "
               "GPU, as the best plan is tp 1); prompts of 295 tokens"),
    ServingRun("Llama 2 70B, one B200, FP4, MLPerf Server (TTFT p99 2 s, TPOT p99 200 ms)",
               MLPERF_B200, "dgx_b200", LLAMA2_70B, "server_tokens_per_s", 10755,
               {"prompt_len": MLPERF_PROMPT, "output_len": MLPERF_OUTPUT, "precision": "fp4",
                "ttft_s": 2.0, "tpot_s": 0.2, "per_gpu": True},
               assumed="as the Offline row, Poisson arrivals over 8 replicas; the same "
               "submission as the calibration row, so a check of the latency model, not of "
               "the FP4 rate"),
]

#: Which serving rows set which efficiency: (GPU key, catalog field) -> row names. FP4 had
#: no published run to calibrate on; the B200 Offline figure sets it (GB200 takes B200's).
SERVING_CALIBRATES = {("b200", "fp4_efficiency"): [B200_OFFLINE]}


def serving_role(run: ServingRun) -> str:
    """"calibration" for a serving row that sets an efficiency, else "check"."""
    calibration = {n for names in SERVING_CALIBRATES.values() for n in names}
    return "calibration" if run.name in calibration else "check"


@dataclass
class ServingOutcome:
    figure: float
    ratio: float
    detail: str


def serving_model(run: ServingRun) -> fo.ModelConfig:
    """The run's model: a catalogue name or the config above."""
    return fo.model(run.model if isinstance(run.model, str) else dict(run.model))


FABRICS["dgx_h100"] = fo.dgx_h100
FABRICS["dgx_h200"] = fo.dgx_h200
FABRICS["dgx_b200"] = fo.dgx_b200
FABRICS["superpod(1)"] = lambda: fo.superpod(1)


def _offline(fab: fo.Fabric, m: fo.ModelConfig, s: dict[str, Any]) -> tuple[float, Any]:
    """The best plan's steady state without latency targets (MLPerf Offline): its output
    tokens per second and plan."""
    import math

    from fabricopt.workload.serving_capacity import _tune
    from fabricopt.workload.serving_replica import ServingPlan, replica

    best = None
    context = s["prompt_len"] + s["output_len"]
    for tp in (1, 2, 4, 8):
        r = replica(fab, m, ServingPlan(tp=tp, precision=s["precision"]))
        got = _tune(r, s["prompt_len"], s["output_len"], math.inf, math.inf, context)
        if got is not None and (best is None or got[1].rate > best[1].rate):
            best = got
    assert best is not None
    return best[1].rate * s["output_len"], best[0]


@cache
def evaluate_serving(name: str) -> ServingOutcome:
    """fabricopt's figure for the serving run ``name`` (cached: the Server row is a search)."""
    run = next(r for r in SERVING_RUNS if r.name == name)
    fab, m, s = fabric(run.fabric), serving_model(run), run.settings
    if run.metric == "offline_tokens_per_s":
        x, plan = _offline(fab, m, s)
        detail = plan.describe()
    elif run.metric == "server_tokens_per_s":
        _, plan = _offline(fab, m, s)
        c = fo.serving_capacity(fab, m, ttft_s=s["ttft_s"], tpot_s=s["tpot_s"],
                                prompt_len=s["prompt_len"], output_len=s["output_len"],
                                precision=s["precision"], plan=plan, requests=1000)
        x = c.tokens_per_s
        detail = (f"{plan.describe()}; p99 TTFT {c.ttft_p99_s:.3g} s, TPOT "
                  f"{c.tpot_p99_s * 1e3:.3g} ms")
    elif run.metric == "tokens_per_s_per_user":
        e = fo.serving_estimate(fab, m, tp=s["tp"], batch=1, prompt_len=s["prompt_len"],
                                output_len=s["output_len"], precision=s["precision"])
        x = 1 / e.tpot_s
        detail = f"TPOT {e.tpot_s * 1e3:.3g} ms (>= {e.tpot_s_lower * 1e3:.3g})"
    else:  # kv_gbps: bytes of a request's cache x rate, in Gb/s
        kv = m.kv_bytes_per_token(2.0) * s["prompt_len"]
        x = kv * s["rate"] * 8 / 1e9
        detail = f"{kv / 2**30:.3g} GiB per request"
    if s.get("per_gpu"):  # a one-GPU figure against the fabric's, shared over its GPUs
        x /= len(fab.gpus)
        detail += f"; per GPU of {len(fab.gpus)}"
    return ServingOutcome(x, x / run.published, detail)
