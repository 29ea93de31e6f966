//! Whose end game a client plays ([`EndGameRule`]), and libtorrent's, which
//! is each peer's own (RC_2_1 `request_a_block` in request_blocks.cpp,
//! `peer_connection::set_endgame`, `desired_queue_size`, `second_tick`,
//! `incoming_piece`).
//!
//! Mainline's end game is the torrent's ([`super::endgame`]). libtorrent
//! has none: a peer enters end-game mode when `request_a_block` cannot pick
//! as many blocks as its queue has room for while the remote does not
//! choke us, and leaves it when a later call picks enough. In end-game mode
//! its queue is one request (`desired_queue_size`). With
//! `strict_end_game_mode` (on by default) a block already requested from
//! another peer (busy) is picked only when every piece still wanted is
//! being downloaded (`get_download_queue_size() >= num_want_left()`) and
//! the peer has nothing in its download and request queues; then exactly
//! one ([`crate::picker::PiecePicker::pick_busy_block`]).
//!
//! Such a peer asks again on an unchoke, a piece from it or a reject, and
//! from `second_tick`: in end-game mode, interesting, with both queues
//! empty and 5 s since its last request (`m_last_request`), it calls
//! `request_a_block` again ([`END_GAME_RETRY`]).
//!
//! When a busy block arrives, `incoming_piece` calls `cancel_block` for the
//! other requesters, but only after `mark_as_writing`, and
//! `cancel_request` returns at once for a block the picker no longer has
//! as requested: no CANCEL goes out, and the other copy arrives and is
//! wasted (`waste_reason::piece_end_game`). The model does the same.
//! Block timeouts (`snub_peer`'s `free_blocks > 0` path and its
//! `m_desired_queue_size = 2` re-request) are not modelled.

use torrentlab_engine::{Duration, Time};

use super::{Client, Io};
use crate::bitfield::Bitfield;
use crate::choker::Choker;
use crate::limiter::UploadLimiter;
use crate::picker::Picker;

/// Whose end game a client plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndGameRule {
    /// Mainline 4.0.x: the torrent's, once every block is requested.
    Mainline,
    /// libtorrent RC_2_1: each peer's, strict (see the module).
    Libtorrent,
}

/// How long after its last request a peer in end-game mode with nothing
/// outstanding asks again (libtorrent `second_tick`, `seconds(5)`).
pub const END_GAME_RETRY: Duration = Duration::from_secs(5);

impl<P: Picker, C: Choker, L: UploadLimiter> Client<P, C, L> {
    /// The torrent-wide end game (mainline's), which the libtorrent rule
    /// does not play.
    #[inline]
    pub(super) fn torrent_end_game(&self) -> bool {
        self.cfg.end_game == EndGameRule::Mainline && self.picker.in_end_game()
    }

    /// The end of libtorrent `request_a_block` for the remote on `slot`,
    /// after the free blocks were picked for a queue of `backlog`
    /// requests (among `allowed` pieces if it chokes us): end-game mode if
    /// fewer than that are queued (not for a remote that chokes us), out of
    /// it otherwise; in it, with strict end game and nothing queued, one
    /// busy block.
    pub(super) fn peer_end_game(&mut self, slot: u32, allowed: Option<&Bitfield>, backlog: usize, io: &mut dyn Io) {
        let c = self.cref(slot);
        let queued = c.active.len() + c.pending.len();
        if queued >= backlog {
            self.conn(slot).endgame = false;
            return;
        }
        if allowed.is_none() {
            self.conn(slot).endgame = true;
        }
        if queued > 0 || !self.picker.all_wanted_downloading() {
            return;
        }
        let c = self.conns[slot as usize].as_ref().expect("a live slot");
        let Some(block) = self.picker.pick_busy_block(allowed.unwrap_or(&c.have)) else { return };
        self.picker.busy_requested(block.0, block.1);
        self.request(slot, block, io);
    }

    /// libtorrent `second_tick`'s end-game retry: each remote in end-game
    /// mode that we are interested in, with nothing queued and
    /// [`END_GAME_RETRY`] since our last request to it, is asked again.
    pub(super) fn retry_end_game(&mut self, now: Time, io: &mut dyn Io) {
        if self.cfg.end_game != EndGameRule::Libtorrent || self.left {
            return;
        }
        for slot in 0..self.conns.len() as u32 {
            let Some(c) = self.conns[slot as usize].as_mut() else { continue };
            if !(c.ready() && c.endgame && c.am_interested && c.active.is_empty() && c.pending.is_empty())
                || now.saturating_since(c.last_request) < END_GAME_RETRY
            {
                continue;
            }
            c.last_request = now;
            self.request_more(now, slot, None, io);
        }
    }
}
