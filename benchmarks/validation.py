"""Published training runs against fabricopt: the table of ``docs/validation.md``.

    python benchmarks/validation.py               # the table, from the shipped catalog
    python benchmarks/validation.py --calibrate   # also the efficiencies the calibration
                                                  # rows imply (the catalog's are these)
    python benchmarks/validation.py --write docs/validation.md   # refresh the doc's tables

Calibration: each GPU efficiency of the catalog is scaled until the geometric mean of its
calibration rows' ratios (fabricopt's time over the published one) is 1, a few rounds since
they interact; every other row is a check the fit never saw.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "workload"))

from published_runs import (  # noqa: E402
    CALIBRATES,
    RAIL_ONLY,
    RELIABILITY,
    RUNS,
    SERVING_RUNS,
    evaluate,
    evaluate_serving,
    rail_only,
    reliability,
    role,
    serving_role,
)

import fabricopt as fo  # noqa: E402

BEGIN, END = "<!-- runs: benchmarks/validation.py -->", "<!-- /runs -->"
RELIABILITY_BEGIN = "<!-- reliability: benchmarks/validation.py -->"
RELIABILITY_END = "<!-- /reliability -->"
SERVING_BEGIN, SERVING_END = "<!-- serving: benchmarks/validation.py -->", "<!-- /serving -->"
#: How each serving metric is shown.
SERVING_UNITS = {"offline_tokens_per_s": "tokens/s", "server_tokens_per_s": "tokens/s",
                 "tokens_per_s_per_user": "tokens/s per user", "kv_gbps": "Gb/s"}

def calibrate(rounds: int = 4) -> dict[tuple[str, str], float]:
    """The efficiencies at which each calibration set's geometric-mean ratio is 1."""
    base = fo.Catalog.default()
    values = {k: float(base.gpus[k[0]].values[k[1]]) for k in CALIBRATES}
    by_name = {r.name: r for r in RUNS}
    for _ in range(rounds):
        cat = _catalog(values)
        for key, names in CALIBRATES.items():
            logs = [math.log(evaluate(by_name[n], cat).ratio) for n in names]
            values[key] *= math.exp(sum(logs) / len(logs))
    return values


def _catalog(values: dict[tuple[str, str], float]) -> fo.Catalog:
    data: dict = {"gpu": {}}
    for (gpu, name), x in values.items():
        entry = data["gpu"].setdefault(gpu, {"source": "calibrated on published runs",
                                             "confidence": "estimate"})
        entry[name] = round(x, 4)
    return fo.Catalog.default().merged(data, origin="calibration")


def table(catalog: fo.Catalog | None = None) -> str:
    lines = ["| run | fabric | published | fabricopt | ratio | lower bound / published step "
             "| role |", "|---|---|---|---|---|---|---|"]
    for r in RUNS:
        o = evaluate(r, catalog)
        unit = {"mfu": "MFU", "step_s": "s per step",
                "hardware_tflops": "TFLOP/s per GPU"}[r.metric]
        lines.append(f"| {r.name} | `{r.fabric}` | {figure(r.metric, r.published)} {unit} | "
                     f"{figure(r.metric, o.figure)} | {o.ratio:.3f} | {o.step_s_lower:.3g} / "
                     f"{o.published_step_s:.3g} s | {role(r)} |")
    return "\n".join(lines)


def figure(metric: str, x: float) -> str:
    """A row's figure as the doc prints it (and the test reads it back)."""
    return f"{x:.1%}" if metric == "mfu" else f"{x:.3g}"


def rail_table() -> str:
    r = rail_only()
    lo, hi = RAIL_ONLY["cost_saving"]
    plo, phi = RAIL_ONLY["power_saving"]
    return "\n".join([
        "| figure | published | fabricopt |", "|---|---|---|",
        f"| step time, rail-only / full bisection | same | {r['step_ratio']:.3f} "
        f"({r['step_s']:.3g} s) |",
        f"| network capex saved | {lo:.0%}-{hi:.0%} | {r['cost_saving']:.0%} |",
        f"| network power saved | {plo:.0%}-{phi:.0%} | {r['power_saving']:.0%} |"])


def reliability_figure(key: str, x: float) -> str:
    """A reliability figure as the doc prints it (and the test reads it back)."""
    return f"{x:.1%}" if key in ("ettr", "network_share") else f"{x:.3g}"


def reliability_table() -> str:
    """The reliability rows: published, the spread the source allows, fabricopt's figure."""
    got = reliability()
    lines = ["| figure | source | published | allowed | fabricopt | assumed |",
             "|---|---|---|---|---|---|"]
    for r in RELIABILITY:
        lines.append(f"| {r.name} | {r.source} | {r.published} | "
                     f"{reliability_figure(r.key, r.low)} to {reliability_figure(r.key, r.high)}"
                     f" | {reliability_figure(r.key, got[r.key])} | {r.assumed} |")
    return "\n".join(lines)


def serving_figure(x: float) -> str:
    """A serving figure as the doc prints it (and the test reads it back)."""
    return f"{x:,.0f}" if x >= 1000 else f"{x:.4g}"


def serving_table() -> str:
    """The serving rows: published figure, fabricopt's, the ratio and what it ran."""
    lines = ["| run | fabric | published | fabricopt | ratio | what fabricopt ran | assumed "
             "| role |", "|---|---|---|---|---|---|---|---|"]
    for r in SERVING_RUNS:
        o = evaluate_serving(r.name)
        unit = SERVING_UNITS[r.metric] + (" per GPU" if r.settings.get("per_gpu") else "")
        lines.append(f"| {r.name} | `{r.fabric}` | {serving_figure(r.published)} {unit} | "
                     f"{serving_figure(o.figure)} | {o.ratio:.3f} | {o.detail} | {r.assumed} "
                     f"| {serving_role(r)} |")
    return "\n".join(lines)


def write(path: Path, catalog: fo.Catalog | None = None) -> None:
    """Replace the tables between the markers of ``path``."""
    text = path.read_text()
    a, b = text.index(BEGIN) + len(BEGIN), text.index(END)
    body = "\n\n" + table(catalog) + "\n\n" + rail_table() + "\n\n"
    text = text[:a] + body + text[b:]
    if RELIABILITY_BEGIN in text:
        a = text.index(RELIABILITY_BEGIN) + len(RELIABILITY_BEGIN)
        b = text.index(RELIABILITY_END)
        text = text[:a] + "\n\n" + reliability_table() + "\n\n" + text[b:]
    if SERVING_BEGIN in text:
        a, b = text.index(SERVING_BEGIN) + len(SERVING_BEGIN), text.index(SERVING_END)
        text = text[:a] + "\n\n" + serving_table() + "\n\n" + text[b:]
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calibrate", action="store_true")
    ap.add_argument("--write", type=Path, help="refresh the tables of this markdown file")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    catalog = None
    if args.calibrate:
        values = calibrate()
        for (gpu, name), x in values.items():
            print(f"[gpu.{gpu}] {name} = {x:.4f}")
        catalog = _catalog(values)
    if args.write:
        write(args.write, catalog)
        print(f"wrote {args.write}")
    else:
        print(table(catalog))
        print()
        print(rail_table())
        print()
        print(reliability_table())
        print()
        print(serving_table())
    print(f"\n{len(RUNS)} runs in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
