"""Tables and text of docs/validation-ns3.md."""

from .cases import DIAGNOSTICS, DUMBBELLS, dumbbell


def jain(xs):
    s = sum(xs)
    q = sum(x * x for x in xs)
    return s * s / (len(xs) * q) if q > 0 else float("nan")


def mbps(x):
    return f"{x / 1e6:.3f}"


def f2(x):
    return f"{x:.2f}"


def f3(x):
    return f"{x:.3f}"


def pct(x):
    return f"{100 * x:.1f} %"


def cell(runs, get, fmt):
    """'a \\| b \\| c' for one quantity over several runs (None: n/a)."""
    vals = []
    for r in runs:
        v = get(r) if r is not None else None
        vals.append("n/a" if v is None else fmt(v))
    return " \\| ".join(vals)


def share(r):
    if len(r["goodput_bps"]) < 2:
        return None
    s = sum(r["goodput_bps"])
    return r["goodput_bps"][0] / s if s > 0 else float("nan")


def per_flow(key):
    return lambda r: "+".join(str(v) for v in r[key])


def loss(r):
    return f"{r['drops']} ({100 * r['loss_rate']:.2f} %)"


def results_tables(db, rows):
    """rows: (case, [torrentlab, ns-3 prr, ns-3 classic])."""
    L = [f"### {db['title']}", ""]
    L.append(f"Bottleneck {db['capacity_mbps']:g} Mbit/s, one-way delay "
             f"{db['one_way_delay_ms']:g} ms, buffer {db['buffer_text']}.")
    L.append("")
    L.append("Each cell is **torrentlab \\| ns-3 PRR (default) \\| ns-3 classic recovery**. "
             "Goodput in Mbit/s over the window. Share: the first (non-cubic) flow's "
             "fraction of the total goodput.")
    L.append("")
    L.append("| case | flow 1 goodput | cubic goodput | share of flow 1 | Jain index |")
    L.append("|---|---|---|---|---|")
    for case, runs in rows:
        two = len(case["ccs"]) == 2
        g1 = cell(runs, lambda r: r["goodput_bps"][0], mbps)
        g2 = cell(runs, lambda r: r["goodput_bps"][1], mbps) if two else "-"
        sh = cell(runs, share, pct) if two else "-"
        ji = cell(runs, lambda r: r["jain"], f3) if two else "-"
        L.append(f"| {case['name']} | {g1} | {g2} | {sh} | {ji} |")
    L.append("")
    L.append("Same layout. Total goodput in Mbit/s. Mean queue: time-averaged packets waiting "
             "in the bottleneck queue over the window. Drops: data packets dropped at the "
             "bottleneck in the window (loss rate = drops / arrivals). RTOs, fast recoveries "
             "and retransmitted segments: per flow (flow 1 + cubic), whole run.")
    L.append("")
    L.append("| case | total goodput | mean queue (packets) | drops (loss rate) | RTOs "
             "| fast recoveries | retransmitted segments |")
    L.append("|---|---|---|---|---|---|---|")
    for case, runs in rows:
        tot = cell(runs, lambda r: sum(r["goodput_bps"]), mbps)
        mq = cell(runs, lambda r: r["mean_queue_packets"], f2)
        lo = cell(runs, loss, str)
        rto = cell(runs, per_flow("timeouts"), str)
        fr = cell(runs, per_flow("fast_retransmits"), str)
        rt = cell(runs, per_flow("retransmitted"), str)
        L.append(f"| {case['name']} | {tot} | {mq} | {lo} | {rto} | {fr} | {rt} |")
    L.append("")
    return "\n".join(L)


def diagnostics_table(R, diag):
    """R[(db, case name)] -> dict of runs; diag: DIAGNOSTICS key."""
    cc = DIAGNOSTICS[diag]["cc"]
    L = ["| case | goodput of the " + cc + " flow (Mbit/s) | share of the " + cc
         + " flow | mean queue (packets) |", "|---|---|---|---|"]
    for db in DUMBBELLS:
        for name in (f"{cc} alone", f"{cc} vs cubic"):
            runs = R.get((db["key"], name))
            if not runs or diag not in runs:
                continue
            rr = [runs["torrentlab"], runs["classic"], runs[diag]]
            g = cell(rr, lambda r: r["goodput_bps"][0], mbps)
            sh = cell(rr, share, pct) if name.endswith("cubic") else "-"
            mq = cell(rr, lambda r: r["mean_queue_packets"], f2)
            L.append(f"| {db['key']}: {name} | {g} | {sh} | {mq} |")
    return "\n".join(L)


def reflow(md, width=79):
    """Re-wrap plain paragraphs and list items (the f-string substitutions
    leave ragged lines); tables, headings and code blocks stay as they are."""
    import textwrap

    out, para, in_code = [], [], False

    def flush():
        if not para:
            return
        items, cur = [], None
        for line in para:
            if line.startswith("- "):
                cur = [line[2:].strip()]
                items.append(cur)
            elif cur is not None and line.startswith("  "):
                cur.append(line.strip())
            else:
                cur = None
                items.append([line.strip(), None])
        # a paragraph: consecutive non-list lines joined
        merged, buf = [], []
        for it in items:
            if it[-1] is None:
                buf.append(it[0])
            else:
                if buf:
                    merged.append(("p", " ".join(buf)))
                    buf = []
                merged.append(("li", " ".join(it)))
        if buf:
            merged.append(("p", " ".join(buf)))
        for kind, text in merged:
            if kind == "p":
                out.extend(textwrap.wrap(text, width, break_long_words=False,
                                         break_on_hyphens=False))
            else:
                out.extend(textwrap.wrap(text, width, initial_indent="- ",
                                         subsequent_indent="  ", break_long_words=False,
                                         break_on_hyphens=False))
        para.clear()

    for line in md.split("\n"):
        if line.startswith("```"):
            flush()
            in_code = not in_code
            out.append(line)
        elif in_code or not line.strip() or line.startswith(("|", "#")):
            flush()
            out.append(line)
        else:
            para.append(line)
    flush()
    return "\n".join(out)


def render(results, meta):
    """results: list of (case, {"torrentlab": r, "prr": r, "classic": r, diag: r, ...})."""
    by_db = {}
    for case, runs in results:
        by_db.setdefault(case["dumbbell"], []).append(
            (case, [runs["torrentlab"], runs.get("prr"), runs.get("classic")]))
    tables = "\n".join(results_tables(dumbbell(k), by_db[k]) for k in by_db)
    R = {(c["dumbbell"], c["name"]): runs for c, runs in results}
    return reflow(page_text(meta, tables, R))


def page_text(meta, tables, R):
    m = meta
    return f"""# Validation against ns-3

This page compares torrentlab's TCP congestion controllers with the
implementations in [ns-3](https://www.nsnam.org/) on the same dumbbell. It is
evidence, not a pass/fail test: nothing on either side was tuned to make the
numbers agree. Where they disagree, [Differences and why](#differences-and-why)
says what we found out about the cause, and what we could not explain.

- Measured on {m['date']} with ns-3 {m['ns3_version']} (PyPI wheel `ns3`) and
  the installed torrentlab {m['torrentlab_version']} (repository at git `{m['git']}`).
- Command: `{m['command']}`: {m['duration']:g} simulated seconds per case,
  measurement window [{m['window_start']:g} s, {m['duration']:g} s]. Wall time
  {m['wall']:.0f} s on {m['cpus']} CPUs, most of it ns-3.
- `python3 bench/validate_ns3.py --quick` runs 20 s per case (window from 5 s);
  `--print` prints this page instead of writing `docs/validation-ns3.md`;
  `--json FILE` also saves every number. The ns-3 runs share `--jobs` worker
  processes (one ~11 s import each); `--isolated` gives every ns-3 run its own
  process and produces the same numbers.
- Besides the two ns-3 columns (PRR and classic recovery), eight diagnostic
  ns-3 runs test two explanations (sections 2 and 3 below); they are not ns-3 as
  released.

## What is compared

```
sender 1 --+
           +-- router --[drop-tail queue]-- bottleneck link --> receiver
sender 2 --+             (capacity, one-way delay 25 ms)
```

One or two long-lived flows, each from its own sender host, all starting at
t = 0 and sending for the whole run. Only the bottleneck queue fills. ACKs
return on an uncongested path. RTT = 2 x one-way delay = 50 ms plus queueing.

**Cases.** For each dumbbell: each controller alone (newreno, cubic, vegas, lp,
ledbat, nice), and each of newreno, vegas, lp, ledbat and nice against one
cubic flow. TCP Nice has no ns-3 implementation. It runs in torrentlab only,
and its ns-3 cells say "n/a".

**Settings common to both tools.** MSS 1448 bytes with RFC 7323 timestamps,
so a full segment is a 1500-byte IP packet. SACK on. Every segment is ACKed
(no delayed ACKs). Initial window 10 segments. RTO = max(200 ms, SRTT +
max(1 ms, 4 RTTVAR)), initial RTO 1 s. The send and receive buffers never limit
the window. Each application always has data to send. Every controller keeps
its default parameters, except that torrentlab's LEDBAT target is set to ns-3's
100 ms (torrentlab's default is 25 ms).

**Measurements.** Everything except the last three columns is measured over
the window [{m['window_start']:g} s, {m['duration']:g} s], which skips slow start.
- Per-flow goodput: in-order payload bytes delivered to the receiving
  application in the window x 8 / window length. In torrentlab this is
  `flows.window_rate_bps` with `metrics.summary_start`. In ns-3 it is
  `PacketSink::GetTotalRx()` sampled at the window start and at the end.
- Jain's index over the flows' goodputs.
- Mean queue: the time average of the number of packets waiting in the
  bottleneck queue, not counting the one being transmitted. In ns-3 the device
  queue's `PacketsInQueue` trace is integrated exactly.
- Drops: data packets dropped at the bottleneck. Loss rate = drops / packets
  that arrived at the bottleneck.
- RTOs, fast recoveries and retransmitted segments are counted per flow over
  the whole run. In ns-3: RTO expiries are the doublings of the socket's `RTO`
  trace, fast recoveries are entries into `CA_RECOVERY` (`CongState` trace), and
  retransmissions come from the `Retransmission` trace.

| | torrentlab | ns-3 |
|---|---|---|
| topology | built-in dumbbell: a sender host per flow, core delay, receiver downlink = bottleneck | senders -(1 Gbit/s, 0 ms)- router -(bottleneck, 25 ms)- receiver, all point-to-point links; the whole one-way delay is on the bottleneck link |
| bottleneck queue | drop-tail; the limit counts waiting packets. A: `"40 packets"`. B: `"1 s"`, a byte limit of 125,000 bytes = 83 packets | the router's `PointToPointNetDevice` queue (`DropTailQueue<Packet>`, packet limit; A: 40, B: 83). Traffic control is uninstalled (`TrafficControlHelper::Uninstall`, and the script checks it), so the device queue is the only queue. A packet that finds it full is dropped in the traffic-control layer (`TcDrop`) |
| packet on the wire | 1500 bytes | 1502 bytes (PPP header): the bottleneck carries 0.13 % fewer packets per second |
| ACK path | unlimited | receiver-to-router direction of the bottleneck link at 1 Gbit/s, same 25 ms |
| TCP | `preset = "rfc"`, `initial_window = 10`, `min_rto = "200 ms"`, `delayed_ack = false`, `sack = true`, `timestamps = true` | `SegmentSize` 1448, `DelAckCount` 1, `InitialCwnd` 10, `MinRto` 200 ms, `Sack`, `Timestamp` and `WindowScaling` on, `SndBufSize`/`RcvBufSize` 4 MiB |
| loss recovery | RFC 6675 SACK scoreboard; on entry cwnd = ssthresh; sends while cwnd - pipe >= 1 MSS (no PRR) | run twice: the default `TcpPrrRecovery` (RFC 6937 PRR), and `TcpClassicRecovery`, which with SACK keeps cwnd = ssthresh and sends by RFC 6675 pipe, like torrentlab. Limited transmit on (default) |
| controllers | `newreno`, `cubic`, `vegas`, `lp`, `ledbat` (`[ledbat] target = "100 ms"`), `nice` | `TcpNewReno`, `TcpCubic`, `TcpVegas`, `TcpLp`, `TcpLedbat` with default attributes, set per sender node (`/NodeList/<id>/$ns3::TcpL4Protocol/SocketType`) |
| connection set-up | none: data flows from t = 0 | three-way handshake first (one RTT) |
| timestamps | exact simulated time (ns); on the wire, microsecond ticks | millisecond ticks (`TcpOptionTS`) |

## Results

{tables}
## Differences and why

{differences_text(R, m)}
"""


class _Lookup:
    """Formatted numbers from the results, for the text below."""

    def __init__(self, R):
        self.R = R

    def run(self, db, name, tool):
        return self.R[(db, name)].get(tool)

    def g(self, db, name, tool, i=0):  # goodput, Mbit/s
        r = self.run(db, name, tool)
        return "n/a" if r is None else f"{r['goodput_bps'][i] / 1e6:.2f}"

    def sh(self, db, name, tool):  # share of flow 1
        r = self.run(db, name, tool)
        return "n/a" if r is None else f"{100 * share(r):.1f} %"

    def q(self, db, name, tool):  # mean queue
        r = self.run(db, name, tool)
        return "n/a" if r is None else f"{r['mean_queue_packets']:.1f}"

    def d(self, db, name, tool):  # drops in the window
        r = self.run(db, name, tool)
        return "n/a" if r is None else f"{r['drops']}"

    def dw(self, db, name, tool):  # drops, whole run
        r = self.run(db, name, tool)
        return "n/a" if r is None else f"{r['drops_whole_run']}"

    def rx(self, db, name, tool, i=0):  # retransmitted segments, whole run
        r = self.run(db, name, tool)
        return "n/a" if r is None else f"{r['retransmitted'][i]}"


def differences_text(R, m):
    x = _Lookup(R)
    A, B = "A", "B"
    T, P, K = "torrentlab", "prr", "classic"
    diag_lp = diagnostics_table(R, "lp-linux")
    diag_ledbat = diagnostics_table(R, "ledbat-cap")
    return f"""Facts about ns-3 below were checked in the ns-3.44 sources
(`src/internet/model/tcp-*.cc` at tag `ns-3.44`), through `ns.TypeId`
attribute lookups in the installed wheel, or with traces (cwnd sampled every
10-100 ms, drop and state-change times) from extra runs of the same
scenarios. Time-stamped trace observations are from 60-s runs. "Classic" and
"PRR" are the two ns-3 columns.

**Where the tools agree.** NewReno alone matches closely in both dumbbells:
goodput {x.g(A, 'newreno alone', T)} vs {x.g(A, 'newreno alone', P)} Mbit/s, mean
queue {x.q(A, 'newreno alone', T)} vs {x.q(A, 'newreno alone', P)} packets, drops
{x.d(A, 'newreno alone', T)} vs {x.d(A, 'newreno alone', P)} in A; mean queue
{x.q(B, 'newreno alone', T)} vs {x.q(B, 'newreno alone', P)} packets in B. Every
controller except LP (and Nice in B) fills the link in both tools. The total goodput
differs by about 0.13 %, as expected from ns-3's 2-byte PPP header. Vegas alone
in B holds the same queue ({x.q(B, 'vegas alone', T)} vs {x.q(B, 'vegas alone', P)}
packets). LEDBAT against CUBIC in B yields in both tools ({x.sh(B, 'ledbat vs cubic', T)}
vs {x.sh(B, 'ledbat vs cubic', P)} / {x.sh(B, 'ledbat vs cubic', K)}). With classic
recovery, CUBIC alone in A ({x.q(A, 'cubic alone', T)} vs {x.q(A, 'cubic alone', K)}
packets of queue, {x.d(A, 'cubic alone', T)} vs {x.d(A, 'cubic alone', K)} drops) and
LP against CUBIC ({x.sh(A, 'lp vs cubic', T)} vs {x.sh(A, 'lp vs cubic', K)} in A,
{x.sh(B, 'lp vs cubic', T)} vs {x.sh(B, 'lp vs cubic', K)} in B) are also close.

### 1. ns-3's PRR counts delivered data twice with SACK (ns-3 issue, fixed after 3.48)

In ns-3.44 `TcpPrrRecovery::DoRecovery` adds one MSS to `DeliveredData` for
every duplicate ACK. But with SACK, `TcpSocketBase` already passes the newly
SACKed bytes. So each SACKed segment counts twice. PRR then sends about
2 x ssthresh / RecoverFS segments per delivered segment:

- For CUBIC (beta 0.7) that is about 1.4: the flight *grows* during recovery.
- For NewReno (beta 0.5) it is about 1: the flight does not shrink until
  recovery ends.

ns-3-dev fixed this on 2026-07-09 (commit 05c9099 "Fix PRR DeliveredData
double-count with SACK enabled", issue #1350). No release tag contains the
fix yet (newest tag checked: ns-3.48).

A trace of CUBIC alone in A with PRR shows the effect. Recovery starts at
24.830 s with cwnd 83 packets. cwnd then rises to 89 packets, and 7 more
packets are dropped between 24.833 s and 24.850 s. Recovery ends at 24.929 s,
a second one starts at 24.935 s, and ssthresh goes 58 -> 42. The queue
empties by 25.0 s. All nine loss episodes after slow start in that run look
the same: two cuts within 0.2 s, from about 83 to 42 packets. So ns-3 with PRR
shows:

- a lower mean queue and more drops for CUBIC alone:
  {x.q(A, 'cubic alone', P)} packets and {x.d(A, 'cubic alone', P)} drops, against
  {x.q(A, 'cubic alone', K)} and {x.d(A, 'cubic alone', K)} with classic recovery;
- NewReno *beating* CUBIC in A: {x.sh(A, 'newreno vs cubic', P)} NewReno share with
  PRR, {x.sh(A, 'newreno vs cubic', K)} with classic, {x.sh(A, 'newreno vs cubic', T)}
  in torrentlab;
- more room for the low-priority flows: LP gets {x.sh(B, 'lp vs cubic', P)} of B
  with PRR and {x.sh(B, 'lp vs cubic', K)} with classic.

With SACK, `TcpClassicRecovery` keeps cwnd = ssthresh (only the traced
`m_cWndInfl` is inflated) and sends by RFC 6675 pipe. That is what torrentlab
does. So the classic column is the like-for-like comparison for torrentlab's
recovery, and the PRR column shows ns-3 as shipped. torrentlab has no PRR.

### 2. ns-3.44 TcpLedbat cannot grow its window in congestion avoidance (fixed in ns-3.47)

`TcpLedbat::CongestionAvoidance` caps the new window at `(HighTxMark -
LastAckedSeq) + segmentsAcked x MSS`. But `TcpSocketBase::ProcessAck` has
already set `LastAckedSeq` to the new ACK. The cap is therefore the flight
*before* the ACK, and the window can only stay where it is or shrink. ns-3.47
replaced the cap with flight + `AllowedIncrease` (1) MSS (commit 609503f "tcp:
fix LEDBAT congestion window calculation").

Traces confirm it:

- In A the ns-3 LEDBAT window is 82 packets from t = 1 s (slow start, one loss,
  halving) to the end. 82 is just what the 41.7-packet path plus the 40-packet
  buffer holds, hence a mean queue of {x.q(A, 'ledbat alone', P)} packets and no
  drops in the window. torrentlab: {x.q(A, 'ledbat alone', T)} packets, {x.d(A, 'ledbat alone', T)} drops.
- In B the ns-3 window shrinks after slow start to 7 packets at about 8 s, and
  stays there: queue {x.q(B, 'ledbat alone', P)} packets, far below the
  100-ms target (8.3 packets at 1 Mbit/s).

The diagnostic variant below runs ns-3.44's TcpLedbat with the ns-3.47 cap:
`LastAckedSeq` is moved back by one MSS around the call. That removes most of
the gap. A's mean queue becomes {x.q(A, 'ledbat alone', 'ledbat-cap')} packets with
{x.d(A, 'ledbat alone', 'ledbat-cap')} drops, against torrentlab's
{x.q(A, 'ledbat alone', T)} and {x.d(A, 'ledbat alone', T)}.

{diag_ledbat}

(Cells: torrentlab \\| ns-3 classic \\| ns-3 classic with the capped TcpLedbat.)

Why LEDBAT behaves like a loss-based flow in A: at 10 Mbit/s the 40-packet
buffer holds at most 48 ms of queueing, below the 100-ms target. LEDBAT can
never reach its target there. It grows (by 0.5-1 packet per RTT) until a
loss and halves, much like NewReno. That is why it takes
{x.sh(A, 'ledbat vs cubic', T)} against CUBIC in torrentlab (NewReno:
{x.sh(A, 'newreno vs cubic', T)}).

What remains is {x.sh(A, 'ledbat vs cubic', T)} in torrentlab against
{x.sh(A, 'ledbat vs cubic', 'ledbat-cap')} with the capped ns-3 LEDBAT. Other
differences that may contribute, none of them tested separately:

- ns-3's current delay is the minimum of the last 3 one-way delays. The noise
  filter drops its oldest entry once it reaches `NoiseFilterLen` = 4.
  torrentlab uses the latest sample.
- ns-3's one-way delays are in 1-ms ticks.
- ns-3's per-ACK increase is truncated to whole bytes.
- ns-3's `MinCwnd` is 2 packets; torrentlab's is 1.

The base delay is *not* a difference in these runs. ns-3 starts a new
base-history bucket only when more than 60 s have passed since the last one,
so within a 60-s run its base delay is the minimum ever seen, like
torrentlab's default.

In B, torrentlab's LEDBAT mean queue ({x.q(B, 'ledbat alone', T)} packets) is
above the target (8.3 packets). The window [10 s, 60 s] includes the slow drain
after the slow-start overshoot: at 10 s the window is 46 packets with 550 ms of
estimated queueing delay. From about 18 s on, the estimate oscillates between
94 and 106 ms.

### 3. TCP-LP: Linux stops all growth in the inference time-out, ns-3 only congestion avoidance

torrentlab follows Linux `tcp_lp.c`. Within the inference time-out (3 RTT
after an early congestion indication) `tcp_lp_cong_avoid` skips
`tcp_reno_cong_avoid`, which includes slow start. ns-3's `TcpLp` overrides only
`CongestionAvoidance`. An early indication never changes ssthresh (in Linux,
ns-3 and torrentlab), and an LP flow alone never loses a packet here. So an LP
flow is in slow start all the time, and in ns-3 its window keeps doubling
straight after every indication.

torrentlab's trace in A shows the consequence. After a second indication
within the time-out, the window drops to 1 packet and stays there for
0.3-0.5 s, i.e. 6-10 RTTs (for example from 0.56 s to 0.88 s and from 1.28 s to
1.68 s). The reason is in the algorithm. Each indication resets the range to
[sOWD, 2 sOWD]. The next sample at the base delay b pulls the minimum back to
b. So as long as the smoothed delay is more than about 0.26 b above b
(7 ms in A), every new sample is another indication. That sets the window to 1
again and restarts the time-out. With a window of 1 there is one sample per
RTT, and sOWD loses only 1/8 of its excess per sample. ns-3's window does not
sit at 1: it grows within the time-out, so samples come faster.

The diagnostic variant is ns-3.44's TcpLp that also skips slow start within
the time-out. It reads TcpLp's own `LP_WITHIN_INF` flag. It moves ns-3 from
{x.g(A, 'lp alone', K)} to {x.g(A, 'lp alone', 'lp-linux')} Mbit/s in A (torrentlab:
{x.g(A, 'lp alone', T)}). In B it moves from {x.g(B, 'lp alone', K)} to
{x.g(B, 'lp alone', 'lp-linux')} (torrentlab: {x.g(B, 'lp alone', T)}):

{diag_lp}

(Cells: torrentlab \\| ns-3 classic \\| ns-3 classic with the Linux-like TcpLp.)

The rest of the gap in A (torrentlab {x.g(A, 'lp alone', T)} against
{x.g(A, 'lp alone', 'lp-linux')} Mbit/s) is not explained. Candidates:

- ns-3's one-way delays are in 1-ms ticks, about one packet time at 10 Mbit/s.
- The very first sample: ns-3 tests "within threshold" with `<=`, Linux and
  torrentlab with `<`. So Linux and torrentlab take the first sample, where
  min = max, as an indication, and ns-3 does not.
- ns-3 also calls `PktsAcked` on duplicate ACKs.

A poor LP alone is expected from the algorithm in both tools: it reacts to the
queue it builds itself.

### 4. Vegas: ns-3 computes diff differently, from the smoothed RTT

Linux `tcp_vegas.c`, and torrentlab with it, computes
`diff = cwnd (rtt - baseRTT) / baseRTT`. That is the expected-minus-actual rate
times the *measured* RTT. ns-3's `TcpVegas` computes
`diff = cwnd - floor(cwnd baseRtt / minRtt)` = cwnd (rtt - base) / rtt, the
rate difference times the *base* RTT (as in the Vegas paper), rounded up to an
integer. The two are about equal for a small queue. They differ by the factor
rtt/base when another flow fills the buffer:

- Against CUBIC in A the RTT is 70-100 ms for a 50-ms base. The ns-3 Vegas
  window stays at exactly 8 packets for the whole window (traced): 8 (1 -
  50/98) < 4 = beta, so it never decreases. torrentlab's Vegas oscillates
  between 4 and 6 packets.
- Hence the shares: {x.sh(A, 'vegas vs cubic', T)} in torrentlab,
  {x.sh(A, 'vegas vs cubic', K)} (classic) and {x.sh(A, 'vegas vs cubic', P)} (PRR) in
  ns-3. In B: {x.sh(B, 'vegas vs cubic', T)} against {x.sh(B, 'vegas vs cubic', K)} /
  {x.sh(B, 'vegas vs cubic', P)}.
- Alone in A the rounding holds ns-3's queue lower: {x.q(A, 'vegas alone', P)}
  against {x.q(A, 'vegas alone', T)} packets.

Second, ns-3.44 `TcpSocketBase` passes the *smoothed* RTT (`m_tcb->m_srtt`) as
the `rtt` argument of `PktsAcked`. ns-3 Vegas's baseRtt and per-round minimum
are therefore minima of SRTT. In slow start SRTT carries the queue left by the
previous round's burst. ns-3 Vegas leaves slow start at cwnd 35 packets after
0.2 s, with no loss (traced). torrentlab's Vegas, like Linux, takes the
minimum raw RTT of the round. In slow start the first packet of each burst
still finds the queue empty, so diff stays near 0. It keeps doubling to 160
packets and leaves slow start by a loss at 0.31 s:
{x.rx(A, 'vegas alone', T)} retransmissions against {x.rx(A, 'vegas alone', P)} in ns-3.
Also, on a loss ns-3 Vegas sets ssthresh = max(min(ssthresh, cwnd - 1 MSS),
2 MSS) (its own `GetSsThresh`), while Linux and torrentlab halve. That matters
only when the Vegas flow itself loses packets.

### 5. CUBIC details

- Both have HyStart on by default. ns-3's `TcpCubic` attributes, as checked:
  `HyStart` true, `HyStartLowWindow` 16, `HyStartDetect` BOTH. torrentlab
  follows Linux's `hystart_update`: the ACK train must exceed half the minimum
  RTT, and the delay threshold is `clamp(minRTT/8, 4, 16 ms)` over 8 samples.
  The two differ in detail (ns-3's ACK-train and delay thresholds), which
  changes when slow start ends, and that happens before the measurement
  window.
- In A, ns-3's CUBIC still overshoots in slow start (to 123 packets), has two
  recoveries and then an RTO at about 0.84 s (traced, both recovery types);
  torrentlab has no RTO.
- ns-3's CUBIC is the Linux `bictcp_update` form: ACK counting with `cnt`, an
  integer target, `CubicDelta`, `CntClamp`, and the Reno-friendly estimate by
  ACK counting. torrentlab implements RFC 9438 directly: W_cubic(t + RTT),
  clamped to 1.5 cwnd, and W_est.
- In B, RTOs for CUBIC alone: {x.run(B, 'cubic alone', K)['timeouts'][0]} in ns-3 with
  classic recovery, {x.run(B, 'cubic alone', T)['timeouts'][0]} in torrentlab (goodput
  {x.g(B, 'cubic alone', K)} against {x.g(B, 'cubic alone', T)} Mbit/s). In one traced ns-3
  episode, recovery starts at 24.085 s (cwnd 99 -> 69) and the RTO fires at
  25.136 s, still in recovery. That is about one RTT with an 83-packet (1 s)
  queue: the timer expired just before the retransmission could be ACKed. The
  two tools' timers (RTO = max(200 ms, SRTT + 4 RTTVAR) in both) meet this
  race at different moments, so the counts differ without either being wrong.

### 6. Loss recovery and retransmission counts

When an RTO fires, both tools resend every unSACKed segment. With a 1-s
buffer, many of those are still queued, not lost. So in B the retransmissions
exceed the drops in both tools. For NewReno alone in B that is {x.rx(B, 'newreno alone', T)} retransmissions for
{x.dw(B, 'newreno alone', T)} drops in torrentlab, and {x.rx(B, 'newreno alone', P)}
for {x.dw(B, 'newreno alone', P)} in ns-3 (whole run; RTOs:
{x.run(B, 'newreno alone', T)['timeouts'][0]} and {x.run(B, 'newreno alone', P)['timeouts'][0]}).

### 7. TCP Nice (torrentlab only)

ns-3 has no Nice, so nothing checks these numbers. Nice alone in A behaves
exactly like Vegas alone. Against CUBIC it gives way almost completely
({x.sh(A, 'nice vs cubic', T)} in A, {x.sh(B, 'nice vs cubic', T)} in B), as designed.

Alone in B it does not fill the link: {x.g(B, 'nice alone', T)} Mbit/s against
{x.g(B, 'vegas alone', T)} for Vegas. Nice halves when more than half the ACKs
of a round see RTT > min + 0.1 (max - min). At 1 Mbit/s each queued packet adds
12 ms to the RTT, so Nice trips this threshold with its own Vegas queue.

A trace (every 100 ms, 20-23 s) shows a regular cycle of about 0.6 s. The
window grows from 2 to 8 packets by the Vegas rules, then halves in two
consecutive rounds (8 -> 4 -> 2), while the smoothed RTT moves between 69 and
89 ms. At 2-4 packets the window is below the path's 4.2-packet
bandwidth-delay product, so the link idles. This follows from the rule as
implemented. Whether it is the intended behaviour of Nice on so small a path
needs a reference we do not have.

### 8. Smaller modelling differences

- ns-3 opens each connection with a three-way handshake; torrentlab sends
  from t = 0.
- ns-3 timestamps tick in milliseconds.
- ns-3 frames packets with PPP (1502 bytes on the wire).
- ns-3's controllers get SRTT, not the latest RTT sample, in `PktsAcked`. This
  matters for Vegas and CUBIC's HyStart/`delayMin`; LP and LEDBAT use it only
  as a validity flag.

None of these is large enough to explain the differences above.

### Nothing found that looks like a torrentlab bug

Every large difference traced to an ns-3.44 defect (PRR, LEDBAT) or to
torrentlab following Linux where ns-3 does not (LP, Vegas). The unexplained
remainders are the ones listed in sections 2, 3 and 5, and Nice alone at
1 Mbit/s."""
