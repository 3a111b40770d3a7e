"""``import fabricopt`` and ``fabricopt --help`` load no heavy package they do not use.

Every command and every fresh process pays the package's import. scipy.optimize (with the
scipy.fft, scipy.special and scipy.spatial it pulls in) was about a tenth of a second of it,
matplotlib more; both, and the optional solvers and batch back ends, are imported inside the
functions that use them. A module-level import of one of them brings it back into every
process, and this test fails.
"""

import json
import subprocess
import sys

#: Loaded only by the functions that use them: the LP solve of a reroute or a profile
#: (scipy.optimize), charts and reports (matplotlib), the optional back ends.
DEFERRED = ("matplotlib", "scipy.optimize", "scipy.fft", "pulp", "dask", "distributed",
            "pandas", "highspy")

#: What the child process runs: the import, the names the package face promises (a plot
#: function exists before matplotlib is loaded), ``--help``; then the same check after a
#: deliberate import of scipy.optimize, so the check is seen to catch a loaded module.
CHILD = f"""
import contextlib, io, json, sys
import fabricopt as fo
from fabricopt.cli import main
assert callable(fo.plot_pareto) and callable(fo.max_concurrent_flow)
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(["--help"])
    except SystemExit:
        pass
loaded = lambda: sorted(m for m in {DEFERRED!r} if m in sys.modules)
before = loaded()
import scipy.optimize
print(json.dumps([before, loaded()]))
"""


def test_heavy_packages_stay_out_of_import_and_help():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                         check=True, timeout=120)
    at_import, after_optimize = json.loads(out.stdout.strip().splitlines()[-1])
    assert at_import == [], f"imported at `import fabricopt` / `--help`: {at_import}"
    # The check sees a module once it is loaded (scipy.optimize brings scipy.fft with it).
    assert "scipy.optimize" in after_optimize
