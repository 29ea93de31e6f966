//! The rows of the `connections` and `transports` tables: one per
//! connection of the peers, taken when the connection is over (its place in
//! the world's table then goes to another, see `world::ConnTable`) or, for
//! those still open, at the end of the run.

use torrentlab_engine::Time;
use torrentlab_transport::stream::Endpoint;

use crate::apps::ConnFrames;
use crate::endpoint::TransportKind;
use crate::table::Table;
use crate::world::Conn;

/// What the tables say of one connection (side 0 dialled).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ConnRow {
    /// Its place in the order connections were opened (the `conn` column).
    pub serial: u32,
    hosts: [u32; 2],
    kind: TransportKind,
    opened: Time,
    /// When the first side closed.
    closed: Option<Time>,
    /// Block payload bytes of piece messages each side framed.
    piece: [u64; 2],
    /// Bytes of every message each side framed.
    framed: [u64; 2],
    /// Stream bytes each side wrote.
    written: [u64; 2],
    /// IP bytes each side sent.
    wire: [u64; 2],
    /// Packets retransmitted, both sides.
    retransmitted: u64,
    /// Retransmission timeouts, both sides.
    timeouts: u64,
}

impl ConnRow {
    /// The row of connection `c`, whose streams carried `fr`.
    pub fn of(c: &Conn, fr: &ConnFrames) -> ConnRow {
        let (a, b) = (c.ep[0].counters(), c.ep[1].counters());
        ConnRow {
            serial: c.serial,
            hosts: c.host,
            kind: c.ep[0].kind(),
            opened: c.opened,
            closed: c.closed[0].into_iter().chain(c.closed[1]).min(),
            piece: fr.piece_bytes,
            framed: fr.framed,
            written: c.written,
            wire: c.wire_bytes,
            retransmitted: a.retransmitted_packets + b.retransmitted_packets,
            timeouts: a.timeouts + b.timeouts,
        }
    }
}

fn secs(t: Option<Time>) -> f64 {
    t.map_or(f64::NAN, |t| t.as_secs_f64())
}

/// The `connections` table of `rows`, in their order (docs/metrics.md).
pub(crate) fn connections_table(rows: &[ConnRow]) -> Table {
    let int = |g: &dyn Fn(&ConnRow) -> u64| rows.iter().map(|r| g(r) as i64).collect::<Vec<_>>();
    let mut t = Table::default();
    t.i64("conn", int(&|r| r.serial as u64))
        .i64("initiator", int(&|r| r.hosts[0] as u64))
        .i64("acceptor", int(&|r| r.hosts[1] as u64))
        .str("transport", rows.iter().map(|r| r.kind.name().to_string()).collect())
        .f64("opened_s", rows.iter().map(|r| r.opened.as_secs_f64()).collect())
        .f64("closed_s", rows.iter().map(|r| secs(r.closed)).collect())
        .i64("piece_bytes_forward", int(&|r| r.piece[0]))
        .i64("piece_bytes_reverse", int(&|r| r.piece[1]))
        .i64("stream_bytes_forward", int(&|r| r.written[0]))
        .i64("stream_bytes_reverse", int(&|r| r.written[1]))
        .i64("control_bytes_forward", int(&|r| r.framed[0] - r.piece[0]))
        .i64("control_bytes_reverse", int(&|r| r.framed[1] - r.piece[1]))
        .i64("wire_bytes_forward", int(&|r| r.wire[0]))
        .i64("wire_bytes_reverse", int(&|r| r.wire[1]))
        .i64("retransmitted_packets", int(&|r| r.retransmitted))
        .i64("timeouts", int(&|r| r.timeouts));
    t
}

/// One row per transport: its connections and what they carried, by kind
/// (block payload of piece messages, every other byte of the messages
/// written or being written into the streams, and IP bytes on the wire),
/// both directions.
pub(crate) fn transports_table(rows: &[ConnRow]) -> Table {
    let mut sums: Vec<(TransportKind, [u64; 4])> = TransportKind::ALL.iter().map(|&k| (k, [0; 4])).collect();
    for r in rows {
        let s = &mut sums.iter_mut().find(|s| s.0 == r.kind).expect("every kind has a row").1;
        s[0] += 1;
        for side in 0..2 {
            s[1] += r.piece[side];
            s[2] += r.framed[side] - r.piece[side];
            s[3] += r.wire[side];
        }
    }
    let col = |i: usize| sums.iter().map(|s| s.1[i] as i64).collect::<Vec<_>>();
    let mut t = Table::default();
    t.str("transport", sums.iter().map(|s| s.0.name().to_string()).collect())
        .i64("connections", col(0))
        .i64("piece_bytes", col(1))
        .i64("control_bytes", col(2))
        .i64("wire_bytes", col(3));
    t
}
