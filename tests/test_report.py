"""`torrentlab report`: one self-contained HTML page per result directory.

Small real results (a sweep of 2 x 2 points x 2 seeds of a small swarm, with
one failed run recorded as a campaign records it, and a 20-second dumbbell
run) are reported; the pages are read as text and loaded in headless
Chromium, which must draw every plot without a console error, show the
series in the screenshot, and answer hovering, legend clicks and sorting.
The Chromium tests are skipped only when ``chromium`` is not installed.
"""

from __future__ import annotations

import base64
import html
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import pytest  # noqa: E402

import torrentlab  # noqa: E402
from conftest import SCENARIOS, SMALL_SWARM, cli  # noqa: E402
from torrentlab.campaign import run_key  # noqa: E402
from torrentlab.exceptions import OutputError, QueryError  # noqa: E402
from torrentlab.output import atomic_dir, write_frame  # noqa: E402
from torrentlab.report import MAX_POINTS, write_report  # noqa: E402
from torrentlab.sweep import Job, load_toml  # noqa: E402

CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium (Debian package `chromium`) is "
                                                             "not installed; CI installs it")
#: The first two series colours of report.js.
BLUE, RED = (0x1F, 0x77, 0xB4), (0xD6, 0x27, 0x28)
#: A failed run, as campaign.keep_run records one (the engine fails only on bugs).
FAILED_ERROR = "SimulationError: engine bug <img src=x onerror=alert(1)> & more"


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, Path]:
    """A sweep result (with one failed run), a dumbbell run result, and their reports."""
    d = tmp_path_factory.mktemp("report")
    (d / "swarm.toml").write_text(SMALL_SWARM)
    (d / "s.sweep.toml").write_text('base = "swarm.toml"\nruns = 2\n[grid]\n"peers.1.count" = [3, 5]\n'
                                    '"network.rtt" = ["20 ms", "200 ms"]\n')
    r = cli("sweep", str(d / "s.sweep.toml"), "-o", str(d / "sweep"), "-q", "-j", "2")
    assert r.returncode == 0, r.stderr
    scenario = {"name": "failing", "peers": [{"role": "seed"}]}
    key = run_key(Job(scenario, 3, ()))
    (d / "sweep" / "failed").mkdir()
    (d / "sweep" / "failed" / f"{key}.json").write_text(json.dumps({
        "params": {"peers.1.count": "5", "network.rtt": "200 ms"}, "seed": 3, "error": FAILED_ERROR,
        "scenario": scenario, "torrentlab": torrentlab.__version__}))

    # A dumbbell sweep: 2 points, 1 seed each, 5 simulated seconds.
    base = SCENARIOS / "rossi2010" / "a-newreno-vs-ledbat.toml"
    (d / "db.toml").write_text(base.read_text().replace('duration = "60 s"', 'duration = "5 s"'))
    (d / "db.sweep.toml").write_text('base = "db.toml"\n[grid]\n'
                                     '"network.bottleneck.buffer" = ["10 packets", "40 packets"]\n')
    r = cli("sweep", str(d / "db.sweep.toml"), "-o", str(d / "dsweep"), "-q", "-j", "2")
    assert r.returncode == 0, r.stderr

    doc = load_toml(base)
    doc["run"]["duration"] = "20 s"  # over 16,000 queue rows: the queue is thinned
    doc["name"] = 'rossi-a <b>&"short"'
    res = torrentlab.run(doc)
    res.write(d / "dumbbell")
    # A reproduction, as rossi2010.reproduce writes one: a summary, a figure, a run of its own.
    with atomic_dir(d / "repro", kind="reproduce", experiment="demo", quick=True) as tmp:
        res.write(tmp / "runs" / "a")
        write_frame(pd.DataFrame({"run": ["a"], "jain_index": [0.25]}), tmp / "summary.parquet")
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, 1])
        fig.savefig(tmp / "fig_demo.svg")
        plt.close(fig)
    before = sorted(p.name for p in d.iterdir())
    return {"dir": d, "before": before, "sweep": d / "sweep", "dumbbell": d / "dumbbell", "repro": d / "repro",
            "dsweep": d / "dsweep", "dsweep_html": write_report(d / "dsweep"),
            "failed_key": key, "sweep_html": write_report(d / "sweep"),
            "dumbbell_html": write_report(d / "dumbbell", d / "dumbbell.html"), "repro_html": write_report(d / "repro")}


class _Dom(HTMLParser):
    """What the tests read of a page: plot containers (their attributes), the
    #errors list's text, and tables by id (rows of (text, data-v) cells)."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.plots: list[dict[str, str | None]] = []
        self.errors: list[str] = []
        self.tables: dict[str, list[list[tuple[str, str | None]]]] = {}
        self._table: list | None = None
        self._cell: list | None = None
        self._in_errors = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "div" and "tl-plot" in (a.get("class") or "").split():
            self.plots.append(a)
        elif tag == "ul" and a.get("id") == "errors":
            self._in_errors = True
        elif tag == "table":
            self._table = self.tables.setdefault(a.get("id") or f"table{len(self.tables)}", [])
        elif tag == "tr" and self._table is not None:
            self._table.append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = ["", a.get("data-v")]

    def handle_endtag(self, tag):
        if tag == "ul":
            self._in_errors = False
        elif tag in ("td", "th") and self._cell is not None and self._table is not None:
            self._table[-1].append((self._cell[0], self._cell[1]))
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._in_errors:
            self.errors.append(data)
        if self._cell is not None:
            self._cell[0] += data


def _runs(result: Path) -> pd.DataFrame:
    return pq.read_table(result / "runs.parquet").to_pandas()


def _spec(page: str) -> dict:
    """The plot data embedded in a page."""
    m = re.search(r'<script type="application/json" id="tl-data">(.*?)</script>', page, re.S)
    assert m, "the page embeds its data"
    return json.loads(m.group(1))


def _chromium(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess:
    """Loads `page` in headless Chromium (its profile in `profile`) with its console on stderr."""
    return subprocess.run([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--user-data-dir={profile / 'chromium-profile'}", "--virtual-time-budget=5000",
                           "--enable-logging=stderr", "--v=0", *args, page.as_uri()],
                          capture_output=True, text=True, timeout=120)


def _console(stderr: str) -> list[str]:
    """The page's console messages (Chromium logs each as ``...:CONSOLE:...``)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def test_a_report_goes_beside_its_result_which_is_left_as_it_was(results):
    sweep = results["sweep"]
    assert results["sweep_html"] == sweep.parent / "sweep.html" and results["sweep_html"].is_file()
    listed = json.loads((sweep / "manifest.json").read_text())["files"]
    assert not [f for f in listed if not (sweep / f).is_file()] and not list(sweep.glob("*.html"))
    assert sorted(p.name for p in results["dir"].iterdir()) == sorted(
        results["before"] + ["sweep.html", "dumbbell.html", "repro.html", "dsweep.html"]), "the reports, nothing else"


def test_the_page_loads_nothing_from_elsewhere(results):
    for key in ("sweep_html", "dumbbell_html", "repro_html", "dsweep_html"):
        page = results[key].read_text()
        assert not re.search(r"""\b(?:src|href|action)\s*=\s*["']?\s*(?:[a-z]+:)?//""", page, re.I), key
        assert not re.search(r"<script[^>]+\bsrc\s*=", page, re.I) and not re.search(r"<link\b", page, re.I)
        assert not re.search(r"@import|url\(\s*['\"]?\s*(?:https?:)?//", page, re.I)
        assert "default-src 'none'" in page, "a Content-Security-Policy forbids any fetch"
        assert page.count("<script") == 2 and "</" not in _script_data(page)


def _script_data(page: str) -> str:
    return re.search(r'id="tl-data">(.*?)</script>', page, re.S).group(1)


def test_a_sweep_report_holds_every_runs_seed_parameters_and_scenario(results):
    page = results["sweep_html"].read_text()
    runs = _runs(results["sweep"])
    rows = {r[0][0]: [c[0] for c in r[1:]] for r in _Dom(page).tables["runs-table"][1:]}
    header = [c[0] for c in _Dom(page).tables["runs-table"][0]]
    keys = sorted(p.stem for p in (results["sweep"] / "runs").glob("*.parquet"))
    assert sorted(rows) == keys and len(keys) == len(runs) == 8, "one row per run, named by its file in runs/"
    for _, run in runs.iterrows():
        key = run_key(Job(json.loads(run["scenario"]), int(run["seed"]), ()))
        cells = dict(zip(header[1:], rows[key], strict=True))
        assert cells["seed"] == str(run["seed"]) and cells["peers.1.count"] == run["peers.1.count"]
        assert cells["network.rtt"] == run["network.rtt"] and cells["torrentlab_version"] == run["torrentlab_version"]
        assert html.escape(json.dumps(json.loads(run["scenario"]), indent=2)) in page, "the scenario, in full"


def test_a_failed_run_is_listed_with_its_error_escaped(results):
    page = results["sweep_html"].read_text()
    assert "8 finished, 1 failed" in page
    failed = re.search(r'<h2 id="failed">Failed runs</h2>(.*?)</table>', page, re.S)
    assert failed, "a Failed runs section"
    assert results["failed_key"] in failed.group(1) and html.escape(FAILED_ERROR) in failed.group(1)
    assert "<img src=x" not in page, "the error text is escaped, never markup"


def test_the_sweep_summary_gives_mean_min_and_max_over_seeds_at_every_point(results):
    runs = _runs(results["sweep"])
    table = _Dom(results["sweep_html"].read_text()).tables["summary-table"]
    groups, header, body = table[0], [c[0] for c in table[1]], table[2:]
    assert "mean_download_time_s" in [g[0] for g in groups]
    col = header.index("mean")  # the first metric is the mean download time
    assert len(body) == 4
    for row in body:
        point = runs[(runs["peers.1.count"] == row[0][0]) & (runs["network.rtt"] == row[1][0])]
        assert int(row[2][0]) == len(point) == 2
        got = [float(c[1]) for c in row[col:col + 3]]
        want = [point.mean_download_time_s.mean(), point.mean_download_time_s.min(), point.mean_download_time_s.max()]
        assert np.allclose(got, want), row
        assert row[3][0] == f"{point.completed.sum()}/{point.leechers.sum()}"


def test_a_dumbbell_sweep_summarises_fairness_and_the_first_flows_share(results):
    runs, flows = _runs(results["dsweep"]), pq.read_table(results["dsweep"] / "flows.parquet").to_pandas()
    table = _Dom(results["dsweep_html"].read_text()).tables["summary-table"]
    groups = [g[0] for g in table[0]]
    assert {"jain_index", "efficiency", "loss_rate", "first_flow_share"} <= set(groups)
    col = sum(1 if g[0] == "" else 3 for g in table[0][:groups.index("first_flow_share")])
    for row in table[2:]:
        run = runs[runs["network.bottleneck.buffer"] == row[0][0]].iloc[0]
        first = flows[(flows["network.bottleneck.buffer"] == row[0][0]) & (flows["flow"] == 0)].iloc[0]
        assert np.isclose(float(row[col][1]), first["window_rate_bps"] / run["goodput_bps"]), row


def test_long_series_are_thinned_keeping_their_peaks_and_the_page_says_so(results):
    page = results["dumbbell_html"].read_text()
    queue = pq.read_table(results["dumbbell"] / "queue.parquet").to_pandas()
    assert len(queue) > MAX_POINTS
    plots = [p for p in _spec(page)["plots"].values() if p["variants"][0]["name"] == "packets"]
    series = plots[0]["variants"][0]["series"][0]
    assert len(series["x"]) <= MAX_POINTS and max(series["y"]) == queue["packets"].max()
    assert min(series["y"]) == queue["packets"].min()
    assert f"{len(queue):,} samples per series at most are drawn as {MAX_POINTS:,} points" in page


def test_a_reproduction_shows_its_summary_its_figures_inlined_and_its_own_runs(results):
    page = results["repro_html"].read_text()
    svg = base64.b64encode((results["repro"] / "fig_demo.svg").read_bytes()).decode()
    assert f'src="data:image/svg+xml;base64,{svg}"' in page, "the figure, inside the page"
    assert "fig_demo.svg" in page and "0.25" in page
    assert "runs/a: rossi-a &lt;b&gt;" in page and len(_spec(page)["plots"]) == 2, "the run's own plots"


def test_names_from_the_result_are_escaped(results):
    page = results["dumbbell_html"].read_text()
    assert "<title>rossi-a &lt;b&gt;&amp;&quot;short&quot;: torrentlab run</title>" in page
    assert "<b>&" not in page


def test_a_directory_that_is_not_a_result_is_refused_and_nothing_is_written(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    (tmp_path / "file").write_text("x")
    before = sorted(p.name for p in tmp_path.iterdir())
    for name, why in (("empty", "is not a torrentlab result (no manifest.json)"),
                      ("mine", "is not a torrentlab result (no manifest.json)"),
                      ("missing", "does not exist"), ("file", "is not a directory")):
        with pytest.raises(QueryError, match=re.escape(why)):
            write_report(tmp_path / name)
        with pytest.raises(QueryError):
            write_report(tmp_path / name, tmp_path / "r.html")
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_report_replaces_only_a_report_and_never_writes_into_its_result(results, tmp_path):
    mine = tmp_path / "notes.html"
    mine.write_text("my notes")
    with pytest.raises(OutputError, match="exists and is not a torrentlab report"):
        write_report(results["dumbbell"], mine)
    assert mine.read_text() == "my notes"
    with pytest.raises(OutputError, match="is inside the result directory"):
        write_report(results["dumbbell"], results["dumbbell"] / "report.html")
    with pytest.raises(OutputError, match="is a directory"):
        write_report(results["dumbbell"], tmp_path)
    assert not (results["dumbbell"] / "report.html").exists()
    again = write_report(results["dumbbell"], tmp_path / "r.html")
    assert write_report(results["sweep"], again) == again and "s: torrentlab sweep" in again.read_text()
    assert write_report(results["dumbbell"], mine, force=True) == mine and "torrentlab run" in mine.read_text()


def test_the_command_line_writes_the_report(results, tmp_path):
    r = cli("report", str(results["sweep"]), "-o", str(tmp_path / "r.html"))
    assert r.returncode == 0, r.stderr
    assert "s: torrentlab sweep" in (tmp_path / "r.html").read_text()
    r = cli("report", str(tmp_path))
    assert r.returncode == 2 and "is not a torrentlab result" in r.stderr and "Traceback" not in r.stderr


@needs_chromium
@pytest.mark.parametrize("which", ["sweep_html", "dumbbell_html", "repro_html", "dsweep_html"])
def test_in_chromium_every_plot_is_drawn_without_a_console_error(results, which, tmp_path):
    r = _chromium(results[which], tmp_path, "--dump-dom")
    assert r.returncode == 0, r.stderr[-2000:]
    assert _console(r.stderr) == [], "the page logs nothing, errors least of all"
    dom = _Dom(r.stdout)
    assert "".join(dom.errors).strip() == "", dom.errors
    # 2 parameters + the CDF; flows + queue; the same for the reproduction's run; 1 parameter.
    want = {"sweep_html": 3, "dumbbell_html": 2, "repro_html": 2, "dsweep_html": 1}[which]
    assert len(dom.plots) == want == len(_spec(results[which].read_text())["plots"])
    for p in dom.plots:
        assert p.get("data-rendered") == "1" and int(p["data-marks"]) > 0 and int(p["data-series"]) > 0, p


@needs_chromium
def test_in_chromium_the_screenshot_shows_the_series_in_their_colours(results, tmp_path):
    from PIL import Image

    shot = tmp_path / "shot.png"
    r = _chromium(results["dumbbell_html"], tmp_path, f"--screenshot={shot}", "--window-size=1200,2000")
    assert r.returncode == 0 and shot.is_file(), r.stderr[-2000:]
    img = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    for colour in (BLUE, RED):  # the two flows' windows, the queue
        near = (np.abs(img - np.array(colour)).sum(axis=2) < 60).sum()
        assert near > 400, f"{near} pixels of {colour}: the plot is not drawn"
    assert (img.reshape(-1, 3) != 255).any(axis=1).mean() > 0.05, "not a blank page"


#: Run in the page after it loaded: hover the first point, click a legend
#: entry twice, choose another quantity, sort a table; the outcome in #probe.
PROBE = """<script>
window.addEventListener("load", () => {
  const out = {};
  try {
    const plot = document.querySelector('.tl-plot[data-spec="p1"]');
    const svg = plot.querySelector("svg"), dot = svg.querySelector("circle").getBoundingClientRect();
    svg.dispatchEvent(new MouseEvent("mousemove", {clientX: dot.x + dot.width / 2, clientY: dot.y + dot.height / 2,
                                                   bubbles: true}));
    const tip = plot.querySelector(".tl-tip");
    out.tipShown = !tip.hidden; out.tip = tip.innerText;
    out.series = [+plot.dataset.series];
    plot.querySelector(".tl-entry").click();
    out.series.push(+plot.dataset.series); out.off = plot.querySelector(".tl-entry").classList.contains("off");
    plot.querySelector(".tl-entry").click();
    out.series.push(+plot.dataset.series);
    const label = () => [...svg.querySelectorAll("text.tl-label")].map((t) => t.textContent).join("|");
    out.labels = [label()];
    const sel = plot.querySelector("select"); sel.value = "1"; sel.dispatchEvent(new Event("change"));
    out.labels.push(label()); out.rendered = plot.dataset.rendered;
    const table = document.getElementById("runs-table");
    const col = [...table.tHead.rows[0].cells].findIndex((c) => c.textContent === "seed");
    const seeds = () => [...table.tBodies[0].rows].map((r) => +r.cells[col].textContent);
    out.seeds = [seeds()]; table.tHead.rows[0].cells[col].click(); out.seeds.push(seeds());
    table.tHead.rows[0].cells[col].click(); out.seeds.push(seeds());
  } catch (e) { out.error = String(e); }
  const pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script></body>"""


@needs_chromium
def test_in_chromium_hover_legend_quantity_and_sorting_answer(results, tmp_path):
    page = tmp_path / "probe.html"
    page.write_text(results["sweep_html"].read_text().replace("</body>", PROBE))
    r = _chromium(page, tmp_path, "--dump-dom")
    assert _console(r.stderr) == []
    got = json.loads(html.unescape(re.search(r'<pre id="probe">(.*?)</pre>', r.stdout, re.S).group(1)))
    assert "error" not in got, got
    runs = _runs(results["sweep"])
    point = runs[(runs["peers.1.count"] == "3") & (runs["network.rtt"] == "20 ms")]
    mean = float(f"{point.mean_download_time_s.mean():.4g}")
    assert got["tipShown"] and "network.rtt = 20 ms" in got["tip"] and "peers.1.count: 3" in got["tip"]
    assert f"mean download time [s]: {mean:g}" in got["tip"] and "runs: 2" in got["tip"], got["tip"]
    assert got["series"] == [2, 1, 2] and got["off"], "a legend click hides its series, a second shows it"
    assert got["labels"][0] != got["labels"][1] and got["rendered"] == "1", "another quantity, drawn"
    first, up, down = got["seeds"]
    assert first != up and up == sorted(first) and down == sorted(first, reverse=True)
