//! The download side (mainline `Downloader.py`): interest, the request
//! pipeline, letting requests go on a choke, end game with cancels, and what
//! a completed piece sets off (HAVE to every peer, interest re-checked,
//! `completed` announced, connections between seeds closed).

use torrentlab_engine::Time;

use super::conn::BlockRef;
use super::{Client, Io, Note};
use crate::bitfield::Bitfield;
use crate::choker::Choker;
use crate::limiter::UploadLimiter;
use crate::picker::{Arrival, Picker};
use crate::torrent::BLOCK;
use crate::tracker::AnnounceEvent;
use crate::wire::Message;

/// How many connections ahead a HAVE broadcast asks the driver to load.
const WRITE_AHEAD: usize = 3;

impl<P: Picker, C: Choker, L: UploadLimiter> Client<P, C, L> {
    pub(super) fn got_bitfield(&mut self, now: Time, slot: u32, b: Bitfield, io: &mut dyn Io) {
        if b.len() != self.torrent.pieces() {
            let link = self.conn(slot).link;
            io.close(link);
            self.drop_conn(now, slot, io, true);
            return;
        }
        // HAVEs that came first (none in BEP 3 order) are kept: the bitfield adds.
        let c = self.conn(slot);
        let mut merged = b;
        for i in 0..merged.len() {
            if c.have.has(i) {
                merged.set(i);
            }
        }
        let old = std::mem::replace(&mut c.have, merged);
        self.picker.peer_bitfield(&old, false);
        let have = self.conn(slot).have.clone();
        self.picker.peer_bitfield(&have, true);
        if self.close_if_both_seeds(now, slot, io) {
            return;
        }
        self.update_interest(slot, io);
    }

    pub(super) fn got_have(&mut self, now: Time, slot: u32, piece: u32, io: &mut dyn Io) {
        if piece >= self.torrent.pieces() {
            let link = self.conn(slot).link;
            io.close(link);
            self.drop_conn(now, slot, io, true);
            return;
        }
        if !self.conn(slot).have.set(piece) {
            return;
        }
        self.picker.peer_has(piece);
        if self.close_if_both_seeds(now, slot, io) {
            return;
        }
        if !self.picker.have().has(piece) {
            self.update_interest(slot, io);
            if !self.conn(slot).remote_choking {
                self.request_more(now, slot, io);
            }
        }
    }

    /// Mainline drops connections between two seeds.
    fn close_if_both_seeds(&mut self, now: Time, slot: u32, io: &mut dyn Io) -> bool {
        if self.is_seed() && self.conn(slot).have.is_complete() {
            let link = self.conn(slot).link;
            io.close(link);
            self.drop_conn(now, slot, io, true);
            true
        } else {
            false
        }
    }

    /// Interested exactly when the remote has a piece we lack (BEP 3).
    fn update_interest(&mut self, slot: u32, io: &mut dyn Io) {
        let want = self.picker.wants_from(&self.cref(slot).have);
        let c = self.conn(slot);
        if want != c.am_interested {
            c.am_interested = want;
            self.send(slot, if want { Message::Interested } else { Message::NotInterested }, io);
        }
    }

    /// Mainline `_request_more`: refill the pipeline to the backlog from the
    /// picker, finishing a chosen piece up to the inner cap.
    pub(super) fn request_more(&mut self, now: Time, slot: u32, io: &mut dyn Io) {
        let pipeline = self.cfg.pipeline;
        if self.left {
            return;
        }
        let c = self.conn(slot);
        if c.remote_choking || !c.ready() {
            return;
        }
        let backlog = pipeline.backlog(c.down_rate.rate(now)).max(1) as usize;
        if c.active.len() >= backlog {
            return;
        }
        if self.picker.in_end_game() {
            self.fix_end_game(now, slot, io);
            return;
        }
        if !self.cref(slot).am_interested {
            // Interest is kept exact (see `update_interest`): the remote has
            // no piece we lack, so the picker has nothing to offer.
            debug_assert!(!self.picker.wants_from(&self.cref(slot).have), "interest out of date");
            return;
        }
        let cap = (pipeline.inner_cap(backlog as u32) as usize).max(backlog);
        while self.conn(slot).active.len() < backlog {
            let Some(piece) = self.picker.pick(&self.conns[slot as usize].as_ref().expect("a live slot").have) else {
                break;
            };
            if !self.conn(slot).am_interested {
                self.conn(slot).am_interested = true;
                self.send(slot, Message::Interested, io);
            }
            while self.conn(slot).active.len() < cap {
                let Some(block) = self.picker.next_block(piece) else { break };
                self.request(slot, (piece, block), io);
            }
            if self.picker.in_end_game() {
                break;
            }
        }
        if self.picker.in_end_game() {
            // Every block is requested: outstanding ones go to every unchoked peer.
            let slots: Vec<u32> =
                self.connections().filter(|(_, c)| c.ready() && !c.remote_choking).map(|(s, _)| s).collect();
            for s in slots {
                self.fix_end_game(now, s, io);
            }
        }
    }

    fn request(&mut self, slot: u32, (piece, block): BlockRef, io: &mut dyn Io) {
        let length = self.torrent.block_len(piece, block);
        self.conn(slot).active.push((piece, block));
        self.send(slot, Message::Request { piece, begin: block * BLOCK, length }, io);
    }

    /// Mainline `fix_download_endgame`: request (shuffled, up to the backlog)
    /// every outstanding block the remote has that we did not ask it for.
    fn fix_end_game(&mut self, now: Time, slot: u32, io: &mut dyn Io) {
        let mut want = std::mem::take(&mut self.scratch);
        want.clear();
        let c = self.conns[slot as usize].as_ref().expect("live");
        self.picker.outstanding_blocks(&c.have, &mut want);
        want.retain(|b| !c.active.contains(b));
        let pipeline = self.cfg.pipeline;
        let c = self.conn(slot);
        if c.remote_choking {
            self.scratch = want;
            return;
        }
        let backlog = pipeline.backlog(c.down_rate.rate(now)).max(1) as usize;
        for i in (1..want.len()).rev() {
            let j = self.rng.range_inclusive(0, i as u64) as usize;
            want.swap(i, j);
        }
        want.truncate(backlog.saturating_sub(self.conn(slot).active.len()));
        for &b in &want {
            self.request(slot, b, io);
        }
        self.scratch = want;
    }

    /// Requests lost to a choke or a closed connection go back to the picker
    /// and other unchoked peers are asked for more (mainline `_letgo`).
    pub(super) fn let_go(&mut self, now: Time, active: &[BlockRef], io: &mut dyn Io) {
        if active.is_empty() || self.left {
            return;
        }
        for &(p, b) in active {
            self.picker.block_unrequested(p, b);
        }
        if self.picker.in_end_game() {
            return;
        }
        let mut slots = std::mem::take(&mut self.slots);
        slots.clear();
        self.unchoking.extend_into(&mut slots);
        debug_assert!(
            slots
                .iter()
                .copied()
                .eq(self.connections().filter(|(_, c)| c.ready() && !c.remote_choking).map(|(s, _)| s)),
            "the unchoking set is what a scan finds"
        );
        // Each of them is asked for more, which reads its flags, rate meter
        // and request list (the slot's first two lines): ask for those lines
        // now, so they arrive together while the order is drawn.
        for &s in &slots {
            self.prefetch_slot(s, 0, 128);
        }
        for i in (1..slots.len()).rev() {
            let j = self.rng.range_inclusive(0, i as u64) as usize;
            slots.swap(i, j);
        }
        for &s in &slots {
            if self.conns[s as usize].is_some() {
                self.request_more(now, s, io);
            }
        }
        self.slots = slots;
    }

    pub(super) fn got_piece(&mut self, now: Time, slot: u32, piece: u32, begin: u32, length: u32, io: &mut dyn Io) {
        let block = (piece, begin / BLOCK);
        self.rows.got_piece(slot, now);
        let c = self.conn(slot);
        c.down_rate.update(now, length as u64);
        let link = c.link;
        let Some(pos) = c.active.iter().position(|&b| b == block) else {
            // Not asked of this peer any more (dropped on a choke): discarded.
            self.stats.bytes_wasted += length as u64;
            io.note(Note::Wasted { link, bytes: length });
            return;
        };
        c.active.swap_remove(pos);
        match self.picker.block_received(block.0, block.1) {
            Arrival::Duplicate => {
                self.stats.bytes_wasted += length as u64;
                io.note(Note::Wasted { link, bytes: length });
            }
            Arrival::Block => self.stats.bytes_down += length as u64,
            Arrival::PieceComplete => {
                self.stats.bytes_down += length as u64;
                self.piece_complete(now, piece, io);
            }
        }
        if self.picker.in_end_game() {
            self.cancel_elsewhere(slot, block, io);
        }
        if self.conns[slot as usize].is_some() {
            self.request_more(now, slot, io);
        }
    }

    /// End game: the block arrived, so the other peers asked for it get a cancel.
    fn cancel_elsewhere(&mut self, from: u32, (piece, block): BlockRef, io: &mut dyn Io) {
        let length = self.torrent.block_len(piece, block);
        let slots: Vec<u32> = self
            .connections()
            .filter(|&(s, c)| s != from && c.active.contains(&(piece, block)))
            .map(|(s, _)| s)
            .collect();
        for s in slots {
            self.conn(s).active.retain(|&b| b != (piece, block));
            self.send(s, Message::Cancel { piece, begin: block * BLOCK, length }, io);
        }
    }

    /// Tells the driver that the connection in `slot` will be written to soon.
    fn hint_write(&self, slot: u32, io: &mut dyn Io) {
        if let Some(c) = self.conns.get(slot as usize).and_then(Option::as_ref) {
            io.prefetch(c.link);
        }
    }

    fn piece_complete(&mut self, now: Time, piece: u32, io: &mut dyn Io) {
        io.note(Note::PieceVerified { piece });
        let slots: Vec<u32> = self.connections().filter(|(_, c)| c.ready()).map(|(s, _)| s).collect();
        // The scan above brought the client's side in; the driver's side of
        // each connection is cold: ask for it a few writes ahead.
        for &a in slots.iter().take(WRITE_AHEAD) {
            self.hint_write(a, io);
        }
        for (i, &s) in slots.iter().enumerate() {
            if let Some(&a) = slots.get(i + WRITE_AHEAD) {
                self.hint_write(a, io);
            }
            self.send(s, Message::Have { piece }, io);
        }
        for &s in &slots {
            if self.conns[s as usize].is_some() {
                self.update_interest(s, io);
            }
        }
        if self.is_seed() && self.completed_at.is_none() {
            self.completed_at = Some(now);
            io.note(Note::Completed);
            self.announce(now, AnnounceEvent::Completed, io);
            for s in slots {
                if self.conns[s as usize].as_ref().is_some_and(|c| c.have.is_complete()) {
                    self.close_if_both_seeds(now, s, io);
                }
            }
        }
    }
}
