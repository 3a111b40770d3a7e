"""Run the notebooks against this checkout: their kernels import the package from here, with
a patient kernel client (``notebooks/patient_kernel.py`` says why)."""

import os
import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parent)
os.environ["PYTHONPATH"] = os.pathsep.join(
    [_ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])

sys.path.insert(0, str(Path(_ROOT) / "notebooks"))
import patient_kernel  # noqa: E402

patient_kernel.use_patient_client()
