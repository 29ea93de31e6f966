"""The shared figure builders (torrentlab.plots): what each draws, legends
outside the data, PNG and SVG output, and every figure of the experiment
modules drawn from small synthetic tables with no legend over any axes."""

import math
import struct
from pathlib import Path
from types import SimpleNamespace

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from torrentlab import plots
from torrentlab.experiments import bufferbloat_voip, rao2010, rossi2010, testa2012, testa2013

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def close_figures():
    """A test that fails leaves no figure open for the next."""
    yield
    plt.close("all")


def overlaps(a, b) -> bool:
    """Whether two display-space boxes share any area (touching is not overlapping)."""
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def legends_over_axes(fig) -> list[tuple[str, str]]:
    """Every (legend's axes title, covered axes title) where a legend of `fig`
    covers part of the plotting area of any of its visible axes."""
    fig.canvas.draw()
    found = []
    for owner in fig.axes:
        leg = owner.get_legend()
        if leg is None:
            continue
        box = leg.get_window_extent()
        for ax in fig.axes:
            if ax.get_visible() and ax.axison and overlaps(box, ax.get_window_extent()):
                found.append((owner.get_title(), ax.get_title()))
    return found


def png_width(path) -> int:
    """The width in pixels from a PNG's IHDR chunk."""
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC, path
    return struct.unpack(">I", data[16:20])[0]


# ---- legends -----------------------------------------------------------------------

RNG = np.random.default_rng(7)
X = np.arange(10.0)


def _draw_cdf(ax, i):
    plots.cdf(ax, RNG.normal(i, 1, 50), f"curve {i}")


def _draw_ccdf(ax, i):
    plots.ccdf(ax, RNG.exponential(1 + i, 50), f"curve {i}", log_y=True)


def _draw_histogram(ax, i):
    plots.cdf_from_histogram(ax, 2.0 ** np.arange(8), RNG.integers(0, 20, 8) + i, f"curve {i}")


def _draw_timeseries(ax, i):
    plots.timeseries(ax, X, X * i, f"curve {i}")


def _draw_step_timeseries(ax, i):
    plots.timeseries(ax, X, (X * i) % 4, f"curve {i}", step=True)


def _draw_sweep(ax, i):
    mean = X + i
    plots.errorbar_sweep(ax, X, mean, mean - 1, mean + 2, f"curve {i}")


def _draw_bars(ax, i):
    plots.bars(ax, X + 0.25 * i, X + 1, f"curve {i}", lo=X, hi=X + 3, width=0.25)


BUILDERS = {"cdf": _draw_cdf, "ccdf": _draw_ccdf, "cdf_from_histogram": _draw_histogram,
            "timeseries": _draw_timeseries, "step timeseries": _draw_step_timeseries,
            "errorbar_sweep": _draw_sweep, "bars": _draw_bars}


@pytest.mark.parametrize("draw", BUILDERS.values(), ids=BUILDERS.keys())
def test_the_legend_of_every_builder_lies_right_of_its_axes_and_covers_none_of_it(draw):
    fig, ax = plt.subplots(figsize=(6, 4))
    for i in range(6):
        draw(ax, i)
    leg = plots.legend(ax, title="six curves")
    assert leg is not None and len(leg.get_texts()) == 6
    assert legends_over_axes(fig) == []
    box, area = leg.get_window_extent(), ax.get_window_extent()
    assert box.x0 > area.x1, "to the right of the plotting area"
    assert box.y1 == pytest.approx(area.y1, abs=1.0), "its top at the axes' top"


def test_the_overlap_check_finds_a_legend_matplotlib_placed_inside_the_axes():
    fig, ax = plt.subplots(figsize=(6, 4))
    for i in range(3):
        _draw_timeseries(ax, i)
    ax.legend()
    assert legends_over_axes(fig) == [("", "")]


def test_legend_draws_nothing_when_no_curve_has_a_label():
    fig, ax = plt.subplots()
    plots.timeseries(ax, X, X)
    assert plots.legend(ax) is None and ax.get_legend() is None


def test_the_saved_png_is_wider_by_the_legend_so_the_legend_outside_the_axes_is_kept(tmp_path):
    widths, legend_px = {}, None
    for with_legend in (False, True):
        fig, ax = plt.subplots(figsize=(6, 4))
        for i in range(3):
            _draw_timeseries(ax, i)
        if with_legend:
            fig.canvas.draw()
            legend_px = plots.legend(ax, title="a long legend title here").get_window_extent(
                fig.canvas.get_renderer()).width
        png, _ = plots.save(fig, tmp_path / f"legend_{with_legend}")
        widths[with_legend] = png_width(png)
    assert widths[True] >= widths[False] + 0.9 * legend_px, (widths, legend_px)


# ---- what each builder draws -------------------------------------------------------


def test_cdf_ignores_nan_rises_from_0_to_1_in_steps_of_1_over_n_and_never_decreases():
    values = [3.0, float("nan"), 1.0, 2.0, 2.0, float("nan"), 5.0]
    fig, ax = plt.subplots()
    line = plots.cdf(ax, values, "v")
    x, y = line.get_xdata(), line.get_ydata()
    assert line.get_drawstyle() == "steps-post"
    assert list(x) == [1.0, 1.0, 2.0, 2.0, 3.0, 5.0]
    assert y[0] == 0.0 and y[-1] == 1.0
    assert (np.diff(y) >= 0).all() and (np.diff(x) >= 0).all()
    np.testing.assert_allclose(np.diff(y), 1 / 5)
    assert plots.cdf(ax, [float("nan")], "none") is None and len(ax.lines) == 1
    assert plots.ecdf is plots.cdf


def test_ccdf_starts_at_1_ends_at_1_over_n_and_is_1_minus_the_cdf_one_sample_earlier():
    values = RNG.exponential(2.0, 40)
    values[[3, 17]] = float("nan")
    fig, ax = plt.subplots()
    c = plots.cdf(ax, values, "cdf")
    cc = plots.ccdf(ax, values, "ccdf", log_y=True)
    y = cc.get_ydata()
    assert y[0] == 1.0 and y[-1] == pytest.approx(1 / 38) and (y > 0).all()
    assert (np.diff(y) < 0).all()
    np.testing.assert_allclose(y, 1 - c.get_ydata()[:-1])
    np.testing.assert_array_equal(cc.get_xdata(), c.get_xdata()[1:])
    assert ax.get_yscale() == "log"


def test_cdf_from_histogram_adds_repeated_edges_and_steps_through_the_cumulative_counts():
    edges = [4.0, 1.0, 2.0, 4.0, 8.0, 1.0]  # two runs' rows, unsorted
    counts = [3, 1, 0, 2, 4, 5]
    fig, ax = plt.subplots()
    line = plots.cdf_from_histogram(ax, edges, counts, "h")
    total = sum(counts)
    expect = {e: sum(c for f, c in zip(edges, counts, strict=True) if f <= e) / total for e in set(edges)}
    assert list(line.get_xdata()) == sorted(expect)
    np.testing.assert_allclose(line.get_ydata(), [expect[e] for e in sorted(expect)])
    assert line.get_ydata()[-1] == 1.0 and line.get_drawstyle() == "steps-post"
    assert plots.cdf_from_histogram(ax, [1.0, 2.0], [0, 0], "empty") is None and len(ax.lines) == 1


def test_timeseries_draws_a_line_or_a_staircase_that_holds_each_value():
    fig, ax = plt.subplots()
    line = plots.timeseries(ax, [0.0, 1.0, 3.0], [5.0, 2.0, 4.0], "line")
    stair = plots.timeseries(ax, [0.0, 1.0, 3.0], [5.0, 2.0, 4.0], "stair", step=True)
    assert line.get_drawstyle() == "default" and stair.get_drawstyle() == "steps-post"
    assert list(stair.get_ydata()) == [5.0, 2.0, 4.0] and line.get_label() == "line"


def test_errorbar_sweep_draws_bars_mean_minus_lo_below_and_hi_minus_mean_above():
    x = np.array([0.0, 20.0, 50.0])
    mean, lo, hi = np.array([10.0, 12.0, 30.0]), np.array([7.0, 12.0, 21.0]), np.array([11.0, 20.0, 44.0])
    fig, ax = plt.subplots()
    eb = plots.errorbar_sweep(ax, x, mean, lo, hi, "sweep")
    data, _, (bars,) = eb.lines
    np.testing.assert_array_equal(data.get_ydata(), mean)
    seg = np.array(bars.get_segments())  # one [[x, bottom], [x, top]] per point
    np.testing.assert_array_equal(seg[:, 0, 0], x)
    np.testing.assert_allclose(mean - seg[:, 0, 1], mean - lo)
    np.testing.assert_allclose(seg[:, 1, 1] - mean, hi - mean)
    with pytest.raises(ValueError):
        plots.errorbar_sweep(ax, x, mean, lo=mean + 1, hi=hi, label="lo above mean")


def test_bars_draw_each_height_with_an_error_bar_from_lo_to_hi():
    fig, ax = plt.subplots()
    bc = plots.bars(ax, [0, 1, 2], [4.0, 6.0, 5.0], "b", lo=[3.0, 6.0, 1.0], hi=[8.0, 7.0, 5.0], width=0.4)
    assert [p.get_height() for p in bc.patches] == [4.0, 6.0, 5.0]
    assert [p.get_width() for p in bc.patches] == pytest.approx([0.4] * 3)
    seg = np.array(bc.errorbar.lines[2][0].get_segments())
    np.testing.assert_allclose(seg[:, :, 1], [[3, 8], [6, 7], [1, 5]])
    assert plots.bars(ax, [0, 1], [1.0, 2.0]).errorbar is None


def test_windows_and_queue_puts_the_flows_legend_outside_or_leaves_it_out():
    ts = pd.DataFrame({"flow": [0, 0, 1, 1], "time_s": [0.0, 1.0, 0.0, 1.0], "cwnd_packets": [1, 4, 2, 3]})
    flows = pd.DataFrame({"flow": [0, 1], "label": ["tcp", "ledbat"], "cc": ["newreno", "ledbat"]})
    queue = pd.DataFrame({"time_s": [0.0, 0.5], "packets": [0, 3]})
    for with_legend in (True, False):
        fig, (aw, aq) = plt.subplots(2, 1, sharex=True)
        plots.windows_and_queue(aw, aq, ts, flows, queue, "t", with_legend=with_legend)
        leg = aw.get_legend()
        if with_legend:
            assert [t.get_text() for t in leg.get_texts()] == ["tcp (newreno)", "ledbat (ledbat)"]
            assert legends_over_axes(fig) == []
        else:
            assert leg is None
        assert aq.lines[0].get_drawstyle() == "steps-post"


# ---- tables and files --------------------------------------------------------------


def test_table_figure_holds_every_header_and_cell_formatted_and_saves_png_and_svg(tmp_path):
    df = pd.DataFrame({"setting": ["RTT 0 ms", "RTT 400 ms"], "runs": [2, 10],
                       "mean_s": [123.456, float("nan")], "ratio": [0.123456, 1.5]})
    fig = plots.table_figure(df, title="summary", formats={"mean_s": ".1f"})
    (tab,) = fig.axes[0].tables
    cells = {k: c.get_text().get_text() for k, c in tab.get_celld().items()}
    assert [cells[(0, j)] for j in range(4)] == ["setting", "runs", "mean_s", "ratio"]
    assert [cells[(1, j)] for j in range(4)] == ["RTT 0 ms", "2", "123.5", "0.1235"]
    assert [cells[(2, j)] for j in range(4)] == ["RTT 400 ms", "10", "", "1.5"]
    assert len(cells) == 3 * 4
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    tight, table_box = fig.get_tightbbox(r), tab.get_window_extent(r)
    assert table_box.x0 >= tight.x0 * fig.dpi - 1 and table_box.x1 <= tight.x1 * fig.dpi + 1, "saved whole"
    png, svg = plots.save(fig, tmp_path / "t" / "summary")
    assert png.read_bytes()[:8] == PNG_MAGIC and b"<svg" in svg.read_bytes()[:1000]
    with pytest.raises(ValueError):
        plots.table_figure(df.iloc[:0])


def _a_figure():
    fig, ax = plt.subplots(figsize=(5, 3))
    plots.cdf(ax, [1.0, 2.0, 2.5, 4.0], "a")
    plots.ccdf(ax, [0.5, 1.5, 3.0], "b")
    ax.set_title("same figure")
    plots.legend(ax, title="curves")
    return fig


def test_save_writes_a_png_and_an_svg_and_the_same_figure_saves_to_the_same_svg_bytes(tmp_path):
    fig = _a_figure()
    first = plots.save(fig, tmp_path / "one" / "fig")
    second = plots.save(_a_figure(), tmp_path / "two" / "fig")
    assert [p.name for p in first] == ["fig.png", "fig.svg"]
    assert first[0].read_bytes()[:8] == PNG_MAGIC
    svg = first[1].read_bytes()
    assert b"<svg" in svg[:1000] and b"<dc:date>" not in svg
    assert svg == second[1].read_bytes()
    assert first[0].read_bytes() == second[0].read_bytes()
    assert fig.number not in plt.get_fignums(), "save closes the figure"


# ---- every figure of the experiment modules -----------------------------------------


def _rao_kept() -> dict[str, pd.DataFrame]:
    """Small kept tables with the columns rao2010's figures read, for every
    sweep: runs' summaries (as ``"summary"``), send gaps, sends, HAVEs and
    payload lengths."""
    rtt_limits = ["10 kB/s; 10 kB/s", "20 kB/s; 20 kB/s", "50 kB/s; 20 kB/s", "50 kB/s; 50 kB/s",
                  "100 kB/s; 100 kB/s"]
    loss_limits = ["10 kB/s; 10 kB/s", "20 kB/s; 20 kB/s", "50 kB/s; 50 kB/s", "100 kB/s; 100 kB/s"]
    rtts = ["0 ms", "120 ms", "400 ms", "1000 ms"]
    done = {"completed": 10, "leechers": 10, "wasted_ratio": 0.01}

    def times(m):
        return {"mean_download_time_s": m, "min_download_time_s": m - 20, "max_download_time_s": m + 30}

    rows = []
    for j, lim in enumerate(rtt_limits):
        for k, rtt in enumerate(rtts):
            for seed in (1, 2):
                rows.append({"sweep": "rtt", rao2010.LIMITS: lim, "network.rtt": rtt, "seed": seed,
                             **times(100 + 10 * k + seed + 50 * j), **done})
    for lim in ("20 kB/s; 20 kB/s; 20 kB/s; 20 kB/s", "50 kB/s; 50 kB/s; 50 kB/s; 50 kB/s"):
        for place in ("AS1; AS1; AS1; AS1p; AS1p", "AS1; AS2; AS3; AS2p; AS2p"):
            rows.append({"sweep": "as", rao2010.AS_LIMITS: lim, rao2010.AS_KEY: place, "seed": 1, **times(150),
                         **done})
    for lim in loss_limits:
        for rtt in rao2010.SHOWN_RTTS:
            for i, (_, _, tso, loss) in enumerate(rao2010.LOSS_CELLS):
                for seed in (1, 2):
                    rows.append({"sweep": "loss", rao2010.LIMITS: lim, "network.rtt": rtt, rao2010.TSO: tso,
                                 rao2010.LOSS: loss, "seed": seed, **times(300 + 20 * i + seed), **done})
    runs = pd.DataFrame(rows)
    gaps = pd.DataFrame([{"sweep": "rtt", rao2010.LIMITS: lim, "network.rtt": rtt, "seed": 1,
                          "gap_hi_s": 10.0 ** e, "sends": 5 + e + j}
                         for j, lim in enumerate(rtt_limits) for rtt in rao2010.SHOWN_RTTS for e in range(-3, 2)])
    lim20 = {"sweep": "rtt", rao2010.LIMITS: rtt_limits[1]}
    sends = pd.DataFrame([{**lim20, "network.rtt": rtt, "srtt_ms": float(rtt.split()[0]) + j}
                          for rtt in rtts for j in range(20)])
    haves = pd.DataFrame([{"sweep": "rtt", rao2010.LIMITS: lim, "network.rtt": rtt, "time_s": 3.0 * j}
                          for lim in rtt_limits for rtt in rtts for j in range(30)])
    payload = pd.DataFrame([{"sweep": "loss", "network.rtt": "400 ms", rao2010.TSO: tso, rao2010.LOSS: loss,
                             "payload_bytes": b, "segments": 10}
                            for _, _, tso, loss in rao2010.LOSS_CELLS for b in (100, 1448, 2896 if tso else 1000)])
    return {"summary": runs, "send_gaps": gaps, "sends": sends, "haves": haves, "payload_lengths": payload}


def _rossi_inputs():
    """Small run results and a (d) sweep table with the columns rossi2010.figures reads."""
    t = np.linspace(0, 20, 41)
    results = {}
    for key in rossi2010.SINGLE_RUNS:
        ts = pd.concat([pd.DataFrame({"flow": f, "time_s": t, "cwnd_packets": 10 + 5 * f + np.sin(t)})
                        for f in (0, 1)])
        flows = pd.DataFrame({"flow": [0, 1], "label": ["first", "second"], "cc": ["ledbat", "ledbat"]})
        queue = pd.DataFrame({"time_s": t, "packets": (t * 3) % 40})
        results[key] = SimpleNamespace(timeseries=ts, flows=flows, queue=queue)
    sweep = pd.DataFrame([{"tcp.slow_start": ss, "network.bottleneck.capacity": cap,
                           "network.bottleneck.buffer": buf, "jain_index": 0.6 + 0.04 * seed}
                          for ss in (False, True) for cap in ("2 Mbit/s", "10 Mbit/s")
                          for buf in ("20 packets", "100 packets") for seed in range(10)])
    return results, sweep


@pytest.fixture
def drawn(monkeypatch):
    """Every figure the experiment modules save, as {stem: (legend count,
    legends over axes)}, checked just before it is written."""
    seen = {}
    real = plots.save

    def check_then_save(fig, stem):
        seen[Path(stem).name] = (sum(ax.get_legend() is not None for ax in fig.axes), legends_over_axes(fig))
        return real(fig, stem)

    for module in (rao2010, rossi2010, testa2012, testa2013, bufferbloat_voip):
        monkeypatch.setattr(module, "save", check_then_save)
    return seen


def test_every_figure_of_reproduce_rao2010_has_its_legends_outside_every_axes(tmp_path, drawn):
    kept = _rao_kept()
    runs = kept["summary"]
    loss = rao2010.loss_table(runs)
    paths = rao2010.figures(kept, rao2010.summary_table(runs), loss, tmp_path)
    # `figures` is what `reproduce` draws; test_rao2010 checks that the quick
    # reproduction writes exactly rao2010.FIGURES.
    assert sorted(drawn) == sorted(rao2010.FIGURES) and len(paths) == 2 * len(drawn)
    assert all(p.exists() for p in paths)
    legends = {stem: n for stem, (n, _) in drawn.items()}
    assert legends == {"fig_rtt": 1, "fig_as": 0, "fig_loss": 1, "fig_loss_table": 0, "fig_send_gaps": 1,
                       "fig_srtt": 1, "fig_pieces": 1, "fig_payload": 1, "fig_summary": 0}
    assert {stem: over for stem, (_, over) in drawn.items() if over} == {}


def _legend_texts(fig_axes) -> list[str]:
    (leg,) = [ax.get_legend() for ax in fig_axes if ax.get_legend() is not None]
    return [t.get_text() for t in leg.get_texts()]


def test_the_multi_panel_e0_figures_list_every_panels_curves_in_one_legend(tmp_path, monkeypatch):
    kept = _rao_kept()
    texts = {}
    monkeypatch.setattr(rao2010, "save", lambda fig, stem: texts.setdefault(Path(stem).name, (
        [ax.get_title() for ax in fig.axes], _legend_texts(fig.axes))) and [])
    rao2010.fig_send_gaps(kept["send_gaps"], tmp_path)
    rao2010.fig_pieces(kept["haves"], tmp_path)
    rao2010.fig_payload(kept["payload_lengths"], tmp_path)
    assert texts["fig_send_gaps"] == (["RTT 0 ms", "RTT 400 ms", "RTT 1000 ms"],
                                      ["10 kB/s", "20 kB/s", "50/20 kB/s", "50 kB/s", "100 kB/s"])
    assert texts["fig_pieces"] == (["upload limit 20 kB/s", "upload limit 50/20 kB/s"],
                                   ["0 ms", "400 ms", "1000 ms"])
    assert texts["fig_payload"][1] == ["TSO off, no loss", "TSO on, no loss", "TSO off, 5 % loss"]


def test_the_loss_table_has_a_row_per_limit_and_rtt_and_a_column_group_per_setting_of_the_study():
    runs = _rao_kept()["summary"]
    t = rao2010.loss_table(runs)
    assert list(t["upload_limit"]) == [lim for lim in ("10 kB/s", "20 kB/s", "50 kB/s", "100 kB/s") for _ in range(3)]
    assert list(t["rtt"]) == list(rao2010.SHOWN_RTTS) * 4
    for i, (name, _, _, _) in enumerate(rao2010.LOSS_CELLS):
        # Two runs per cell: means 300 + 20 i + 1 and + 2.
        np.testing.assert_allclose(t[f"{name}_s"], 300 + 20 * i + 1.5)
        np.testing.assert_allclose(t[f"{name}_sd_s"], math.sqrt(0.5))
        np.testing.assert_allclose(t[f"{name}_min_s"], 300 + 20 * i + 1 - 20)
        np.testing.assert_allclose(t[f"{name}_max_s"], 300 + 20 * i + 2 + 30)
        assert (t[f"{name}_runs"] == 2).all()


def _e1_e2_e3_inputs():
    """Small tables with the columns the figures of testa2012 (E1),
    testa2013 (E2) and bufferbloat_voip (E3) read."""
    rng = np.random.default_rng(3)
    cs = [5.0, 10.0]
    peers = pd.DataFrame([{"C_mbps": c, "case": case, "iteration": it, "class": cls,
                           "download_time_s": 100 + 10 * k + rng.uniform(0, 20)}
                          for c in cs for k, case in enumerate(testa2012.CASES) for it in (1, 2)
                          for cls in ("13", "14") for _ in range(5)])
    delays = pd.DataFrame([{"C_mbps": c, "case": case, "delay_lo_ms": d, "packets": 100 - d}
                           for c in cs for case in testa2012.CASES for d in (0.0, 10.0, 50.0)])
    e1_runs = pd.DataFrame([{"C_mbps": c, "case": case, "iteration": it, "mean_queue_bytes": 1e4 * (k + it),
                             "tcp_byte_share": k / 6 + 0.01 * it, "mean_T_s": 100 + 10 * k + it}
                            for c in cs for k, case in enumerate(testa2012.CASES) for it in (1, 2)])
    swarms = [(a, True) for a in testa2013.APPS] + [(f"BT:Cubic + {a}", False) for a in testa2013.APPS[1:4]]
    leechers = pd.DataFrame([{"swarm": s, "homogeneous": h, "app": a if h else (a.split(" + ")[j]),
                              "T_s": 100 + rng.uniform(0, 50), "B_bytes": rng.uniform(1e3, 1e5)}
                             for s, h in swarms for a in (s,) for j in (0, 1) for _ in range(5)])
    e2_runs = pd.DataFrame([{"swarm": s, "homogeneous": h, "T_median_s": 100 + rng.uniform(0, 50),
                             "B_median_bytes": rng.uniform(1e3, 1e5)} for s, h in swarms for _ in range(2)])
    cases = ["idle", "download", "upload 47", "upload 28", "upload 10"]
    ping = pd.DataFrame([{"iteration": 1, "pacing": "off" if k else "", "case": case, "sent_s": float(t),
                          "rtt_ms": 50.0 + 10 * k, "timed_out": int(k == 1 and t % 7 == 0)}
                         for k, case in enumerate(cases) for t in range(30)])
    voip = pd.DataFrame([{"client": client, "case": case, "direction": d, "delay_ms": 20 + rng.uniform(0, 30),
                          "jitter_ms": rng.uniform(0, 5)}
                         for client, case in (("", "call alone"), ("mainline", "beside BT, off"),
                                              ("mainline", "beside BT, even"))
                         for d in ("up", "down") for _ in range(20)])
    e3_runs = pd.DataFrame([{"client": client, "cap_kBps": cap, "pacing": pacing, "bt_up_kBps": cap * 0.9}
                            for client in ("mainline", "libtorrent") for cap in bufferbloat_voip.CAPS
                            for pacing in bufferbloat_voip.PACING])
    return SimpleNamespace(peers=peers, delays=delays, e1_runs=e1_runs, leechers=leechers, e2_runs=e2_runs,
                           ping=ping, voip=voip, e3_runs=e3_runs)


def test_no_figure_of_the_other_experiment_modules_has_a_legend_over_any_axes(tmp_path, drawn):
    paths = rossi2010.figures(*_rossi_inputs(), tmp_path)
    i = _e1_e2_e3_inputs()
    paths += (testa2012.fig_completion(i.peers, tmp_path) + testa2012.fig_queue(i.delays, i.e1_runs, tmp_path)
              + testa2012.fig_share(i.e1_runs, tmp_path) + testa2012.fig_t_vs(i.e1_runs, tmp_path)
              + testa2012.fig_classes(i.peers, tmp_path))
    paths += (testa2013.fig_homogeneous(i.leechers, tmp_path) + testa2013.fig_heterogeneous(i.leechers, tmp_path)
              + testa2013.fig_t_vs_b(i.e2_runs, tmp_path))
    paths += (bufferbloat_voip.fig_ping_over_time(i.ping, tmp_path) + bufferbloat_voip.fig_voip(i.voip, tmp_path)
              + bufferbloat_voip.fig_throughput(i.e3_runs, tmp_path))
    assert all(p.exists() for p in paths) and len(paths) == 2 * len(drawn)
    legends = {stem: n for stem, (n, _) in drawn.items()}
    assert legends == {"fig_a": 1, "fig_b": 1, "fig_c": 1, "fig_d": 1, "fig_completion": 1, "fig_queue": 1,
                       "fig_share": 1, "fig_t_vs": 1, "fig_classes": 1, "fig_homogeneous": 1,
                       "fig_heterogeneous": 1, "fig_t_vs_b": 1, "fig_ping_over_time": 1, "fig_voip_mainline": 1,
                       "fig_throughput": 1}
    assert {stem: over for stem, (_, over) in drawn.items() if over} == {}


def test_legends_sit_outside_for_any_number_of_entries():
    fig, ax = plt.subplots(figsize=(4, 2))
    for i in range(25):
        plots.timeseries(ax, X, X * math.sqrt(i), f"a rather long curve name {i}")
    plots.legend(ax)
    assert legends_over_axes(fig) == []
