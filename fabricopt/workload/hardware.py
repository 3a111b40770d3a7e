"""The GPU a job runs on: its catalog figures (HBM, dense peak rates, calibrated efficiencies).

The GPU is picked in this order (``docs/hardware.md#gpus-and-systems``):

1. the job's ``gpu``, a catalog key (``"a100_sxm_80gb"``, ``"h800_sxm"``, ...);
2. the catalog key the fabric's GPU nodes carry in their ``gpu_model`` attribute (the
   generators of real systems set it: ``fo.dgx_a100()``, ``fo.hgx_h800()``, ``fo.dgx_h200()``,
   ``fo.dgx_h100()``, ``fo.dgx_b200()``, ``fo.gb200_nvl72()``, and the clusters built from
   them keep it), which must be one key for all of them;

A job's ``gpu`` that names another GPU than the fabric's ``gpu_model`` is refused (on a
fabric of several models, one of them may be named): a DGX
H100 cluster runs H100s, and a job priced or timed as B200s on it would be neither (the
fabric's servers, power and NVLink are those of its own GPUs). Name the GPU of a fabric whose
GPUs carry no model (a ring, a hand-made scale-up domain), or build the fabric of the GPU
meant (``fo.cluster(fo.dgx_b200(), ...)``).
3. the NVLink generation of the fabric's links (:data:`GPU_BY_NVLINK`);
4. :data:`DEFAULT_GPU`.

Efficiencies are per precision (``bf16_efficiency``, ``fp8_efficiency``, ``fp4_efficiency``:
fractions of that precision's dense peak a large transformer's training compute reaches end
to end) plus ``attention_efficiency`` (of the BF16 peak, on attention's model FLOPs counted as
PaLM counts them). A catalog's older single ``compute_efficiency`` is read as the BF16
efficiency, and for a precision whose own key the entry lacks, as it was before.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from .._checks import check_choice, did_you_mean, short_name
from ..catalog import Catalog, Entry
from ..errors import InvalidParameterError
from ..fabric import Fabric

#: Precision names a job may ask for, each read from the catalog's ``{precision}_tflops``.
PRECISIONS = ("bf16", "fp8", "fp4")

#: GPU by NVLink generation of the fabric's links, when its GPUs name no model.
GPU_BY_NVLINK = {"nvlink3": "a100_sxm_80gb", "nvlink4": "h100_sxm", "nvlink5": "b200"}
DEFAULT_GPU = "h100_sxm"

#: The node attribute that names a GPU's catalog key (``model`` is the switches' attribute).
GPU_MODEL_ATTRIBUTE = "gpu_model"


@dataclass(frozen=True)
class GpuFigures:
    """What a workload needs of a GPU, from its catalog entry.

    ``peak_tflops`` and ``compute_efficiency`` are those of the precision asked
    (``precision``); ``bf16_tflops`` and ``attention_efficiency`` price attention, which runs
    in BF16 whatever the precision of the matrix multiplies. ``precisions`` lists the
    precisions the GPU has a peak for. HBM in GB, its bandwidth in TB/s, rates in dense
    TFLOP/s, power in W.
    """

    key: str
    hbm_gb: float
    hbm_tbps: float
    peak_tflops: float
    compute_efficiency: float
    tdp_w: float
    name: str = ""
    precision: str = "bf16"
    bf16_tflops: float = 0.0
    attention_efficiency: float = 0.0
    precisions: tuple[str, ...] = ()


def _gpu_models(fab: Fabric) -> set[Any]:
    """The ``gpu_model`` keys the fabric's GPUs carry (empty when none carries one)."""
    nodes = fab.graph.nodes
    return {nodes[v].get(GPU_MODEL_ATTRIBUTE) for v in fab.endpoints
            if nodes[v].get("role") == "gpu"} - {None}


def fabric_gpu_model(fab: Fabric, func: str = "gpu_figures") -> str | None:
    """The catalog key the fabric's GPUs carry (``gpu_model``), None when none carries one.

    GPUs of different models raise :class:`~fabricopt.InvalidParameterError`: a job runs on
    one kind of GPU, so the caller must name it.

    >>> import fabricopt as fo
    >>> fabric_gpu_model(fo.dgx_a100()), fabric_gpu_model(fo.ring(4))
    ('a100_sxm_80gb', None)
    """
    nodes = fab.graph.nodes
    counts = Counter(nodes[v].get(GPU_MODEL_ATTRIBUTE) for v in fab.endpoints
                     if nodes[v].get("role") == "gpu")
    counts.pop(None, None)
    if len(counts) > 1:
        shown = ", ".join(f"{n} x {k!r}" for k, n in sorted(counts.items(), key=str))
        raise InvalidParameterError(
            f"{func}(): the fabric's GPUs are of different models ({shown}, in their "
            f"'{GPU_MODEL_ATTRIBUTE}' attribute); a job runs on one: pass gpu= with the one "
            "to use")
    return str(next(iter(counts))) if counts else None


def _by_nvlink(fab: Fabric) -> str | None:
    """The GPU of the newest NVLink generation among the fabric's links, if any."""
    techs = {str(d.get("tech", "")).lower() for _, _, d in fab.graph.edges(data=True)}
    found = None
    for prefix, key in GPU_BY_NVLINK.items():  # oldest first: the newest present wins
        if any(t.startswith(prefix) for t in techs):
            found = key
    return found


def pick_gpu(fab: Fabric | None, gpu: str | None, catalog: Catalog,
             func: str = "gpu_figures") -> str:
    """The catalog key of the GPU a job runs on (see the module docstring for the order).

    >>> import fabricopt as fo
    >>> cat = Catalog.default()
    >>> pick_gpu(fo.hgx_h800(), None, cat), pick_gpu(fo.ring(4), "h200_sxm", cat)
    ('h800_sxm', 'h200_sxm')
    >>> pick_gpu(fo.dgx_h100(), "b200", cat)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    fabricopt.errors.InvalidParameterError: gpu_figures(): gpu must be the GPU the fabric's ...
    """
    keys = tuple(catalog.gpus)
    if gpu is not None:
        gpu = check_choice(func, "gpu", short_name(gpu, keys), keys)  # h200: h200_sxm
        carried = set() if fab is None else _gpu_models(fab)
        if carried and gpu not in carried:
            shown = " or ".join(repr(k) for k in sorted(carried, key=str))
            raise InvalidParameterError(
                f"{func}(): gpu must be the GPU the fabric's nodes carry, {shown} (their "
                f"'{GPU_MODEL_ATTRIBUTE}' attribute), got {gpu!r}: {fab.name} is not built of "
                f"{gpu} GPUs; drop gpu=, or build the fabric of {gpu} (a generator of its "
                "system, or nvswitch_domain(..., gpu_model=...))")
        return gpu
    if fab is not None:
        carried = fabric_gpu_model(fab, func)
        if carried is not None:
            if carried not in catalog.gpus:
                raise InvalidParameterError(
                    f"{func}(): the fabric's GPUs name model {carried!r} "
                    f"('{GPU_MODEL_ATTRIBUTE}'), which the catalog does not hold"
                    f"{did_you_mean(carried, keys)}; GPUs of the catalog: {', '.join(keys)}; "
                    "pass gpu= or add it to the catalog (Catalog.load)")
            return carried
        by_link = _by_nvlink(fab)
        if by_link is not None:
            return check_choice(func, "gpu", by_link, keys)
    return check_choice(func, "gpu", DEFAULT_GPU, keys)


def _efficiency(entry: Entry, precision: str) -> float | None:
    """The entry's efficiency for ``precision``: its own key, else the older single
    ``compute_efficiency`` (which, only in user catalogs, overrides the BF16 one)."""
    values = entry.values
    old = values.get("compute_efficiency")
    if precision == "bf16" and old is not None:
        return float(old)
    own = values.get(f"{precision}_efficiency")
    if own is not None:
        return float(own)
    return None if old is None else float(old)


def gpu_figures(fab: Fabric | None, gpu: str | None, precision: str,
                catalog: Catalog | None = None, func: str = "gpu_figures") -> GpuFigures:
    """The figures of the GPU a job runs on, in the job's precision.

    Parameters
    ----------
    fab : Fabric or None
        The fabric; its GPUs' ``gpu_model``, else its NVLink generation, picks the GPU when
        ``gpu`` is None.
    gpu : str or None
        A catalog GPU key (``"h100_sxm"``, ``"a100_sxm_80gb"``, ...); checked, with a
        suggestion when misspelt, and refused when the fabric's GPUs carry another model.
    precision : str
        ``"bf16"``, ``"fp8"`` or ``"fp4"``; one the GPU lacks a peak for (FP8 on A100) is
        refused, naming the GPU and the precisions it has.
    catalog : Catalog, optional
        Default :meth:`Catalog.default`.
    func : str
        The public function to name in messages.

    Returns
    -------
    GpuFigures

    Raises
    ------
    InvalidParameterError
        An unknown GPU or precision, a precision the GPU lacks, GPUs of different models in
        the fabric, a ``gpu`` other than the one the fabric's GPUs carry, or an entry
        without the figures a job needs.

    Examples
    --------
    >>> g = gpu_figures(None, "h100_sxm", "bf16")
    >>> g.hbm_gb, g.peak_tflops, g.precisions
    (80.0, 989.0, ('bf16', 'fp8'))
    >>> import fabricopt as fo
    >>> gpu_figures(fo.dgx_a100(), None, "bf16").name
    'NVIDIA A100 SXM4 80GB'
    >>> gpu_figures(fo.dgx_a100(), None, "fp8")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    fabricopt.errors.InvalidParameterError: gpu_figures(): the GPU 'a100_sxm_80gb' (NVIDIA ...
    """
    if catalog is not None and not isinstance(catalog, Catalog):
        raise InvalidParameterError(f"{func}(): catalog must be None or a Catalog, got "
                                    f"{catalog!r}")
    catalog = catalog or Catalog.default()
    precision = check_choice(func, "precision", precision, PRECISIONS)
    key = pick_gpu(fab, gpu, catalog, func)
    entry = catalog.gpus[key]
    values = entry.values
    has = tuple(p for p in PRECISIONS if f"{p}_tflops" in values)
    if f"{precision}_tflops" not in values:
        raise InvalidParameterError(
            f"{func}(): the GPU {key!r} ({entry.name}) has no {precision.upper()} peak "
            f"({precision}_tflops); it supports {', '.join(has) or 'none of ' + str(PRECISIONS)}"
            f": choose one of them, or another GPU (gpu=)")
    missing = [k for k in ("hbm_gb", "hbm_tbps", "bf16_tflops") if k not in values]
    eff, bf16_eff = _efficiency(entry, precision), _efficiency(entry, "bf16")
    missing += [f"{p}_efficiency" for p, e in ((precision, eff), ("bf16", bf16_eff))
                if e is None]
    if missing or eff is None or bf16_eff is None:
        raise InvalidParameterError(f"{func}(): the catalog's GPU {key!r} lacks "
                                    f"{', '.join(dict.fromkeys(missing))}; add them to its "
                                    f"[gpu.{key}] table")
    attention = float(values.get("attention_efficiency", bf16_eff))
    return GpuFigures(key, float(values["hbm_gb"]), float(values["hbm_tbps"]),
                      float(values[f"{precision}_tflops"]), eff,
                      float(values.get("tdp_w", 0.0)), name=entry.name, precision=precision,
                      bf16_tflops=float(values["bf16_tflops"]), attention_efficiency=attention,
                      precisions=has)

__all__ = ["DEFAULT_GPU", "GPU_BY_NVLINK", "GPU_MODEL_ATTRIBUTE", "PRECISIONS", "GpuFigures",
           "fabric_gpu_model", "gpu_figures", "pick_gpu"]
