"""Pictures: each drawing is rendered to a PNG and checked for what it drew."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.image  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import fabricopt as fo  # noqa: E402
from fabricopt.cli import main  # noqa: E402
from fabricopt.plot import draw, plot_metric_bars, plot_pareto  # noqa: E402
from fabricopt.study import pareto_front  # noqa: E402


def drawn_nodes(ax):
    """Markers per role, from the node collections draw() tags with a gid."""
    return {c.get_gid().removeprefix("fabricopt-nodes-"): len(c.get_offsets())
            for c in ax.collections if (c.get_gid() or "").startswith("fabricopt-nodes")}


def drawn_lines(ax):
    (lines,) = [c for c in ax.collections if c.get_gid() == "fabricopt-links"]
    return lines.get_segments()


def texts(ax):
    return [t.get_text() for t in ax.texts]


def assert_png_not_blank(ax, path):
    ax.figure.savefig(path, dpi=60)
    image = matplotlib.image.imread(path)[..., :3]
    # White is 1.0 in every channel: a drawing colours a visible share of the pixels.
    coloured = np.mean(np.any(image < 0.9, axis=-1))
    assert coloured > 0.01, f"{path.name}: only {coloured:.2%} of the pixels drawn"


def test_dgx_h100_every_device_and_bundle(tmp_path):
    ax = draw(fo.dgx_h100())
    # 8 GPUs and 4 NVSwitches, each drawn once.
    assert drawn_nodes(ax) == {"gpu": 8, "switch": 4}
    # Every GPU reaches every NVSwitch: 8 x 4 = 32 bundles, each one line for both arcs.
    assert len(drawn_lines(ax)) == 32
    # A GPU's 18 NVLinks split 5, 4, 4, 5 over the 4 switches (DGX H100 wiring), so the
    # bundle counts differ and are written on the lines: 8 GPUs x two of each.
    labels = texts(ax)
    assert labels.count("x5") == 16 and labels.count("x4") == 16
    assert "gpu0" in labels and "nvsw3" in labels
    assert_png_not_blank(ax, tmp_path / "dgx.png")


def test_fat_tree_full_drawing_rows_and_order(tmp_path):
    fab = fo.fat_tree(4)
    ax = draw(fab)
    # fat_tree(4): k^3/4 = 16 GPUs; k^2/2 = 8 leaves, 8 aggregation, (k/2)^2 = 4 cores.
    assert drawn_nodes(ax) == {"gpu": 16, "switch": 20}
    # 3 tiers of k^3/4 = 16 links each: 48 lines, not 96 arcs.
    segments = drawn_lines(ax)
    assert len(segments) == 48
    # Rows: GPUs at y 0, then the layers 1, 2, 3 upward; every line joins adjacent rows.
    assert sorted({round(abs(s[0][1] - s[-1][1])) for s in segments}) == [1]
    assert "GPU\n16" in texts(ax) and "leaf\n8" in texts(ax) and "core\n4" in texts(ax)
    # The barycentre order keeps a pod's leaves over its GPUs: the gpu-leaf lines of a
    # fat tree then never cross, so each is at most one leaf slot (1/8) wide.
    gpu_leaf = [s for s in segments if min(s[0][1], s[-1][1]) == 0]
    assert max(abs(s[0][0] - s[-1][0]) for s in gpu_leaf) <= 1 / 8
    assert_png_not_blank(ax, tmp_path / "fat_tree.png")


def test_aggregation_starts_above_the_node_budget():
    fab = fo.fat_tree(8)   # 128 GPUs + 80 switches = 208 devices, 384 links
    assert drawn_nodes(draw(fab)) == {"gpu": 128, "switch": 80}
    ax = draw(fab, max_nodes=100)
    # Above 100 the pods group: 8 pods x (GPUs, leaves, aggregation) = 24 groups; the 16
    # cores carry no pod and stay single (a row of at most 32). 16 + 24 = 40 nodes.
    assert drawn_nodes(ax) == {"gpu": 8, "switch": 32}
    assert "grouped by pod" in ax.get_title()
    # 8 GPU->leaf + 8 leaf->aggregation group lines + 8 pods x 16 cores = 144 lines.
    assert len(drawn_lines(ax)) == 144
    # 16 GPUs per pod (k^2/4): the group counts are written under the groups.
    assert texts(ax).count("16") == 8
    assert drawn_nodes(draw(fab, aggregate=False, max_nodes=100)) == {"gpu": 128,
                                                                      "switch": 80}


def test_superpod_drawn_by_scalable_unit_and_rail(tmp_path):
    ax = draw(fo.superpod(4))
    # Per server (node) it would be 128 GPU groups + 128 NVSwitch groups + 32 leaves + 16
    # spines = 304 > 300, so auto takes su+rail: 4 SU x 8 rails = 32 GPU groups of 32,
    # 4 NVSwitch groups (they carry no rail) of 32 x 4 = 128, the 32 leaves one per
    # (su, rail) and 16 spines alone: 84 nodes.
    assert drawn_nodes(ax) == {"gpu": 32, "switch": 4 + 32 + 16}
    assert "grouped by su and rail" in ax.get_title()
    assert texts(ax).count("32") == 32 and texts(ax).count("128") == 4
    # Each GPU group has one line to its rail leaf and one to its SU's NVSwitches; each
    # leaf one to every spine: 32 + 32 + 32 x 16 = 576.
    assert len(drawn_lines(ax)) == 576
    assert_png_not_blank(ax, tmp_path / "superpod.png")


def test_auto_keeps_rails_and_planes_of_a_dual_plane_cluster():
    # Two planes of rail leaves and no scalable units: by server it is too large, and a
    # grouping by layer would hide both rails and planes; auto draws one GPU group per
    # rail and one leaf group per rail and plane.
    fab = fo.cluster(scale_up="dgx_h100", nodes=48, planes=2)
    ax = draw(fab)
    assert "grouped by rail and plane" in ax.get_title()
    assert drawn_nodes(ax)["gpu"] == 8  # 8 rails
    assert "16 groups" in " ".join(texts(ax))  # leaves: 8 rails x 2 planes


def test_small_rail_clusters_are_drawn_by_rail_not_server_by_server():
    # One SU: 32 DGX H100 on 8 rail leaves and 4 spines. By server it fits the node budget
    # (32 GPU groups + 32 NVSwitch groups + 12 switches = 76 nodes) but every server's GPU
    # group reaches all 8 rail leaves: 32 x 8 + 32 + 8 x 4 = 320 crossing lines. By rail:
    # 8 GPU groups of 32, one leaf each (8 lines), one NVSwitch group (8 lines), and each
    # leaf to every spine (32 lines): 48 lines, none crossing the rails.
    fab = fo.superpod(1)
    ax = draw(fab)
    assert "grouped by rail" in ax.get_title()
    assert drawn_nodes(ax)["gpu"] == 8
    assert len(drawn_lines(ax)) == 8 + 8 + 32
    # Forced, or with few lines, the server-by-server drawing is still there.
    assert drawn_nodes(draw(fab, aggregate="node"))["gpu"] == 32
    assert drawn_nodes(draw(fo.dgx_h100()))["gpu"] == 8  # 32 lines: drawn by device


def test_forced_levels_and_their_errors():
    fab = fo.superpod(2)
    # su: 2 GPU groups, 2 NVSwitch groups, 2 leaf groups; the 8 spines (no su) alone.
    assert drawn_nodes(draw(fab, aggregate="su")) == {"gpu": 2, "switch": 2 + 2 + 8}
    # The same as a tuple and as "a+b".
    assert drawn_nodes(draw(fab, aggregate=("su", "rail"))) == drawn_nodes(
        draw(fab, aggregate="su+rail"))
    # layer: one group per row (GPUs; NVSwitches; leaves; spines).
    assert drawn_nodes(draw(fab, aggregate="layer")) == {"gpu": 1, "switch": 3}
    with pytest.raises(fo.InvalidParameterError, match=r"draw\(\): aggregate .*'bogus'"):
        draw(fab, aggregate="bogus")
    with pytest.raises(fo.InvalidParameterError, match="aggregate"):
        draw(fab, aggregate=3)


def test_utilization_colours_and_colour_bar(tmp_path):
    fab = fo.fat_tree(4)
    result = fo.max_concurrent_flow(fab)
    ax = draw(fab, result=result)
    # The colour bar is a second Axes of the figure.
    assert len(ax.figure.axes) == 2
    assert "utilization" in ax.figure.axes[1].get_ylabel()
    # All-to-all on a full-bisection fat tree fills the GPU links: the core carries what
    # the GPU links do, so theta = 1/(N - 1) and each GPU sends N - 1 demands of theta
    # times its link rate, 100% of the link.
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.startswith("gpu-leaf") and "max 100% used" in t for t in legend)
    # Line colours follow the utilization map, not one colour per tier.
    (lines,) = [c for c in ax.collections if c.get_gid() == "fabricopt-links"]
    colours = {tuple(np.round(c[:3], 6)) for c in lines.get_colors()}
    full = tuple(np.round(matplotlib.colormaps["plasma_r"](1.0)[:3], 6))
    assert full in colours and len(colours) > 1
    assert_png_not_blank(ax, tmp_path / "util.png")
    # A result of another fabric is refused.
    with pytest.raises(fo.InvalidParameterError, match="result"):
        draw(fo.fat_tree(6), result=result)


def test_direct_network_links_are_arcs_over_the_row():
    ax = draw(fo.ring(6))
    segments = drawn_lines(ax)
    # 6 ring links, each an arc of many points rising above the one row at y = 0.
    assert len(segments) == 6
    assert all(len(s) > 2 and max(p[1] for p in s) > 0 for s in segments)


def test_media_in_the_legend_and_bad_arguments():
    fab = fo.dgx_h100()
    ax = draw(fab, cost=fo.estimate_cost(fab), title="box", legend=True)
    legend = " ".join(t.get_text() for t in ax.get_legend().get_texts())
    assert "nvlink4_copper" in legend and ax.get_title() == "box"
    assert draw(fab, legend=False).get_legend() is None
    with pytest.raises(fo.InvalidParameterError, match=r"draw\(\): fab must be a Fabric"):
        draw("dgx_h100")
    with pytest.raises(fo.InvalidParameterError, match="legend"):
        draw(fab, legend="yes")
    with pytest.raises(fo.InvalidParameterError, match="max_nodes"):
        draw(fab, max_nodes=0)


def test_draw_into_a_given_axes():
    from matplotlib.figure import Figure

    fig = Figure()
    ax = fig.add_subplot()
    assert draw(fo.ring(4), ax) is ax


# -- comparison plots ------------------------------------------------------------------------

# Cost (x, lower is better) and bandwidth (y, higher is better) of six designs.
ROWS = [
    {"name": "a", "capex_usd": 1.0, "all_to_all_gbps_per_gpu": 100.0},
    {"name": "b", "capex_usd": 2.0, "all_to_all_gbps_per_gpu": 300.0},
    {"name": "c", "capex_usd": 3.0, "all_to_all_gbps_per_gpu": 200.0},
    {"name": "d", "capex_usd": 4.0, "all_to_all_gbps_per_gpu": 400.0},
    {"name": "e", "capex_usd": 2.0, "all_to_all_gbps_per_gpu": None},
    {"name": "f", "capex_usd": float("nan"), "all_to_all_gbps_per_gpu": 900.0},
]


def test_pareto_front_by_hand():
    # a is the cheapest; b costs more and delivers more; c costs more than b and delivers
    # less (dominated by b); d delivers the most. e and f lack a value and are left out.
    assert pareto_front(ROWS, "capex_usd", "all_to_all_gbps_per_gpu") == [0, 1, 3]
    # Maximising both: d (4, 400) beats every other point on both axes.
    assert pareto_front(ROWS, "capex_usd", "all_to_all_gbps_per_gpu",
                        minimize_x=False) == [3]
    # Equal points are all kept; a point equal in y but dearer is not.
    same = [{"x": 1, "y": 5}, {"x": 1, "y": 5}, {"x": 2, "y": 5}]
    assert pareto_front(same, "x", "y") == [0, 1]
    with pytest.raises(fo.InvalidParameterError, match=r"pareto_front\(\): x must be a column"):
        pareto_front(ROWS, "price", "all_to_all_gbps_per_gpu")


def test_plot_pareto_marks_front_and_skipped(tmp_path):
    ax = plot_pareto(ROWS, "capex_usd")
    # Four designs with both values are drawn and labelled; e and f are named as skipped.
    assert len(ax.collections[0].get_offsets()) == 4
    assert {"a", "b", "c", "d"} <= set(texts(ax))
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("not drawn" in t and "e, f" in t for t in legend)
    # The front a -> b -> d as a step line (where="post" draws each level to the next x).
    (step,) = [ln for ln in ax.get_lines() if ln.get_label().startswith("Pareto front")]
    xs, ys = step.get_data()
    assert (xs[0], ys[0]) == (1.0, 100.0) and max(ys) == 400.0
    assert list(xs) == [1.0, 2.0, 4.0]  # it ends at d, the dearest design on the front
    assert ax.get_xlabel() == "Network capex (USD)"
    assert ax.get_ylabel() == "All-to-all bandwidth per GPU, certified (Gb/s)"
    assert_png_not_blank(ax, tmp_path / "pareto.png")


def _label_boxes(ax):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    canvas = FigureCanvasAgg(ax.figure)
    canvas.draw()  # places each annotation's text
    renderer = canvas.get_renderer()
    # The text's own box (an annotation's extent includes its leader line).
    return [Text.get_window_extent(t, renderer) for t in ax.texts]


def test_plot_pareto_keeps_servers_off_the_front_and_labels_apart():
    # Two lone servers (no network, $0 or any capex) would be the whole front; they are drawn
    # apart, and the front is the cheapest clusters: a (1 M, 100), b (2 M, 300).
    rows = [{"name": "server", "capex_usd": 0.0, "all_to_all_gbps_per_gpu": 3600,
             "in_system_only": True},
            {"name": "rack", "capex_usd": 5e5, "all_to_all_gbps_per_gpu": 7200,
             "in_system_only": True},
            {"name": "a", "capex_usd": 1e6, "all_to_all_gbps_per_gpu": 100},
            {"name": "b", "capex_usd": 2e6, "all_to_all_gbps_per_gpu": 300},
            # c equals b's bandwidth up to the last bits of a certified lower end, and costs
            # more: not on the front.
            {"name": "c", "capex_usd": 3e6, "all_to_all_gbps_per_gpu": 300 * (1 + 1e-12)}]
    ax = plot_pareto(rows, "capex_usd")
    (step,) = [ln for ln in ax.get_lines() if ln.get_label().startswith("Pareto front")]
    assert step.get_label() == "Pareto front (2 designs)"
    # The line ends at b: drawn on to c it would put a dearer design of equal bandwidth on it.
    assert list(step.get_data()[0]) == [1e6, 2e6]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("kept off the front" in t for t in legend)
    boxes = _label_boxes(ax)
    assert len(boxes) == 5
    assert not any(p.overlaps(q) for i, p in enumerate(boxes) for q in boxes[i + 1:])


def test_plot_pareto_numbers_many_points_with_a_key():
    # Twelve points at two positions: names would pile up, so the points carry numbers and
    # the legend names each number; the numbers do not overlap.
    rows = [{"name": f"design {i}", "capex_usd": 1e6 * (1 + i % 2),
             "all_to_all_gbps_per_gpu": 100.0 * (1 + i % 2)} for i in range(12)]
    ax = plot_pareto(rows, "capex_usd")
    assert sorted(texts(ax), key=int) == [str(i) for i in range(1, 13)]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "12  design 11" in legend
    boxes = _label_boxes(ax)
    assert not any(p.overlaps(q) for i, p in enumerate(boxes) for q in boxes[i + 1:])


def test_plot_pareto_takes_records_objects_and_pandas():
    class Table:
        def to_records(self):
            return ROWS[:4]

    assert len(plot_pareto(Table(), "capex_usd").collections[0].get_offsets()) == 4
    pd = pytest.importorskip("pandas")
    ax = plot_pareto(pd.DataFrame(ROWS), "capex_usd")
    assert len(ax.collections[0].get_offsets()) == 4
    with pytest.raises(fo.InvalidParameterError, match="rows"):
        plot_pareto({"name": "a"})


def test_metric_bars(tmp_path):
    ax = plot_metric_bars(ROWS, "all_to_all_gbps_per_gpu")
    # One bar per design with a value (e has none: "n/a" instead), in the rows' order.
    widths = [p.get_width() for p in ax.patches]
    assert widths == [100.0, 300.0, 200.0, 400.0, 900.0]
    assert "n/a" in texts(ax)
    assert [t.get_text() for t in ax.get_yticklabels()] == list("abcdef")
    assert not math.isnan(ax.get_xlim()[1])
    assert_png_not_blank(ax, tmp_path / "bars.png")
    with pytest.raises(fo.InvalidParameterError, match="metric"):
        plot_metric_bars(ROWS, "watts")


# -- command line ----------------------------------------------------------------------------

def test_cli_draw_writes_the_picture(tmp_path, capsys):
    out = tmp_path / "fig.png"
    assert main(["draw", "fat_tree", "k=4", "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    image = matplotlib.image.imread(out)[..., :3]
    assert np.mean(np.any(image < 0.9, axis=-1)) > 0.01
    assert main(["draw", "superpod", "scalable_units=1", "-o", str(tmp_path / "s.svg"),
                 "--aggregate", "su+rail", "--utilization", "--media"]) == 0
    assert (tmp_path / "s.svg").read_text().lstrip().startswith("<?xml")
    assert main(["draw", "ring", "n=4", "-o", str(out), "--aggregate", "bogus"]) == 2
    assert "aggregate" in capsys.readouterr().err


def test_levels_ruled_out_by_a_count_are_the_ones_that_would_not_fit():
    """_choose_level skips a level when one of its attributes has more values than the node
    budget (devices with different values are drawn apart): the level and grouping chosen
    are the ones trying every level gives. superpod(16): 16 SUs x 32 servers = 512 > 300,
    so by node is skipped without grouping; by (su, rail) fits and is taken."""
    from fabricopt.plot import diagram as D

    fab = fo.superpod(16)
    reading = D.DiagramReading(fab)
    level, grouping = D._choose_level(reading, "auto", D.AUTO_MAX_NODES)
    varied = {a for a in D.ORDER_ATTRS
              if len({d.get(a) for _, d in fab.graph.nodes(data=True)} - {None}) > 1}
    for every in [None, *[lv for lv in D.AUTO_LEVELS if lv == ("layer",) or set(lv) <= varied]]:
        full = D.group_labels(reading, every)
        if D._fits(reading, full, D.AUTO_MAX_NODES) and not D._tangled(reading, full, every,
                                                                        varied):
            break
    assert level == every == ("su", "rail")
    assert grouping.label.tolist() == full.label.tolist()
    assert grouping.group_attr == full.group_attr
