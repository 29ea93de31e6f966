"""End to end: `torrentlab reproduce bufferbloat-voip --quick` (E3): the
household's ping and call beside BitTorrent, with and without pacing."""

import pyarrow.parquet as pq
import pytest

from conftest import cli

#: One-way to a remote host (60 ms RTT) and a 200-byte call packet on the
#: modem's 416 kbit/s link, ms.
CALL_IDLE_UP_MS = 30.0 + 200 * 8 / 416e3 * 1e3
#: An 815-byte packet on the modem's link, ms: what a call packet waits
#: behind at most when the client paces voip-friendly.
PACED_PACKET_MS = 815 * 8 / 416e3 * 1e3


@pytest.fixture(scope="module")
def e3(tmp_path_factory):
    out = tmp_path_factory.mktemp("e3") / "e3"
    r = cli("reproduce", "bufferbloat-voip", "--quick", "-o", str(out), "-q")
    assert r.returncode == 0, r.stderr
    return out, r


def test_reproduce_quick_runs_every_case_and_writes_its_tables_and_figures(e3):
    out, r = e3
    runs = pq.read_table(out / "runs.parquet").to_pandas()
    assert len(runs) == 38 and runs["case"].is_unique
    cases = pq.read_table(out / "cases.parquet").to_pandas()
    assert list(cases["case"]) == list(runs["case"])
    ping = pq.read_table(out / "ping.parquet").to_pandas()
    # 40 s, a probe every 250 ms on average until a second before the end.
    assert ping.groupby("case").size().between(120, 195).all()
    for fig in ("fig_ping_over_time", "fig_voip_mainline", "fig_voip_libtorrent", "fig_throughput", "fig_summary"):
        assert (out / f"{fig}.png").stat().st_size > 5000, fig
        assert (out / f"{fig}.svg").is_file()
    assert "ping +mean" in r.stdout


def test_the_idle_line_pings_at_its_round_trip_and_the_call_alone_barely_moves_it(e3):
    out, _ = e3
    runs = pq.read_table(out / "runs.parquet").to_pandas().set_index("case")
    idle = runs.loc["idle"]
    assert abs(idle["ping_mean_increase_ms"]) < 0.01 and idle["ping_spikes_over_1s"] == 0
    assert runs.loc["voip-alone", "ping_mean_increase_ms"] < 5
    assert abs(runs.loc["voip-alone", "voip_out_mean_delay_ms"] - CALL_IDLE_UP_MS) < 5


def test_a_voip_friendly_client_holds_a_call_packet_behind_at_most_one_paced_packet(e3):
    out, _ = e3
    runs = pq.read_table(out / "runs.parquet").to_pandas()
    paced = runs[(runs["pacing"] == "voip-friendly") & runs["case"].str.startswith("call + ")]
    assert len(paced) == 2
    # Behind at most one 815-byte packet, a few small ones (ACKs, probes,
    # requests) and the call's own packet in service.
    bound = CALL_IDLE_UP_MS + 2 * PACED_PACKET_MS + 10
    assert (paced["voip_out_p99_delay_ms"] < bound).all(), paced[["case", "voip_out_p99_delay_ms"]]
    # Its upload stays below the pacer's 50 x 763 B/s at the 47 kB/s cap.
    capped = runs[(runs["pacing"] == "voip-friendly") & (runs["cap_kBps"] == 47)]
    assert len(capped) == 2 and (capped["bt_up_kBps"] < 50 * 763 / 1e3).all()


def test_an_unpaced_upload_near_the_line_rate_raises_ping_above_the_idle_lines(e3):
    out, _ = e3
    runs = pq.read_table(out / "runs.parquet").to_pandas().set_index("case")
    idle = runs.loc["idle", "ping_mean_ms"]
    assert runs.loc["ftp-up-47", "ping_mean_ms"] > idle + 20
    for client in ("mainline", "libtorrent"):
        assert runs.loc[f"bt-up-47 {client} off", "ping_max_ms"] > idle + 20


def test_a_household_run_reports_progress_by_time_not_by_pieces():
    import torrentlab
    from conftest import SCENARIOS

    seen = []
    res = torrentlab.run(SCENARIOS / "bufferbloat-voip" / "call-beside-paced-seed.toml",
                         progress=lambda t, done: seen.append((t, done)))
    assert seen and all(done is None for _, done in seen), seen[:3]
    assert seen[-1][0] == 60.0 and res.summary["end_s"][0] == 60.0
