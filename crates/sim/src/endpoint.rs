//! The endpoint a connection of the world holds: any transport behind one
//! [`Endpoint`] interface, stored inline and dispatched statically.
//!
//! Adding a transport means a sans-IO module in crates/transport that
//! implements [`Endpoint`], a variant here and its name in [`TransportKind`];
//! the event loop does not change.

use torrentlab_engine::Time;
use torrentlab_transport::datagram::DatagramSocket;
use torrentlab_transport::stream::{ConnCounters, ConnInfo, Endpoint, Wire};
use torrentlab_transport::tcp::TcpConnection;
use torrentlab_transport::utp::UtpSocket;

/// Which transport a connection runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TransportKind {
    /// TCP (RFC 9293) with any congestion controller.
    Tcp,
    /// uTP (BEP 29) over UDP with its LEDBAT.
    Utp,
    /// Datagrams: UDP or ICMP echo (ping, VoIP), without a stream.
    Datagram,
}

impl TransportKind {
    /// The stream transports (those BitTorrent and bulk flows run over).
    pub const ALL: [TransportKind; 2] = [TransportKind::Tcp, TransportKind::Utp];

    /// The name used in scenarios and result tables.
    pub fn name(self) -> &'static str {
        match self {
            TransportKind::Tcp => "tcp",
            TransportKind::Utp => "utp",
            TransportKind::Datagram => "datagram",
        }
    }
}

/// One end of a connection, held inline: TCP endpoints and uTP sockets are
/// about the same size (a test below keeps them so). `Other` holds any other endpoint (the dumbbell's one-way TCP halves, a
/// transport under test), called through a vtable.
///
/// Aligned to 64 bytes by the world (the connection table is read packet by
/// packet from memory the cache no longer holds): an endpoint starts a
/// cache line, so what a packet reads of it is whole lines.
#[repr(align(64))]
#[allow(clippy::large_enum_variant)] // held inline on purpose: no allocation, no pointer to chase per packet
pub(crate) enum Transport {
    Tcp(TcpConnection),
    Utp(UtpSocket),
    Datagram(DatagramSocket),
    Other(Box<dyn Endpoint>, TransportKind),
}

/// Forwards a call to whichever transport `self` holds (`ref` or `mut`).
macro_rules! each {
    (ref $self:expr, $ep:ident => $call:expr) => {
        match $self {
            Transport::Tcp($ep) => $call,
            Transport::Utp($ep) => $call,
            Transport::Datagram($ep) => $call,
            Transport::Other(boxed, _) => {
                let $ep: &dyn Endpoint = boxed.as_ref();
                $call
            }
        }
    };
    (mut $self:expr, $ep:ident => $call:expr) => {
        match $self {
            Transport::Tcp($ep) => $call,
            Transport::Utp($ep) => $call,
            Transport::Datagram($ep) => $call,
            Transport::Other(boxed, _) => {
                let $ep: &mut dyn Endpoint = boxed.as_mut();
                $call
            }
        }
    };
}

impl From<torrentlab_bittorrent::dial::Transport> for TransportKind {
    fn from(t: torrentlab_bittorrent::dial::Transport) -> Self {
        match t {
            torrentlab_bittorrent::dial::Transport::Tcp => TransportKind::Tcp,
            torrentlab_bittorrent::dial::Transport::Utp => TransportKind::Utp,
        }
    }
}

impl TryFrom<TransportKind> for torrentlab_bittorrent::dial::Transport {
    type Error = TransportKind;
    /// The stream transports; a datagram is not a peer-wire connection.
    fn try_from(t: TransportKind) -> Result<Self, TransportKind> {
        match t {
            TransportKind::Tcp => Ok(torrentlab_bittorrent::dial::Transport::Tcp),
            TransportKind::Utp => Ok(torrentlab_bittorrent::dial::Transport::Utp),
            other => Err(other),
        }
    }
}

impl Transport {
    /// Refuses a dial that reached this acceptor without a word where the
    /// transport allows it (a uTP SYN is dropped); a TCP SYN is reset, as
    /// by a port nobody listens on.
    pub fn ignore(&mut self) {
        match self {
            Transport::Utp(s) => s.ignore(),
            _ => Endpoint::abort(self),
        }
    }

    pub fn kind(&self) -> TransportKind {
        match self {
            Transport::Tcp(_) => TransportKind::Tcp,
            Transport::Utp(_) => TransportKind::Utp,
            Transport::Datagram(_) => TransportKind::Datagram,
            Transport::Other(_, kind) => *kind,
        }
    }

    /// Whether the application may write more: Linux lets a socket queue
    /// about twice the congestion window (at least twice ten packets) before
    /// `write` blocks (`tcp_sndbuf_expand`). uTP sockets get the same rule,
    /// an assumption: libutp leaves buffering to the application.
    #[inline]
    pub fn flushed(&self) -> bool {
        let (cwnd, packet) = self.window();
        self.unacked() < 2 * cwnd.max(10 * packet as u64)
    }
}

impl Endpoint for Transport {
    #[inline]
    fn write(&mut self, bytes: u64) {
        each!(mut self, e => Endpoint::write(e, bytes))
    }
    fn stop_writing(&mut self) {
        each!(mut self, e => Endpoint::stop_writing(e))
    }
    fn close(&mut self) {
        each!(mut self, e => Endpoint::close(e))
    }
    #[inline]
    fn delivered(&self) -> u64 {
        each!(ref self, e => Endpoint::delivered(e))
    }
    #[inline]
    fn unacked(&self) -> u64 {
        each!(ref self, e => Endpoint::unacked(e))
    }
    fn peer_finished(&self) -> bool {
        each!(ref self, e => Endpoint::peer_finished(e))
    }
    #[inline]
    fn handle(&mut self, now: Time, packet: &Wire) {
        each!(mut self, e => Endpoint::handle(e, now, packet))
    }
    #[inline]
    fn poll_transmit(&mut self, now: Time) -> Option<Wire> {
        each!(mut self, e => Endpoint::poll_transmit(e, now))
    }
    #[inline]
    fn poll_timeout(&self) -> Option<Time> {
        each!(ref self, e => Endpoint::poll_timeout(e))
    }
    #[inline]
    fn handle_timeout(&mut self, now: Time) {
        each!(mut self, e => Endpoint::handle_timeout(e, now))
    }
    fn info(&self) -> Option<ConnInfo> {
        each!(ref self, e => Endpoint::info(e))
    }
    fn counters(&self) -> ConnCounters {
        each!(ref self, e => Endpoint::counters(e))
    }
    #[inline]
    fn is_alive(&self) -> bool {
        each!(ref self, e => Endpoint::is_alive(e))
    }
    fn abort(&mut self) {
        each!(mut self, e => Endpoint::abort(e))
    }
    #[inline]
    fn is_established(&self) -> bool {
        each!(ref self, e => Endpoint::is_established(e))
    }
    #[inline]
    fn syn_received(&self) -> bool {
        each!(ref self, e => Endpoint::syn_received(e))
    }
    #[inline]
    fn window(&self) -> (u64, u32) {
        each!(ref self, e => Endpoint::window(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use torrentlab_transport::cc::CcConfig;
    use torrentlab_transport::tcp::TcpConfig;
    use torrentlab_transport::utp::UtpConfig;

    /// A dialler and an acceptor over each transport (the uTP acceptor's
    /// clock offset from the dialler's, as between real hosts).
    fn pairs() -> [(Transport, Transport); 2] {
        let tcp = Arc::new(TcpConfig { handshake: true, ..TcpConfig::linux() });
        [
            (
                Transport::Tcp(TcpConnection::connect(tcp.clone(), CcConfig::NewReno.build())),
                Transport::Tcp(TcpConnection::listen(tcp, CcConfig::NewReno.build())),
            ),
            (
                Transport::Utp(UtpSocket::connect(UtpConfig::default(), Time::ZERO, 7, 1, 0)),
                Transport::Utp(UtpSocket::accept(UtpConfig::default(), 7, 900, 12_345)),
            ),
        ]
    }

    fn run_pair(mut a: Transport, mut b: Transport, bytes: u64) -> (Transport, Transport) {
        a.write(bytes);
        let mut now = Time::ZERO;
        for _ in 0..400 {
            now += torrentlab_engine::Duration::from_millis(5);
            while let Some(p) = a.poll_transmit(now) {
                b.handle(now, &p);
            }
            while let Some(p) = b.poll_transmit(now) {
                a.handle(now, &p);
            }
            for e in [&mut a, &mut b] {
                if e.poll_timeout().is_some_and(|t| t <= now) {
                    e.handle_timeout(now);
                }
            }
        }
        (a, b)
    }

    #[test]
    fn an_endpoint_starts_a_cache_line_and_takes_no_more_than_nine() {
        use std::mem::{align_of, size_of};
        assert_eq!(align_of::<Transport>(), 64);
        let (tcp, utp) = (size_of::<TcpConnection>(), size_of::<UtpSocket>());
        assert!(size_of::<Transport>() <= 9 * 64, "tcp {tcp}, utp {utp}: {}", size_of::<Transport>());
    }

    #[test]
    fn either_transport_carries_a_stream_through_the_same_interface() {
        for (a, b) in pairs() {
            let kind = a.kind();
            assert!(!a.is_established() && !b.syn_received(), "{kind:?}: nothing exchanged yet");
            let (a, b) = run_pair(a, b, 200_000);
            assert!(a.is_established(), "{kind:?}");
            assert_eq!((b.delivered(), a.unacked()), (200_000, 0), "{kind:?}");
            assert!(a.flushed(), "{kind:?}: nothing left unacknowledged");
        }
    }

    #[test]
    fn a_socket_holding_more_than_twice_its_window_is_not_flushed() {
        let tcp = Arc::new(TcpConfig { handshake: true, ..TcpConfig::linux() });
        let mut a = Transport::Tcp(TcpConnection::connect(tcp, CcConfig::NewReno.build()));
        let (cwnd, mss) = a.window();
        let limit = 2 * cwnd.max(10 * mss as u64);
        a.write(limit - 1);
        assert!(a.flushed());
        a.write(1);
        assert!(!a.flushed());
    }

    #[test]
    fn an_abort_reaches_the_peer_on_either_transport() {
        for (a, b) in pairs() {
            let (mut a, mut b) = run_pair(a, b, 10);
            a.abort();
            let now = Time::ZERO + torrentlab_engine::Duration::from_secs(10);
            while let Some(p) = a.poll_transmit(now) {
                b.handle(now, &p);
            }
            assert!(!a.is_alive() && !b.is_alive(), "{:?}", a.kind());
        }
    }
}
