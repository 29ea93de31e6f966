//! A constant-bit-rate source: one message of `bytes` bytes every
//! `interval` on one connection, and a receiver that notes when each whole
//! message has arrived. Small on purpose: it shows what an application
//! needs of the world (the [`App`] trait and the [`Fabric`]), and nothing in
//! the event loop knows of it.

use std::any::Any;
use std::ops::ControlFlow;

use torrentlab_engine::{Duration, Time};
use torrentlab_net::HostId;

use crate::world::{App, Fabric, Link};

pub(crate) struct Cbr {
    /// This application's index in the world.
    pub id: u32,
    /// The sending end (side 0 of its connection); the receiver is side 1.
    pub link: Link,
    /// Bytes per message.
    pub bytes: u64,
    pub interval: Duration,
    /// No message is written at or after this time.
    pub stop: Time,
    /// When each message was written, in order.
    pub sent: Vec<Time>,
    /// When each message had wholly arrived, in order.
    pub received: Vec<Time>,
}

impl Cbr {
    /// A source on `link`, its first message at `start`.
    pub fn new(id: u32, f: &mut Fabric, link: Link, bytes: u64, interval: Duration, start: Time, stop: Time) -> Cbr {
        assert!(bytes > 0 && interval > Duration::ZERO);
        f.claim(link, 0);
        f.claim(link.peer(), 0);
        f.set_read_mark(link.peer(), bytes);
        f.schedule(start, id, 0);
        Cbr { id, link, bytes, interval, stop, sent: Vec::new(), received: Vec::new() }
    }
}

impl App for Cbr {
    fn event(&mut self, now: Time, f: &mut Fabric, _ev: u32) -> ControlFlow<()> {
        f.write(self.link, self.bytes);
        self.sent.push(now);
        if now + self.interval < self.stop {
            f.schedule(now + self.interval, self.id, 0);
        }
        ControlFlow::Continue(())
    }

    fn accept(&mut self, _: Time, _: &mut Fabric, _: Link, _: HostId, _: HostId) -> Option<u32> {
        Some(0)
    }

    fn readable(&mut self, now: Time, f: &mut Fabric, link: Link, _slot: u32) {
        let whole = f.delivered(link) / self.bytes;
        while (self.received.len() as u64) < whole {
            self.received.push(now);
        }
        f.set_read_mark(link, (whole + 1) * self.bytes);
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoint::{Transport, TransportKind};
    use crate::watch::progress_only;
    use crate::world::{Route, World};
    use std::sync::Arc;
    use torrentlab_net::{BufferLimit, HostConfig, Latency, LinkConfig, Network};
    use torrentlab_transport::cc::CcConfig;
    use torrentlab_transport::tcp::{TcpConfig, TcpConnection};
    use torrentlab_transport::utp::{UtpConfig, UtpSocket};

    const ONE_WAY: Duration = Duration(20_000_000);

    /// Endpoints of `kind` for a connection with id `id`.
    fn endpoints(kind: TransportKind, id: u16) -> [Transport; 2] {
        match kind {
            TransportKind::Tcp => {
                let cfg = Arc::new(TcpConfig { handshake: true, nagle: false, ..TcpConfig::linux() });
                [
                    Transport::Tcp(TcpConnection::connect(cfg.clone(), CcConfig::NewReno.build())),
                    Transport::Tcp(TcpConnection::listen(cfg, CcConfig::NewReno.build())),
                ]
            }
            TransportKind::Utp => {
                let cfg = UtpConfig { nagle: false, ..UtpConfig::default() };
                [
                    Transport::Utp(UtpSocket::connect(cfg.clone(), Time::ZERO, id, 1, 0)),
                    Transport::Utp(UtpSocket::accept(cfg, id, 77, 0)),
                ]
            }
            TransportKind::Datagram => unreachable!("a stream over {kind:?}"),
        }
    }

    /// Two hosts behind 1 Mbit/s uplinks, `ONE_WAY` apart.
    fn fabric() -> crate::world::Fabric {
        let up = LinkConfig { capacity_bps: Some(1_000_000), buffer: BufferLimit::Packets(100), delay: Duration::ZERO };
        let host = HostConfig { uplink: up, downlink: LinkConfig::TRANSPARENT, ingress_loss: 0.0 };
        let net = Network::new(1, &[host, host], Latency::Uniform(ONE_WAY));
        crate::world::Fabric::new(
            net,
            Route::PerConnection,
            4,
            crate::world::ConnTable::new(false, 2),
            Time::ZERO + Duration::from_secs(5),
        )
    }

    /// One connection over `kind` from host 0 to host 1, carrying a 200-byte
    /// message every 20 ms for 2 s.
    fn run(kind: TransportKind) -> (Cbr, World) {
        let mut f = fabric();
        let end = Time::ZERO + Duration::from_secs(5);
        let conn = f.open(Time::ZERO, [HostId(0), HostId(1)], [0, 0], endpoints(kind, 5));
        let start = Time::ZERO + Duration::from_millis(500);
        let cbr = Cbr::new(
            0,
            &mut f,
            Link::new(conn, 0),
            200,
            Duration::from_millis(20),
            start,
            start + Duration::from_secs(2),
        );
        let mut w = World::new(f, vec![Box::new(cbr)], end);
        let _ = w.run(Duration::from_secs(1), &mut progress_only(&mut |_| {}), None);
        let cbr = *w.take_app::<Cbr>(0);
        (cbr, w)
    }

    #[test]
    fn two_hosts_can_hold_a_tcp_and_a_utp_connection_at_once_each_carrying_its_own_stream() {
        let mut f = fabric();
        let end = Time::ZERO + Duration::from_secs(5);
        let start = Time::ZERO + Duration::from_millis(100);
        let mut apps: Vec<Box<dyn crate::world::App>> = Vec::new();
        for (id, kind) in TransportKind::ALL.into_iter().enumerate() {
            let conn = f.open(Time::ZERO, [HostId(0), HostId(1)], [id as u32; 2], endpoints(kind, 9));
            let every = Duration::from_millis(10 + 10 * id as u64);
            apps.push(Box::new(Cbr::new(
                id as u32,
                &mut f,
                Link::new(conn, 0),
                300,
                every,
                start,
                start + Duration::from_secs(2),
            )));
        }
        let mut w = World::new(f, apps, end);
        let _ = w.run(Duration::from_secs(1), &mut progress_only(&mut |_| {}), None);
        for (id, kind) in TransportKind::ALL.into_iter().enumerate() {
            assert_eq!(w.f.conns[id].ep[0].kind(), kind);
            assert_eq!(w.f.conns[id].host, [0, 1], "the same pair of hosts");
            let cbr = w.take_app::<Cbr>(id);
            assert_eq!(cbr.sent.len(), [200, 100][id], "{kind:?}");
            assert_eq!(cbr.received.len(), cbr.sent.len(), "{kind:?}: every message on its own connection");
            assert_eq!(w.f.delivered(Link::new(id as u32, 1)), 300 * cbr.sent.len() as u64);
        }
    }

    #[test]
    fn an_application_outside_the_loop_sends_and_receives_over_either_transport() {
        for kind in TransportKind::ALL {
            let (cbr, w) = run(kind);
            assert_eq!(cbr.sent.len(), 100, "{kind:?}: 2 s of 20 ms ticks");
            assert_eq!(cbr.received.len(), cbr.sent.len(), "{kind:?}: every message arrives");
            assert_eq!(w.f.conns[0].ep[0].kind(), kind);
            // The first message waits for the handshake the write starts.
            let first = cbr.received[0].saturating_since(cbr.sent[0]);
            assert!(first >= ONE_WAY.saturating_mul(3), "{kind:?}: {first}");
            // Then, on an idle line, a message takes the one-way delay and
            // its serialisation at 1 Mbit/s, never less.
            for (s, r) in cbr.sent.iter().zip(&cbr.received).skip(3) {
                let took = r.saturating_since(*s);
                assert!(took >= ONE_WAY, "{kind:?}: {took}");
                assert!(took < ONE_WAY + Duration::from_millis(10), "{kind:?}: {took} on an idle line");
            }
        }
    }
}
