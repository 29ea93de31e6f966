//! Whose interest rule a client follows ([`InterestRule`]), and libtorrent's.
//!
//! Mainline 4.0.x (`Downloader.py`, in `download` and `endgame`) is
//! interested in a remote while it has blocks nobody was asked for: a peer
//! whose pieces are all requested from others is told not interested.
//!
//! libtorrent (RC_2_1) is interested in a remote while it has a piece we
//! lack (`peer_connection::do_update_interest`: any piece with priority
//! above `dont_download` that the picker does not have; every piece has
//! the default priority here), whether or not its blocks are requested from
//! others, and in nobody once the torrent is finished (`is_upload_only`).
//! The rule is applied where libtorrent applies it:
//!
//! * on a bitfield, `have_all` or `have_none` (`incoming_bitfield`,
//!   `incoming_have_all`, `incoming_have_none`): interested or not;
//! * on a HAVE for a piece we lack, if not interested yet
//!   (`incoming_have`): interested;
//! * when a piece passes (`torrent::we_have`, `received_piece`): every peer
//!   that has it is updated (`update_interest`); once finished
//!   (`torrent::finished`, `send_upload_only`) every peer is told not
//!   interested.
//!
//! An update that finds the remote interesting goes through
//! `torrent::peer_is_interesting`: `interested` if not said yet, then a
//! request (`request_a_block`) if the remote unchokes us or allowed us fast
//! pieces. A peer that is interested and unchoked but that the picker gives
//! nothing stays interested and waits: it asks again on the next of those
//! events, on an unchoke or on a block that arrives from it.
//! `interested` and `not_interested` are only sent on a change
//! (`send_interested`, `send_not_interested`).

use torrentlab_engine::Time;

use super::{rows, Client, Io};
use crate::choker::Choker;
use crate::limiter::UploadLimiter;
use crate::picker::Picker;

/// Whose rule decides our interest in a remote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InterestRule {
    /// Mainline 4.0.x: interested while the remote has blocks to request
    /// (in end game, a block outstanding that it was not asked for).
    Mainline,
    /// libtorrent `do_update_interest`: interested while the remote has a
    /// piece we lack and we are not finished.
    Libtorrent,
}

impl<P: Picker, C: Choker, L: UploadLimiter> Client<P, C, L> {
    /// Whether libtorrent's rule finds the remote on `slot` interesting
    /// (`do_update_interest`): we are not finished (`is_upload_only`) and it
    /// has a piece we do not have.
    pub(super) fn lacks_from(&self, slot: u32) -> bool {
        !self.is_seed() && self.cref(slot).have.has_any_missing_from(self.picker.have())
    }

    /// libtorrent `peer_connection::do_update_interest`: not interested
    /// (`send_not_interested`, which says nothing if we were not), or
    /// [`Client::peer_is_interesting`].
    pub(super) fn update_interest(&mut self, now: Time, slot: u32, io: &mut dyn Io) {
        if self.lacks_from(slot) {
            self.peer_is_interesting(now, slot, io);
        } else if self.cref(slot).am_interested {
            self.set_interested(slot, false, io);
        }
    }

    /// libtorrent `torrent::peer_is_interesting`: `interested`, if not said
    /// yet (`send_interested`), then blocks requested (`request_a_block`,
    /// `send_block_requests`) if the remote unchokes us, or, while it
    /// chokes us, of the allowed-fast pieces it gave us.
    pub(super) fn peer_is_interesting(&mut self, now: Time, slot: u32, io: &mut dyn Io) {
        if !self.cref(slot).am_interested {
            self.set_interested(slot, true, io);
        }
        self.request_more(now, slot, None, io);
    }

    /// libtorrent `incoming_have`'s interest: a HAVE for a piece we lack
    /// makes a remote we are not interested in interesting (and asked for
    /// blocks, [`Client::peer_is_interesting`]); to a remote we are
    /// interested in it says nothing, and asks nothing.
    pub(super) fn have_interest(&mut self, now: Time, slot: u32, piece: u32, io: &mut dyn Io) {
        if !self.picker.have().has(piece) && !self.is_seed() && !self.cref(slot).am_interested {
            self.peer_is_interesting(now, slot, io);
        }
    }

    /// The interest part of libtorrent `torrent::we_have` once `piece`
    /// passed: each peer that has it is updated (`received_piece`, and the
    /// loop over interesting peers after it: `update_interest`, which
    /// libtorrent defers until the message at hand is handled, as here,
    /// after the HAVEs). Once that was the last piece, the torrent is
    /// finished (`torrent::finished`) and `send_upload_only` tells every
    /// peer not interested before those updates run.
    pub(super) fn we_have_interest(&mut self, now: Time, piece: u32, io: &mut dyn Io) {
        let seed = self.is_seed();
        let mut slots = std::mem::take(&mut self.recheck);
        slots.clear();
        for slot in 0..self.rows.len() as u32 {
            let f = self.rows.flags(slot);
            if f & rows::READY == 0 {
                continue;
            }
            let wanted = if seed { f & rows::AM_INTERESTED != 0 } else { self.holders.has(piece, slot) };
            if wanted {
                slots.push(slot);
            }
        }
        for &slot in &slots {
            if self.conns[slot as usize].as_ref().is_none_or(|c| !c.ready()) {
                continue;
            }
            if seed {
                self.set_interested(slot, false, io);
            } else {
                self.update_interest(now, slot, io);
            }
        }
        self.recheck = slots;
    }
}
