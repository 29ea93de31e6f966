"""E0 `rao2010`: swarm scenarios from dicts and files, their errors, the
joined keys of sweep files, and `torrentlab reproduce rao2010 --quick` end to
end (run once for the module)."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import torrentlab
from conftest import SCENARIOS, SMALL_SWARM, cli
from torrentlab.experiments.rao2010 import FIGURES, LIMITS, LOSS, LOSS_CELLS, SHOWN_RTTS, TSO
from torrentlab.sweep import Sweep

RAO = SCENARIOS / "rao2010"
FILE_BYTES = 2_000_000
PIECES = 8  # ceil(2 MB / 256 KiB)
LEECHERS = 20
SWARM_TABLES = ("summary", "peers", "connections", "haves", "chokes", "sends", "send_gaps", "payload_lengths",
                "transports", "uplinks", "uplink_queue", "uplink_delays", "piece_spread")


def swarm(seed=1, **leecher):
    """1 seed + 20 leechers, a 2 MB file in 256 KiB pieces, RTT 100 ms, 20 kB/s."""
    return {
        "run": {"duration": "2 h", "seed": seed},
        "torrent": {"size": "2 MB", "piece_size": "256 KiB"},
        "network": {"rtt": "100 ms"},
        "peers": [
            {"role": "seed", "upload_limit": "20 kB/s"},
            {"role": "leecher", "count": LEECHERS, "upload_limit": "20 kB/s", **leecher},
        ],
    }


# ---- a small swarm from a dict ---------------------------------------------------


@pytest.fixture(scope="module")
def small():
    return torrentlab.run(swarm())


def test_a_small_flash_crowd_completes_and_its_tables_agree(small):
    assert small.kind == "swarm"
    assert list(small.tables) == list(SWARM_TABLES)
    s = small.summary.iloc[0]
    assert (s["peers"], s["leechers"], s["completed"]) == (LEECHERS + 1, LEECHERS, LEECHERS)
    assert (s["file_bytes"], s["pieces"]) == (FILE_BYTES, PIECES)

    peers = small.peers
    assert list(peers["role"]) == ["seed"] + ["leecher"] * LEECHERS
    seed, leechers = peers.iloc[0], peers[peers["role"] == "leecher"]
    assert np.isnan(seed["completed_s"]) and seed["bytes_down"] == 0 and seed["pieces"] == PIECES
    assert leechers["completed_s"].notna().all()
    # The tracker hears of a completion one one-way delay (RTT / 2) later.
    assert (leechers["tracker_completed_s"] >= leechers["completed_s"]).all()
    np.testing.assert_allclose(leechers["tracker_completed_s"] - leechers["completed_s"], 0.05, atol=1e-6)
    np.testing.assert_allclose(leechers["download_time_s"], leechers["tracker_completed_s"] - leechers["join_s"])
    assert (leechers["pieces"] == PIECES).all()
    assert (leechers["bytes_down"] == FILE_BYTES).all()
    assert leechers["bytes_down"].sum() == LEECHERS * FILE_BYTES
    # Every piece byte received (useful or wasted) was sent by someone; some
    # may still be in flight when the last leecher completes.
    assert peers["bytes_up"].sum() >= peers["bytes_down"].sum() + peers["bytes_wasted"].sum()
    conns = small.connections
    assert conns["piece_bytes_forward"].sum() + conns["piece_bytes_reverse"].sum() == peers["bytes_up"].sum()

    # One HAVE per leecher and piece; a leecher's last HAVE is its completion.
    haves = small.haves
    assert len(haves) == LEECHERS * PIECES
    assert not haves.duplicated(["peer", "piece"]).any()
    assert set(haves["peer"]) == set(leechers["peer"])
    last = haves.groupby("peer")["time_s"].max()
    np.testing.assert_allclose(last, leechers.set_index("peer").loc[last.index, "completed_s"])

    dt = leechers["download_time_s"]
    assert s["min_download_time_s"] <= s["mean_download_time_s"] <= s["max_download_time_s"]
    assert s["mean_download_time_s"] == pytest.approx(dt.mean())
    assert (s["min_download_time_s"], s["max_download_time_s"]) == (dt.min(), dt.max())
    # The run stops when the tracker has heard from the last leecher.
    assert s["end_s"] == pytest.approx(leechers["tracker_completed_s"].max())


def test_every_segment_is_at_most_one_mss_without_tso_and_every_send_is_in_the_histogram(small):
    pl = small.payload_lengths
    assert pl["payload_bytes"].max() <= 1448 and pl["payload_bytes"].min() >= 1
    assert pl["segments"].sum() > 0
    gaps = small.send_gaps
    assert gaps["sends"].sum() > 0
    assert (gaps["gap_lo_s"] < gaps["gap_hi_s"]).all() and gaps["gap_lo_s"].is_monotonic_increasing
    assert len(small.sends) == 0, "metrics.send_log_peers defaults to 0: no per-send log"


def test_the_tracker_hears_each_as_after_its_own_one_way_delay():
    doc = {
        "run": {"duration": "2 h"},
        "torrent": {"size": "1 MB", "piece_size": "256 KiB"},
        "network": {"groups": {"A": {"intra": "5 ms", "inter": "20 ms"}, "B": {"intra": "10 ms", "inter": "50 ms"}},
                    "tracker_group": "A"},
        "peers": [{"role": "seed", "group": "A"},
                  {"role": "leecher", "count": 4, "group": "A", "label": "near"},
                  {"role": "leecher", "count": 4, "group": "B", "label": "far"}],
    }
    res = torrentlab.run(doc)
    p = res.peers[res.peers["role"] == "leecher"]
    assert list(p["class"]) == ["near"] * 4 + ["far"] * 4 and list(p["group"]) == ["A"] * 4 + ["B"] * 4
    delay = (p["tracker_completed_s"] - p["completed_s"]).to_numpy()
    # Same AS: 2 x intra one way; across ASes: inter_i + inter_j.
    np.testing.assert_allclose(delay, [0.010] * 4 + [0.070] * 4, atol=1e-6)
    assert res.summary["completed"][0] == 8


def test_join_times_and_departures_are_per_peer():
    times = [f"{3 * i} s" for i in range(LEECHERS)]
    res = torrentlab.run(swarm(join=times, departure="leave"))
    p = res.peers[res.peers["role"] == "leecher"]
    assert list(p["join_s"]) == [3.0 * i for i in range(LEECHERS)]
    np.testing.assert_allclose(p["download_time_s"], p["tracker_completed_s"] - p["join_s"])
    # "leave": gone the moment the last piece is in.
    assert (p["left_s"] == p["completed_s"]).all()
    assert res.summary["completed"][0] == LEECHERS
    stay = torrentlab.run(swarm()).peers
    assert stay.loc[stay["role"] == "leecher", "left_s"].isna().all(), "\"stay\" (the default) never leaves"


# ---- determinism -------------------------------------------------------------------


def test_the_same_dict_and_seed_write_byte_identical_parquet_and_another_seed_differs(tmp_path, small):
    for d in ("x", "y"):
        torrentlab.run(swarm(seed=1)).write(tmp_path / d)
    for t in SWARM_TABLES:
        a = (tmp_path / "x" / f"{t}.parquet").read_bytes()
        b = (tmp_path / "y" / f"{t}.parquet").read_bytes()
        assert a == b, t
    same = pq.read_table(tmp_path / "x" / "peers.parquet").to_pandas()
    pd.testing.assert_frame_equal(same, small.peers)
    other = torrentlab.run(swarm(seed=1), seed=2)
    assert other.summary["seed"][0] == 2
    assert not other.peers.equals(small.peers)
    assert (other.peers["completed_s"] != small.peers["completed_s"]).sum() > LEECHERS // 2


def test_huge_pages_on_or_off_a_swarm_writes_byte_identical_parquet(tmp_path):
    f = tmp_path / "swarm.toml"
    f.write_text(SMALL_SWARM)
    for d, env in (("on", {}), ("off", {"TORRENTLAB_HUGEPAGES": "0"})):
        r = cli("run", str(f), "-o", str(tmp_path / d), env=env)
        assert r.returncode == 0, r.stderr
    on = sorted(p.name for p in (tmp_path / "on").glob("*.parquet"))
    assert on == sorted(p.name for p in (tmp_path / "off").glob("*.parquet"))
    assert {"summary.parquet", "peers.parquet", "haves.parquet"} <= set(on)
    for name in on:
        assert (tmp_path / "on" / name).read_bytes() == (tmp_path / "off" / name).read_bytes(), name


# ---- bad swarm files through the CLI -----------------------------------------------

BASE = SMALL_SWARM

GROUPS = '[network.groups]\nAS1 = { intra = "2 ms", inter = "5 ms" }\n'

# (name, (old, new) edit of BASE, field, words the message must hold)
BAD = [
    ("no seed class", ('role = "seed"', 'role = "leecher"'), "peers", 'no class has role = "seed"'),
    ("no leecher class", ('role = "leecher"', 'role = "seed"'), "peers", 'no class has role = "leecher"'),
    ("unknown pipeline", ("count = 20", 'count = 20\npipeline = "fast"'), "peers[1].pipeline", '"fast"'),
    ("pipeline depth 0", ("count = 20", "count = 20\npipeline = 0"), "peers[1].pipeline", "between 1 and 1000"),
    ("unknown departure", ("count = 20", 'count = 20\ndeparture = "sometimes"'), "peers[1].departure", "sometimes"),
    ("undefined group", ("count = 20", 'count = 20\ngroup = "AS9"'), "peers[1].group", '"AS9"'),
    ("group not among the groups", ('rtt = "100 ms"\n', GROUPS), "peers[0].group", "missing"),
    ("rtt and groups", ('rtt = "100 ms"\n', 'rtt = "100 ms"\n' + GROUPS), "network.rtt", "not both"),
    ("no torrent size", ('size = "2 MB"\n', ""), "torrent.size", "missing"),
    ("zero upload limit", ('count = 20\nupload_limit = "20 kB/s"', 'count = 20\nupload_limit = "0 kB/s"'),
     "peers[1].upload_limit", "greater than zero"),
    ("ingress loss 1.5", ('rtt = "100 ms"', 'rtt = "100 ms"\ningress_loss = 1.5'), "network.ingress_loss",
     "0 <= p < 1"),
    ("unknown peers field", ("count = 20", 'count = 20\ncolour = "red"'), "peers[1].colour", "unknown field"),
    ("join list of the wrong length", ("count = 20", 'count = 20\njoin = ["0 s", "1 s"]'), "peers[1].join",
     "2 times for 20 peers"),
    ("empty peers", (BASE, "peers = []\n" + BASE[:BASE.index("[[peers]]")]), "peers", "at least one [[peers]]"),
    ("unknown top-level table", ("[[peers]]", "[[nopeers]]"), "nopeers", "unknown field"),
    ("malformed torrent file", ('size = "2 MB"\npiece_size = "256 KiB"', 'file = "garbage.torrent"'),
     "torrent.file", "garbage.torrent"),
    ("a seed that leaves at once", ('role = "seed"', 'role = "seed"\ndeparture = "leave"'), "peers[0].departure",
     '"stay"'),
    ("no handshake", ("count = 20", "count = 20\ntcp = { handshake = false }"), "peers[1].tcp.handshake",
     "handshake"),
    ("torrent file and size", ('size = "2 MB"', 'file = "garbage.torrent"\nsize = "2 MB"'), "torrent.file",
     "not both"),
]


@pytest.fixture(scope="module")
def bad_runs(tmp_path_factory):
    """Every bad case run through `torrentlab run`, in parallel (each is a
    process start): {name: (scenario path, case dir, result)}."""
    cases = {}
    for name, (old, new), _, _ in BAD:
        d = tmp_path_factory.mktemp("bad")
        assert old in BASE, name
        (d / "bad.toml").write_text(BASE.replace(old, new, 1))
        (d / "garbage.torrent").write_bytes(b"\x00\xffthis is not bencode\x13\x37")
        cases[name] = d
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = pool.map(lambda d: cli("run", str(d / "bad.toml"), "-o", str(d / "out")), cases.values())
        return {name: (d / "bad.toml", d, r) for (name, d), r in zip(cases.items(), results, strict=True)}


def test_a_swarm_file_without_peers_says_peers_are_missing(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(BASE[:BASE.index("[[peers]]")])
    r = cli("validate", str(p))
    assert r.returncode == 2
    assert f"{p}: peers: " in r.stderr, r.stderr


@pytest.mark.parametrize("name,edit,field,words", BAD, ids=[b[0] for b in BAD])
def test_a_bad_swarm_file_exits_2_with_one_line_naming_the_file_and_field(bad_runs, name, edit, field, words):
    path, d, r = bad_runs[name]
    assert r.returncode == 2, (r.stdout, r.stderr)
    msg = r.stderr.strip()
    assert "Traceback" not in msg and "panicked" not in msg and "internal error" not in msg
    assert len(msg.splitlines()) == 1, msg
    assert f"{path}: {field}: " in msg and words in msg, msg
    if name == "malformed torrent file":
        assert str(d / "garbage.torrent") in msg and "bencode" in msg, msg
    assert not (d / "out").exists(), "no output directory for a bad scenario"
    assert sorted(p.name for p in d.iterdir()) == ["bad.toml", "garbage.torrent"], "nothing half-written"


def test_a_real_torrent_file_sets_the_size_and_piece_count(tmp_path):
    # A single-file torrent: 1 MB in 256 KiB pieces -> 4 SHA-1 hashes.
    info = b"d6:lengthi1000000e4:name4:file12:piece lengthi262144e6:pieces80:" + b"\x01" * 80 + b"e"
    (tmp_path / "f.torrent").write_bytes(b"d8:announce9:http://x/4:info" + info + b"e")
    (tmp_path / "s.toml").write_text(BASE.replace('size = "2 MB"\npiece_size = "256 KiB"', 'file = "f.torrent"'))
    info = torrentlab.validate(tmp_path / "s.toml")
    assert (info["kind"], info["file_bytes"], info["pieces"]) == ("swarm", 1_000_000, 4)
    # 3 hashes for 4 pieces is refused, naming the file.
    torrent = (tmp_path / "f.torrent").read_bytes()
    (tmp_path / "f.torrent").write_bytes(torrent.replace(b"80:" + b"\x01" * 80, b"60:" + b"\x01" * 60))
    with pytest.raises(torrentlab.ScenarioError) as e:
        torrentlab.validate(tmp_path / "s.toml")
    assert e.value.field == "torrent.file" and "f.torrent" in e.value.detail and "expected 4" in e.value.detail


# ---- the shipped files -------------------------------------------------------------


def test_validate_describes_every_shipped_rao2010_scenario_on_one_line():
    files = sorted(str(p) for p in RAO.glob("*.toml") if not p.name.endswith(".sweep.toml"))
    assert len(files) == 2
    r = cli("validate", *files)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == len(files), r.stdout
    for f, line in zip(files, lines, strict=True):
        assert line.startswith(f"ok: {f}: rao2010-"), line
        assert "swarm of 301 peers (300 leechers), 50 MB in 191 pieces, 43200 s" in line, line


def test_the_rtt_sweep_joins_the_two_upload_limits_and_quick_shrinks_the_swarm():
    s = Sweep.from_file(RAO / "rtt.sweep.toml")
    assert len(s.jobs()) == 9 * 5 * 10
    jobs = s.jobs(quick=True)
    assert len(jobs) == 9 * 5 * 2
    for j in jobs:
        params = dict(j.params)
        peers = j.scenario["peers"]
        assert [peers[0]["upload_limit"], peers[1]["upload_limit"]] == params[LIMITS]
        assert j.scenario["network"]["rtt"] == params["network.rtt"]
        assert peers[1]["count"] == 50 and j.scenario["torrent"]["size"] == "8 MB"
    assert {tuple(dict(j.params)[LIMITS]) for j in jobs} == {
        ("10 kB/s", "10 kB/s"), ("20 kB/s", "20 kB/s"), ("50 kB/s", "20 kB/s"), ("50 kB/s", "50 kB/s"),
        ("100 kB/s", "100 kB/s")}
    full = Sweep.from_file(RAO / "rtt.sweep.toml").jobs()[0].scenario
    assert full["peers"][1]["count"] == 300, "quick overrides must not leak into the full sweep"


def test_the_loss_sweep_runs_the_three_settings_of_the_study_at_each_rtt_and_upload_limit():
    s = Sweep.from_file(RAO / "loss.sweep.toml")
    assert s.points() == 3 * 4 * 3 and len(s.jobs()) == 36 * 10 and len(s.jobs(quick=True)) == 36
    settings = [(j.scenario["tcp"]["tso"], j.scenario["network"]["ingress_loss"]) for j in s.jobs(quick=True)]
    assert sorted(set(settings)) == [(False, 0.0), (False, 0.05), (True, 0.0)]
    assert {(tso, loss) for _, _, tso, loss in LOSS_CELLS} == set(settings)
    cells = set()
    for j in s.jobs(quick=True):
        p, doc = dict(j.params), j.scenario
        assert (p[TSO], p[LOSS]) == (doc["tcp"]["tso"], doc["network"]["ingress_loss"])
        assert [doc["peers"][0]["upload_limit"], doc["peers"][1]["upload_limit"]] == p[LIMITS]
        assert doc["peers"][1]["count"] == 50 and doc["torrent"]["size"] == "8 MB"
        cells.add((p["network.rtt"], p[LIMITS][0], p[TSO], p[LOSS]))
    assert len(cells) == 36
    assert {c[0] for c in cells} == set(SHOWN_RTTS)
    assert {c[1] for c in cells} == {"10 kB/s", "20 kB/s", "50 kB/s", "100 kB/s"}


@pytest.mark.parametrize("values", [
    '["10 kB/s", "20 kB/s"]',                       # values that are not lists
    '[["10 kB/s", "20 kB/s", "30 kB/s"]]',          # a list of 3 for 2 fields
    '[["10 kB/s", "10 kB/s"], ["20 kB/s"]]',        # one good, one short
], ids=["scalars", "too long", "one short"])
def test_a_joined_grid_key_with_values_of_the_wrong_shape_is_a_clear_error(tmp_path, values):
    (tmp_path / "base.toml").write_text(BASE)
    sweep = tmp_path / "bad.sweep.toml"
    key = "peers.0.upload_limit+peers.1.upload_limit"
    sweep.write_text(f'base = "base.toml"\n[grid]\n"{key}" = {values}\n')
    r = cli("sweep", str(sweep), "-o", str(tmp_path / "o"), "-q")
    assert r.returncode == 2, (r.stdout, r.stderr)
    msg = r.stderr.strip()
    assert len(msg.splitlines()) == 1 and "Traceback" not in msg, msg
    assert f"{sweep}: grid.{key}: " in msg and "every value must be a list of 2" in msg, msg
    assert not (tmp_path / "o").exists()


# ---- torrentlab reproduce rao2010 --quick ------------------------------------------


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    base = tmp_path_factory.mktemp("e0")
    out = base / "rao2010"
    r = cli("reproduce", "rao2010", "--quick", "-o", str(out), "-q")
    return out, r


def table(out, name):
    return pq.read_table(out / f"{name}.parquet").to_pandas()


def test_reproduce_quick_writes_every_table_and_figure(quick):
    out, r = quick
    assert r.returncode == 0, r.stderr
    names = {p.name for p in out.iterdir()}
    tables = {"runs", "summary", "loss_tso", "haves", "send_gaps", "payload_lengths", "sends"}
    figures = set(FIGURES)  # tests/test_plots.py checks the legends of each of these
    assert f"{2 * len(figures)} figure files" in r.stdout, r.stdout
    assert names == {f"{t}.parquet" for t in tables} | {f"{f}{e}" for f in figures for e in (".png", ".svg")} | {
        "loss_tso.csv", "manifest.json"}
    for f in figures:
        png, svg = (out / f"{f}.png").read_bytes(), (out / f"{f}.svg").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000, f
        assert b"<svg" in svg[:1000] and len(svg) > 5000, f
    assert [p.name for p in out.parent.iterdir()] == ["rao2010"], "no temporary directory left"


def test_reproduce_quick_every_point_completes_and_the_rtt_sweep_is_9_by_5(quick):
    out, r = quick
    assert r.returncode == 0, r.stderr
    summary = table(out, "summary")
    assert list(dict.fromkeys(summary["sweep"])) == ["rtt", "as", "loss"]
    assert (summary["completed"] == summary["leechers"]).all(), summary[summary["completed"] != summary["leechers"]]
    assert (summary["min_download_time_s"] <= summary["mean_download_time_s"]).all()
    assert (summary["mean_download_time_s"] <= summary["max_download_time_s"]).all()
    assert summary["setting"].is_unique
    counts = summary.groupby("sweep").size()
    assert (counts["rtt"], counts["as"], counts["loss"]) == (9 * 5, 9 * 2, 3 * 4 * 3)
    rtt = summary[summary["sweep"] == "rtt"]
    assert (rtt["runs"] == 2).all() and (rtt["leechers"] == 2 * 50).all()

    runs = table(out, "runs")
    assert len(runs) == 9 * 5 * 2 + 9 * 2 + 3 * 4 * 3
    r_rtt = runs[runs["sweep"] == "rtt"]
    assert r_rtt["network.rtt"].nunique() == 9 and r_rtt[LIMITS].nunique() == 5
    assert (r_rtt.groupby(["network.rtt", LIMITS]).size() == 2).all()
    assert (runs["completed"] == runs["leechers"]).all()
    assert (runs["file_bytes"] == 8_000_000).all() and (runs["pieces"] == 31).all()
    assert set(runs.loc[runs["sweep"] == "as", "leechers"]) == {45}
    # A slower upload limit is slower: 10 kB/s takes longer than 100 kB/s at every RTT.
    by = r_rtt.groupby(["network.rtt", LIMITS])["mean_download_time_s"].mean().unstack()
    assert (by["10 kB/s; 10 kB/s"] > by["100 kB/s; 100 kB/s"]).all()



def test_reproduce_quick_writes_the_loss_table_in_the_study_layout_as_parquet_and_csv(quick):
    out, r = quick
    assert r.returncode == 0, r.stderr
    loss = table(out, "loss_tso")
    csv = pd.read_csv(out / "loss_tso.csv")
    stats = ("s", "sd_s", "min_s", "max_s", "runs")
    assert list(loss.columns) == ["upload_limit", "rtt"] + [f"{n}_{x}" for n, *_ in LOSS_CELLS for x in stats]
    assert list(csv.columns) == list(loss.columns)
    # A row per upload limit (outer) and RTT, a column group per setting.
    assert list(loss["upload_limit"]) == [lim for lim in ("10 kB/s", "20 kB/s", "50 kB/s", "100 kB/s")
                                          for _ in range(3)]
    assert list(loss["rtt"]) == list(SHOWN_RTTS) * 4
    for name, *_ in LOSS_CELLS:
        assert (loss[f"{name}_runs"] == 1).all() and loss[f"{name}_sd_s"].isna().all(), "one run per cell (quick)"
        assert loss[f"{name}_s"].notna().all()
        assert (loss[f"{name}_min_s"] <= loss[f"{name}_s"]).all() and (loss[f"{name}_s"] <= loss[f"{name}_max_s"]).all()
        np.testing.assert_allclose(csv[f"{name}_s"], loss[f"{name}_s"], atol=0.05)
    # Each cell is the loss sweep's run with that setting.
    runs = table(out, "runs")
    cell = runs[(runs["sweep"] == "loss") & (runs["network.rtt"] == "400 ms") & (runs[LIMITS] == "20 kB/s; 20 kB/s")
                & (runs[TSO] == False) & (runs[LOSS] == 0.05)]  # noqa: E712 (an object column)
    assert len(cell) == 1
    row = loss[(loss["rtt"] == "400 ms") & (loss["upload_limit"] == "20 kB/s")].iloc[0]
    assert row["tso_off_loss5_s"] == cell["mean_download_time_s"].iloc[0]
    # Without loss and with TSO off, a cell is the same run as the RTT sweep's at that point (same scenario, seed).
    rtt = runs[(runs["sweep"] == "rtt") & (runs["network.rtt"] == "400 ms") & (runs[LIMITS] == "20 kB/s; 20 kB/s")
               & (runs["seed"] == 1)]
    assert row["tso_off_s"] == rtt["mean_download_time_s"].iloc[0]


def test_reproduce_quick_tso_on_puts_segments_longer_than_the_mss_on_the_wire(quick):
    out, r = quick
    assert r.returncode == 0, r.stderr
    pl = table(out, "payload_lengths")
    loss = pl[pl["sweep"] == "loss"]
    on = loss[loss["tcp.tso"] == True]  # noqa: E712 (an object column of True/False/None)
    off = loss[loss["tcp.tso"] == False]  # noqa: E712
    assert len(on) and len(off)
    assert (on["payload_bytes"] > 1448).any() and on["payload_bytes"].max() <= 65535
    assert (off["payload_bytes"] <= 1448).all()
    # The other sweeps run with TSO off (flash-crowd.toml) or unset (as-placement.toml).
    assert (pl.loc[pl["sweep"] != "loss", "payload_bytes"] <= 1448).all()
    # fig_payload draws each of the three settings at RTT 400 ms.
    at400 = loss[loss["network.rtt"] == "400 ms"]
    assert {(t, x) for t, x in zip(at400[TSO], at400[LOSS], strict=True)} == {
        (tso, x) for _, _, tso, x in LOSS_CELLS}


def test_reproduce_quick_keeps_send_gaps_of_the_drawn_points_and_haves_of_the_first_seed(quick):
    out, r = quick
    assert r.returncode == 0, r.stderr
    gaps = table(out, "send_gaps")
    # Only the first run of the RTT sweep's points at the RTTs fig_send_gaps draws, every upload limit.
    assert set(gaps["sweep"]) == {"rtt"} and set(gaps["seed"]) == {1}
    per_point = gaps.groupby(["network.rtt", LIMITS])["sends"].sum()
    assert set(per_point.index.get_level_values(0)) == set(SHOWN_RTTS)
    assert len(per_point) == 3 * 5 and (per_point > 0).all(), "fig_send_gaps has a curve per limit in each panel"

    haves = table(out, "haves")
    assert set(haves["seed"]) == {1}
    runs = table(out, "runs")
    first = runs[runs["seed"] == 1]
    assert len(haves) == (first["leechers"] * first["pieces"]).sum()
    assert set(haves.groupby("sweep").size().index) == {"rtt", "as", "loss"}


def test_reproduce_quick_logs_every_send_of_one_leecher_with_an_srtt_of_at_least_the_rtt(quick):
    out, r = quick
    assert r.returncode == 0, r.stderr
    sends = table(out, "sends")
    # flash-crowd.toml logs the first leecher (peer 1), kept for seed 1 of the rtt sweep.
    assert set(sends["peer"]) == {1} and set(sends["seed"]) == {1} and set(sends["sweep"]) == {"rtt"}
    assert sends.groupby(["network.rtt", LIMITS]).ngroups == 9 * 5
    assert (sends["bytes"] > 0).all() and (sends["cwnd_bytes"] > 0).all()
    # NaN until a connection's first RTT sample (docs/metrics.md), then never again.
    seen = sends["srtt_ms"].notna().groupby([sends["network.rtt"], sends[LIMITS], sends["conn"]]).cummax()
    assert not (seen & sends["srtt_ms"].isna()).any()
    assert sends["srtt_ms"].notna().mean() > 0.99
    rtt_ms = sends["network.rtt"].str.removesuffix(" ms").astype(float)
    known = sends["srtt_ms"].notna()
    assert (sends.loc[known, "srtt_ms"] >= rtt_ms[known] - 1e-6).all(), "no sample is shorter than the path RTT"
    at_1s = sends.loc[rtt_ms == 1000, "srtt_ms"]
    assert at_1s.median() < 1100, "no queue: the estimate stays near the path RTT"
