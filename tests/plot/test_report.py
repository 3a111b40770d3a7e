"""The report's page as written (no browser): the verdict first, and a training section when
the table ran a job."""

import concurrent.futures as cf
from concurrent.futures.process import BrokenProcessPool
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


def test_diagrams_drawn_once_keep_every_text_inside_the_picture(tmp_path):
    """The report places a diagram's frame itself (report._fit) and saves without a tight
    crop: every text must still be inside the picture, with the margin kept clear."""
    import matplotlib.image
    import numpy as np

    from fabricopt.plot.diagram import draw
    from fabricopt.plot.report import _fit, _png

    for fab in (fo.dgx_h100(), fo.superpod(2), fo.fat_tree(4)):
        ax = draw(fab)
        fig = ax.figure
        _png(fig, tmp_path / "d.png", dpi=90)
        assert fig.get_layout_engine() is None  # laid out once, not again at each save
        pixels = matplotlib.image.imread(tmp_path / "d.png")[..., :3]
        # The picture is the figure (no crop), and its outer 2 px (of the 3-point margin,
        # 3.75 px at 90 dpi) are white: no title, legend or row label runs off an edge.
        width, height = fig.get_size_inches() * 90
        assert pixels.shape[:2] == (round(height), round(width))
        edge = np.concatenate([pixels[:2].reshape(-1, 3), pixels[-2:].reshape(-1, 3),
                               pixels[:, :2].reshape(-1, 3), pixels[:, -2:].reshape(-1, 3)])
        assert edge.min() > 0.98, fab.name
        # Every text's box lies inside the figure, with the legend below the frame and the
        # title above it.
        renderer = fig.canvas.get_renderer()
        figure_box = fig.bbox
        for text in [ax.title, *ax.texts]:
            box = text.get_window_extent(renderer)
            assert figure_box.x0 <= box.x0 and box.x1 <= figure_box.x1, text.get_text()
            assert figure_box.y0 <= box.y0 and box.y1 <= figure_box.y1, text.get_text()
        frame, legend = ax.get_window_extent(renderer), ax.get_legend().get_window_extent(renderer)
        assert legend.y1 <= frame.y0 + 1 and legend.y0 >= figure_box.y0
        # Placing it again moves nothing: the fit has settled.
        before = ax.get_position().bounds
        _fit(ax, renderer)
        assert ax.get_position().bounds == pytest.approx(before, abs=1e-3)


class _LostWorkers(cf.Executor):
    """Every task sent fails as if its worker had died."""

    def __init__(self):
        self.sent = 0

    def submit(self, fn, /, *args, **kwargs):
        self.sent += 1
        future = cf.Future()
        future.set_exception(BrokenProcessPool("a worker died"))
        return future


def test_charts_and_bars_lost_on_a_pool_are_drawn_here(tmp_path):
    """write_report(executor=...) sends the charts and the bars to the pool; where a worker
    is lost they are drawn here, and the page is the one drawn without a pool."""
    table = fo.compare([fo.ring(4), fo.ring(6)], metrics=["summary", "all_to_all", "cost"])
    lost = _LostWorkers()
    page = write_report(table, tmp_path / "pool", diagrams=False, executor=lost).read_text()
    assert lost.sent == 2  # the charts, the bars
    here = write_report(table, tmp_path / "here", diagrams=False).read_text()
    assert page.count("<svg") == here.count("<svg") > 0
    assert (tmp_path / "pool" / "bars.png").read_bytes() == (tmp_path / "here" /
                                                             "bars.png").read_bytes()
    with pytest.raises(fo.InvalidParameterError, match="executor"):
        write_report(table, tmp_path / "bad", executor=2)
    assert not (tmp_path / "bad").exists()  # refused before any file


def test_a_diagrams_text_boxes_laid_out_once_are_matplotlibs_own_as_the_frame_moves():
    """_fit lays each text out once and moves its box with its anchor: the numbers are
    Text.get_window_extent's, bit for bit, wherever the frame goes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from fabricopt.plot.diagram import draw
    from fabricopt.plot.report import _TextBoxes

    ax = draw(fo.superpod(1))
    renderer = FigureCanvasAgg(ax.figure).get_renderer()
    texts = [t for t in (ax.title, *ax.texts) if t.get_visible() and t.get_text()]
    assert len(texts) > 10  # title, row labels, counts
    boxes = _TextBoxes(texts, renderer)
    for frame in (None, (0.1, 0.2, 0.7, 0.6), (0.02, 0.05, 0.95, 0.9)):
        if frame is not None:
            ax.set_position(frame)
        theirs = [tuple(t.get_window_extent(renderer).get_points().ravel()) for t in texts]
        assert boxes.extents() == theirs



class _Renamed:
    """A text as a matplotlib release without ``Text._get_layout`` (or with a new signature
    for it, ``error=TypeError``) shows it: everything else is the text's own."""

    def __init__(self, text, error):
        self._text, self._error = text, error

    def __getattr__(self, name):
        if name == "_get_layout":
            def gone(*args, **kwargs):
                raise self._error(name)
            if self._error is AttributeError:
                raise AttributeError(name)
            return gone
        return getattr(self._text, name)


@pytest.mark.parametrize("error", [AttributeError, TypeError])
def test_without_matplotlibs_private_layout_the_boxes_come_from_the_public_extent(error):
    """With no usable Text._get_layout the boxes come from get_window_extent, the same to
    rounding (the extent less its anchor, then the anchor added back: a few ulps); with it,
    bit for bit (the test above), so today's PNGs are unchanged."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from fabricopt.plot.diagram import draw
    from fabricopt.plot.report import _TextBoxes

    ax = draw(fo.superpod(1))
    renderer = FigureCanvasAgg(ax.figure).get_renderer()
    texts = [t for t in (ax.title, *ax.texts) if t.get_visible() and t.get_text()]
    private = _TextBoxes(texts, renderer).extents()
    public = _TextBoxes([_Renamed(t, error) for t in texts], renderer).extents()
    theirs = [tuple(t.get_window_extent(renderer).get_points().ravel()) for t in texts]
    import numpy as np

    np.testing.assert_allclose(np.array(public), np.array(private), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(np.array(public), np.array(theirs), rtol=1e-12, atol=1e-9)
    # And the boxes are real ones: text has width and height.
    assert all(x1 > x0 and y1 > y0 for x0, y0, x1, y1 in public)
