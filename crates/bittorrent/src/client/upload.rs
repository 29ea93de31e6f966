//! The upload side (mainline `Uploader.py`, `Connecter.send_partial`): the
//! remote's requests queue up while we unchoke it; choking discards them; the
//! rate limiter hands out turns, and each turn writes up to so many bytes of
//! the current piece message (a unit in mainline's limiter, the quota held
//! in libtorrent's), followed by the control messages held back behind it.
//!
//! With the Fast Extension (BEP 6, `fast`), requests for the pieces offered
//! as allowed fast are served while we choke, and a choke rejects the others
//! (`reject_request`) instead of discarding them silently.

use torrentlab_engine::Time;

use super::rows::{Rows, CHOKING, REQUESTS};
use super::{Client, ClientStats, Frame, Io, Note, PeerConn};
use crate::choker::Choker;
use crate::limiter::{UploadLimiter, Uploads};
use crate::picker::Picker;
use crate::torrent::{Torrent, BLOCK};
use crate::wire::Message;

impl<P: Picker, C: Choker, L: UploadLimiter> Client<P, C, L> {
    pub(super) fn got_request(&mut self, now: Time, slot: u32, piece: u32, begin: u32, length: u32, io: &mut dyn Io) {
        if self.cref(slot).fast.is_some() {
            self.got_request_fast(now, slot, piece, begin, length, io);
            return;
        }
        if self.cref(slot).am_choking {
            self.stats.requests_while_choked += 1;
            return; // requests that arrive while we choke are ignored (BEP 3)
        }
        let valid = piece < self.torrent.pieces()
            && self.picker.have().has(piece)
            && begin.is_multiple_of(BLOCK)
            && begin / BLOCK < self.torrent.blocks_in(piece)
            && length == self.torrent.block_len(piece, begin / BLOCK);
        let c = self.conn(slot);
        if !valid || length > BLOCK {
            // Mainline closes connections that ask for more than 16 KiB.
            let link = c.link;
            io.close(link);
            self.drop_conn(now, slot, io, true);
            return;
        }
        self.queue_request(now, slot, (piece, begin / BLOCK), io);
    }

    /// Queues the remote's request for `block` and, if the limiter does not
    /// hold the connection yet and its socket is flushed, hands it a turn.
    pub(super) fn queue_request(&mut self, now: Time, slot: u32, block: (u32, u32), io: &mut dyn Io) {
        let c = self.conn(slot);
        c.queued.push_back(block);
        let (link, first) = (c.link, c.queued.len() == 1);
        if first {
            self.rows.set(slot, REQUESTS, true);
        }
        if !self.limiter.contains(slot) && io.flushed(link) {
            self.queue_upload(now, slot, io);
        }
    }

    /// The socket of `slot` drained (mainline `connection_flushed`).
    pub fn on_flushed(&mut self, now: Time, slot: u32, io: &mut dyn Io) {
        self.now = now;
        let Some(c) = self.conns.get(slot as usize).and_then(|c| c.as_ref()) else { return };
        if c.ready() && c.has_upload_work() && !self.limiter.contains(slot) {
            self.queue_upload(now, slot, io);
        }
    }

    pub(super) fn queue_upload(&mut self, now: Time, slot: u32, io: &mut dyn Io) {
        let Client { limiter, conns, rows, torrent, stats, .. } = self;
        limiter.queue(now, slot, &mut Writer { now, conns, rows, torrent, stats, io });
    }

    pub(super) fn try_send(&mut self, now: Time, io: &mut dyn Io) {
        let Client { limiter, conns, rows, torrent, stats, .. } = self;
        limiter.try_send(now, false, &mut Writer { now, conns, rows, torrent, stats, io });
    }

    pub(super) fn choke(&mut self, now: Time, slot: u32, io: &mut dyn Io) {
        self.rows.set(slot, CHOKING, true);
        let Client { conns, torrent, rows, stats, .. } = self;
        let c = conns[slot as usize].as_mut().expect("a live slot");
        c.am_choking = true;
        let (link, remote) = (c.link, c.remote);
        if let Some(f) = c.fast.as_mut() {
            f.last_choke = now;
        }
        if c.partial_left == 0 {
            c.choke_sent = true;
            io.frame(link, Frame::Msg(Message::Choke));
            io.write(link, Message::Choke.wire_len());
            self.limiter.transceived(slot, Message::Choke.wire_len());
            let mut rejects = Vec::new();
            stats.rejects_sent += drop_unserved(c, torrent, &mut rejects);
            rows.set(slot, REQUESTS, !c.queued.is_empty());
            for m in rejects {
                io.frame(link, Frame::Msg(m));
                io.write(link, m.wire_len());
                self.limiter.transceived(slot, m.wire_len());
            }
        }
        io.note(Note::Choke { link, remote, choked: true });
    }

    pub(super) fn unchoke(&mut self, now: Time, slot: u32, io: &mut dyn Io) {
        self.rows.set(slot, CHOKING, false);
        let c = self.conn(slot);
        c.am_choking = false;
        let (link, remote) = (c.link, c.remote);
        if c.partial_left == 0 {
            c.choke_sent = false;
            io.frame(link, Frame::Msg(Message::Unchoke));
            io.write(link, Message::Unchoke.wire_len());
            self.limiter.transceived(slot, Message::Unchoke.wire_len());
        }
        io.note(Note::Choke { link, remote, choked: false });
        if self.conn(slot).has_upload_work() && !self.limiter.contains(slot) && io.flushed(link) {
            self.queue_upload(now, slot, io);
        }
    }
}

/// What a choke does to the remote's queued requests: without the Fast
/// Extension they are discarded; with it, those for pieces not offered as
/// allowed fast are, each with a `reject_request` added to `out` (libtorrent
/// `send_choke`). Returns the rejects added.
fn drop_unserved(c: &mut PeerConn, torrent: &Torrent, out: &mut Vec<Message>) -> u64 {
    let Some(f) = c.fast.as_ref() else {
        c.queued.clear();
        return 0;
    };
    let before = out.len();
    c.queued.retain(|&(piece, block)| {
        let keep = f.offers(piece);
        if !keep {
            out.push(Message::RejectRequest { piece, begin: block * BLOCK, length: torrent.block_len(piece, block) });
        }
        keep
    });
    (out.len() - before) as u64
}

/// The connections as the limiter sees them: what each has to send, and
/// its writes ([`send_partial`]).
struct Writer<'a> {
    now: Time,
    conns: &'a mut [Option<PeerConn>],
    rows: &'a mut Rows,
    torrent: &'a Torrent,
    stats: &'a mut ClientStats,
    io: &'a mut dyn Io,
}

impl Uploads for Writer<'_> {
    fn send(&mut self, slot: u32, max: u32) -> (u32, bool) {
        send_partial(self.now, self.conns, self.rows, self.torrent, self.stats, self.io, slot, max)
    }

    /// The rest of the piece message under way and the control messages
    /// behind it, and unless we choke, a piece message per queued request.
    fn pending(&self, slot: u32) -> u64 {
        let Some(c) = self.conns.get(slot as usize).and_then(|c| c.as_ref()) else { return 0 };
        if !c.has_upload_work() {
            return 0;
        }
        let held: u64 = c.outq.iter().map(|m| m.wire_len() as u64).sum();
        let queued: u64 = if c.am_choking && c.fast.is_none() {
            0
        } else {
            let t = self.torrent;
            let piece = |&(piece, block): &(u32, u32)| {
                Message::Piece { piece, begin: block * BLOCK, length: t.block_len(piece, block) }.wire_len() as u64
            };
            c.queued.iter().filter(|&&b| c.serves(b)).map(piece).sum()
        };
        c.partial_left as u64 + held + queued
    }
}

/// One turn of the rate limiter for `slot`: up to `max` bytes of the current
/// piece message (a new one starts from the oldest request), and when it is
/// finished the deferred choke/unchoke and held-back control messages. Returns
/// (bytes written, socket still flushed).
#[allow(clippy::too_many_arguments)]
fn send_partial(
    now: Time,
    conns: &mut [Option<PeerConn>],
    rows: &mut Rows,
    torrent: &Torrent,
    stats: &mut ClientStats,
    io: &mut dyn Io,
    slot: u32,
    max: u32,
) -> (u32, bool) {
    let Some(c) = conns[slot as usize].as_mut() else { return (0, false) };
    let link = c.link;
    // (With the Fast Extension a choke has been sent with the others
    // rejected: what is queued while choking is served.)
    if c.partial_left == 0 && (c.queued.is_empty() || (c.am_choking && c.fast.is_none())) {
        // Control messages alone (they wait for quota when the limiter
        // charges them: `UploadLimiter::charges_control`).
        let mut bytes = 0;
        for m in c.outq.drain(..) {
            io.frame(link, Frame::Msg(m));
            io.write(link, m.wire_len());
            bytes += m.wire_len();
        }
        return (bytes, io.flushed(link));
    }
    if c.partial_left == 0 {
        let Some((piece, block)) = c.queued.pop_front() else { unreachable!("a queued request") };
        if c.am_choking {
            stats.fast_requests_served += 1;
        }
        if c.queued.is_empty() {
            rows.set(slot, REQUESTS, false);
        }
        let length = torrent.block_len(piece, block);
        let m = Message::Piece { piece, begin: block * BLOCK, length };
        io.frame(link, Frame::Msg(m));
        c.partial_left = m.wire_len();
        c.up_rate.update(now, length as u64);
        stats.bytes_up += length as u64;
    }
    if max < c.partial_left {
        io.write(link, max);
        c.partial_left -= max;
        return (max, io.flushed(link));
    }
    let mut bytes = c.partial_left;
    c.partial_left = 0;
    if c.choke_sent != c.am_choking {
        c.choke_sent = c.am_choking;
        c.outq.push(if c.am_choking { Message::Choke } else { Message::Unchoke });
        if c.am_choking {
            let mut rejects = std::mem::take(&mut c.outq);
            stats.rejects_sent += drop_unserved(c, torrent, &mut rejects);
            c.outq = rejects;
            rows.set(slot, REQUESTS, !c.queued.is_empty());
        }
    }
    io.write(link, bytes);
    for m in c.outq.drain(..) {
        io.frame(link, Frame::Msg(m));
        io.write(link, m.wire_len());
        bytes += m.wire_len();
    }
    (bytes, io.flushed(link))
}
