"""Per-socket TCP congestion control for programs that do not choose one.

libtorrent never sets ``TCP_CONGESTION``; its sockets take their namespace's
default (``net.ipv4.tcp_congestion_control``). A namespace other than the
host's may only choose a controller in the host's
``tcp_allowed_congestion_control`` (reno, and what the host allows), so
for the others (e.g. cubic when the host allows only reno and bbr) the peer
process is started with a small ``LD_PRELOAD`` library that sets
``TCP_CONGESTION`` (a root may set any controller the kernel has) on every
TCP socket it creates; sockets accepted from a listener inherit the
listener's controller. The library is compiled once with the system's C
compiler into a cache directory.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from torrentlab.exceptions import TestbedError

#: The environment variable the library reads: the controller's kernel name.
ENV = "TORRENTLAB_TCP_CC"

SOURCE = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int socket(int domain, int type, int protocol) {
    static int (*real)(int, int, int);
    if (!real) real = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
    int fd = real(domain, type, protocol);
    if (fd >= 0 && (domain == AF_INET || domain == AF_INET6) && (type & 0xf) == SOCK_STREAM) {
        const char *cc = getenv("TORRENTLAB_TCP_CC");
        if (cc && *cc) setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, strlen(cc));
    }
    return fd;
}
"""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "torrentlab"


def library() -> Path:
    """The compiled shim (built on first use). TestbedError without a C compiler."""
    digest = hashlib.sha256(SOURCE.encode()).hexdigest()[:12]
    lib = cache_dir() / f"ccshim-{digest}.so"
    if lib.exists():
        return lib
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        raise TestbedError("setting a TCP congestion control outside the host's tcp_allowed_congestion_control "
                           "needs a C compiler (cc) to build a small LD_PRELOAD library; install one, or add "
                           "the controller to net.ipv4.tcp_allowed_congestion_control")
    lib.parent.mkdir(parents=True, exist_ok=True)
    src = lib.with_suffix(".c")
    src.write_text(SOURCE)
    tmp = lib.with_suffix(f".so.{os.getpid()}")
    r = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(tmp), str(src), "-ldl"], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise TestbedError(f"building the congestion-control library failed: {r.stderr.strip()[:400]}")
    os.replace(tmp, lib)
    return lib
