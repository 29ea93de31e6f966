//! How many block requests a downloader keeps outstanding with one peer.
//!
//! Mainline 4.0.x (`Downloader.py`, `_backlog` and `_request_more`): the depth
//! is `2 + int(4 x r / 16384)` for a download rate `r` (bytes/s, 20 s window)
//! from that peer, about four seconds of 16 KiB blocks plus two; above 50 it
//! becomes `max(50, int(0.075 x depth))`. Requests are refilled only while
//! fewer than the depth are outstanding, but once a piece is chosen its blocks
//! keep being requested up to `(depth - 2) x 5 + 2` outstanding (the inner cap)
//! or until the piece has none left.

use serde::{Deserialize, Serialize};

/// A request-pipeline policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Pipeline {
    /// Mainline 4.0.x: the depth grows with the measured download rate.
    Mainline,
    /// Always this many outstanding requests per peer (inner cap the same).
    Fixed(u32),
}

impl Pipeline {
    /// Outstanding requests to keep with a peer sending us `rate` bytes/s.
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
        }
    }

    /// Outstanding requests up to which blocks of an already chosen piece are
    /// still requested.
    pub fn inner_cap(&self, backlog: u32) -> u32 {
        match *self {
            Pipeline::Mainline => (backlog.saturating_sub(2)) * 5 + 2,
            Pipeline::Fixed(n) => n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_fixed_pipeline_ignores_the_rate() {
        let p = Pipeline::Fixed(5);
        assert_eq!(p.backlog(0.0), 5);
        assert_eq!(p.backlog(1e9), 5);
        assert_eq!(p.inner_cap(5), 5);
    }
}
