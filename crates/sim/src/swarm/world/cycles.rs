//! Where a swarm run's time goes, by kind of event: the time-stamp counter
//! read around every event, and around every message a client handles.
//!
//! Built only with the `event-cycles` feature, on x86-64; the run then
//! prints the table to standard error when it ends:
//!
//! ```sh
//! cargo run --release -p torrentlab-sim --features event-cycles --example bench SCENARIO.toml
//! ```
//!
//! Otherwise [`EventCycles`] has no size and every method is empty, so the
//! event loop compiles as if it were not there. Two reads of the counter
//! cost about 25 cycles, which every figure includes; the message figures
//! are inside their events' (a message's includes sending what its client
//! writes in answer).

/// Kinds of event, in the order [`Tally::report`] lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(all(feature = "event-cycles", target_arch = "x86_64")), allow(dead_code))]
pub(crate) enum Kind {
    /// A packet with payload that completes no message.
    Data = 0,
    /// A packet with payload that completes at least one message.
    DataMessage,
    /// A packet without payload (pure ACK, SYN, FIN, RST).
    NoData,
    /// An endpoint timer superseded, or with no deadline left.
    TimerStale,
    /// An endpoint timer whose deadline moved later (queued again).
    TimerMoved,
    /// An endpoint timer that fired (a delayed ACK, a retransmission).
    TimerDue,
    /// A client timer superseded.
    ClientStale,
    /// A client timer that fired (upload turns, rechokes, keep-alives).
    Client,
    /// Joins, departures, announces, tracker replies.
    Other,
}

#[cfg(all(any(test, feature = "event-cycles"), target_arch = "x86_64"))]
const KINDS: [&str; 9] = [
    "packet with data",
    "packet with data completing a message",
    "packet without data",
    "endpoint timer: stale",
    "endpoint timer: moved later",
    "endpoint timer: due",
    "client timer: stale",
    "client timer: due",
    "other",
];

/// Messages, in the order [`Tally::report`] lists them.
#[cfg(all(any(test, feature = "event-cycles"), target_arch = "x86_64"))]
const MESSAGES: [&str; 12] = [
    "piece",
    "have",
    "request",
    "choke",
    "unchoke",
    "interested",
    "not interested",
    "cancel",
    "keep-alive",
    "bitfield",
    "handshake",
    "port",
];

/// The index of `f` in [`MESSAGES`].
#[cfg(all(any(test, feature = "event-cycles"), target_arch = "x86_64"))]
fn message_index(f: &torrentlab_bittorrent::client::Frame) -> usize {
    use torrentlab_bittorrent::client::Frame;
    use torrentlab_bittorrent::wire::Message as M;
    match f {
        Frame::Msg(m) => match m {
            M::Piece { .. } => 0,
            M::Have { .. } => 1,
            M::Request { .. } => 2,
            M::Choke => 3,
            M::Unchoke => 4,
            M::Interested => 5,
            M::NotInterested => 6,
            M::Cancel { .. } => 7,
            M::KeepAlive => 8,
            M::Bitfield { .. } => 9,
            M::Port { .. } => 11,
        },
        Frame::Bitfield(_) => 9,
        Frame::Handshake => 10,
    }
}

#[cfg(all(any(test, feature = "event-cycles"), target_arch = "x86_64"))]
#[inline(always)]
fn now() -> u64 {
    // SAFETY: `rdtsc` reads a counter; it has no preconditions.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// What the world holds: a [`Tally`] with the feature, nothing without.
#[cfg(all(feature = "event-cycles", target_arch = "x86_64"))]
pub(crate) type EventCycles = Tally;
/// What the world holds: a [`Tally`] with the feature, nothing without.
#[cfg(not(all(feature = "event-cycles", target_arch = "x86_64")))]
pub(crate) type EventCycles = Off;

/// Cycles and counts by kind of event and of message (see the module).
#[cfg(all(any(test, feature = "event-cycles"), target_arch = "x86_64"))]
#[derive(Default)]
pub(crate) struct Tally {
    start: u64,
    kind: Option<Kind>,
    cycles: [u64; KINDS.len()],
    events: [u64; KINDS.len()],
    message_cycles: [u64; MESSAGES.len()],
    messages: [u64; MESSAGES.len()],
}

#[cfg(all(any(test, feature = "event-cycles"), target_arch = "x86_64"))]
#[cfg_attr(not(feature = "event-cycles"), allow(dead_code))]
impl Tally {
    /// An event starts.
    #[inline(always)]
    pub fn begin(&mut self) {
        self.kind = None;
        self.start = now();
    }

    /// What the event is (the last call wins, except that a packet stays one
    /// that completed a message).
    #[inline(always)]
    pub fn kind(&mut self, k: Kind) {
        if self.kind != Some(Kind::DataMessage) {
            self.kind = Some(k);
        }
    }

    /// The event ends.
    #[inline(always)]
    pub fn end(&mut self) {
        let k = self.kind.unwrap_or(Kind::Other) as usize;
        self.cycles[k] += now() - self.start;
        self.events[k] += 1;
    }

    /// A client is about to handle `f`: the counter now.
    #[inline(always)]
    pub fn message_begin(&mut self, f: &torrentlab_bittorrent::client::Frame) -> (usize, u64) {
        if self.kind == Some(Kind::Data) {
            self.kind = Some(Kind::DataMessage);
        }
        (message_index(f), now())
    }

    /// The client has handled the message `message_begin` gave `m` for.
    #[inline(always)]
    pub fn message_end(&mut self, m: (usize, u64)) {
        self.message_cycles[m.0] += now() - m.1;
        self.messages[m.0] += 1;
    }

    /// The table, one line per kind with events.
    pub fn report(&self) -> String {
        let total: u64 = self.cycles.iter().sum();
        let mut out = format!("{:<42} {:>12} {:>14} {:>10}\n", "event", "events", "cycles/event", "% cycles");
        let rows = KINDS.iter().zip(self.events.iter().zip(&self.cycles));
        let messages = MESSAGES.iter().zip(self.messages.iter().zip(&self.message_cycles));
        for (i, (name, (&n, &c))) in rows.chain(messages).enumerate() {
            if n > 0 {
                let name = if i < KINDS.len() { name.to_string() } else { format!("  message: {name}") };
                let share = 100.0 * c as f64 / total.max(1) as f64;
                out += &format!("{name:<42} {n:>12} {:>14.1} {share:>10.1}\n", c as f64 / n as f64);
            }
        }
        out
    }
}

/// Without the `event-cycles` feature: nothing.
#[cfg(not(all(feature = "event-cycles", target_arch = "x86_64")))]
#[derive(Default)]
pub(crate) struct Off;

/// What [`Off::message_begin`] hands to [`Off::message_end`]: nothing.
#[cfg(not(all(feature = "event-cycles", target_arch = "x86_64")))]
pub(crate) struct NoMark;

#[cfg(not(all(feature = "event-cycles", target_arch = "x86_64")))]
impl Off {
    #[inline(always)]
    pub fn begin(&mut self) {}
    #[inline(always)]
    pub fn kind(&mut self, _: Kind) {}
    #[inline(always)]
    pub fn end(&mut self) {}
    #[inline(always)]
    pub fn message_begin(&mut self, _: &torrentlab_bittorrent::client::Frame) -> NoMark {
        NoMark
    }
    #[inline(always)]
    pub fn message_end(&mut self, _: NoMark) {}
    pub fn report(&self) -> String {
        String::new()
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;
    use torrentlab_bittorrent::client::Frame;
    use torrentlab_bittorrent::wire::Message;

    #[test]
    fn a_packet_that_completes_a_message_counts_as_one_and_its_message_apart() {
        let mut c = Tally::default();
        c.begin();
        c.kind(Kind::Data);
        let m = c.message_begin(&Frame::Msg(Message::Have { piece: 3 }));
        c.message_end(m);
        c.kind(Kind::Data); // a later segment of the same event does not undo it
        c.end();
        c.begin();
        c.end();
        assert_eq!(c.events[Kind::DataMessage as usize], 1);
        assert_eq!(c.events[Kind::Data as usize], 0);
        assert_eq!(c.events[Kind::Other as usize], 1, "an event never told its kind is `other`");
        assert_eq!(c.messages[1], 1, "one HAVE");
        let r = c.report();
        assert!(r.contains("packet with data completing a message") && r.contains("message: have"), "{r}");
        assert!(!r.contains("message: piece"), "kinds without events are left out");
    }
}
