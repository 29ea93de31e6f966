#!/usr/bin/env python3
"""What the Linux kernel does with the congestion window of an
application-limited sender, for comparison with torrentlab's
`cwnd_validation` (docs/model.md, docs/validation-ns3.md).

Over loopback, for CUBIC and Reno: 200 writes of 1,380 bytes (a BitTorrent
limiter's write) 5 ms apart, each acknowledged long before the next, then one
3 MB write that fills the window. After each phase it prints the kernel's
`cwnd` (packets) from `ss -tin`. A kernel that grew the window on every ACK
would show about 210 packets after the first phase.

    python3 bench/linux_cwnd.py

Needs Linux, `ss` (iproute2) and the controllers in
`/proc/sys/net/ipv4/tcp_available_congestion_control`.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

WRITES, WRITE_BYTES, GAP_S, BURST_BYTES = 200, 1380, 0.005, 3_000_000


def ss_cwnd(port: int) -> int:
    out = subprocess.run(["ss", "-tin", "dst", f"127.0.0.1:{port}"], capture_output=True, text=True,
                         check=True).stdout
    for word in out.split():
        if word.startswith("cwnd:"):
            return int(word.split(":")[1])
    raise RuntimeError(f"no cwnd in `ss` output:\n{out}")


def run(cc: str) -> tuple[int, int]:
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        port = srv.getsockname()[1]

        def sink() -> None:
            conn, _ = srv.accept()
            with conn:
                while conn.recv(1 << 16):
                    pass

        threading.Thread(target=sink, daemon=True).start()
        with socket.socket() as s:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.connect(("127.0.0.1", port))
            for _ in range(WRITES):
                s.sendall(b"x" * WRITE_BYTES)
                time.sleep(GAP_S)
            limited = ss_cwnd(port)
            s.sendall(b"y" * BURST_BYTES)
            time.sleep(0.5)
            return limited, ss_cwnd(port)


def main() -> int:
    avail = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
    if not avail.exists():
        sys.exit("needs Linux (no /proc/sys/net/ipv4/tcp_available_congestion_control)")
    have = avail.read_text().split()
    for cc in ("cubic", "reno"):
        if cc not in have:
            print(f"{cc}: not available in this kernel")
            continue
        limited, burst = run(cc)
        print(f"{cc}: cwnd {limited} packets after {WRITES} application-limited writes, {burst} after a "
              f"{BURST_BYTES // 1_000_000} MB write")
    return 0


if __name__ == "__main__":
    sys.exit(main())
