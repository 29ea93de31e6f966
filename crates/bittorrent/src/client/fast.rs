//! The Fast Extension (BEP 6) as libtorrent speaks it: used on a connection
//! when both handshakes set its bit.
//!
//! * A seed says `have_all`, a peer with nothing `have_none`, in place of
//!   the bitfield (`Client::ready`).
//! * When the remote first says it is interested, it is offered up to
//!   `allowed_fast_set_size` pieces as allowed fast ([`crate::fast`]:
//!   libtorrent's `send_allowed_set`, hashing the address the driver gives
//!   through [`Io::address`]). Requests for them are served even while we
//!   choke it, up to 3 x blocks-per-piece requests per piece (libtorrent
//!   then disconnects); while choked, other requests are rejected, and one
//!   more than 2 s after our last choke closes the connection
//!   (`incoming_request`).
//! * Our choke rejects (`reject_request`) each queued request that is not
//!   for an allowed-fast piece (`send_choke`, in `upload`).
//! * A remote's choke no longer cancels our requests: it rejects those it
//!   will not serve, and each rejected block goes back to the picker and is
//!   offered to the peers that unchoke us (what a choke does to all of them
//!   without the extension: libtorrent handles both as rejects).
//! * While a remote chokes us, we request blocks of its allowed-fast pieces
//!   that it has (libtorrent `request_a_block` with the allowed-fast mask).
//!   The end game asks nothing of a remote that chokes us.

use torrentlab_engine::{Duration, Time};

use super::{Client, Io};
use crate::bitfield::Bitfield;
use crate::choker::Choker;
use crate::limiter::UploadLimiter;
use crate::picker::Picker;
use crate::torrent::BLOCK;
use crate::wire::Message;

/// A choked remote's request for a piece not allowed fast this long after
/// our choke closes the connection (libtorrent `incoming_request`).
const CHOKED_REQUEST_GRACE: Duration = Duration::from_secs(2);
/// Requests per block of an allowed-fast piece a choked remote may make
/// (libtorrent: 3 x blocks per piece, then it disconnects).
const FAST_REQUESTS_PER_BLOCK: u32 = 3;

impl<P: Picker, C: Choker, L: UploadLimiter> Client<P, C, L> {
    /// A message of the Fast Extension arrived on `slot`. On a connection
    /// without it, that is a protocol error: the connection is closed.
    pub(super) fn on_fast_message(&mut self, now: Time, slot: u32, m: Message, io: &mut dyn Io) {
        if self.cref(slot).fast.is_none() {
            let link = self.conn(slot).link;
            io.close(link);
            self.drop_conn(now, slot, io, true);
            return;
        }
        let pieces = self.torrent.pieces();
        match m {
            Message::HaveAll => self.got_bitfield(now, slot, Bitfield::full(pieces), io),
            Message::HaveNone => self.got_bitfield(now, slot, Bitfield::new(pieces), io),
            Message::AllowedFast { piece } => self.got_allowed_fast(now, slot, piece, io),
            Message::RejectRequest { piece, begin, length } => self.got_reject(now, slot, piece, begin, length, io),
            _ => {} // suggest_piece: libtorrent's default ignores it too
        }
    }

    /// libtorrent `send_allowed_set`, once per connection, on the remote's
    /// first `interested`: none to a remote with every piece, else the
    /// allowed-fast set of its address, less the pieces it has.
    pub(super) fn send_allowed_set(&mut self, slot: u32, io: &mut dyn Io) {
        let size = self.cfg.allowed_fast_set_size;
        let pieces = self.torrent.pieces();
        let Client { conns, torrent, stats, .. } = self;
        let c = conns[slot as usize].as_mut().expect("a live slot");
        let Some(f) = c.fast.as_mut().filter(|f| !f.sent_set) else { return };
        f.sent_set = true;
        if size == 0 || c.have.is_complete() {
            return;
        }
        let Some(address) = f.address.or((size >= pieces).then_some([0; 4])) else { return };
        let have = &c.have;
        let set = crate::fast::allowed_fast_set(&address, &torrent.info_hash, size, pieces, |p| have.has(p));
        f.offered.extend(set.iter().map(|&p| (p, 0)));
        stats.allowed_fast_sent += set.len() as u64;
        for piece in set {
            self.send(slot, Message::AllowedFast { piece }, io);
        }
    }

    /// libtorrent `incoming_request` on a connection with the extension: an
    /// invalid request is rejected; while we choke the remote, a request for
    /// an allowed-fast piece is served (up to the cap, then the connection
    /// closes) and any other rejected (and the connection closed if our
    /// choke is more than 2 s old).
    pub(super) fn got_request_fast(
        &mut self,
        now: Time,
        slot: u32,
        piece: u32,
        begin: u32,
        length: u32,
        io: &mut dyn Io,
    ) {
        let valid = piece < self.torrent.pieces()
            && self.picker.have().has(piece)
            && begin.is_multiple_of(BLOCK)
            && begin / BLOCK < self.torrent.blocks_in(piece)
            && length == self.torrent.block_len(piece, begin / BLOCK);
        let reject = Message::RejectRequest { piece, begin, length };
        if !valid {
            self.stats.rejects_sent += 1;
            self.send(slot, reject, io);
            return;
        }
        let cap = FAST_REQUESTS_PER_BLOCK * self.torrent.piece_length.div_ceil(BLOCK);
        let c = self.conn(slot);
        let choked = c.am_choking;
        let f = c.fast.as_mut().expect("a Fast Extension connection");
        let offered = f.offered.iter().position(|&(p, _)| p == piece);
        let close = match offered {
            Some(i) if choked && f.offered[i].1 >= cap => true,
            None if choked => {
                let late = now.saturating_since(f.last_choke) > CHOKED_REQUEST_GRACE;
                self.stats.requests_while_choked += 1;
                self.stats.rejects_sent += 1;
                self.send(slot, reject, io);
                if !late {
                    return;
                }
                true
            }
            Some(i) => {
                f.offered[i].1 += 1;
                false
            }
            None => false,
        };
        if close {
            let link = self.conn(slot).link;
            io.close(link);
            self.drop_conn(now, slot, io, true);
            return;
        }
        self.queue_request(now, slot, (piece, begin / BLOCK), io);
    }

    /// libtorrent `incoming_allowed_fast`: a piece we lack is noted as
    /// allowed; if the remote has it and it has blocks to request, the
    /// remote is interesting and asked for blocks (of its allowed-fast
    /// pieces, if it chokes us).
    fn got_allowed_fast(&mut self, now: Time, slot: u32, piece: u32, io: &mut dyn Io) {
        if piece >= self.torrent.pieces() || self.picker.have().has(piece) {
            return;
        }
        let c = self.conn(slot);
        c.fast.as_mut().expect("a Fast Extension connection").allowed.push(piece);
        if !c.have.has(piece) || !self.picker.has_free_blocks(piece) {
            return;
        }
        if !self.cref(slot).am_interested {
            self.set_interested(slot, true, io);
        }
        if self.cref(slot).remote_choking {
            self.request_allowed_fast(now, slot, io);
        } else {
            self.request_more(now, slot, None, io);
        }
    }

    /// libtorrent `incoming_reject_request`: the block is no longer asked of
    /// the remote; it goes back to the picker and to the peers that unchoke
    /// us (`let_go`). A rejected piece leaves the allowed-fast set if the
    /// remote chokes us. With fewer than 2 requests left, more are asked.
    fn got_reject(&mut self, now: Time, slot: u32, piece: u32, begin: u32, length: u32, io: &mut dyn Io) {
        let _ = length;
        self.stats.rejects_received += 1;
        let block = (piece, begin / BLOCK);
        let c = self.conn(slot);
        let found = c.active.iter().position(|&b| b == block).map(|i| c.active.remove(i)).is_some();
        let choked = c.remote_choking;
        if choked {
            c.fast.as_mut().expect("a Fast Extension connection").allowed.retain(|&p| p != piece);
        }
        if found {
            self.let_go(now, &[block], io);
        }
        if self.conns[slot as usize].as_ref().is_some_and(|c| c.active.len() < 2) {
            if choked {
                self.request_allowed_fast(now, slot, io);
            } else {
                self.request_more(now, slot, None, io);
            }
        }
    }

    /// Requests, from a remote that chokes us, blocks of its allowed-fast
    /// pieces that it has, up to the pipeline's room (not in end game).
    pub(super) fn request_allowed_fast(&mut self, now: Time, slot: u32, io: &mut dyn Io) {
        if self.left || self.torrent_end_game() {
            return;
        }
        let Some(c) = self.conns.get(slot as usize).and_then(|c| c.as_ref()) else { return };
        let Some(f) = c.fast.as_ref() else { return };
        if !c.ready() || !c.remote_choking || f.allowed.is_empty() {
            return;
        }
        let wanted = |p: u32| c.have.has(p) && !self.picker.have().has(p) && self.picker.has_free_blocks(p);
        if !f.allowed.iter().any(|&p| wanted(p)) {
            return;
        }
        let Some(backlog) = self.room(now, slot) else { return };
        let mut mask = std::mem::replace(&mut self.fast_mask, Bitfield::new(0));
        if mask.len() != self.torrent.pieces() {
            mask = Bitfield::new(self.torrent.pieces());
        }
        let c = self.cref(slot);
        let allowed = &c.fast.as_ref().expect("checked above").allowed;
        for &p in allowed {
            if c.have.has(p) && !self.picker.have().has(p) && self.picker.has_free_blocks(p) {
                mask.set(p);
            }
        }
        self.fill(now, slot, None, Some(&mask), backlog, io);
        match self.conns[slot as usize].as_ref() {
            Some(c) => {
                for &p in &c.fast.as_ref().expect("checked above").allowed {
                    mask.unset(p);
                }
            }
            None => mask = Bitfield::new(0),
        }
        debug_assert_eq!(mask.count(), 0, "the mask is cleared after use");
        self.fast_mask = mask;
    }
}
