//! # torrentlab-net
//!
//! The network every simulated packet crosses, modelled packet by packet:
//!
//! ```text
//!  host A                         core                          host B
//!  ──▶ uplink (FIFO, C_up, B_up) ──▶ one-way delay d(A,B) ──▶ downlink (FIFO, C_down, B_down) ──▶ ingress loss ──▶
//! ```
//!
//! * [`Link`]: an access link in one direction: a capacity in bit/s (or unlimited),
//!   a drop-tail FIFO whose limit is a number of packets or bytes, and a
//!   propagation delay. Serialisation time is `wire bytes x 8 / capacity`.
//! * [`Latency`]: the core, which adds a one-way propagation delay per (src, dst)
//!   pair and has no capacity limit.
//! * [`Network`]: hosts, their two links each, the core and per-host Bernoulli
//!   ingress loss; it tells the caller where a packet goes next and when.
//!
//! The network never stores payload, only wire sizes. It owns no clock and no
//! event queue: every call takes `now`, and the caller schedules what it returns.

mod link;
mod monitor;
mod network;
pub mod wire;

pub use link::{BufferLimit, Link, LinkConfig, LinkStats, Offer};
pub use monitor::{DelayHistogram, QueueLog, QueueRecord};
pub use network::{HostConfig, HostId, Latency, LinkId, Network, NetworkStats, Transit};
