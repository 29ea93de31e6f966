"""Packet captures (``[capture]``, docs/capture.md): ``torrentlab run`` writes
one pcapng file per captured peer and an index, and Wireshark's own
dissectors read them: tshark finds no malformed packet and no error, and
counts as many BitTorrent handshakes, ``piece`` and ``have`` messages and uTP
data packets, each way, as the simulator did.

The tshark tests are skipped only when ``tshark`` is not installed (CI
installs Debian's package)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import SCENARIOS, cli

TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark (Debian package `tshark`) is not installed; "
                                                         "CI installs it")

#: 1 seed + 2 leechers over TCP and uTP, every peer captured (the shipped
#: example; crates/sim/tests/capture.rs runs it too).
MIXED = (SCENARIOS / "capture" / "mixed-swarm.toml").read_text()

#: What each count is in tshark's fields.
KINDS = ("handshakes", "pieces", "haves", "utp_data_packets")


@pytest.fixture(scope="module")
def result(tmp_path_factory) -> Path:
    """The result directory of `torrentlab run` on :data:`MIXED`."""
    d = tmp_path_factory.mktemp("capture")
    (d / "mixed.toml").write_text(MIXED)
    r = cli("run", str(d / "mixed.toml"), "-o", str(d / "out"), "--quiet")
    assert r.returncode == 0, r.stderr
    return d / "out"


def test_run_writes_one_pcapng_per_captured_peer_and_an_index_beside_the_tables(result):
    names = sorted(p.name for p in (result / "capture").iterdir())
    assert names == ["capture.json", "peer-0.pcapng", "peer-1.pcapng", "peer-2.pcapng"]
    for n in names[1:]:
        head = (result / "capture" / n).read_bytes()[:12]
        assert head[:4] == b"\x0a\x0d\x0d\x0a" and head[8:12] == b"\x4d\x3c\x2b\x1a", "a little-endian pcapng section"
    index = json.loads((result / "capture" / "capture.json").read_text())
    assert [f["address"] for f in index["files"]] == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    assert (result / "summary.parquet").exists() and (result / "manifest.json").exists()


def test_a_capture_of_a_peer_that_does_not_exist_is_refused_naming_the_field(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text(MIXED.replace('peers = [0, "tcp", "utp"]', "peers = [0, 3]"))
    r = cli("validate", str(p))
    assert r.returncode == 2
    assert "capture.peers[1]" in r.stdout + r.stderr and "0 to 2" in r.stdout + r.stderr


def _tshark(path: Path, *args: str) -> str:
    """tshark on a capture, uTP decoded on the peers' port."""
    r = subprocess.run([TSHARK, "-r", str(path), "-n", "-d", "udp.port==6881,bt-utp", *args],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _tshark_counts(path: Path, address: str) -> dict[str, Counter]:
    """Handshakes, piece and have messages and uTP data packets tshark finds,
    sent by `address` and received by it."""
    out = _tshark(path, "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=,",
                  "-e", "ip.src", "-e", "bittorrent.protocol.name", "-e", "bittorrent.msg.type", "-e", "bt-utp.type")
    counts = {"sent": Counter(), "received": Counter()}
    for line in out.splitlines():
        src, names, types, utp = (line.split("\t") + [""] * 4)[:4]
        c = counts["sent" if src == address else "received"]
        c["handshakes"] += sum(1 for n in names.split(",") if n)
        msgs = [t for t in types.split(",") if t]
        c["pieces"] += msgs.count("7")
        c["haves"] += msgs.count("4")
        c["utp_data_packets"] += utp == "0"
    return counts


@needs_tshark
def test_tshark_finds_no_malformed_packet_and_no_error_in_any_capture(result):
    for peer in range(3):
        bad = _tshark(result / "capture" / f"peer-{peer}.pcapng", "-Y", "_ws.malformed || _ws.expert.severity == error")
        assert bad.strip() == "", f"peer {peer}:\n{bad[:2000]}"


@needs_tshark
def test_tshark_counts_the_handshakes_pieces_haves_and_utp_data_packets_the_simulator_counted(result):
    summary = pq.read_table(result / "summary.parquet").to_pandas().iloc[0]
    lost = summary["network_dropped_packets"] + summary["network_lost_packets"]
    assert lost == 0, "the counts agree when nothing is lost on the way"
    index = json.loads((result / "capture" / "capture.json").read_text())
    for f in index["files"]:
        got = _tshark_counts(result / "capture" / f["file"], f["address"])
        for way in ("sent", "received"):
            want = {k: f[way][k] for k in KINDS}
            assert {k: got[way][k] for k in KINDS} == want, f"peer {f['peer']} {way}"
    # Every kind was seen, both ways, by someone (the test could not pass on empty captures).
    seen = Counter()
    for f in index["files"]:
        for way in ("sent", "received"):
            seen.update({k: f[way][k] for k in KINDS})
    assert all(seen[k] > 0 for k in KINDS), seen
