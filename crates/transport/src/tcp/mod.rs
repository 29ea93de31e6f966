//! TCP as a sans-IO state machine.
//!
//! A bulk transfer is a [`TcpSender`] on one host and a [`TcpReceiver`] on the
//! other, or a [`TcpConnection`] at each end when the handshake and teardown
//! are modelled. Sequence numbers are 64-bit stream offsets internally (no wrap-around);
//! on the wire ([`Segment::encode`]) they are the usual 32 bits.

mod config;
mod connection;
mod rack;
mod receiver;
mod recovery;
mod rtt;
mod sack;
mod segment;
mod sender;
mod thin_vec;

pub use config::{Frto, LossDetection, NewRenoTimer, RecoveryRate, RtoFormula, TcpConfig, TSO_MAX_PACKET};
pub use connection::{TcpConnection, TcpState};
pub use receiver::{ReceiverState, ReceiverStats, TcpReceiver};
pub use rtt::RttEstimator;
pub use sack::SackBlocks;
pub use segment::{decode, DecodedHeader, Flags, Segment, Timestamps};
pub use sender::{SenderStats, TcpInfo, TcpSender};

#[cfg(test)]
mod connection_tests;
#[cfg(test)]
mod recovery_tests;
#[cfg(test)]
mod tests;
