//! The download side (mainline `Downloader.py`): interest, the request
//! pipeline, letting requests go on a choke, end game with cancels, and what
//! a completed piece sets off (HAVE to every peer, interest re-checked,
//! `completed` announced, connections between seeds closed).

use torrentlab_engine::Time;

use super::conn::{BlockRef, NO_PIECE};
use super::interest::InterestRule;
use super::peer_end_game::EndGameRule;
use super::slot_set::SlotSet;
use super::{rows, Client, Io, Note};
use crate::bitfield::Bitfield;
use crate::choker::Choker;
use crate::limiter::UploadLimiter;
use crate::picker::{Arrival, PickContext, PickOrder, Picker};
use crate::pipeline::Pipeline;
use crate::torrent::BLOCK;
use crate::tracker::AnnounceEvent;
use crate::wire::Message;

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
        self.holders.set_all(slot, &merged);
        let c = self.conn(slot);
        let old = std::mem::replace(&mut c.have, merged);
        self.picker.peer_bitfield(&old, false);
        let have = self.conn(slot).have.clone();
        self.picker.peer_bitfield(&have, true);
        if self.close_if_both_seeds(now, slot, io) {
            return;
        }
        if self.cfg.interest == InterestRule::Libtorrent {
            // libtorrent `incoming_bitfield` (`have_all`, `have_none`).
            self.update_interest(now, slot, io);
            return;
        }
        // Mainline `got_have_bitfield`: interested if the remote has a piece
        // with blocks to request (in end game, one with a block outstanding).
        let have = &self.cref(slot).have;
        let want = if self.picker.in_end_game() {
            self.all_requests.iter().any(|&(p, _)| have.has(p))
        } else {
            self.picker.has_requests_from(have)
        };
        if want && !self.cref(slot).am_interested {
            self.set_interested(slot, true, io);
        }
        if self.cfg.fast_extension {
            self.request_allowed_fast(now, slot, io);
        }
    }

    /// Mainline `got_have`: a HAVE for a piece with blocks to request makes
    /// a remote that unchokes us asked for that piece, and one that chokes
    /// us interesting; in end game the outstanding blocks are re-offered.
    /// libtorrent's rule: [`Client::have_interest`].
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
        self.holders.set(piece, slot);
        self.picker.peer_has(piece);
        if self.close_if_both_seeds(now, slot, io) {
            return;
        }
        if self.cfg.interest == InterestRule::Libtorrent {
            self.have_interest(now, slot, piece, io);
        } else if self.picker.in_end_game() {
            self.fix_end_game(now, slot, io);
        } else if self.picker.has_free_blocks(piece) {
            if !self.cref(slot).remote_choking {
                self.request_more(now, slot, Some(&[piece]), io);
            } else {
                if !self.cref(slot).am_interested {
                    self.set_interested(slot, true, io);
                }
                if self.cfg.fast_extension {
                    self.request_allowed_fast(now, slot, io);
                }
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

    /// Says interested (`on`) or not interested to the remote on `slot`.
    pub(super) fn set_interested(&mut self, slot: u32, on: bool, io: &mut dyn Io) {
        let c = self.conn(slot);
        c.am_interested = on;
        if !on {
            c.queue.end_slow_start(); // libtorrent's queue
        }
        self.rows.set(slot, rows::AM_INTERESTED, on);
        if on {
            self.stats.interested_sent += 1;
        } else {
            self.stats.not_interested_sent += 1;
        }
        self.send(slot, if on { Message::Interested } else { Message::NotInterested }, io);
    }

    /// Mainline `_request_more`: refill the pipeline to the backlog, finishing
    /// a chosen piece up to the inner cap. The piece comes from the picker,
    /// or with `only`, from those pieces (the first the remote has with
    /// blocks to request; mainline's `indices`). Interest follows what is
    /// asked: interested on a request, not interested when nothing is
    /// outstanding and nothing was found.
    ///
    /// Most asks end before the refill: at the backlog, or (asked for
    /// `only` some pieces, as after a choke elsewhere, where each of the
    /// dozen or so remotes that unchoke us is asked) when the remote has
    /// none of them with blocks to request. Those paths stay inline here;
    /// the refill is [`Client::fill`].
    #[inline]
    pub(super) fn request_more(&mut self, now: Time, slot: u32, only: Option<&[u32]>, io: &mut dyn Io) {
        // A remote that unchokes us is ready and in `unchoking`: no need to
        // read the connection's flags.
        if self.left || !self.unchoking.contains(slot) {
            if self.cfg.fast_extension && only.is_none() {
                self.request_allowed_fast(now, slot, io);
            }
            return;
        }
        self.send_pending(now, slot, io);
        let Some(backlog) = self.room(now, slot) else { return };
        self.ask(now, slot, only, |c, pieces| c.first_offered(slot, pieces).is_some(), backlog, io);
    }

    /// `request_more`'s steps once the remote on `slot` has room for
    /// `backlog` requests: the end game's own refill; with `only`, the
    /// not-interested rule if `offered` says the remote has none of those
    /// pieces with blocks to request; else the refill. Returns whether it
    /// refilled (the only step that takes blocks off pieces).
    #[inline]
    fn ask(
        &mut self,
        now: Time,
        slot: u32,
        only: Option<&[u32]>,
        offered: impl FnOnce(&Self, &[u32]) -> bool,
        backlog: usize,
        io: &mut dyn Io,
    ) -> bool {
        if self.torrent_end_game() {
            self.fix_end_game(now, slot, io);
            return false;
        }
        if let Some(pieces) = only {
            if !offered(self, pieces) {
                self.nothing_offered(slot, io);
                return false;
            }
        }
        self.fill(now, slot, only, None, backlog, io);
        true
    }

    /// Mainline `_backlog` for the remote on `slot`, which reads (and so
    /// moves) its download rate: `None` when as many requests as that are
    /// outstanding, else the backlog. With libtorrent's pipeline, the
    /// connection's request queue (1 when snubbed or in end game: the
    /// torrent's, or with libtorrent's rule the peer's `m_endgame_mode`).
    #[inline]
    pub(super) fn room(&mut self, now: Time, slot: u32) -> Option<usize> {
        let pipeline = self.cfg.pipeline;
        let backlog = if pipeline == Pipeline::Libtorrent {
            let snubbed = now.saturating_since(self.rows.last_piece(slot)) > self.cfg.snub_time;
            // The torrent's end game (mainline's rule) or this peer's (libtorrent's).
            let end_game = self.torrent_end_game() || self.cref(slot).endgame;
            self.cref(slot).queue.desired(snubbed, end_game) as usize
        } else {
            let c = self.conn(slot);
            pipeline.backlog(c.down_rate.rate(now)).max(1) as usize
        };
        (self.cref(slot).active.len() < backlog).then_some(backlog)
    }

    /// What is left of a refill that would find nothing at once: the
    /// not-interested rule.
    #[inline]
    fn nothing_offered(&mut self, slot: u32, io: &mut dyn Io) {
        if self.cfg.interest == InterestRule::Libtorrent {
            return; // interest does not follow what is asked
        }
        let c = self.cref(slot);
        if c.active.is_empty() && c.pending.is_empty() && c.am_interested {
            self.set_interested(slot, false, io);
        }
    }

    /// What libtorrent's picker order needs for a pick from the remote on
    /// `slot`: the torrent's connections, and whether the remote is snubbed
    /// (requests outstanding and no piece data for `snub_time`: libtorrent
    /// snubs only a peer with requests; that it stays snubbed until a piece
    /// arrives is not modelled).
    pub(super) fn pick_context(&self, now: Time, slot: u32) -> PickContext {
        let snubbed =
            !self.cref(slot).active.is_empty() && now.saturating_since(self.rows.last_piece(slot)) > self.cfg.snub_time;
        PickContext { peers: self.live(), snubbed }
    }

    /// The first of `pieces` the remote on `slot` has with blocks to request
    /// (mainline's loop over `indices` in `_request_more`).
    #[inline]
    fn first_offered(&self, slot: u32, pieces: &[u32]) -> Option<u32> {
        pieces.iter().copied().find(|&i| self.holders.has(i, slot) && self.picker.has_free_blocks(i))
    }

    /// The refill of [`Client::request_more`], once the pipeline has room
    /// for `backlog` requests and (with `only`) the remote has one of those
    /// pieces with blocks to request. With `allowed` (a remote that chokes
    /// us, Fast Extension), pieces are picked among those only, and running
    /// out of them says nothing of our interest.
    pub(super) fn fill(
        &mut self,
        now: Time,
        slot: u32,
        only: Option<&[u32]>,
        allowed: Option<&Bitfield>,
        backlog: usize,
        io: &mut dyn Io,
    ) {
        let pipeline = self.cfg.pipeline;
        let cap = (pipeline.inner_cap(backlog as u32) as usize).max(backlog);
        let mut lost = std::mem::take(&mut self.lost_interests);
        lost.clear();
        // libtorrent: blocks already queued go first, and nothing is picked
        // while they fill the queue; a fast peer is given whole pieces.
        self.send_pending(now, slot, io);
        let queued = !self.cref(slot).pending.is_empty();
        let whole = queued || (only.is_none() && self.fill_whole_pieces(now, slot, allowed, backlog, &mut lost, io));
        while !whole && self.conn(slot).active.len() < backlog {
            let ctx = self.pick_context(now, slot);
            let piece = match (only, allowed) {
                (_, Some(mask)) => self.picker.pick(mask, ctx),
                (None, None) => self.picker.pick(&self.conns[slot as usize].as_ref().expect("a live slot").have, ctx),
                (Some(pieces), None) => self.first_offered(slot, pieces),
            };
            let Some(piece) = piece else { break };
            if !self.cref(slot).am_interested {
                self.set_interested(slot, true, io);
            }
            self.conn(slot).example_interest = piece;
            let have = &self.conns[slot as usize].as_ref().expect("a live slot").have;
            let from_seed = have.count() == have.len();
            self.picker.requested(piece, from_seed, ctx.snubbed);
            while self.conn(slot).active.len() < cap {
                let Some(block) = self.picker.next_block(piece) else { break };
                self.request(slot, (piece, block), io);
                if !self.picker.has_free_blocks(piece) {
                    lost.push(piece);
                    break;
                }
            }
            if self.torrent_end_game() {
                break;
            }
        }
        if self.cfg.end_game == EndGameRule::Libtorrent && only.is_none() {
            self.peer_end_game(slot, allowed, backlog, io);
        }
        // Mainline's rule; libtorrent's stays interested and waits.
        if self.cfg.interest == InterestRule::Mainline {
            let c = self.cref(slot);
            if allowed.is_none() && c.active.is_empty() && c.pending.is_empty() && c.am_interested {
                self.set_interested(slot, false, io);
            }
            if !lost.is_empty() {
                self.recheck_interest(&lost, io);
            }
        }
        self.lost_interests = lost;
        if self.torrent_end_game() {
            // This call requested the last free block: end game begins.
            self.start_end_game(now, io);
        }
    }

    /// The end of mainline `_request_more`: `lost` pieces have just had
    /// their last free block requested. A remote we are interested in with
    /// nothing outstanding, whose last wanted piece (`example_interest`) has
    /// none left either and which has one of `lost`, is asked of the picker
    /// again: not interested if it offers nothing.
    fn recheck_interest(&mut self, lost: &[u32], io: &mut dyn Io) {
        // Candidates from the dense flags and holders: interested, and with
        // a lost piece. A remote that chokes us has no requests of ours
        // (dropped with the choke) unless both speak the Fast Extension.
        let mut slots = std::mem::take(&mut self.recheck);
        slots.clear();
        for slot in 0..self.rows.len() as u32 {
            if self.rows.flags(slot) & (rows::READY | rows::AM_INTERESTED) == rows::READY | rows::AM_INTERESTED
                && lost.iter().any(|&l| self.holders.has(l, slot))
            {
                slots.push(slot);
            }
        }
        for &slot in &slots {
            let c = self.cref(slot);
            debug_assert!(
                self.unchoking.contains(slot) || c.active.is_empty() || c.fast.is_some(),
                "a choke drops our requests"
            );
            if !c.active.is_empty() || !c.pending.is_empty() {
                continue;
            }
            if c.example_interest != NO_PIECE && self.picker.has_free_blocks(c.example_interest) {
                continue;
            }
            let ctx = self.pick_context(self.now, slot);
            let have = &self.conns[slot as usize].as_ref().expect("a live slot").have;
            match self.picker.pick(have, ctx) {
                Some(piece) => self.conn(slot).example_interest = piece,
                None => self.set_interested(slot, false, io),
            }
        }
        self.recheck = slots;
    }

    pub(super) fn request(&mut self, slot: u32, (piece, block): BlockRef, io: &mut dyn Io) {
        let length = self.torrent.block_len(piece, block);
        let now = self.now;
        let c = self.conn(slot);
        c.active.push((piece, block));
        c.last_request = now;
        self.send(slot, Message::Request { piece, begin: block * BLOCK, length }, io);
    }

    /// Mainline `_letgo`: requests lost to a choke or a closed connection go
    /// back to the picker; every other peer that unchokes us (in random
    /// order) is asked for blocks of those pieces, and every one that chokes
    /// us and has one with blocks to request becomes interesting.
    pub(super) fn let_go(&mut self, now: Time, active: &[BlockRef], io: &mut dyn Io) {
        if active.is_empty() || self.left {
            return;
        }
        let freed;
        let active = if self.cfg.end_game == EndGameRule::Libtorrent {
            // libtorrent `abort_download`: a busy block stays requested
            // while another peer has it asked (the picker counts them).
            active
        } else if self.picker.in_end_game() {
            // Mainline: the blocks stay outstanding elsewhere. libtorrent's
            // order: those no other peer has asked are free again, and end game over.
            if self.cfg.pick_order != PickOrder::Libtorrent {
                return;
            }
            freed = self.abort_in_end_game(active);
            if freed.is_empty() || self.picker.in_end_game() {
                return;
            }
            &freed[..]
        } else {
            active
        };
        let mut lost = std::mem::take(&mut self.lost);
        lost.clear();
        for &(p, b) in active {
            self.picker.block_unrequested(p, b);
            if !lost.contains(&p) {
                lost.push(p);
            }
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
        self.rng.shuffle(&mut slots);
        // Each is asked as `request_more(.., Some(&lost), ..)` would, with
        // the slots offering a lost piece (`first_offered`'s answer for every
        // slot at once) kept in a mask, rebuilt after each refill, the only
        // step that takes blocks off the pieces. Nothing here changes who
        // unchokes us.
        // Each slot's room first, in a loop of its own: a slot's room
        // depends on its own connection only, which no other slot's refill
        // changes, and the connections' states, one per slot and far apart
        // in memory, are then read independently of each other instead of
        // one at a time between refills.
        let mut backlogs = std::mem::take(&mut self.backlogs);
        backlogs.clear();
        backlogs.extend(slots.iter().map(|&s| self.room(now, s).map_or(0, |b| b as u32)));
        let mut offered = std::mem::take(&mut self.offered);
        self.offering(&lost, &mut offered);
        for (&s, &backlog) in slots.iter().zip(&backlogs) {
            debug_assert!(self.unchoking.contains(s), "a send does not change who unchokes us");
            if backlog == 0 {
                continue;
            }
            let backlog = backlog as usize;
            let in_mask = |c: &Self, pieces: &[u32]| {
                let yes = offered.contains(s);
                debug_assert_eq!(yes, c.first_offered(s, pieces).is_some(), "the mask is first_offered's answer");
                yes
            };
            if self.ask(now, s, Some(&lost), in_mask, backlog, io) {
                self.offering(&lost, &mut offered);
            }
        }
        // The peers that choke us and that we are not interested in become
        // interesting if they have a lost piece that still has free blocks:
        // the mask as it stands, lowest slot first.
        offered.for_each(|slot| {
            if (slot as usize) < self.rows.len()
                && self.rows.flags(slot) & (rows::READY | rows::AM_INTERESTED) == rows::READY
                && !self.unchoking.contains(slot)
            {
                self.set_interested(slot, true, io);
            }
        });
        self.offered = offered;
        self.backlogs = backlogs;
        self.slots = slots;
        self.lost = lost;
    }

    /// Sets `mask` to the slots whose remote has one of `lost` that still
    /// has blocks to request.
    #[inline]
    fn offering(&self, lost: &[u32], mask: &mut SlotSet) {
        self.holders.any_of(lost.iter().copied().filter(|&p| self.picker.has_free_blocks(p)), mask);
    }

    /// Mainline `got_piece`, then what its caller does with a completed
    /// piece: the block is taken off our requests (one dropped on a choke
    /// is discarded); in end game the other peers asked for it get a cancel
    /// and every interested one is re-offered the outstanding blocks; the
    /// pipeline is refilled; and a completed piece is announced with HAVEs.
    pub(super) fn got_piece(&mut self, now: Time, slot: u32, piece: u32, begin: u32, length: u32, io: &mut dyn Io) {
        let block = (piece, begin / BLOCK);
        self.rows.got_piece(slot, now);
        let c = self.conn(slot);
        c.down_rate.update(now, length as u64);
        c.queue.on_block(length);
        let link = c.link;
        let Some(pos) = c.active.iter().position(|&b| b == block) else {
            // Not asked of this peer any more (dropped on a choke): discarded.
            self.stats.bytes_wasted += length as u64;
            if self.torrent_end_game() {
                self.stats.wasted_end_game += length as u64; // most likely cancelled
            } else {
                self.stats.wasted_dropped += length as u64;
            }
            io.note(Note::Wasted { link, bytes: length });
            return;
        };
        // In order: the pieces a choke lets go are offered in the order
        // they were requested (mainline's list `remove`).
        c.active.remove(pos);
        let complete = match self.picker.block_received(block.0, block.1) {
            Arrival::Duplicate => {
                self.stats.bytes_wasted += length as u64;
                // libtorrent's duplicates come from its busy requests.
                if self.torrent_end_game() || self.cfg.end_game == EndGameRule::Libtorrent {
                    self.stats.wasted_end_game += length as u64;
                } else {
                    self.stats.wasted_duplicate += length as u64;
                }
                io.note(Note::Wasted { link, bytes: length });
                false
            }
            Arrival::Block => {
                self.stats.bytes_down += length as u64;
                false
            }
            Arrival::PieceComplete => {
                self.stats.bytes_down += length as u64;
                true
            }
        };
        // libtorrent cancels no busy copy (see `peer_end_game`).
        if self.torrent_end_game() {
            self.end_game_block(now, slot, block, io);
        }
        if self.conns[slot as usize].is_some() {
            self.request_more(now, slot, None, io);
        }
        if complete {
            self.piece_complete(now, piece, io);
        }
    }

    /// What mainline does once a piece is verified: the last one announces
    /// `completed` and closes the connections to seeds (`got_piece`); then a
    /// HAVE goes to every connection left (the connecter's loop after it).
    /// With libtorrent's rule, interest is updated after
    /// ([`Client::we_have_interest`]).
    fn piece_complete(&mut self, now: Time, piece: u32, io: &mut dyn Io) {
        io.note(Note::PieceVerified { piece });
        if self.is_seed() && self.completed_at.is_none() {
            self.completed_at = Some(now);
            io.note(Note::Completed);
            self.announce(now, AnnounceEvent::Completed, io);
            let seeds: Vec<u32> =
                self.connections().filter(|(_, c)| c.ready() && c.have.is_complete()).map(|(s, _)| s).collect();
            for s in seeds {
                if self.conns[s as usize].is_some() {
                    self.close_if_both_seeds(now, s, io);
                }
            }
        }
        let slots: Vec<u32> = self.connections().filter(|(_, c)| c.ready()).map(|(s, _)| s).collect();
        for s in slots {
            self.send(s, Message::Have { piece }, io);
        }
        if self.cfg.interest == InterestRule::Libtorrent {
            self.we_have_interest(now, piece, io);
        }
    }
}
