//! A queue monitor: one record per dequeue, as E1/E4 log the bottleneck.

use torrentlab_engine::Time;

/// The state of a link's queue right after a packet left it for the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueRecord {
    /// When the packet was dequeued (started serialisation).
    pub time: Time,
    /// Bytes still waiting in the queue after this dequeue (wire bytes).
    pub bytes_left: u64,
    /// Packets still waiting after this dequeue.
    pub packets_left: u32,
    /// Packets dequeued so far, this one included.
    pub served_packets: u64,
    /// Wire bytes dequeued so far, this one included.
    pub served_bytes: u64,
    /// Packets dropped on arrival so far (strictly before `time`).
    pub dropped_packets: u64,
}

/// Every dequeue of one link, in time order.
#[derive(Clone, Debug, Default)]
pub struct QueueLog {
    pub records: Vec<QueueRecord>,
}
