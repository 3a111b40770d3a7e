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
    # Every image decoded: the bars and one diagram per design (the Pareto charts are inline
    # SVG, checked in test_verdict_and_fronts_read_in_a_real_browser).
    assert len(result["images"]) == 1 + 3
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


#: Reads what a reader sees first: the verdict's sentences, each chart's width against the
#: page's, and the box of every label the charts carry (``gid`` fabricopt-label-<text>).
READ_CHARTS = """<script>
window.addEventListener('load', function () {
  var out = {errors: window.__errors};
  out.firstHeading = document.querySelector('h2').textContent;
  out.verdict = Array.prototype.map.call(document.querySelectorAll('#verdict p'),
                                         function (p) { return p.textContent; });
  var main = document.body.getBoundingClientRect();
  var style = getComputedStyle(document.body);
  out.content = main.width - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  out.charts = Array.prototype.map.call(document.querySelectorAll('figure.chart'),
    function (f) {
      var svg = f.querySelector('svg'), box = svg.getBoundingClientRect();
      var labels = Array.prototype.map.call(
        svg.querySelectorAll('[id^="fabricopt-label-"]'), function (g) {
          var b = g.getBoundingClientRect();
          return [g.id.slice(16), b.left, b.top, b.right, b.bottom]; });
      return {heading: f.previousElementSibling.textContent, width: box.width,
              labels: labels};
    });
  var pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def _probe(browser, page, tmp_path, script):
    import html

    probed = tmp_path / "probed.html"
    probed.write_text(page.read_text().replace("<head>", "<head>" + CATCH, 1)
                      .replace("</body>", script + "</body>", 1))
    dump = _run(browser, "--window-size=1600,1200", "--virtual-time-budget=10000",
                "--dump-dom", probed.as_uri())
    found = re.search(r'<pre id="probe">(.*?)</pre>', dump.stdout, re.S)
    assert found, f"the probe did not run: {dump.stderr[-2000:]}"
    return json.loads(html.unescape(found.group(1)))


def _overlapping(labels):
    """Pairs of label boxes (left, top, right, bottom in CSS pixels) that share any area."""
    return [(a[0], b[0]) for i, a in enumerate(labels) for b in labels[i + 1:]
            if a[1] < b[3] and b[1] < a[3] and a[2] < b[4] and b[2] < a[4]]


@pytest.mark.slow
def test_verdict_and_fronts_read_in_a_real_browser(tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip("no headless Chromium on this machine (.ci/run installs Debian's "
                    "chromium): the report was not opened in a browser")
    from fabricopt.cli import main
    from fabricopt.study.verdict import is_single_system

    out = tmp_path / "out"
    # Clusters from 256 to 1,024 GPUs, four of them (the 1-SU taper sweep) within $1,000 per
    # GPU and 0.01% of each other's bandwidth, so their labels crowd; and single systems
    # (a DGX H100, UALink pods) that carry far more per GPU and must be ranked apart.
    designs = [TOPOLOGIES / f for f in (
        "rail-oversubscription-sweep.toml", "dgx-h100-superpod-rail-only.toml",
        "dgx-h100-superpod-4su.toml", "ethernet-rail-2tier-sn5600.toml", "dgx-h100.toml",
        "ualink-pod-sweep.toml")]
    assert main(["compare", *map(str, designs), "-o", str(out), "--no-diagrams"]) == 0
    rows = json.loads((out / "results.json").read_text())
    result = _probe(browser, out / "index.html", tmp_path, READ_CHARTS)
    assert result["errors"] == []

    # The page opens with the verdict, and it names the cluster the table says is cheapest
    # per delivered Gb/s per GPU (read here from results.json, apart from the verdict's code).
    assert result["firstHeading"] == "Verdict"
    clusters = [r for r in rows if not is_single_system(r)]
    by_cost = sorted(clusters, key=lambda r: r["usd_per_delivered_gbps"])
    best, second = by_cost[0], by_cost[1]
    first = result["verdict"][0]
    assert first.startswith(f"Cheapest cluster per delivered Gb/s: {best['name']}, "
                            f"${best['usd_per_delivered_gbps']:,.2f} per GPU per Gb/s")
    assert f"({best['binding_tier']})" in first
    margin = second["usd_per_delivered_gbps"] / best["usd_per_delivered_gbps"] - 1
    assert result["verdict"][1] == (f"Runner-up: {second['name']} at "
                                    f"${second['usd_per_delivered_gbps']:,.2f} per GPU per "
                                    f"Gb/s, {margin:.0%} dearer.")
    # The single systems are ranked apart: the UALink pods (every link scale-up) and the
    # DGX (switches in its price) are not in the cluster sentences.
    systems = [r["name"] for r in rows if is_single_system(r)]
    assert len(systems) == 5
    # A UALink pod costs less per delivered Gb/s than any cluster (3,200 Gb/s per GPU on a
    # few switches) and would have won a single ranking.
    assert min(r["usd_per_delivered_gbps"] for r in rows if "UALink" in r["name"]) < \
        best["usd_per_delivered_gbps"]
    assert "UALink" not in " ".join(result["verdict"][:2])
    assert any(s.startswith("Among single systems") for s in result["verdict"])

    # The fronts: clusters and single systems on charts of their own, each across the
    # page's full width, each point labelled once, no two labels overlapping, every label
    # tall enough to read (7 pt text drawn on a 13-inch chart shown 1,500 px wide).
    charts = {c["heading"].split(":")[0]: c for c in result["charts"]}
    assert set(charts) == {"Clusters", "Single systems"}
    assert len([c for c in result["charts"] if c["heading"].startswith("Clusters")]) == 2
    for chart in result["charts"]:
        assert chart["width"] >= 0.98 * result["content"], chart["heading"]
        assert _overlapping(chart["labels"]) == [], chart["heading"]
        assert all(b - t >= 8 for _, _, t, _, b in chart["labels"]), chart["heading"]
    # 7 clusters and 5 single systems: the same number of labels on each chart.
    assert len(charts["Clusters"]["labels"]) == len(clusters) == 7
    assert len(charts["Single systems"]["labels"]) == 5
