"""The GPU a job runs on: its catalog figures (HBM, peak rates, compute efficiency).

A fabric does not name its GPU model; its scale-up links do name their NVLink generation, which
picks the GPU (``nvlink4``: H100 SXM, ``nvlink5``: B200) unless the job names one.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._checks import check_choice
from ..catalog import Catalog
from ..errors import InvalidParameterError
from ..fabric import Fabric

#: GPU by NVLink generation of the fabric's scale-up links; H100 SXM when none is named.
GPU_BY_NVLINK = {"nvlink4": "h100_sxm", "nvlink5": "b200"}
DEFAULT_GPU = "h100_sxm"


@dataclass(frozen=True)
class GpuFigures:
    """What a workload needs of a GPU: HBM (GB), HBM bandwidth (TB/s), dense peak
    (TFLOP/s) in the job's precision, the compute efficiency and the catalog key."""

    key: str
    hbm_gb: float
    hbm_tbps: float
    peak_tflops: float
    compute_efficiency: float
    tdp_w: float


def gpu_figures(fab: Fabric | None, gpu: str | None, precision: str,
                catalog: Catalog | None = None, func: str = "gpu_figures") -> GpuFigures:
    """The figures of ``gpu`` (a catalog key), or of the GPU the fabric's NVLink implies.

    >>> g = gpu_figures(None, "h100_sxm", "bf16")
    >>> g.hbm_gb, g.peak_tflops
    (80.0, 989.0)
    """
    catalog = catalog or Catalog.default()
    if gpu is None:
        gpu = DEFAULT_GPU
        if fab is not None:
            techs = {str(d.get("tech", "")).lower() for _, _, d in fab.graph.edges(data=True)}
            for prefix, key in GPU_BY_NVLINK.items():
                if any(t.startswith(prefix) for t in techs):
                    gpu = key
    check_choice(func, "gpu", gpu, tuple(catalog.gpus))
    values = catalog.gpus[gpu].values
    rate = f"{precision}_tflops"
    missing = [k for k in ("hbm_gb", "hbm_tbps", rate, "compute_efficiency") if k not in values]
    if missing:
        raise InvalidParameterError(f"{func}(): the catalog's GPU {gpu!r} lacks "
                                    f"{', '.join(missing)}; add them to its [gpu.{gpu}] table")
    return GpuFigures(gpu, float(values["hbm_gb"]), float(values["hbm_tbps"]),
                      float(values[rate]), float(values["compute_efficiency"]),
                      float(values.get("tdp_w", 0.0)))


__all__ = ["DEFAULT_GPU", "GPU_BY_NVLINK", "GpuFigures", "gpu_figures"]
