"""The report as a reader sees it: ``index.html`` opened in headless Chromium.

The page is built by ``fabricopt compare -o``, then opened without any server (a ``file:``
address, as a colleague opens a mailed page). A probe script, added to a copy of the page,
records script errors, checks that every image decoded, clicks a heading of the table and
writes what it found into the page, which ``--dump-dom`` prints. A screenshot is taken of the
page itself. Where no Chromium is installed the test is skipped, saying so (``.ci/run``
installs Debian's ``chromium``).
"""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

#: Installed first in <head>, so an error of the page's own script is caught too.
CATCH = "<script>window.__errors=[];window.addEventListener('error',function(e){" \
        "window.__errors.push(String(e.message));});</script>"
#: Run after the page's script: images, a click on the GPUs heading (twice), the result.
PROBE = """<script>
window.addEventListener('load', function () {
  var out = {errors: window.__errors};
  out.images = Array.prototype.map.call(document.images, function (i) {
    return [i.alt, i.complete && i.naturalWidth > 0, i.naturalWidth]; });
  var table = document.querySelector('table.sortable');
  var heads = Array.prototype.map.call(table.tHead.rows[0].cells,
                                       function (c) { return c.textContent; });
  var col = heads.indexOf('GPUs');
  var names = function () { return Array.prototype.map.call(table.tBodies[0].rows,
    function (r) { return r.cells[1].textContent; }); };
  out.before = names();
  table.tHead.rows[0].cells[col].click();
  out.ascending = names();
  table.tHead.rows[0].cells[col].click();
  out.descending = names();
  var pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def _browser() -> str | None:
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


def _run(browser: str, *args: str) -> subprocess.CompletedProcess:
    # --no-sandbox: CI runs as root in a container, where Chromium's sandbox cannot start.
    return subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                           "--enable-logging=stderr", "--v=0", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_report_opens_in_a_real_browser(tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip("no headless Chromium on this machine (.ci/run installs Debian's "
                    "chromium): the report was not opened in a browser")
    from fabricopt.cli import main

    out = tmp_path / "out"
    # Three quick designs of different kinds: a ring, a fat tree and one DGX H100 (no
    # network: drawn apart in the plots, a note under the table).
    assert main(["compare", "ring", "n=6", "fat_tree", "k=4",
                 str(TOPOLOGIES / "dgx-h100.toml"), "-o", str(out)]) == 0
    page = out / "index.html"
    text = page.read_text()
    probed = tmp_path / "probed.html"
    probed.write_text(text.replace("<head>", "<head>" + CATCH, 1)
                      .replace("</body>", PROBE + "</body>", 1))

    dump = _run(browser, "--virtual-time-budget=10000", "--dump-dom", probed.as_uri())
    found = re.search(r'<pre id="probe">(.*?)</pre>', dump.stdout, re.S)
    assert found, f"the probe did not run: {dump.stderr[-2000:]}"
    import html

    result = json.loads(html.unescape(found.group(1)))
    assert result["errors"] == []
    console = [ln for ln in dump.stderr.splitlines()
               if "CONSOLE" in ln and ("Uncaught" in ln or "rror" in ln)]
    assert console == []
    # Every image decoded: two Pareto plots, the bars and one diagram per design.
    assert len(result["images"]) == 3 + 3
    assert all(ok and width > 100 for _, ok, width in result["images"]), result["images"]
    # Sorting by GPUs (8, 6, 16 GPUs as given): ascending ring, DGX, fat tree; then reversed.
    assert result["before"] == ["ring(6)", "fat_tree(k=4)", "DGX H100 \u2020"]
    assert result["ascending"] == ["ring(6)", "DGX H100 \u2020", "fat_tree(k=4)"]
    assert result["descending"] == result["ascending"][::-1]

    shot = tmp_path / "report.png"
    _run(browser, "--window-size=1400,2200", "--hide-scrollbars", f"--screenshot={shot}",
         page.as_uri())
    from matplotlib.image import imread

    pixels = imread(shot)
    assert pixels.shape[:2] == (2200, 1400)
    # Not a blank page: many distinct colours (text, plots, diagrams).
    assert len({tuple(p) for p in pixels[::20, ::20].reshape(-1, pixels.shape[2])}) > 50
