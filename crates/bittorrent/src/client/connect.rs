//! Opening and closing connections: dialling the peers the tracker names
//! over the transports the client dials, answering dials, and keeping one
//! connection per peer (the policies are in [`crate::dial`]).
//!
//! A client may hold two connections to one peer for a while: uTorrent's
//! parallel TCP and uTP attempts, or a TCP dial of ours crossing a uTP dial
//! of theirs. Limits (`max_initiate`, `max_allow_in`, `numwant`) count
//! peers, not sockets.

use torrentlab_engine::Time;

use super::{Client, Io, PeerConn, Stage};
use crate::choker::Choker;
use crate::dial::{Refusal, Transport};
use crate::limiter::UploadLimiter;
use crate::picker::Picker;

impl<P: Picker, C: Choker, L: UploadLimiter> Client<P, C, L> {
    /// The tracker's reply: dial up to `max_initiate` peers, keep the rest
    /// as spares.
    pub fn on_tracker_reply(&mut self, now: Time, peers: &[u32], io: &mut dyn Io) {
        self.now = now;
        if self.left {
            return;
        }
        for &p in peers {
            if p == self.id || self.connected_to(p).is_some() {
                continue;
            }
            if self.live() < self.cfg.max_initiate {
                self.dial(now, p, io);
            } else if self.spares.len() < self.cfg.max_initiate as usize && !self.spares.contains(&p) {
                self.spares.push(p);
            }
        }
    }

    /// Dials `remote` over each transport the client dials first.
    pub(super) fn dial(&mut self, now: Time, remote: u32, io: &mut dyn Io) {
        for &t in self.cfg.transports.first_dials() {
            self.dial_over(now, remote, t, io);
        }
    }

    fn dial_over(&mut self, now: Time, remote: u32, t: Transport, io: &mut dyn Io) {
        let pieces = self.torrent.pieces();
        let slot = self.alloc(PeerConn::new(now, u32::MAX, remote, true, t, pieces));
        let link = io.connect(remote, slot, t);
        self.conn(slot).link = link;
        self.stats.connections_opened += 1;
    }

    /// A connection from `remote` over `transport` arrives on `link`.
    /// Returns our slot for it, or why it is refused: a transport the client
    /// does not answer, `max_allow_in` reached or gone, or a duplicate.
    ///
    /// Against a connection we already hold to `remote`: with the uTP
    /// preference, a uTP one replaces a TCP one, and a TCP one is refused
    /// once a uTP one is up (taken while our uTP dial is still under way).
    /// Otherwise, when two dials cross, the one from the lower peer id wins.
    pub fn accept(
        &mut self,
        now: Time,
        remote: u32,
        link: u32,
        transport: Transport,
        io: &mut dyn Io,
    ) -> Result<u32, Refusal> {
        let tr = self.cfg.transports;
        // With the uTP preference a second connection to a peer we hold is
        // a twin, not a new peer, so the limit does not refuse it (mainline
        // refuses at its limit before looking at who dials).
        let new_peer = !(tr.prefer_utp && self.connected_to(remote).is_some());
        let refused = if !tr.accepts(transport) {
            Some(Refusal::Transport)
        } else if self.left || (new_peer && self.live() >= self.cfg.max_allow_in) {
            Some(Refusal::Full)
        } else {
            None
        };
        if let Some(r) = refused {
            self.stats.connections_refused += 1;
            return Err(r);
        }
        let me = self.id;
        // (slot, replaced by a uTP connection rather than lost in a crossing).
        let mut losers: Vec<(u32, bool)> = Vec::new();
        let mut duplicate = false;
        for (s, c) in self.connections().filter(|(_, c)| c.remote == remote) {
            if tr.prefer_utp && c.transport != transport {
                if transport == Transport::Utp {
                    losers.push((s, true));
                } else if c.stage != Stage::Connecting {
                    duplicate = true;
                }
            } else if c.initiator && c.stage != Stage::Ready && remote < me {
                losers.push((s, false));
            } else {
                duplicate = true;
            }
        }
        if duplicate {
            self.stats.connections_refused += 1;
            return Err(Refusal::Duplicate);
        }
        for (s, replaced) in losers {
            let link = self.conn(s).link;
            io.close(link);
            // A dial lost in a crossing frees a place for a spare (mainline);
            // a connection replaced by uTP does not.
            self.drop_conn(now, s, io, !replaced);
        }
        let slot = self.alloc(PeerConn::new(now, link, remote, false, transport, self.torrent.pieces()));
        self.conn(slot).stage = Stage::Handshaking;
        Ok(slot)
    }

    /// Our dial on `slot` is connected: the handshake goes out. With the uTP
    /// preference, a uTP connection replaces any TCP one to the same peer.
    pub fn on_connected(&mut self, now: Time, slot: u32, io: &mut dyn Io) {
        self.now = now;
        let c = self.conn(slot);
        let (remote, transport) = (c.remote, c.transport);
        if self.cfg.transports.prefer_utp && transport == Transport::Utp {
            loop {
                let tcp = self.connections().find(|(_, c)| c.remote == remote && c.transport == Transport::Tcp);
                let Some((s, l)) = tcp.map(|(s, c)| (s, c.link)) else { break };
                io.close(l);
                self.drop_conn(now, s, io, false);
            }
        }
        let c = self.conn(slot);
        c.stage = Stage::Handshaking;
        let link = c.link;
        let hs = super::Frame::Handshake { fast: self.cfg.fast_extension };
        let len = hs.wire_len();
        io.frame(link, hs);
        io.write(link, len);
        self.limiter.transceived(slot, len);
    }

    /// The connection on `slot` is gone (reset, refused, or closed by the
    /// remote). A uTP dial that failed is followed by a TCP one if the
    /// client falls back; otherwise a spare is dialled in its place, unless
    /// another connection to the same peer remains.
    pub fn on_closed(&mut self, now: Time, slot: u32, io: &mut dyn Io) {
        self.now = now;
        let Some(c) = self.conns.get(slot as usize).and_then(|c| c.as_ref()) else { return };
        let (remote, failed_dial) = (c.remote, c.initiator && c.stage == Stage::Connecting);
        let utp_dial_failed = failed_dial && c.transport == Transport::Utp;
        let fall_back = utp_dial_failed && self.cfg.transports.falls_back();
        let sibling = self.connections().any(|(s, c)| s != slot && c.remote == remote);
        self.drop_conn(now, slot, io, !fall_back && !sibling);
        if fall_back && !sibling && !self.left {
            self.stats.fallbacks += 1;
            self.dial_over(now, remote, Transport::Tcp, io);
        }
    }

    /// Forgets the connection on `slot` (its requests let go, a rechoke if it
    /// held an unchoke); `replace`: dial a spare in its place.
    pub(super) fn drop_conn(&mut self, now: Time, slot: u32, io: &mut dyn Io, replace: bool) {
        let c = self.conns[slot as usize].take().expect("a live slot");
        if self.connected_to(c.remote).is_some() {
            self.twins -= 1;
        }
        self.holders.clear_all(slot, &c.have);
        self.rows.close(slot);
        self.free.push(slot);
        self.unchoking.remove(slot);
        self.limiter.remove(slot);
        if c.ready() {
            self.picker.peer_bitfield(&c.have, false);
            self.choker.remove_peer(slot);
            let mut dropped = c.active;
            dropped.extend_from_slice(&c.pending);
            self.let_go(now, &dropped, io);
            if !c.am_choking && c.remote_interested && !self.left {
                self.rechoke(now, io, true);
            }
        }
        if replace && !self.left && self.live() < self.cfg.max_initiate {
            while let Some(p) = self.spares.pop() {
                if self.connected_to(p).is_none() {
                    self.dial(now, p, io);
                    break;
                }
            }
        }
    }

    /// The client's one connection to `remote`, if any (the first, if two).
    pub(super) fn connected_to(&self, remote: u32) -> Option<u32> {
        self.connections().find(|(_, c)| c.remote == remote).map(|(s, _)| s)
    }
}
