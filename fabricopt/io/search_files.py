"""Search files: the arguments of :func:`~fabricopt.optimize` in TOML, checked before any
search starts."""

from __future__ import annotations

import os
from typing import Any

from .._checks import did_you_mean
from .._toml import read_toml
from ..errors import DesignFileError

__all__ = ["load_search"]

_SPEC_KEYS = ("name", "description", "gpus", "objective", "space", "constraints", "job",
              "serving")


def load_search(path: str | os.PathLike[str]) -> dict[str, Any]:
    r"""Read a search file: the arguments of :func:`optimize` in TOML.

    Format (every key but ``gpus`` optional; ``[space]`` values are lists)::

        name = "16K GPUs, 200 Gb/s all-to-all"
        gpus = 16384
        objective = "capex_usd"
        [space]
        family = ["superpod", "rail_optimized"]
        oversubscription = [1.0, 2.0, 4.0]
        [constraints]
        all_to_all_gbps_per_gpu = 200
        [job]                       # optional: a training job run on every candidate
        model = "llama3-70b"
        tp = 8
        [serving]                   # optional: a serving workload served on every candidate
        model = "llama3-70b"        #   (keys of optimize's serving=; the latency targets are
        prompt_len = 2048           #   the constraints serving_ttft_s and serving_tpot_s,
        output_len = 256            #   the objective may be serving_usd_per_million_tokens)

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "s.toml")
    >>> with open(path, "w") as f:
    ...     _ = f.write('gpus = 16\n[constraints]\ncapex_usd = 1e6\n')
    >>> load_search(path)["constraints"]
    {'capex_usd': 1000000.0}
    """
    where = os.fspath(path)
    if os.path.isdir(where):
        raise DesignFileError(f"{where}: is a folder, not a search file; optimize reads one "
                              f"search file, such as {os.path.join(where, 'NAME.toml')}")
    data = read_toml(where, DesignFileError, "search file")
    for key in data:
        if key not in _SPEC_KEYS:
            raise DesignFileError(f"{where}: key {key!r} is not allowed"
                                  f"{did_you_mean(key, _SPEC_KEYS)}; allowed keys: "
                                  + ", ".join(_SPEC_KEYS))
    if "gpus" not in data:
        raise DesignFileError(f"{where}: key 'gpus' is missing: the GPU count to design for")
    for key in ("space", "constraints", "job", "serving"):
        if not isinstance(data.get(key, {}), dict):
            raise DesignFileError(f"{where}: key {key!r} must be a table ([{key}])")
    for key, values in data.get("space", {}).items():
        if not isinstance(values, list):
            raise DesignFileError(f"{where}: [space] key {key!r} must be a list of values, "
                                  f"got {values!r}")
    return {"gpus": data["gpus"], "space": data.get("space", {}),
            "constraints": data.get("constraints", {}),
            "objective": data.get("objective", "capex_usd"), "name": data.get("name", where),
            "job": data.get("job"), "serving": data.get("serving")}
