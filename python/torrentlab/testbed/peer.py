"""One real peer: a libtorrent session in its own network namespace.

Started by :mod:`torrentlab.testbed.orchestrate` as
``ip netns exec NS python -m torrentlab.testbed.peer CONFIG.json``. It sets
up its session (settings from the scenario's class, see
:mod:`torrentlab.testbed.plan`), adds the torrent (a seed: its content is
there; a leecher: paused), writes ``ready`` and waits for one line on stdin:
the start time ``t0`` (Unix seconds). At ``t0 + join_s`` it resumes the
torrent and dials the peers in its ``connect`` list (those that joined
before it, as a tracker would have listed them). It then logs, as JSON lines
in its events file (``t``: Unix seconds):

- ``piece`` (``piece``: index) for every piece it completes and checks;
- ``finished`` when it has every piece;
- ``status`` every second and at the end: payload bytes up and down, wanted
  bytes done, redundant and failed bytes, pieces;
- ``tcp_cc`` at the end: the congestion controls of the TCP sockets it held;
- ``conns`` at the end: every connection it saw (remote address, transport,
  who dialled, first and last time seen, payload bytes each way).

SIGTERM ends it: the last ``status`` and ``conns`` are written first.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from typing import Any

#: How often (s) connections are polled for their byte counts (also the
#: resolution of a connection's opened and closed times).
POLL_S = 0.5
#: libtorrent's uTP session counters logged every second ("utp" events)
UTP_COUNTERS = ("utp_samples_above_target", "utp_samples_below_target", "utp_packet_loss", "utp_timeout",
                "utp_fast_retransmit", "utp_packets_in", "utp_payload_pkts_out")


class Log:
    def __init__(self, path: str) -> None:
        self.f = open(path, "a", buffering=1)

    def __call__(self, ev: str, **kw: Any) -> None:
        self.f.write(json.dumps({"t": time.time(), "ev": ev, **kw}) + "\n")


#: peer_info flag bits of libtorrent 2.x (peer_info.hpp), where the bindings do not name them
_FLAG_BITS = {"outgoing_connection": 1 << 5, "utp_socket": 1 << 17, "choked": 1 << 1}


def _flag(lt, name: str) -> int:
    return int(getattr(lt.peer_info, name, _FLAG_BITS[name]))


def main(argv: list[str]) -> int:
    # Die with the orchestrator (ip netns exec execs us: our parent is it).
    import ctypes
    import os

    import libtorrent as lt

    parent = os.getppid()
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        return 1
    cfg = json.loads(open(argv[0]).read())
    log = Log(cfg["events"])
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    signal.signal(signal.SIGINT, lambda *a: stop.set())

    cat = lt.alert.category_t
    settings = {
        "listen_interfaces": f"{cfg['ip']}:{cfg['port']}",
        "outgoing_interfaces": "",
        "enable_dht": False,
        "enable_lsd": False,
        "enable_upnp": False,
        "enable_natpmp": False,
        "user_agent": "torrentlab-testbed",
        "alert_mask": int(cat.status_notification | cat.piece_progress_notification | cat.error_notification
                          | cat.peer_notification | cat.connect_notification),
        "upload_rate_limit": int(cfg.get("upload_limit_Bps") or 0),
        "download_rate_limit": 0,
        # Two seeds keep their connection (libtorrent closes it by default): the
        # byte counts of every connection are read at the end, and libtorrent
        # updates them only on its one-second tick.
        "close_redundant_connections": False,
        **cfg["settings"],
    }
    # No default plugins: no peer exchange (ut_pex), as the model's peers
    # learn of each other only from the tracker; no ut_metadata, smart_ban.
    ses = lt.session(settings, 0)
    # Rate limits ignore "local" peers (private addresses such as ours) unless
    # every address is put in the global peer class.
    filt = lt.ip_filter()
    filt.add_rule("0.0.0.0", "255.255.255.255", 1 << lt.session.global_peer_class_id)
    ses.set_peer_class_filter(filt)

    atp = lt.add_torrent_params()
    atp.ti = lt.torrent_info(cfg["torrent"])
    atp.save_path = cfg["save_path"]
    if cfg["role"] == "seed":
        atp.flags = lt.torrent_flags.seed_mode | lt.torrent_flags.paused
    else:
        atp.flags = lt.torrent_flags.paused
    atp.flags &= ~lt.torrent_flags.auto_managed
    h = ses.add_torrent(atp)

    # listening?
    deadline = time.time() + 20
    listening = False
    while not listening and time.time() < deadline and not stop.is_set():
        for a in ses.pop_alerts():
            if isinstance(a, lt.listen_succeeded_alert):
                listening = True
            elif isinstance(a, lt.listen_failed_alert):
                log("error", what=f"listen failed: {a.message()}")
                return 1
        time.sleep(0.02)
    if not listening:
        log("error", what="not listening after 20 s")
        return 1
    log("ready")
    line = sys.stdin.readline()
    if not line.strip():
        return 0
    t0 = float(line)
    while time.time() < t0 + cfg["join_s"] and not stop.is_set():
        time.sleep(min(0.01, max(0.0, t0 + cfg["join_s"] - time.time())))
    h.resume()
    log("joined")
    for ip, port in cfg["connect"]:
        h.connect_peer((ip, port), 0)

    utp_flag = _flag(lt, "utp_socket")
    out_flag = _flag(lt, "outgoing_connection")
    choked_flag = _flag(lt, "choked")
    conns: dict[str, dict[str, Any]] = {}
    # Whom we choke, per remote address, as last polled: a change is logged
    # ("choke" events, at the poll's resolution). Every peer starts choked.
    choking: dict[str, bool] = {}

    def poll() -> None:
        now = time.time()
        for p in h.get_peer_info():
            ip, port = p.ip
            utp = bool(p.flags & utp_flag)
            key = f"{ip}:{port}:{'utp' if utp else 'tcp'}"
            c = conns.get(key)
            if c is None:
                c = conns[key] = {"remote_ip": ip, "remote_port": port, "transport": "utp" if utp else "tcp",
                                  "outgoing": bool(p.flags & out_flag), "first": now}
            c.update(last=now, up=int(p.total_upload), down=int(p.total_download))
            choked = bool(p.flags & choked_flag)
            if choking.get(ip, True) != choked:
                choking[ip] = choked
                log("choke", remote_ip=ip, choked=choked)

    cc_seen: set[str] = set()

    def tcp_cc() -> None:
        """The congestion control of every TCP socket this process holds."""
        import os
        import socket

        for fd in os.listdir("/proc/self/fd"):
            try:
                if not os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                    continue
                s = socket.socket(fileno=os.dup(int(fd)))
            except OSError:
                continue
            try:
                if s.type == socket.SOCK_STREAM and s.family in (socket.AF_INET, socket.AF_INET6):
                    cc_seen.add(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode())
            except OSError:
                pass
            finally:
                s.close()

    # libtorrent's uTP counters, logged every second: whether its LEDBAT
    # sees its delay samples above or below target, its losses and timeouts.
    # (the bindings hand the values over as a dict by metric name)
    metrics = {m.name for m in lt.session_stats_metrics()}
    utp_counters = {k: f"utp.{k}" for k in UTP_COUNTERS if f"utp.{k}" in metrics}

    def status(final: bool = False) -> None:
        if utp_counters:
            ses.post_session_stats()
        s = h.status()
        log("status", final=final, up=int(s.total_payload_upload), down=int(s.total_payload_download),
            done=int(s.total_wanted_done), wanted=int(s.total_wanted), redundant=int(s.total_redundant_bytes),
            failed=int(s.total_failed_bytes), pieces=int(s.num_pieces))

    finished = cfg["role"] == "seed"
    last_poll = last_status = 0.0
    while not stop.is_set():
        for a in ses.pop_alerts():
            if isinstance(a, lt.piece_finished_alert):
                log("piece", piece=int(a.piece_index))
            elif isinstance(a, lt.torrent_finished_alert) and not finished:
                finished = True
                log("finished")
                # every byte it downloaded, before connections between seeds close
                poll()
            elif isinstance(a, (lt.torrent_error_alert, lt.file_error_alert)):
                log("error", what=a.message())
            elif isinstance(a, lt.session_stats_alert):
                log("utp", **{k: int(a.values.get(name, 0)) for k, name in utp_counters.items()})
        now = time.time()
        if now - last_poll >= POLL_S:
            last_poll = now
            poll()
            tcp_cc()
        if now - last_status >= 1.0:
            last_status = now
            status()
        ses.wait_for_alert(50)  # ms: wakes at the next alert, or to poll
    poll()
    status(final=True)
    if utp_counters and ses.wait_for_alert(500) is not None:  # the last counters, posted by status()
        for a in ses.pop_alerts():
            if isinstance(a, lt.session_stats_alert):
                log("utp", final=True, **{k: int(a.values.get(name, 0)) for k, name in utp_counters.items()})
    tcp_cc()
    log("tcp_cc", names=sorted(cc_seen))
    log("conns", conns=list(conns.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
