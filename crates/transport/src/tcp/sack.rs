//! Selective acknowledgements: the SACK option (RFC 2018) and the sender's
//! scoreboard for SACK-based loss recovery (RFC 6675).

use super::thin_vec::ThinVec;

/// Up to four SACK blocks, stored relative to the segment's cumulative ACK
/// (the option carries 32-bit edges; at most 3 blocks fit beside timestamps).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlocks {
    n: u8,
    /// (start - ack, length) of each block, most recent first.
    blocks: [(u32, u32); 4],
}

impl SackBlocks {
    pub const NONE: SackBlocks = SackBlocks { n: 0, blocks: [(0, 0); 4] };

    /// Builds blocks from absolute `[start, end)` ranges above `ack`.
    pub fn new(ack: u64, ranges: impl IntoIterator<Item = (u64, u64)>) -> Self {
        let mut b = SackBlocks::NONE;
        for (s, e) in ranges.into_iter().take(4) {
            debug_assert!(s > ack && e > s);
            b.blocks[b.n as usize] = ((s - ack) as u32, (e - s) as u32);
            b.n += 1;
        }
        b
    }

    pub fn len(&self) -> usize {
        self.n as usize
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The blocks as absolute `[start, end)` ranges, for a segment acking `ack`.
    pub fn ranges(&self, ack: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.blocks[..self.n as usize].iter().map(move |&(off, len)| {
            let s = ack + off as u64;
            (s, s + len as u64)
        })
    }

    /// Option bytes on the wire: NOP, NOP, kind 5, length, 8 bytes per block.
    pub fn option_len(&self) -> u32 {
        if self.n == 0 {
            0
        } else {
            4 + 8 * self.n as u32
        }
    }
}

/// What the sender knows the receiver holds above `snd_una`: sorted, disjoint
/// SACKed ranges.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scoreboard {
    /// Thin: every ACK reads it, and it holds nothing unless segments are lost.
    sacked: ThinVec<(u64, u64)>,
}

impl Scoreboard {
    /// Drops what the cumulative ACK covers and records the SACK blocks.
    pub fn update(&mut self, ack: u64, blocks: impl Iterator<Item = (u64, u64)>) {
        let first_kept = self.sacked.partition_point(|&(_, e)| e <= ack);
        self.sacked.drop_front(first_kept);
        if let Some(first) = self.sacked.first_mut() {
            first.0 = first.0.max(ack);
        }
        for (s, e) in blocks {
            let s = s.max(ack);
            if e > s {
                self.insert(s, e);
            }
        }
    }

    fn insert(&mut self, mut s: u64, mut e: u64) {
        let i = self.sacked.partition_point(|&(_, end)| end < s);
        let mut j = i;
        while j < self.sacked.len() && self.sacked[j].0 <= e {
            s = s.min(self.sacked[j].0);
            e = e.max(self.sacked[j].1);
            j += 1;
        }
        self.sacked.vec().splice(i..j, std::iter::once((s, e)));
    }

    /// RFC 6675 IsLost, as a boundary: every unSACKed byte below the returned
    /// sequence number has more than `(dupthresh - 1) x SMSS` bytes, or
    /// `dupthresh` discontiguous blocks, SACKed above it.
    pub fn lost_boundary(&self, dupthresh: u32, mss: u32) -> Option<u64> {
        let bytes_needed = (dupthresh.saturating_sub(1) as u64) * mss as u64;
        let mut bytes = 0;
        for (k, &(s, e)) in self.sacked.iter().rev().enumerate() {
            bytes += e - s;
            if bytes > bytes_needed || k + 1 >= dupthresh as usize {
                return Some(s);
            }
        }
        None
    }

    /// Bytes SACKed above the cumulative ACK.
    pub fn sacked_bytes(&self) -> u64 {
        self.sacked.iter().map(|&(s, e)| e - s).sum()
    }

    /// Bytes in `[a, b)` that are not SACKed.
    pub fn unsacked_in(&self, a: u64, b: u64) -> u64 {
        if b <= a {
            return 0;
        }
        let sacked: u64 = self.sacked.iter().map(|&(s, e)| e.min(b).saturating_sub(s.max(a))).sum();
        (b - a) - sacked
    }

    /// RFC 6675 SetPipe: unSACKed bytes not deemed lost, plus unSACKed bytes
    /// already retransmitted (below `high_rxt`).
    pub fn pipe(&self, snd_una: u64, snd_max: u64, high_rxt: u64, lost_below: u64) -> u64 {
        let lost_below = lost_below.clamp(snd_una, snd_max);
        self.unsacked_in(lost_below, snd_max) + self.unsacked_in(snd_una, high_rxt.min(snd_max))
    }

    /// The first unSACKed stretch at or after `from` and before `limit`, at most
    /// `mss` bytes long (RFC 6675 NextSeg rules 1 and 3).
    pub fn next_unsacked(&self, from: u64, limit: u64, mss: u32) -> Option<(u64, u32)> {
        let mut s = from;
        for &(a, b) in self.sacked.iter() {
            if b <= s {
                continue;
            }
            if a > s {
                break;
            }
            s = b; // inside a SACKed range: skip past it
        }
        if s >= limit {
            return None;
        }
        let next_sacked = self.sacked.iter().find(|&&(a, _)| a > s).map_or(limit, |&(a, _)| a.min(limit));
        Some((s, (next_sacked - s).min(mss as u64) as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    fn board(ranges: &[(u64, u64)]) -> Scoreboard {
        let mut b = Scoreboard::default();
        b.update(0, ranges.iter().copied());
        b
    }

    #[test]
    fn blocks_round_trip_relative_to_the_ack() {
        let b = SackBlocks::new(5000, [(7000, 9000), (10_000, 11_000)]);
        assert_eq!(b.ranges(5000).collect::<Vec<_>>(), vec![(7000, 9000), (10_000, 11_000)]);
        assert_eq!(b.option_len(), 20);
        assert_eq!(SackBlocks::NONE.option_len(), 0);
    }

    #[test]
    fn the_scoreboard_merges_blocks_and_forgets_what_the_ack_covers() {
        let mut b = board(&[(3000, 4000), (5000, 6000)]);
        b.update(0, [(4000, 5000)].into_iter());
        assert_eq!(&*b.sacked, &[(3000, 6000)]);
        b.update(3500, std::iter::empty());
        assert_eq!(&*b.sacked, &[(3500, 6000)]);
        b.update(6000, std::iter::empty());
        assert!(b.sacked.is_empty());
    }

    #[test]
    fn a_hole_is_lost_once_three_segments_are_sacked_above_it() {
        assert_eq!(board(&[(1000, 4000)]).lost_boundary(3, MSS), Some(1000), "3 segments above: lost");
        assert_eq!(board(&[(1000, 3000)]).lost_boundary(3, MSS), None, "2 segments above: not yet");
        // Three discontiguous single blocks also make the lowest hole lost.
        let b = board(&[(1000, 1100), (2000, 2100), (3000, 3100)]);
        assert_eq!(b.lost_boundary(3, MSS), Some(1000));
    }

    #[test]
    fn pipe_counts_unsacked_bytes_not_lost_plus_retransmissions() {
        // Sent [0, 10000); SACKed [2000, 5000) (3 segments); the hole [0, 2000) is lost.
        let b = board(&[(2000, 5000)]);
        let lost = b.lost_boundary(3, MSS).unwrap();
        assert_eq!(lost, 2000);
        assert_eq!(b.pipe(0, 10_000, 0, lost), 5000, "[5000, 10000) still in flight");
        assert_eq!(b.pipe(0, 10_000, 1000, lost), 6000, "plus the retransmitted [0, 1000)");
    }

    #[test]
    fn next_unsacked_skips_sacked_ranges_and_stops_at_the_limit() {
        let b = board(&[(1000, 3000), (4000, 5000)]);
        assert_eq!(b.next_unsacked(0, 10_000, MSS), Some((0, 1000)));
        assert_eq!(b.next_unsacked(1000, 10_000, MSS), Some((3000, 1000)));
        assert_eq!(b.next_unsacked(3500, 10_000, MSS), Some((3500, 500)));
        assert_eq!(b.next_unsacked(4000, 10_000, MSS), Some((5000, 1000)));
        assert_eq!(b.next_unsacked(1000, 3000, MSS), None);
    }
}
