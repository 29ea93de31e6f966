//! uTP, the micro transport protocol (BEP 29), as a sans-IO socket over UDP.
//!
//! * [`UtpConfig`]: the parameters, libutp's by default, and libtorrent's.
//! * [`header`]: the real 20-byte header and the selective-ACK extension.
//! * [`UtpSocket`]: connection setup (SYN / STATE), data, FIN, RESET,
//!   cumulative and selective ACKs, fast retransmit on three duplicate ACKs or
//!   three SACKed packets past a hole, timeouts as libutp does them, Nagle
//!   (one undersized packet in flight), the receive window, and per-host clock
//!   offsets: each socket reads its own clock, so one-way delays are measured
//!   as real peers measure them.
//! * [`ledbat`]: the congestion window, in the `bep29` (libutp), `rfc6817` and
//!   early-draft forms.

mod config;
pub mod header;
pub mod ledbat;
mod socket;

pub use config::UtpConfig;
pub use header::{Header, PacketType, SackMask};
pub use ledbat::{UtpCcConfig, UtpLedbat, Variant};
pub use socket::{UtpInfo, UtpPacket, UtpSocket, UtpState, UtpStats};

#[cfg(test)]
mod tests;
