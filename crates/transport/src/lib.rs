//! # torrentlab-transport
//!
//! Transports as sans-IO state machines, in the style of quinn-proto: they never
//! touch a socket or a clock. Every input carries `now` (`handle_ack(now, ..)`,
//! `handle_timeout(now)`); outputs are pulled (`poll_transmit(now)`,
//! `poll_timeout()`). A spurious `handle_timeout` is harmless, so a driver never
//! has to cancel timers.
//!
//! * [`tcp`]: TCP data transfer (RFC 9293) with RFC 5681/6582 loss recovery,
//!   the RFC 6298 retransmission timer, RFC 7323 timestamps and delayed ACKs.
//! * [`cc`]: congestion controllers behind one trait ([`cc::CongestionControl`]):
//!   NewReno, CUBIC, Vegas, TCP-LP, TCP Nice and LEDBAT.
//! * [`utp`]: uTP (BEP 29) over UDP with its own LEDBAT.
//! * [`datagram`]: UDP datagrams and ICMP echoes (ping, VoIP): no
//!   handshake, acknowledgement or retransmission.
//! * [`stream`]: the transport-neutral [`stream::Endpoint`] both implement. ACK samples carry both the RTT and the one-way delay,
//!   which delay-based controllers need.
//!
//! Segments carry lengths, never payload bytes.

pub mod cc;
pub mod datagram;
pub mod stream;
pub mod tcp;
pub mod utp;
