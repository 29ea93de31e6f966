//! How many block requests a downloader keeps outstanding with one peer.
//!
//! Mainline 4.0.x (`Downloader.py`, `_backlog` and `_request_more`): the depth
//! is `2 + int(4 x r / 16384)` for a download rate `r` (bytes/s, 20 s window)
//! from that peer, about four seconds of 16 KiB blocks plus two; above 50 it
//! becomes `max(50, int(0.075 x depth))`. Requests are refilled only while
//! fewer than the depth are outstanding, but once a piece is chosen its blocks
//! keep being requested up to `(depth - 2) x 5 + 2` outstanding (the inner cap)
//! or until the piece has none left.
//!
//! libtorrent (RC_1_2 `peer_connection::update_desired_queue_size`,
//! `second_tick`, `incoming_piece`; [`RequestQueue`]): a queue that starts at
//! 4 and grows by one per block received ("slow start"), until a second in
//! which the peer sent something and less than 5000 bytes more than the
//! second before; from then on `request_queue_time` (3 s) of the peer's
//! download rate (a 5-second moving average, updated each second) in 16 KiB
//! blocks, between 2 and `max_out_request_queue` (500). A snubbed peer (no
//! piece for `piece_timeout`, 20 s) and a peer in end-game mode get 1
//! (`desired_queue_size`; libtorrent's end game is each peer's, see
//! `client::peer_end_game`).

use serde::{Deserialize, Serialize};

/// A request-pipeline policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Pipeline {
    /// Mainline 4.0.x: the depth grows with the measured download rate.
    Mainline,
    /// Always this many outstanding requests per peer (inner cap the same).
    Fixed(u32),
    /// libtorrent: each connection's [`RequestQueue`] (inner cap the same).
    Libtorrent,
}

impl Pipeline {
    /// Outstanding requests to keep with a peer sending us `rate` bytes/s
    /// (for `Libtorrent`, the connection's [`RequestQueue`] decides; this is
    /// its starting size).
    pub fn backlog(&self, rate: f64) -> u32 {
        match *self {
            Pipeline::Mainline => {
                let b = 2 + (4.0 * rate / 16384.0) as u32;
                if b > 50 {
                    50.max((0.075 * b as f64) as u32)
                } else {
                    b
                }
            }
            Pipeline::Fixed(n) => n,
            // The connection's RequestQueue decides (the client asks it); its start.
            Pipeline::Libtorrent => RequestQueue::default().desired,
        }
    }

    /// Outstanding requests up to which blocks of an already chosen piece are
    /// still requested.
    pub fn inner_cap(&self, backlog: u32) -> u32 {
        match *self {
            Pipeline::Mainline => (backlog.saturating_sub(2)) * 5 + 2,
            Pipeline::Fixed(n) => n,
            Pipeline::Libtorrent => backlog,
        }
    }
}

/// Blocks of 16 KiB the queue is counted in.
const BLOCK_BYTES: u64 = 16_384;

/// libtorrent's request queue of one connection (see the module).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestQueue {
    desired: u32,
    slow_start: bool,
    /// Piece bytes received this second and the second before.
    this_second: u64,
    last_second: u64,
    /// The 5-second moving average of the download rate, bytes/s.
    average: u64,
}

impl Default for RequestQueue {
    fn default() -> Self {
        RequestQueue { desired: 4, slow_start: true, this_second: 0, last_second: 0, average: 0 }
    }
}

impl RequestQueue {
    /// `request_queue_time`, s.
    pub const QUEUE_TIME_S: u64 = 3;
    /// `min_request_queue` and `max_out_request_queue`.
    pub const MIN: u32 = 2;
    pub const MAX: u32 = 500;
    /// A second of slow start that grew the rate by less than this ends it, bytes.
    pub const SLOW_START_GROWTH: u64 = 5000;

    /// A block of `bytes` arrived: counted, and in slow start one more request.
    pub fn on_block(&mut self, bytes: u32) {
        self.this_second += bytes as u64;
        if self.slow_start {
            self.desired = (self.desired + 1).min(Self::MAX);
        }
    }

    /// The peer stopped being interesting or was snubbed: slow start ends.
    pub fn end_slow_start(&mut self) {
        self.slow_start = false;
    }

    /// Once a second: slow start ends on a second that sent something and
    /// grew by less than [`Self::SLOW_START_GROWTH`] (while the peer unchokes
    /// us); the average takes the second in; out of slow start the queue is
    /// `QUEUE_TIME_S` of the average.
    pub fn second_tick(&mut self, unchoked: bool) {
        if self.slow_start
            && unchoked
            && self.this_second > 0
            && self.this_second < self.last_second + Self::SLOW_START_GROWTH
        {
            self.slow_start = false;
        }
        self.average = self.average * 4 / 5 + self.this_second / 5;
        self.last_second = self.this_second;
        self.this_second = 0;
        if !self.slow_start {
            let d = Self::QUEUE_TIME_S * self.average / BLOCK_BYTES;
            self.desired = (d.min(Self::MAX as u64) as u32).max(Self::MIN);
        }
    }

    /// Requests to keep outstanding: 1 for a snubbed peer or in end game.
    pub fn desired(&self, snubbed: bool, end_game: bool) -> u32 {
        if snubbed || end_game {
            1
        } else {
            self.desired
        }
    }

    pub fn in_slow_start(&self) -> bool {
        self.slow_start
    }

    /// The download rate average, bytes/s.
    pub fn average(&self) -> u64 {
        self.average
    }

    /// libtorrent `request_a_block`: how many blocks this peer should be
    /// given in whole pieces (`prefer_contiguous_blocks`), from its download
    /// rate (`download_payload_rate`: this queue's 5-second average, bytes/s):
    /// the bytes it would send in `threshold_s` seconds
    /// (`whole_pieces_threshold`, 0: off), at most 8 MiB, in whole pieces of
    /// `piece_length` bytes (rounded down), times the blocks per piece.
    /// 0 when not even one piece would come within the threshold.
    pub fn prefer_contiguous_blocks(&self, threshold_s: u32, piece_length: u64) -> u32 {
        if threshold_s == 0 || piece_length == 0 {
            return 0;
        }
        let window = (self.average * threshold_s as u64).min(Self::WHOLE_PIECES_WINDOW_CAP);
        let pieces = window / piece_length;
        let blocks_per_piece = piece_length / BLOCK_BYTES.min(piece_length);
        (pieces * blocks_per_piece).min(u32::MAX as u64) as u32
    }

    /// The cap on `prefer_contiguous_blocks`' window (8 MiB), bytes.
    pub const WHOLE_PIECES_WINDOW_CAP: u64 = 8 * 1024 * 1024;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A queue whose 5-second average is `rate` bytes/s.
    fn averaging(rate: u64) -> RequestQueue {
        RequestQueue { average: rate, ..RequestQueue::default() }
    }

    #[test]
    fn whole_pieces_are_preferred_from_the_rate_that_fetches_one_piece_within_20_s_in_whole_pieces_of_blocks() {
        let piece = 262_144; // 16 blocks
                             // 262,144 / 20 = 13,107.2 B/s for one piece in 20 s.
        assert_eq!(averaging(13_107).prefer_contiguous_blocks(20, piece), 0, "262,140 B: not a whole piece");
        assert_eq!(averaging(13_108).prefer_contiguous_blocks(20, piece), 16, "262,160 B: one piece");
        assert_eq!(averaging(39_321).prefer_contiguous_blocks(20, piece), 32, "786,420 B: two, rounded down");
        assert_eq!(averaging(39_322).prefer_contiguous_blocks(20, piece), 48);
        assert_eq!(averaging(1_000_000).prefer_contiguous_blocks(20, piece), 512, "the window is capped at 8 MiB");
        assert_eq!(averaging(1_000_000).prefer_contiguous_blocks(0, piece), 0, "threshold 0: off");
        assert_eq!(averaging(30_000).prefer_contiguous_blocks(20, 32_768), 36, "600,000 B: 18 pieces of 2 blocks");
        assert_eq!(averaging(1_000).prefer_contiguous_blocks(20, 8_192), 2, "a block is the piece below 16 KiB");
    }

    #[test]
    fn the_rate_whole_pieces_are_preferred_from_is_the_five_second_average_updated_each_second() {
        let mut q = RequestQueue::default();
        for _ in 0..4 {
            q.on_block(16_384); // 65,536 B in the first second
        }
        assert_eq!(q.prefer_contiguous_blocks(20, 262_144), 0, "nothing averaged before the tick");
        q.second_tick(true);
        assert_eq!(q.average(), 13_107, "65,536 / 5");
        assert_eq!(q.prefer_contiguous_blocks(20, 262_144), 0, "just short of a piece in 20 s");
        for _ in 0..4 {
            q.on_block(16_384);
        }
        q.second_tick(true);
        assert_eq!(q.average(), 13_107 * 4 / 5 + 13_107);
        assert_eq!(q.prefer_contiguous_blocks(20, 262_144), 16);
    }

    #[test]
    fn the_mainline_depth_table_is_reproduced() {
        let p = Pipeline::Mainline;
        // REFERENCE C.2: rate -> (backlog, inner cap).
        for (rate, backlog, cap) in
            [(0.0, 2, 2), (3_000.0, 2, 2), (10_000.0, 4, 12), (20_000.0, 6, 22), (100_000.0, 26, 122)]
        {
            assert_eq!(p.backlog(rate), backlog, "rate {rate}");
            assert_eq!(p.inner_cap(p.backlog(rate)), cap, "rate {rate}");
        }
        // Exactly 20 KiB/s and 100 KiB/s, the table's "20 kB/s" and "100 kB/s" rows.
        assert_eq!(p.backlog(20_480.0), 7);
        assert_eq!(p.inner_cap(7), 27);
        assert_eq!(p.backlog(102_400.0), 27);
        assert_eq!(p.inner_cap(27), 127);
    }

    #[test]
    fn above_fifty_the_depth_is_capped_then_grows_at_seven_and_a_half_percent() {
        let p = Pipeline::Mainline;
        assert_eq!(p.backlog(200_000.0), 50);
        assert_eq!(p.inner_cap(50), 242);
        assert_eq!(p.backlog(2_500_000.0), 50, "int(0.075 x 612) = 45 < 50");
        assert_eq!(p.backlog(4_096_000.0), 75, "2 + 1000 = 1002 -> int(75.15)");
    }

    #[test]
    fn libtorrent_slow_start_adds_a_request_per_block_until_a_second_grows_by_less_than_5000_bytes() {
        let mut q = RequestQueue::default();
        assert_eq!(q.desired(false, false), 4);
        for _ in 0..10 {
            q.on_block(16_384);
        }
        assert_eq!(q.desired(false, false), 14);
        q.second_tick(true); // 163,840 B after 0: still growing
        assert!(q.in_slow_start());
        for _ in 0..10 {
            q.on_block(16_384);
        }
        q.second_tick(true); // the same again: growth 0 < 5000
        assert!(!q.in_slow_start());
        // Out of slow start: 3 s of the 5 s average in blocks. The average
        // after two seconds of 163,840 B: 32,768, then 32,768 x 4/5 + 32,768.
        assert_eq!(q.average(), 58_982);
        assert_eq!(q.desired(false, false), (3 * 58_982 / 16_384) as u32);
    }

    #[test]
    fn libtorrent_slow_start_does_not_end_while_the_peer_chokes_us_or_sends_nothing() {
        let mut q = RequestQueue::default();
        q.second_tick(true); // nothing received
        q.on_block(16_384);
        q.second_tick(false); // choked
        assert!(q.in_slow_start());
        assert_eq!(q.desired(false, false), 5);
    }

    #[test]
    fn libtorrent_queues_are_clamped_and_one_when_snubbed_or_in_end_game() {
        let mut q = RequestQueue::default();
        q.end_slow_start();
        q.second_tick(true);
        assert_eq!(q.desired(false, false), RequestQueue::MIN, "no data: the minimum");
        for _ in 0..40 {
            q.this_second = 50_000_000;
            q.second_tick(true);
        }
        assert_eq!(q.desired(false, false), RequestQueue::MAX);
        assert_eq!(q.desired(true, false), 1);
        assert_eq!(q.desired(false, true), 1);
    }

    #[test]
    fn a_fixed_pipeline_ignores_the_rate() {
        let p = Pipeline::Fixed(5);
        assert_eq!(p.backlog(0.0), 5);
        assert_eq!(p.backlog(1e9), 5);
        assert_eq!(p.inner_cap(5), 5);
    }
}
