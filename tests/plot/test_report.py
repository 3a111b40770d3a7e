"""The report's page as written (no browser): the verdict first, and a training section when
the table ran a job."""

from pathlib import Path

import pytest

import fabricopt as fo
from fabricopt.plot.report import write_report

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"


@pytest.mark.slow
def test_a_job_gives_the_page_a_training_section_and_a_per_token_verdict(tmp_path):
    job = fo.TrainingJob("llama3-8b", tp=8, global_batch=512, seq_len=4096)
    table = fo.compare([str(TOPOLOGIES / "dgx-h100-superpod-rail-only.toml"), fo.ring(8)],
                       metrics=["summary", "all_to_all", "cost", "training"], job=job)
    page = write_report(table, tmp_path, diagrams=False).read_text()
    cheapest = min(table, key=lambda r: r["training_usd_per_million_tokens"])
    # The verdict opens the page, before the charts, the training section and the table.
    at = [page.index(s) for s in ("id='verdict'", "<svg", "id='training'", "<h2>Every design")]
    assert at == sorted(at)
    assert f"Cheapest per token for the job: {cheapest['name']}" in page
    # The training section: one row per design, the cheapest per token first; its chart.
    section = page[page.index("id='training'"):page.index("<h2>Every design")]
    assert section.count("<tr>") == 1 + 2
    assert section.index(cheapest["name"]) < section.index("ring(8)")
    assert (tmp_path / "training.svg").stat().st_size > 0
    assert "Training: cost per million tokens against tokens per second per GPU" in page


def test_no_job_no_training_section(tmp_path):
    table = fo.compare([fo.ring(4), fo.ring(6)], metrics=["summary", "all_to_all", "cost"])
    page = write_report(table, tmp_path, diagrams=False).read_text()
    assert "id='training'" not in page and not (tmp_path / "training.svg").exists()
    # Rings are clusters (no scale-up link): the verdict names the cheaper per Gb/s.
    best = min(table, key=lambda r: r["usd_per_delivered_gbps"])
    assert f"Cheapest cluster per delivered Gb/s: {best['name']}," in page
