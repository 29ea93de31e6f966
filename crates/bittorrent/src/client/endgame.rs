//! End game (mainline 4.0.x `Downloader.py`): once every block of every
//! missing piece has been requested, each block not yet received may be
//! asked of every peer that has its piece, and a block that arrives is
//! cancelled with the others.
//!
//! Mainline keeps the blocks outstanding when end game begins in
//! `all_requests` and takes each off as it arrives; requests dropped on a
//! choke stay in it. Interest follows it too: a peer is interesting while it
//! has an outstanding block we did not ask of it.

use torrentlab_engine::Time;

use super::conn::BlockRef;
use super::interest::InterestRule;
use super::{Client, Io};
use crate::choker::Choker;
use crate::limiter::UploadLimiter;
use crate::picker::Picker;
use crate::torrent::BLOCK;
use crate::wire::Message;

impl<P: Picker, C: Choker, L: UploadLimiter> Client<P, C, L> {
    /// The end of mainline `_request_more` when its last request began end
    /// game: every request outstanding becomes `all_requests`, and every
    /// connection is offered them ([`Client::fix_end_game`]).
    pub(super) fn start_end_game(&mut self, now: Time, io: &mut dyn Io) {
        let mut all = std::mem::take(&mut self.all_requests);
        all.clear();
        let slots: Vec<u32> = self.connections().filter(|(_, c)| c.ready()).map(|(s, _)| s).collect();
        for &s in &slots {
            // Blocks waiting in a request queue are requested too.
            all.extend_from_slice(&self.cref(s).active);
            all.extend_from_slice(&self.cref(s).pending);
        }
        self.all_requests = all;
        for s in slots {
            if self.conns[s as usize].is_some() {
                self.fix_end_game(now, s, io);
            }
        }
    }

    /// Mainline `fix_download_endgame`: the outstanding blocks the remote
    /// has and was not asked for decide our interest; if it unchokes us,
    /// up to its backlog of them (shuffled) are requested. With
    /// libtorrent's rule they are requested only of a remote we are
    /// interested in, and say nothing of our interest.
    pub(super) fn fix_end_game(&mut self, now: Time, slot: u32, io: &mut dyn Io) {
        let mut want = std::mem::take(&mut self.scratch);
        want.clear();
        let c = self.cref(slot);
        let mine = |b: &BlockRef| c.active.contains(b) || c.pending.contains(b);
        want.extend(self.all_requests.iter().copied().filter(|b| c.have.has(b.0) && !mine(b)));
        let (interested, idle) = (c.am_interested, c.active.is_empty() && c.pending.is_empty());
        if self.cfg.interest == InterestRule::Libtorrent {
            // libtorrent's interest does not follow the end game's blocks.
            if interested {
                self.request_wanted(now, slot, &mut want, io);
            }
        } else if interested && idle && want.is_empty() {
            self.set_interested(slot, false, io);
        } else {
            if !interested && !want.is_empty() {
                self.set_interested(slot, true, io);
            }
            self.request_wanted(now, slot, &mut want, io);
        }
        self.scratch = want;
    }

    /// The rest of `fix_download_endgame`: if the remote unchokes us, up to
    /// its backlog of `want` (shuffled) are requested.
    fn request_wanted(&mut self, now: Time, slot: u32, want: &mut Vec<BlockRef>, io: &mut dyn Io) {
        if self.cref(slot).remote_choking {
            return;
        }
        self.send_pending(now, slot, io);
        if !self.cref(slot).pending.is_empty() {
            return;
        }
        let Some(backlog) = self.room(now, slot) else { return };
        let outstanding = self.cref(slot).active.len();
        self.rng.shuffle(want);
        want.truncate(backlog - outstanding);
        for &b in want.iter() {
            self.request(slot, b, io);
        }
    }

    /// The end-game part of mainline `got_piece`: `block` arrived on
    /// `from`, so it is no longer outstanding; every other interested peer
    /// that was asked for it gets a cancel, and every other interested peer
    /// is offered what is still outstanding.
    pub(super) fn end_game_block(&mut self, now: Time, from: u32, block: BlockRef, io: &mut dyn Io) {
        if let Some(i) = self.all_requests.iter().position(|&b| b == block) {
            self.all_requests.remove(i);
        }
        let (piece, b) = block;
        let length = self.torrent.block_len(piece, b);
        let slots: Vec<u32> =
            self.connections().filter(|&(s, c)| s != from && c.ready() && c.am_interested).map(|(s, _)| s).collect();
        for s in slots {
            let Some(c) = self.conns[s as usize].as_mut() else { continue };
            // Not requested yet from this one: no cancel needed.
            c.pending.retain(|&x| x != block);
            if !c.remote_choking {
                let Some(i) = c.active.iter().position(|&x| x == block) else { continue };
                c.active.remove(i);
                self.send(s, Message::Cancel { piece, begin: b * BLOCK, length }, io);
            } else if c.fast.is_some() {
                // Fast Extension: a remote that chokes us may still have it
                // asked of it (an allowed-fast piece, or not rejected yet).
                if let Some(i) = c.active.iter().position(|&x| x == block) {
                    c.active.remove(i);
                    self.send(s, Message::Cancel { piece, begin: b * BLOCK, length }, io);
                }
            }
            self.fix_end_game(now, s, io);
        }
    }
}
