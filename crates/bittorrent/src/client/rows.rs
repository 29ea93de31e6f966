//! What a rechoke reads of every connection, kept in dense arrays beside the
//! connection table.
//!
//! Mainline rechokes over every connection: every 10 s, and whenever an
//! unchoked peer becomes interested or not interested (`Choker.interested`).
//! A peer has dozens of connections of 256 bytes each, and a scan that reads
//! a line of each waits on memory for most of its time. Most connections need
//! only their flags (are we choking it, is it interested) and, if interested,
//! when it last sent us a block (snubbing); only the few interested and not
//! snubbed need their download rate. So the flags sit one byte per slot and
//! the last-block times eight to a line, and the rechoke reads a connection's
//! own lines only where the choker needs a rate or a socket.
//!
//! The flags mirror fields of [`PeerConn`](super::PeerConn), written where
//! those are; a debug build checks the mirror at every rechoke. `last_piece`
//! lives only here.

use torrentlab_engine::Time;

/// The handshakes are done: messages flow ([`Stage::Ready`](super::Stage::Ready)).
pub const READY: u8 = 1;
/// The remote is interested in us (`remote_interested`).
pub const INTERESTED: u8 = 2;
/// We choke the remote (`am_choking`).
pub const CHOKING: u8 = 4;
/// The remote has requests queued with us (`queued` not empty).
pub const REQUESTS: u8 = 8;
/// We are interested in the remote (`am_interested`): what the download
/// side's scans over every connection filter on.
pub const AM_INTERESTED: u8 = 16;

/// Per-slot rechoke inputs, indexed like the client's connection table.
#[derive(Clone, Debug, Default)]
pub struct Rows {
    /// [`READY`] | [`INTERESTED`] | [`CHOKING`] | [`REQUESTS`] |
    /// [`AM_INTERESTED`]; 0 for a free slot.
    flags: Vec<u8>,
    /// Last time a piece message arrived on the slot (snubbing), from the
    /// handshake on.
    last_piece: Vec<Time>,
}

impl Rows {
    /// A new connection on `slot`: choked (BEP 3), nothing else yet.
    pub fn open(&mut self, slot: u32) {
        let i = slot as usize;
        if i >= self.flags.len() {
            self.flags.resize(i + 1, 0);
            self.last_piece.resize(i + 1, Time::ZERO);
        }
        self.flags[i] = CHOKING;
        self.last_piece[i] = Time::ZERO;
    }

    /// The connection on `slot` is gone.
    pub fn close(&mut self, slot: u32) {
        self.flags[slot as usize] = 0;
    }

    /// Sets (`on`) or clears `flag` of `slot`.
    #[inline]
    pub fn set(&mut self, slot: u32, flag: u8, on: bool) {
        let f = &mut self.flags[slot as usize];
        *f = if on { *f | flag } else { *f & !flag };
    }

    /// A piece message arrived on `slot` at `now`.
    #[inline]
    pub fn got_piece(&mut self, slot: u32, now: Time) {
        self.last_piece[slot as usize] = now;
    }

    pub fn flags(&self, slot: u32) -> u8 {
        self.flags[slot as usize]
    }

    /// When a piece last arrived on `slot` (or its handshake ended).
    pub fn last_piece(&self, slot: u32) -> Time {
        self.last_piece[slot as usize]
    }

    /// Slots in the table (free ones included).
    pub fn len(&self) -> usize {
        self.flags.len()
    }

    /// Every slot with its flags and last-piece time, in slot order.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = (u32, u8, Time)> + '_ {
        self.flags.iter().zip(&self.last_piece).enumerate().map(|(i, (&f, &t))| (i as u32, f, t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use torrentlab_engine::Duration;

    #[test]
    fn a_new_slot_is_choked_and_nothing_else_and_a_closed_one_has_no_flags() {
        let mut r = Rows::default();
        r.open(3);
        assert_eq!(r.len(), 4);
        assert_eq!(r.flags(3), CHOKING);
        assert_eq!(r.flags(1), 0, "slots below a new one start free");
        r.set(3, READY, true);
        r.set(3, INTERESTED, true);
        r.set(3, CHOKING, false);
        assert_eq!(r.flags(3), READY | INTERESTED);
        r.close(3);
        assert_eq!(r.flags(3), 0);
        r.got_piece(1, Time(9));
        let all: Vec<_> = r.iter().collect();
        assert_eq!(all, vec![(0, 0, Time::ZERO), (1, 0, Time(9)), (2, 0, Time::ZERO), (3, 0, Time::ZERO)]);
    }

    #[test]
    fn reopening_a_slot_forgets_its_last_piece_time() {
        let mut r = Rows::default();
        r.open(0);
        let t = Time::ZERO + Duration::from_secs(7);
        r.got_piece(0, t);
        assert_eq!(r.iter().next(), Some((0, CHOKING, t)));
        r.close(0);
        r.open(0);
        assert_eq!(r.iter().next(), Some((0, CHOKING, Time::ZERO)));
    }
}
