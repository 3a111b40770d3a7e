"""Published serving figures: each within 25 % of fabricopt's, and docs/validation.md showing
what the model computes. The rows, their sources and what was assumed are in
``published_runs.py``."""

import sys
from pathlib import Path

import pytest
from published_runs import SERVING_RUNS, evaluate_serving

DOC = Path(__file__).resolve().parents[2] / "docs" / "validation.md"

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("run", SERVING_RUNS, ids=[r.name for r in SERVING_RUNS])
def test_serving_row_within_a_quarter_of_its_published_figure(run):
    o = evaluate_serving(run.name)
    assert 0.75 <= o.ratio <= 1.25, f"{run.name}: fabricopt {o.figure:.4g} against {run.published}"


def test_server_is_at_most_offline_and_meets_its_targets():
    # The Server scenario adds latency targets to the Offline one: never more throughput.
    offline = evaluate_serving(SERVING_RUNS[0].name).figure
    server = evaluate_serving(SERVING_RUNS[1].name)
    assert server.figure <= offline * (1 + 1e-9)
    assert SERVING_RUNS[1].metric == "server_tokens_per_s"


def test_doc_shows_the_serving_rows():
    sys.path.insert(0, str(DOC.parents[1] / "benchmarks"))
    from validation import serving_figure

    text = DOC.read_text()
    for r in SERVING_RUNS:
        line = next((x for x in text.splitlines() if x.startswith(f"| {r.name} |")), None)
        assert line is not None, f"docs/validation.md lacks the row {r.name!r}"
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[3] == serving_figure(evaluate_serving(r.name).figure), (
            f"docs/validation.md is stale for {r.name!r}: run "
            "python benchmarks/validation.py --write docs/validation.md")
