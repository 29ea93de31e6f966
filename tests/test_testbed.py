"""The real-client testbed (torrentlab testbed, docs/testbed.md).

Refusals need nothing; the topology tests need root and `ip netns`; the
end-to-end swarm also libtorrent's Python bindings. Each skips with its
reason otherwise. The end-to-end run (1 seed + 2 leechers, 2 MB, 10 Mbit/s
uplinks; about 10 s) runs once: not again under .ci/py310.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys

import pytest

import torrentlab
from conftest import SCENARIOS, cli
from torrentlab import cli as cli_mod
from torrentlab import exceptions
from torrentlab.testbed import netns

TINY = SCENARIOS / "validation" / "tiny-swarm.toml"


def _netns_works() -> str | None:
    """None when namespaces can be built here, else why not."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    if shutil.which("ip") is None or shutil.which("tc") is None:
        return "needs iproute2 (ip, tc)"
    if subprocess.run(["ip", "netns", "list"], capture_output=True).returncode != 0:
        return "`ip netns` does not work here"
    return None


WHY_NOT = _netns_works()
needs_netns = pytest.mark.skipif(WHY_NOT is not None, reason=f"testbed topology: {WHY_NOT}")


def _write(tmp_path, text: str, name: str = "s.toml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


# ---------------------------------------------------------------- refusals (no root needed)


@pytest.mark.parametrize("edit,field,words", [
    (('rtt = "0 s"', 'rtt = "20 ms"'), "network.rtt", "propagation delay"),
    (('client = "libtorrent"\nversion = "2.0"  # libtorrent 2.1, as the testbed runs\n\n[[peers]]',
      'client = "mainline"\n\n[[peers]]'), "peers[0].client", "libtorrent"),
    (('count = 2', 'count = 2\njoin = { poisson = "1 s" }'), "peers[1].join", "Poisson"),
    (('count = 2', 'count = 2\ncc = "nice"'), "peers[1].cc", "congestion control"),
], ids=["rtt", "mainline", "poisson", "cc-nice"])
def test_the_testbed_refuses_what_the_kernel_or_peers_cannot_do(tmp_path, edit, field, words):
    text = TINY.read_text()
    assert edit[0] in text
    f = _write(tmp_path, text.replace(edit[0], edit[1], 1))
    r = cli("testbed", f, "-o", str(tmp_path / "out"))
    assert r.returncode == 2, r.stderr
    assert f"{f}: {field}:" in r.stderr and words in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()


def test_the_testbed_refuses_a_dumbbell(tmp_path):
    r = cli("testbed", str(SCENARIOS / "calibration" / "utp-alone-5mbit-target25.toml"), "-o", str(tmp_path / "o"))
    assert r.returncode == 2
    assert "swarm scenarios" in r.stderr and "Traceback" not in r.stderr


def test_the_testbed_refuses_without_root(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    code = cli_mod.main(["testbed", str(TINY), "-o", str(tmp_path / "out"), "-q"])
    assert code == 2
    assert "needs root" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    code = cli_mod.main(["testbed", "--cleanup"])
    assert code == 2


def test_the_plan_maps_classes_to_libtorrent_settings(tmp_path):
    from torrentlab.testbed import plan

    text = TINY.read_text().replace('version = "2.0"  # libtorrent 2.1, as the testbed runs\n', '')
    text = text.replace('role = "leecher"\nclient = "libtorrent"',
                                    'role = "leecher"\nclient = "utorrent"\ndisposition = 13\nupload_limit = "20 kB/s"')
    text = text.replace('client = "libtorrent"\n\n', 'client = "libtorrent"\ntransport = "utp"\n'
                        'mixed_mode = "prefer_tcp"\nrate_limit_ip_overhead = false\nutp = { target = "25 ms" }\n\n', 1)
    p = plan(_write(tmp_path, text))
    seed, lee = p.peers[0], p.peers[1]
    assert seed.settings["enable_outgoing_utp"] and not seed.settings["enable_outgoing_tcp"]
    assert seed.settings["utp_target_delay"] == 25 and seed.settings["mixed_mode_algorithm"] == 0
    assert seed.settings["rate_limit_ip_overhead"] is False
    assert (lee.settings["enable_outgoing_tcp"], lee.settings["enable_outgoing_utp"],
            lee.settings["enable_incoming_tcp"], lee.settings["enable_incoming_utp"]) == (True, False, True, True)
    assert lee.upload_limit_Bps == 20_000 and lee.settings["utp_target_delay"] == 100
    assert seed.up_bps == 10_000_000 and seed.up_buffer == ("bytes", 125_000) and seed.down_bps is None
    assert any("utorrent" in x for x in p.ignored)
    # --ignore-rtt: runs without the delay, and says so
    far = plan(_write(tmp_path, TINY.read_text().replace('rtt = "0 s"', 'rtt = "40 ms"'), "far.toml"), ignore_rtt=True)
    assert any(x.startswith("network.rtt: 40 ms dropped") for x in far.ignored)


def test_the_plan_says_when_the_installed_libtorrent_follows_another_mixed_mode_rule(tmp_path, monkeypatch):
    plan_mod = importlib.import_module("torrentlab.testbed.plan")  # the module, not testbed.plan the function
    assert plan_mod._series("2.1.1.0") == "2.0" and plan_mod._series("2.0.6") == "2.0"
    assert plan_mod._series("2.0.5") == "1.2" and plan_mod._series("1.2.19.0") == "1.2"
    monkeypatch.setattr(plan_mod, "installed_libtorrent", lambda: "2.1.1.0")
    asked_1_2 = plan_mod.plan(_write(tmp_path, TINY.read_text().replace('version = "2.0"', 'version = "1.2"')))
    assert [x for x in asked_1_2.ignored if ".version:" in x and "2.1.1.0" in x], asked_1_2.ignored
    assert not [x for x in plan_mod.plan(str(TINY)).ignored if ".version:" in x]


def test_the_tables_from_a_testbed_run(tmp_path):
    """tables.build on a made-up run: the peers' logs and one uplink's qdisc samples (no root needed)."""
    from torrentlab.testbed import plan, tables

    p = plan(str(TINY))
    t0 = 1000.0
    ips = ["10.9.0.10", "10.9.0.11", "10.9.0.12"]

    def conn(ip, out, up, down):
        return {"remote_ip": ip, "remote_port": 6881, "transport": "utp", "outgoing": out, "first": t0 + 0.5,
                "last": t0 + 3.0, "up": up, "down": down}

    ev = [[{"t": t0, "ev": "joined"}, {"t": t0 + 0.5, "ev": "choke", "remote_ip": ips[2], "choked": False},
           {"t": t0 + 1.0, "ev": "choke", "remote_ip": ips[1], "choked": False},
           {"t": t0 + 2.0, "ev": "choke", "remote_ip": ips[2], "choked": True},
           {"t": t0 + 3, "ev": "status", "up": 3_000_000, "done": 0, "redundant": 0, "failed": 0, "pieces": 8},
           {"t": t0 + 3, "ev": "conns",
            "conns": [conn(ips[1], False, 1_500_000, 0), conn(ips[2], False, 1_500_000, 0)]}]]
    for i in (1, 2):
        other = ips[3 - i]
        ev.append([{"t": t0, "ev": "joined"}, {"t": t0 + 1.0 + i, "ev": "piece", "piece": 0},
                   {"t": t0 + 1.0 + i, "ev": "finished"},
                   {"t": t0 + 3, "ev": "status", "up": 500_000, "done": 2_000_000, "redundant": 0, "failed": 0,
                    "pieces": 8},
                   {"t": t0 + 3, "ev": "conns", "conns": [conn(ips[0], True, 0, 1_500_000),
                                                          conn(other, i == 2, 500_000, 500_000)]}])
    # peer 0's uplink: 10 packets (15,000 bytes) waiting throughout, 100 packets a second served
    samples = {0: [(t0 + k * 0.1, 15_000, 10, 150_000 * k // 10, 10 * k, 0) for k in range(31)]}
    res = {"plan": p, "t0": t0, "t_end": t0 + 3.0, "timed_out": False, "events": ev, "samples": samples,
           "ips": ips, "lost": [0, 0, 0], "info": {}}
    t = {k: v.to_pandas() for k, v in tables.build(res).items()}
    assert list(t["peers"]["download_time_s"].iloc[1:]) == [2.0, 3.0]
    assert t["summary"]["completed"].iloc[0] == 2 and t["summary"]["end_s"].iloc[0] == 3.0
    c = t["connections"]
    assert len(c) == 3 and set(zip(c["initiator"], c["acceptor"], strict=True)) == {(1, 0), (2, 0), (2, 1)}
    assert c["piece_bytes_forward"].sum() + c["piece_bytes_reverse"].sum() == 4_000_000
    assert t["transports"].set_index("transport").loc["utp", "piece_bytes"] == 4_000_000
    up = t["uplinks"].set_index("peer")
    assert up.loc[0, "mean_delay_ms"] == pytest.approx(100.0)  # Little: 10 packets / 100 packets/s
    assert up.loc[0, "p95_delay_ms"] == pytest.approx(12.0)  # 15,000 bytes at 10 Mbit/s
    assert up.loc[0, "served_packets"] == 300 and up.loc[0, "queue_nonempty_fraction"] == pytest.approx(1.0)
    assert math.isnan(up.loc[1, "mean_delay_ms"])  # no samples of a limited uplink: unknown
    assert len(t["uplink_queue"]) == 31
    k = t["chokes"]
    assert list(zip(k["time_s"], k["peer"], k["remote"], k["choked"].astype(bool), strict=True)) == [
        (0.5, 0, 2, False), (1.0, 0, 1, False), (2.0, 0, 2, True)]
    assert list(t["peers"]["first_unchoked_s"].iloc[1:]) == [1.0, 0.5]
    assert t["summary"]["first_unchoke_s"].iloc[0] == 0.5
    assert t["summary"]["mean_time_to_first_unchoke_s"].iloc[0] == pytest.approx(0.75)
    assert list(t["piece_spread"]["copies"])[:1] == [2]


def test_the_validate_sim_report_compares_two_sides(tmp_path):
    """The report's arithmetic, on two simulator runs standing for both sides (no root needed)."""
    from torrentlab import validate_sim

    torrentlab.run(str(TINY), seed=1).write(tmp_path / "testbed-0")
    torrentlab.run(str(TINY), seed=2).write(tmp_path / "sim-0")
    validate_sim.write_report(tmp_path, "tiny-swarm", {"scenario": str(TINY), "torrentlab": "x", "kernel": "k"})
    for f in ("report.md", "report.json", "completion.png", "queue_delay.png"):
        assert (tmp_path / f).stat().st_size > 0, f
    r = json.loads((tmp_path / "report.json").read_text())
    m = r["compare"]["metrics"]
    assert len(r["testbed"]["download_times_s"]) == 2 and len(r["sim"]["download_times_s"]) == 2
    assert 0 < m["median_download_s"]["testbed"] < 60 and 0 <= r["compare"]["ks_download"]["D"] <= 1
    assert m["utp_byte_share"]["testbed"] == 1.0  # the libtorrent profile dials uTP first
    assert m["seed_mean_queue_delay_ms"]["sim"] > 0 and 0 < m["seed_utilisation"]["sim"] <= 1
    flagged = {k for k in ("median_download_s", "mean_queue_delay_ms") if abs(m[k]["rel_diff"]) > 0.15}
    assert set(r["compare"]["flagged"]) == flagged
    assert "| median download time (s) |" in (tmp_path / "report.md").read_text()
    assert f"| {tmp_path.name} | 1/1 |" in validate_sim.table([str(tmp_path)])


def test_sim_only_runs_the_simulator_side_again_and_keeps_the_testbed_runs(tmp_path):
    """validate-sim --sim-only on a made-up result (a simulator run stands for the testbed's; no root needed)."""
    from torrentlab.output import atomic_dir

    out = tmp_path / "vs"
    with atomic_dir(out, kind="validate-sim", scenario="tiny-swarm", scenario_kind="swarm", seed=1) as tmp:
        torrentlab.run(str(TINY), seed=7).write(tmp / "testbed-0")
        (tmp / "sim-0").mkdir()
        (tmp / "sim-0" / "stale").write_text("from an older model")
    kept = (out / "testbed-0" / "peers.parquet").read_bytes()
    r = cli("validate-sim", str(TINY), "-o", str(out), "--sim-only", "-q")
    assert r.returncode == 0, r.stderr
    assert (out / "testbed-0" / "peers.parquet").read_bytes() == kept
    assert not (out / "sim-0" / "stale").exists() and (out / "sim-0" / "peers.parquet").is_file()
    rep = json.loads((out / "report.json").read_text())
    assert rep["sim"]["runs"] == 1 and rep["info"]["sim_rerun"]
    # Refused where there are no testbed runs to keep: exit 2, the directory untouched.
    other = tmp_path / "plain"
    torrentlab.run(str(TINY), seed=1).write(other)
    before = sorted(p.name for p in other.iterdir())
    r = cli("validate-sim", str(TINY), "-o", str(other), "--sim-only", "-q")
    assert r.returncode == 2 and "not a validate-sim result" in r.stderr
    assert sorted(p.name for p in other.iterdir()) == before


# ---------------------------------------------------------------- topology (root)


def _links_in_root_ns() -> set[str]:
    r = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True)
    return {line.split(":")[1].strip().split("@")[0] for line in r.stdout.splitlines()}


@needs_netns
def test_topology_build_and_teardown_are_idempotent():
    before = _links_in_root_ns()
    assert netns.our_namespaces("tst") == []
    up = [netns.Link(1_000_000, ("bytes", 125_000)), netns.Link(2_000_000, ("packets", 20)), None]
    topo = netns.Topology("tst", 241, up, [None, netns.Link(5_000_000, ("bytes", 50_000)), None])
    try:
        topo.up()
        assert sorted(netns.our_namespaces("tst")) == sorted(topo.namespaces())
        q = subprocess.run(["tc", "-n", topo.modem(1), "qdisc", "show", "dev", "wan"], capture_output=True, text=True)
        assert "tbf" in q.stdout and "pfifo" in q.stdout and "limit 20p" in q.stdout
        sock = netns.netlink_in(topo.modem(0))
        st = netns.root_qdisc(sock, netns.ifindex(topo.modem(0), "wan"))
        sock.close()
        assert st is not None and st.backlog_bytes == 0
        with pytest.raises(exceptions.TestbedError, match="exist already"):
            netns.Topology("tst", 241, up, [None] * 3).up()
    finally:
        topo.down()
    assert netns.our_namespaces("tst") == []
    topo.down()  # again: nothing to do, no error
    assert netns.cleanup("tst") == {"processes": 0, "namespaces": 0, "scratch": 0}
    assert _links_in_root_ns() == before, "nothing of ours in the root namespace"


@needs_netns
def test_cleanup_removes_what_a_killed_run_left_and_a_second_cleanup_is_a_no_op():
    topo = netns.Topology("tsk", 242, [netns.Link(1_000_000, ("bytes", 10_000))] * 2, [None] * 2)
    topo.up()
    # a process left running in a namespace, as after a SIGKILL of the orchestrator
    sleeper = subprocess.Popen(["ip", "netns", "exec", topo.ns(0), "sleep", "600"])
    os.makedirs("/dev/shm/tlttsk-run", exist_ok=True)
    found = netns.cleanup("tsk")
    assert found == {"processes": 1, "namespaces": 5, "scratch": 1}
    assert sleeper.wait(timeout=10) != 0
    assert netns.our_namespaces("tsk") == [] and not os.path.exists("/dev/shm/tlttsk-run")
    assert netns.cleanup("tsk") == {"processes": 0, "namespaces": 0, "scratch": 0}
    r = cli("testbed", "--cleanup", "--prefix", "tsk")
    assert r.returncode == 0 and "deleted 0 namespaces" in r.stdout


@needs_netns
def test_a_cleanup_leaves_a_live_run_alone():
    from torrentlab.testbed import orchestrate

    topo = netns.Topology("tsb", 244, [None], [None])
    lock = orchestrate._lock("tsb")  # as a live run holds it
    try:
        topo.up()
        found = orchestrate.cleanup()
        assert "tsb" in found["busy"] and sorted(netns.our_namespaces("tsb")) == sorted(topo.namespaces())
    finally:
        os.close(lock)
    found = orchestrate.cleanup("tsb")  # its run is gone now
    assert found["namespaces"] == 3 and found["busy"] == [] and netns.our_namespaces("tsb") == []


# ---------------------------------------------------------------- end to end (root, libtorrent)


@needs_netns
@pytest.mark.skipif(importlib.util.find_spec("libtorrent") is None,
                    reason="testbed end to end: needs libtorrent's Python bindings (pip install libtorrent)")
@pytest.mark.skipif(sys.version_info[:2] == (3, 10), reason="testbed end to end: runs once, on the main Python "
                                                          "(.ci/py310 reruns the suite)")
def test_a_small_swarm_runs_end_to_end_on_real_peers(tmp_path):
    out = tmp_path / "tb"
    r = cli("testbed", str(TINY), "-o", str(out), "--prefix", "t", "--subnet", "243", "-q")
    assert r.returncode == 0, r.stderr
    assert netns.our_namespaces("t") == [], "the run tore its namespaces down"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kind"] == "testbed" and manifest["scenario"] == "tiny-swarm"
    tables = torrentlab.load(out)
    sim = torrentlab.run(str(TINY)).tables  # the simulator's tables: the same names and columns
    assert set(sim) <= set(tables)
    for name in sim:
        assert list(tables[name].columns) == sim[name].column_names, name
    peers = tables["peers"]
    lee = peers[peers["role"] == "leecher"]
    assert len(lee) == 2
    assert all(math.isfinite(t) and 0 < t < 120 for t in lee["download_time_s"])
    assert list(lee["bytes_down"]) == [2_000_000, 2_000_000]
    s = tables["summary"].iloc[0]
    assert s["completed"] == 2 and s["file_bytes"] == 2_000_000
    # the libtorrent profile dials uTP first: the piece bytes went over uTP
    tr = tables["transports"].set_index("transport")
    assert tr.loc["utp", "piece_bytes"] >= 4_000_000 and tr.loc["tcp", "piece_bytes"] == 0
    # every connection's bytes, counted at both ends, add up to what the peers uploaded
    assert tr.loc["utp", "piece_bytes"] == peers["bytes_up"].sum()
    up = tables["uplinks"]
    seed_up = up[up["peer"] == 0].iloc[0]
    assert seed_up["capacity_bps"] == 10_000_000 and seed_up["buffer_bytes"] == 125_000
    assert seed_up["served_bytes"] > 1_000_000 and 0 < seed_up["utilisation"] <= 1
    q = tables["uplink_queue"]
    assert set(q["peer"]) <= {0, 1, 2} and q["bytes"].max() <= 125_000
    info = json.loads((out / "testbed.json").read_text())
    assert info["libtorrent"].startswith("2.")
