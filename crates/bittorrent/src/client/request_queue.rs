//! libtorrent's request queue and its whole pieces for fast peers
//! (`request_a_block` in request_blocks.cpp, `peer_connection::
//! send_block_requests_impl`, `clear_request_queue`, `snub_peer`).
//!
//! A peer whose download rate (`download_payload_rate`, the 5-second
//! average of [`crate::pipeline::RequestQueue`]) would bring at least one
//! piece within `whole_pieces_threshold` (20 s) is given whole pieces:
//! `prefer_contiguous_blocks` = those pieces' blocks, and the picker takes
//! whole free pieces (and the free pieces beside them) before the blocks
//! left in pieces other peers are downloading
//! ([`crate::picker::PiecePicker::pick_whole_pieces`]). It picks only when
//! the download and request queues together are below the queue size, but
//! then every block of the pieces it takes is marked requested at once:
//! beyond the queue size they wait in the connection's request queue
//! ([`super::PeerConn::pending`]) and go out as the download queue drains
//! below libtorrent's `m_desired_queue_size` (not the end game's 1). A
//! choke (with or without the Fast Extension), a closed connection or a
//! snub lets them go back to the picker.

use torrentlab_engine::Time;

use super::conn::BlockRef;
use super::{Client, Io};
use crate::bitfield::Bitfield;
use crate::choker::Choker;
use crate::limiter::UploadLimiter;
use crate::picker::Picker;
use crate::pipeline::Pipeline;

impl<P: Picker, C: Choker, L: UploadLimiter> Client<P, C, L> {
    /// libtorrent `send_block_requests_impl`: blocks of the request queue
    /// are requested, oldest first, while the download queue is shorter than
    /// the queue size (`m_desired_queue_size`: 1 for a snubbed peer, and not
    /// cut to 1 in end game).
    pub(super) fn send_pending(&mut self, now: Time, slot: u32, io: &mut dyn Io) {
        if self.cref(slot).pending.is_empty() {
            return;
        }
        let snubbed = now.saturating_since(self.rows.last_piece(slot)) > self.cfg.snub_time;
        let limit = self.cref(slot).queue.desired(snubbed, false) as usize;
        while self.cref(slot).active.len() < limit {
            let c = self.conn(slot);
            if c.pending.is_empty() {
                break;
            }
            let block = c.pending.remove(0);
            self.request(slot, block, io);
        }
    }

    /// The whole-piece branch of `request_a_block` for the remote on `slot`
    /// with room for `backlog` requests (among its `allowed` pieces if it
    /// chokes us): with libtorrent's `whole_pieces_threshold` on and a rate
    /// that makes `prefer_contiguous_blocks` > 0, the picker's whole pieces
    /// for the room left (`num_requests`: the queue size less the download
    /// and request queues) are marked requested and queued, and as many
    /// sent as the queue size allows. Pieces whose last free block this
    /// took are added to `lost`. Returns `false` when the mode does not
    /// apply and the caller picks as usual.
    pub(super) fn fill_whole_pieces(
        &mut self,
        now: Time,
        slot: u32,
        allowed: Option<&Bitfield>,
        backlog: usize,
        lost: &mut Vec<u32>,
        io: &mut dyn Io,
    ) -> bool {
        let threshold = self.cfg.whole_pieces_threshold;
        if threshold == 0 || self.cfg.pipeline != Pipeline::Libtorrent {
            return false;
        }
        let c = self.cref(slot);
        let prefer = c.queue.prefer_contiguous_blocks(threshold, self.torrent.piece_length as u64);
        let room = backlog.saturating_sub(c.active.len() + c.pending.len());
        if prefer == 0 || room == 0 {
            return false;
        }
        let ctx = self.pick_context(now, slot);
        let mut takes = std::mem::take(&mut self.takes);
        takes.clear();
        let c = self.conns[slot as usize].as_ref().expect("a live slot");
        let bits = allowed.unwrap_or(&c.have);
        let mine = |p: u32| c.active.iter().chain(&c.pending).filter(|b| b.0 == p).count() as u32;
        if !self.picker.pick_whole_pieces(bits, ctx, room as u32, prefer, &mine, &mut takes) {
            self.takes = takes;
            return false;
        }
        let from_seed = c.have.is_complete();
        for &(piece, n) in &takes {
            if !self.cref(slot).am_interested {
                self.set_interested(slot, true, io);
            }
            self.conn(slot).example_interest = piece;
            self.picker.requested(piece, from_seed, ctx.snubbed);
            for _ in 0..n {
                let Some(block) = self.picker.next_block(piece) else { break };
                self.conn(slot).pending.push((piece, block));
            }
            if !self.picker.has_free_blocks(piece) && !lost.contains(&piece) {
                lost.push(piece);
            }
        }
        self.takes = takes;
        self.send_pending(now, slot, io);
        true
    }

    /// What a choke from the remote on `slot` takes back from it: its
    /// request queue (libtorrent `clear_request_queue`), and without the
    /// Fast Extension its download queue too (BEP 3: a choke drops them).
    pub(super) fn dropped_on_choke(&mut self, slot: u32) -> Vec<BlockRef> {
        let c = self.conn(slot);
        let mut dropped = if c.fast.is_some() { Vec::new() } else { std::mem::take(&mut c.active) };
        dropped.append(&mut c.pending);
        dropped
    }

    /// libtorrent `abort_download` in end game (libtorrent's order): of the
    /// blocks a peer no longer has asked, those no other peer has asked
    /// (in its download or request queue) go back to the picker as free,
    /// which ends end game; returns them.
    pub(super) fn abort_in_end_game(&mut self, blocks: &[BlockRef]) -> Vec<BlockRef> {
        let asked = |b: &BlockRef| self.connections().any(|(_, c)| c.active.contains(b) || c.pending.contains(b));
        let freed: Vec<BlockRef> = blocks.iter().copied().filter(|b| !asked(b)).collect();
        for &(p, b) in &freed {
            self.picker.block_unrequested(p, b);
        }
        freed
    }

    /// libtorrent `snub_peer`, its first step, from the once-a-second tick:
    /// a remote with requests outstanding that sent no piece data for
    /// `piece_timeout` (`snub_time`) loses its request queue, which goes
    /// back to the picker. (Timing out its last request is not modelled.)
    pub(super) fn release_snubbed(&mut self, now: Time, io: &mut dyn Io) {
        if self.cfg.whole_pieces_threshold == 0 {
            return;
        }
        for slot in 0..self.conns.len() as u32 {
            let Some(c) = self.conns[slot as usize].as_ref() else { continue };
            if c.pending.is_empty()
                || c.active.is_empty()
                || now.saturating_since(self.rows.last_piece(slot)) <= self.cfg.snub_time
            {
                continue;
            }
            let pending = std::mem::take(&mut self.conn(slot).pending);
            self.let_go(now, &pending, io);
        }
    }
}
