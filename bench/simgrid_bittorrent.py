#!/usr/bin/env python3
"""SimGrid flow-level speed reference for torrentlab's swarm benchmark.

The torrentlab benchmark (scenarios/bench/rao2010-rtt400-20k.toml) is a flash
crowd: 1 seed + 300 leechers join at t = 0, a 50 MB file, every peer's upload
limited to 20 kB/s, RTT 400 ms, everyone stays until the last leecher is done.
torrentlab simulates it packet by packet over TCP. This script runs a swarm
of the same shape in SimGrid (Python bindings, PyPI `simgrid`), where each
message is one *flow* whose rate comes from max-min sharing of the links it
crosses: no packets, no TCP dynamics. It is a speed reference (how long does a
mature simulator take to play out a swarm of this size), not a fidelity one.

The peer protocol is modelled on SimGrid's own BitTorrent example
(examples/cpp/app-bittorrent: tracker, handshake/bitfield/interested,
one-slot choker rotated every 30 s with a 1-in-3 optimistic round, random
first / rarest first / end game piece picker, everyone polling its mailbox and
sleeping 1 s when idle). Its piece model is kept: a file is P pieces of B
blocks. In the C++ example the piece bitfield is a 32-bit word, so P <= 32,
and the default here is that maximum. To reach 50 MB with 32 pieces, a piece
is 1,562,500 bytes. The example's block bitfield is a 64-bit word
(P * B <= 64), which at 32 pieces would force 2 blocks of 781,250 bytes. With
such blocks the example's protocol runs away at 20 kB/s: a block takes longer
than a 30 s choke round, the flow goes on after the CHOKE, and every new
UNCHOKE adds another request (5 leechers had not finished after 12 simulated
hours). So blocks keep the example's size instead (BLOCK_SIZE = 16384): by
default a piece is 100 blocks of 15,625 bytes, 50,000,000 bytes in all
(`--blocks-per-piece 2` gives the strict 64-block layout). A request asks for
2 blocks (the example's BLOCKS_REQUESTED), 31,250 bytes.

Deliberate differences from the C++ example, all listed in bench/README.md:

* A PIECE message carries block_length * block_size bytes (the example always
  sends one block's worth, whatever block_length says), so file_bytes really
  cross the network.
* Each peer has a control mailbox and a data mailbox (PIECE only). SimGrid
  delivers a permanent-receiver mailbox's messages in the order they were
  sent, so with one mailbox every control message waits behind the PIECE
  flows sent before it (`--single-mailbox` restores the example's behaviour).
* The tracker's mailbox has a permanent receiver, so a flash crowd of 301
  queries is answered at once instead of one per simulated second; its answer
  goes to a mailbox of its own so that it cannot be mistaken for a handshake.
* The run stops when the last leecher has the whole file (the example runs to
  a fixed deadline); `--max-sim-seconds` is a cap.

The platform is a star: each host has an up link (the upload limit, default
20 kB/s) and a down link (unlimited), each with a latency of RTT/4, so a
message crosses up + down = RTT/2 one way. The network model is SimGrid's
`raw` one (time = latency + size/bandwidth, max-min fair sharing, no TCP
gamma, no latency/bandwidth correction factors, no cross traffic).
SimGrid's Python bindings always use the `thread` context factory: each actor
is an OS thread, and most of the run time goes into switching between them.

Output: a readable summary, or with --json one line:
{"tool": "simgrid", "version": ..., "peers": ..., "pieces": ..., "file_bytes": ...,
 "sim_seconds": ..., "wall_seconds": ..., "peak_rss_mib": ..., ...}
wall_seconds is the time spent in Engine.run() only.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import resource
import sys
import time

# Constants of the protocol, as in SimGrid's example.
MAXIMUM_PEERS = 50  # peers sent by the tracker
TRACKER_COMM_SIZE = 1  # bytes of a tracker query / answer
UPDATE_CHOKED_INTERVAL = 30.0  # seconds between two choker rounds
SLEEP_DURATION = 1.0  # an idle actor sleeps this long before polling again
BLOCKS_REQUESTED = 2  # blocks asked by one REQUEST
# The example's bitfields are a 32-bit word (pieces) and a 64-bit word (blocks).
EXAMPLE_MAX_PIECES = 32
EXAMPLE_MAX_BLOCKS = 64
EXAMPLE_BLOCK_SIZE = 16384

# Message types and their sizes in bytes (the example's table, after Legout et al.).
HANDSHAKE, CHOKE, UNCHOKE, INTERESTED, NOTINTERESTED, HAVE, BITFIELD, REQUEST, PIECE, CANCEL = range(10)
MESSAGE_SIZE = (68, 5, 5, 5, 5, 9, 5, 17, 13, 17)


class Message:
    __slots__ = ("kind", "peer_id", "bitfield", "piece", "block_index", "block_length")

    def __init__(self, kind, peer_id, bitfield=0, piece=0, block_index=0, block_length=0):
        self.kind = kind
        self.peer_id = peer_id
        self.bitfield = bitfield
        self.piece = piece
        self.block_index = block_index
        self.block_length = block_length


class Swarm:
    """What every actor of one run shares: the parameters and the run's progress."""

    def __init__(self, sg, leechers, pieces, blocks_per_piece, block_size, max_sim_seconds, single_mailbox):
        self.sg = sg
        self.leechers = leechers
        self.pieces = pieces
        self.blocks = blocks_per_piece
        self.block_size = block_size
        self.full = (1 << pieces) - 1
        self.max_sim_seconds = max_sim_seconds
        self.single_mailbox = single_mailbox
        self.done = 0
        self.completion_times = []
        self.stop = False
        self.stop_time = None
        self.piece_messages = 0
        self.piece_bytes = 0
        self.messages = 0

    def now(self):
        return self.sg.Engine.clock

    def running(self):
        if self.stop:
            return False
        if self.now() >= self.max_sim_seconds:
            self.stop = True
            self.stop_time = self.now()
        return not self.stop

    def leecher_done(self):
        self.done += 1
        self.completion_times.append(self.now())
        if self.done == self.leechers:
            self.stop = True
            self.stop_time = self.now()


class Connection:
    __slots__ = ("id", "ctl", "data", "bitfield", "speed", "last_unchoke", "current_piece",
                 "am_interested", "interested", "choked_upload", "choked_download")

    def __init__(self, sg, swarm, peer_id):
        self.id = peer_id
        self.ctl = sg.Mailbox.by_name(f"c{peer_id}")
        self.data = self.ctl if swarm.single_mailbox else sg.Mailbox.by_name(f"d{peer_id}")
        self.bitfield = 0
        self.speed = 0.0
        self.last_unchoke = 0.0
        self.current_piece = -1
        self.am_interested = False  # it has a piece we lack
        self.interested = False  # we have a piece it lacks
        self.choked_upload = True  # we choke it
        self.choked_download = True  # it chokes us


class Tracker:
    def __init__(self, swarm):
        self.swarm = swarm
        self.random = random.Random(42)
        self.known = []
        self.known_set = set()

    def __call__(self):
        sg = self.swarm.sg
        mailbox = sg.Mailbox.by_name("tracker")
        mailbox.set_receiver(sg.Actor.self())
        comm = None
        while self.swarm.running():
            if comm is None:
                comm = mailbox.get_async()
            if comm.test():
                peer_id = comm.get_payload()
                comm = None
                if peer_id not in self.known_set:
                    self.known_set.add(peer_id)
                    self.known.append(peer_id)
                answer = self.random.sample(self.known, min(MAXIMUM_PEERS, len(self.known)))
                sg.Mailbox.by_name(f"t{peer_id}").put_init(answer, TRACKER_COMM_SIZE).detach()
            else:
                sg.this_actor.sleep_for(SLEEP_DURATION)
        if comm is not None:
            comm.cancel()


class Peer:
    def __init__(self, swarm, peer_id, seed):
        sg = swarm.sg
        self.swarm = swarm
        self.sg = sg
        self.id = peer_id
        self.random = random.Random(peer_id)
        self.ctl = sg.Mailbox.by_name(f"c{peer_id}")
        self.data = self.ctl if swarm.single_mailbox else sg.Mailbox.by_name(f"d{peer_id}")
        self.connected = {}
        self.active = set()  # ids of the peers we unchoke and that are interested
        self.bitfield = swarm.full if seed else 0
        self.block_bits = [(1 << swarm.blocks) - 1 if seed else 0 for _ in range(swarm.pieces)]
        self.pieces_count = [0] * swarm.pieces
        self.current_pieces = 0
        self.begin_receive_time = 0.0
        self.round = 0
        self.completed = seed

    # ----- sending -----
    def send(self, mailbox, msg, size):
        self.swarm.messages += 1
        mailbox.put_init(msg, size).detach()

    def send_simple(self, conn, kind):
        self.send(conn.ctl, Message(kind, self.id, self.bitfield), MESSAGE_SIZE[kind])

    def send_handshake_to_all(self):
        for conn in self.connected.values():
            self.send(conn.ctl, Message(HANDSHAKE, self.id), MESSAGE_SIZE[HANDSHAKE])

    def send_bitfield(self, conn):
        size = MESSAGE_SIZE[BITFIELD] + (self.swarm.pieces + 7) // 8
        self.send(conn.ctl, Message(BITFIELD, self.id, self.bitfield), size)

    def send_piece(self, conn, piece, block_index, block_length):
        size = block_length * self.swarm.block_size
        self.swarm.piece_messages += 1
        self.swarm.piece_bytes += size
        self.send(conn.data, Message(PIECE, self.id, 0, piece, block_index, block_length), size)

    def send_have_to_all(self, piece):
        for conn in self.connected.values():
            self.send(conn.ctl, Message(HAVE, self.id, 0, piece), MESSAGE_SIZE[HAVE])

    def send_request(self, conn, piece):
        conn.current_piece = piece
        block = self.first_missing_block(piece)
        if block != -1:
            length = min(BLOCKS_REQUESTED, self.swarm.blocks - block)
            self.send(conn.ctl, Message(REQUEST, self.id, 0, piece, block, length), MESSAGE_SIZE[REQUEST])

    # ----- piece bookkeeping -----
    def has(self, piece):
        return (self.bitfield >> piece) & 1

    def missing_from(self, conn, piece):
        return not self.has(piece) and (conn.bitfield >> piece) & 1

    def not_downloading(self, piece):
        return not (self.current_pieces >> piece) & 1

    def interested_by(self, conn):
        return conn.bitfield & (self.bitfield ^ self.swarm.full) != 0

    def interested_by_free(self, conn):
        free = conn.bitfield & ~self.bitfield & ~self.current_pieces & self.swarm.full
        return free != 0

    def first_missing_block(self, piece):
        bits = self.block_bits[piece]
        first = (~bits & (bits + 1)).bit_length() - 1  # lowest clear bit
        return first if first < self.swarm.blocks else -1

    def piece_complete(self, piece):
        return self.block_bits[piece] == (1 << self.swarm.blocks) - 1

    def remove_current_piece(self, conn, piece):
        self.current_pieces &= ~(1 << piece)
        conn.current_piece = -1

    def partially_downloaded_piece(self, conn):
        for i in range(self.swarm.pieces):
            if self.missing_from(conn, i) and self.not_downloading(i) and self.first_missing_block(i) > 0:
                return i
        return -1

    def select_piece(self, conn):
        """Partial piece first, then end game, random first (< 4 pieces) or rarest first."""
        piece = self.partially_downloaded_piece(conn)
        if piece != -1:
            return piece
        n = self.swarm.pieces
        have = bin(self.bitfield).count("1")
        downloading = bin(self.current_pieces).count("1")
        if downloading >= n - have and self.interested_by(conn):
            candidates = [i for i in range(n) if self.missing_from(conn, i)]
            return self.random.choice(candidates)
        if have < 4 and self.interested_by_free(conn):
            candidates = [i for i in range(n) if self.missing_from(conn, i) and self.not_downloading(i)]
            return self.random.choice(candidates)
        candidates = [i for i in range(n) if self.missing_from(conn, i) and self.not_downloading(i)]
        if not candidates:
            return -1
        rarest = min(self.pieces_count[i] for i in candidates)
        return self.random.choice([i for i in candidates if self.pieces_count[i] == rarest])

    def request_new_piece(self, conn):
        piece = self.select_piece(conn)
        if piece != -1:
            self.current_pieces |= 1 << piece
            self.send_request(conn, piece)

    def update_active(self, conn):
        if conn.interested and not conn.choked_upload:
            self.active.add(conn.id)
        else:
            self.active.discard(conn.id)

    def update_interested_after_receive(self):
        for conn in self.connected.values():
            if conn.am_interested and not self.interested_by(conn):
                conn.am_interested = False
                self.send_simple(conn, NOTINTERESTED)

    # ----- choker: one upload slot, re-chosen every UPDATE_CHOKED_INTERVAL -----
    def update_choked_peers(self):
        if not any(c.interested for c in self.connected.values()):
            return
        self.round = (self.round + 1) % 3
        choked = None
        if self.active:
            first = min(self.active)
            self.active.discard(first)
            choked = self.connected[first]
        chosen = None
        now = self.swarm.now()
        if self.bitfield == self.swarm.full:
            # Seeding: unchoke the interested peer that waited longest.
            oldest = now + 1
            for conn in self.connected.values():
                if conn.last_unchoke < oldest and conn.interested and conn.choked_upload:
                    oldest = conn.last_unchoke
                    chosen = conn
        elif self.round == 0:
            # Optimistic unchoke: a few random tries.
            ids = list(self.connected)
            for _ in range(MAXIMUM_PEERS):
                conn = self.connected[ids[self.random.randrange(len(ids))]]
                if conn.interested and conn.choked_upload:
                    chosen = conn
                    break
        else:
            fastest = 0.0
            for conn in self.connected.values():
                if conn.speed > fastest and conn.choked_upload and conn.interested:
                    fastest = conn.speed
                    chosen = conn
        if choked is not chosen:
            if choked is not None:
                choked.choked_upload = True
                self.update_active(choked)
                self.send_simple(choked, CHOKE)
            if chosen is not None:
                chosen.choked_upload = False
                chosen.last_unchoke = now
                self.update_active(chosen)
                self.send_simple(chosen, UNCHOKE)

    # ----- message handling -----
    def handle(self, msg):
        conn = self.connected.get(msg.peer_id)
        kind = msg.kind
        if conn is None and kind != HANDSHAKE:
            return  # cannot happen: connections are made by handshakes both ways
        if kind == HANDSHAKE:
            if conn is None:
                conn = Connection(self.sg, self.swarm, msg.peer_id)
                self.connected[msg.peer_id] = conn
                self.send(conn.ctl, Message(HANDSHAKE, self.id), MESSAGE_SIZE[HANDSHAKE])
            self.send_bitfield(conn)
        elif kind == BITFIELD:
            for i in range(self.swarm.pieces):
                if (msg.bitfield >> i) & 1:
                    self.pieces_count[i] += 1
            conn.bitfield = msg.bitfield
            if not conn.am_interested and self.interested_by(conn):
                conn.am_interested = True
                self.send_simple(conn, INTERESTED)
        elif kind == INTERESTED:
            conn.interested = True
            self.update_active(conn)
        elif kind == NOTINTERESTED:
            conn.interested = False
            self.update_active(conn)
        elif kind == UNCHOKE:
            conn.choked_download = False
            if conn.am_interested:
                self.request_new_piece(conn)
        elif kind == CHOKE:
            conn.choked_download = True
            if conn.current_piece != -1:
                self.remove_current_piece(conn, conn.current_piece)
        elif kind == HAVE:
            piece = msg.piece
            conn.bitfield |= 1 << piece
            self.pieces_count[piece] += 1
            if not conn.am_interested and not self.has(piece):
                conn.am_interested = True
                self.send_simple(conn, INTERESTED)
                if not conn.choked_download:
                    self.request_new_piece(conn)
        elif kind == REQUEST:
            if not conn.choked_upload and self.has(msg.piece):
                self.send_piece(conn, msg.piece, msg.block_index, msg.block_length)
        elif kind == PIECE:
            piece = msg.piece
            if not self.has(piece):
                for i in range(msg.block_index, msg.block_index + msg.block_length):
                    self.block_bits[piece] |= 1 << i
                if self.piece_complete(piece):
                    self.remove_current_piece(conn, piece)
                    self.bitfield |= 1 << piece
                    self.send_have_to_all(piece)
                    self.update_interested_after_receive()
                    if self.bitfield == self.swarm.full and not self.completed:
                        self.completed = True
                        self.swarm.leecher_done()
                elif not conn.choked_download:
                    self.send_request(conn, piece)
            elif not conn.choked_download:
                self.request_new_piece(conn)
        # Speed estimate of the remote peer (the example's formula).
        if conn is not None:
            now = self.swarm.now()
            if now > self.begin_receive_time:
                conn.speed = conn.speed * 0.6 + 0.4 / (now - self.begin_receive_time)
        self.begin_receive_time = self.swarm.now()

    # ----- main loop -----
    def __call__(self):
        sg = self.sg
        swarm = self.swarm
        sg.Mailbox.by_name("tracker").put(self.id, TRACKER_COMM_SIZE)
        for other in sg.Mailbox.by_name(f"t{self.id}").get():
            if other != self.id and other not in self.connected:
                self.connected[other] = Connection(sg, swarm, other)
        me = sg.Actor.self()
        self.ctl.set_receiver(me)
        if self.data is not self.ctl:
            self.data.set_receiver(me)
        self.begin_receive_time = swarm.now()
        self.send_handshake_to_all()

        mailboxes = [self.ctl] if self.data is self.ctl else [self.ctl, self.data]
        comms = [None] * len(mailboxes)
        next_choke = swarm.now() + UPDATE_CHOKED_INTERVAL
        while swarm.running():
            progressed = False
            for k, mailbox in enumerate(mailboxes):
                if comms[k] is None:
                    comms[k] = mailbox.get_async()
                if comms[k].test():
                    msg = comms[k].get_payload()
                    comms[k] = None
                    self.handle(msg)
                    progressed = True
            if progressed:
                continue
            # A leecher runs the choker once it has a piece; a seed always does.
            if swarm.now() >= next_choke and self.bitfield != 0:
                self.update_choked_peers()
                next_choke += UPDATE_CHOKED_INTERVAL
            else:
                sg.this_actor.sleep_for(SLEEP_DURATION)
        for comm in comms:
            if comm is not None:
                comm.cancel()  # else SimGrid complains that a pending Comm was freed


def build_platform(sg, engine, n_peers, up_bps, rtt):
    """A star: every host has an up link (its upload limit) and a down link (unlimited)."""
    root = engine.netzone_root
    zone = root.add_netzone_star("swarm")
    latency = rtt / 4.0  # up + down = one way = RTT / 2
    unlimited = 1e12
    hosts = []
    names = ["tracker"] + [f"peer-{i}" for i in range(n_peers)]
    for name in names:
        host = zone.add_host(name, 1e9).seal()
        up = zone.add_link(f"{name}-up", unlimited if name == "tracker" else up_bps)
        up.set_latency(latency).seal()
        down = zone.add_link(f"{name}-down", unlimited)
        down.set_latency(latency).seal()
        zone.add_route(host, None, [sg.LinkInRoute(up)], False)
        zone.add_route(None, host, [sg.LinkInRoute(down)], False)
        hosts.append(host)
    zone.seal()
    root.seal()
    return hosts


def import_simgrid():
    """Import the `simgrid` module of the PyPI sdist build.

    That build puts simgrid.cpython-*.so and libsimgrid.so.4.1 side by side in
    site-packages, but the extension has no RPATH, so a plain import fails
    with "libsimgrid.so.4.1: cannot open shared object file". Loading the
    library first (RTLD_GLOBAL) lets the loader reuse it.
    """
    try:
        import simgrid

        return simgrid
    except ImportError as err:
        if "libsimgrid" not in str(err):
            raise
    import ctypes
    import glob
    import importlib.util
    import os

    spec = importlib.util.find_spec("simgrid")
    if spec is None or spec.origin is None:
        raise ImportError("simgrid is not installed (see bench/README.md)")
    libs = sorted(glob.glob(os.path.join(os.path.dirname(spec.origin), "libsimgrid.so.*")))
    if not libs:
        raise ImportError(f"no libsimgrid.so.* next to {spec.origin}")
    ctypes.CDLL(libs[-1], mode=ctypes.RTLD_GLOBAL)
    import simgrid

    return simgrid


def simgrid_version(sg):
    try:
        from importlib.metadata import version

        return version("simgrid")
    except Exception:  # noqa: BLE001 - fall back on the library's own string
        return str(getattr(sg, "simgrid_version", "unknown"))


def default_blocks_per_piece(piece_bytes):
    """The fewest blocks of at most EXAMPLE_BLOCK_SIZE bytes that split the piece exactly.

    For 50 MB in 32 pieces: 1,562,500-byte pieces of 100 blocks of 15,625 B.
    """
    low = max(1, math.ceil(piece_bytes / EXAMPLE_BLOCK_SIZE))
    if piece_bytes == int(piece_bytes):
        for blocks in range(low, 2 * low + 1):
            if int(piece_bytes) % blocks == 0:
                return blocks
    return low


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peers", type=int, default=300, help="leechers (plus one initial seed); default 300")
    ap.add_argument("--pieces", type=int, default=EXAMPLE_MAX_PIECES,
                    help="pieces in the file; default 32, the example's maximum")
    ap.add_argument("--blocks-per-piece", type=int, default=None,
                    help="blocks per piece; default: the fewest that give blocks of at most 16384 B "
                         "(the example's BLOCK_SIZE) and divide the piece exactly")
    ap.add_argument("--file-mb", type=float, default=50.0, help="file size in MB (10^6 bytes); default 50")
    ap.add_argument("--upload-kBps", type=float, default=20.0, help="upload limit per peer in kB/s; default 20")
    ap.add_argument("--rtt-ms", type=float, default=400.0, help="round-trip time in ms; default 400")
    ap.add_argument("--max-sim-seconds", type=float, default=12 * 3600.0, help="cap on simulated time; default 12 h")
    ap.add_argument("--single-mailbox", action="store_true",
                    help="PIECE messages share the control mailbox, as in the C++ example")
    ap.add_argument("--allow-beyond-example", action="store_true",
                    help="allow more than 32 pieces (the example's 32-bit piece bitfield; Python ints have no limit)")
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    args = ap.parse_args(argv)

    if args.peers < 1 or args.pieces < 1:
        ap.error("--peers and --pieces must be at least 1")
    if not args.allow_beyond_example and args.pieces > EXAMPLE_MAX_PIECES:
        ap.error(f"the example's piece bitfield holds at most {EXAMPLE_MAX_PIECES} pieces "
                 "(--allow-beyond-example lifts this)")
    piece_target = args.file_mb * 1e6 / args.pieces
    if args.blocks_per_piece is None:
        args.blocks_per_piece = default_blocks_per_piece(piece_target)
    if args.blocks_per_piece < 1:
        ap.error("--blocks-per-piece must be at least 1")
    n_blocks = args.pieces * args.blocks_per_piece
    block_size = int(round(args.file_mb * 1e6 / n_blocks))
    file_bytes = block_size * n_blocks

    sg = import_simgrid()

    t_setup = time.perf_counter()
    engine = sg.Engine([
        "simgrid_bittorrent",
        "--cfg=network/model:raw",
        "--log=root.thres:warning",
    ])
    swarm = Swarm(sg, args.peers, args.pieces, args.blocks_per_piece, block_size,
                  args.max_sim_seconds, args.single_mailbox)
    hosts = build_platform(sg, engine, args.peers + 1, args.upload_kBps * 1e3, args.rtt_ms / 1e3)
    hosts[0].add_actor("tracker", Tracker(swarm))
    hosts[1].add_actor("peer", Peer(swarm, 0, seed=True))
    for i in range(1, args.peers + 1):
        hosts[i + 1].add_actor("peer", Peer(swarm, i, seed=False))
    setup_seconds = time.perf_counter() - t_setup

    t0 = time.perf_counter()
    engine.run()
    wall = time.perf_counter() - t0

    complete = swarm.done == args.peers
    # The time the last leecher completed (or the cap). Engine.run() goes on a
    # little after it, until the flows already under way are delivered.
    sim_seconds = swarm.stop_time if swarm.stop_time is not None else swarm.now()
    peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    times = sorted(swarm.completion_times)
    result = {
        "tool": "simgrid",
        "version": simgrid_version(sg),
        "peers": args.peers,
        "pieces": args.pieces,
        "blocks_per_piece": args.blocks_per_piece,
        "piece_bytes": block_size * args.blocks_per_piece,
        "block_bytes": block_size,
        "file_bytes": file_bytes,
        "upload_Bps": args.upload_kBps * 1e3,
        "rtt_s": args.rtt_ms / 1e3,
        "complete": complete,
        "leechers_done": swarm.done,
        "sim_seconds": sim_seconds,
        "first_completion_s": times[0] if times else None,
        "median_completion_s": times[len(times) // 2] if times else None,
        "messages": swarm.messages,
        "piece_messages": swarm.piece_messages,
        "piece_bytes_sent": swarm.piece_bytes,
        "wall_seconds": wall,
        "setup_seconds": setup_seconds,
        "peak_rss_mib": peak_rss_mib,
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"SimGrid {result['version']} BitTorrent swarm: 1 seed + {args.peers} leechers, "
              f"{file_bytes} bytes = {args.pieces} pieces x {args.blocks_per_piece} blocks x {block_size} B")
        print(f"  upload {args.upload_kBps:g} kB/s per peer, RTT {args.rtt_ms:g} ms, network model 'raw'")
        status = "all done" if complete else f"only {swarm.done} done (cap reached)"
        print(f"  {status} at {sim_seconds:.1f} s simulated "
              f"(first {result['first_completion_s']}, median {result['median_completion_s']})")
        print(f"  {swarm.messages} messages, {swarm.piece_messages} PIECE flows, {swarm.piece_bytes} PIECE bytes")
        print(f"  Engine.run() {wall:.2f} s wall, setup {setup_seconds:.2f} s, peak RSS {peak_rss_mib:.0f} MiB")
        lower = file_bytes / (args.upload_kBps * 1e3)
        print(f"  (lower bound: the seed uploads the file once = {lower:.0f} s)")
    return 0 if complete else 1


if __name__ == "__main__":
    sys.exit(main())
