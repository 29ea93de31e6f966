//! uTP's parameters: libutp's defaults, and libtorrent's.

use serde::{Deserialize, Serialize};
use torrentlab_engine::Duration;

use super::ledbat::UtpCcConfig;

/// uTP parameters. `Default` follows libutp.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UtpConfig {
    /// Payload bytes per full packet (libutp: 1382 on a 1500-byte path).
    pub packet_size: u32,
    /// Receive buffer; the advertised window is what is left of it (bytes).
    pub receive_buffer: u32,
    /// Lower bound of the retransmission timeout (libutp 1 s; libtorrent 500 ms).
    pub min_rto: Duration,
    /// Timeout before the first RTT sample and for the SYN (3 s).
    pub initial_rto: Duration,
    /// Consecutive timeouts after which the connection is given up (libutp: 4).
    pub max_timeouts: u32,
    /// SYN retransmissions before giving up (libtorrent: 2).
    pub syn_retries: u32,
    /// Duplicate ACKs, or packets SACKed past a hole, that mean a loss (3).
    pub dupack_threshold: u32,
    /// At most one undersized packet in flight (libtorrent's Nagle).
    pub nagle: bool,
    /// libtorrent-like MTU discovery: packets start at `mtu_floor`, and a probe
    /// halfway to `mtu_ceiling` is sent when the window exceeds three floor-sized
    /// packets; an acknowledged probe raises the floor, a lost one lowers the
    /// ceiling (and is not taken as congestion). Sizes are UDP payloads (uTP
    /// header included). Off: every packet carries `packet_size` payload bytes.
    pub mtu_probing: bool,
    pub mtu_floor: u32,
    pub mtu_ceiling: u32,
    pub cc: UtpCcConfig,
}

impl Default for UtpConfig {
    fn default() -> Self {
        UtpConfig {
            packet_size: 1382,
            receive_buffer: 1 << 20,
            min_rto: Duration::from_secs(1),
            initial_rto: Duration::from_secs(3),
            max_timeouts: 4,
            syn_retries: 2,
            dupack_threshold: 3,
            nagle: true,
            mtu_probing: false,
            mtu_floor: 548,
            mtu_ceiling: 1472,
            cc: UtpCcConfig::bep29(),
        }
    }
}

impl UtpConfig {
    /// libtorrent's uTP (RC_1_2 `settings_pack` and `utp_stream.cpp`): a
    /// 500 ms minimum timeout (`utp_min_timeout`), the SYN given up at its
    /// first timeout (3 s, `utp_connect_timeout`: libtorrent then dials TCP),
    /// 3 resends (`utp_num_resends`), MTU discovery from a 548-byte floor to a
    /// 1472-byte ceiling, and BEP 29's LEDBAT with target 100 ms, a gain of
    /// 3000 bytes per RTT (`utp_gain_factor`), window cuts at most once per
    /// 100 ms (`utp_cwnd_reduce_timer`) and a base delay over 20 one-minute
    /// buckets. Not modelled: libtorrent advances a base-delay bucket only
    /// after 120 samples in its minute.
    pub fn libtorrent() -> Self {
        let mut cc = UtpCcConfig::bep29();
        cc.base_history = Some((20, Duration::from_secs(60)));
        UtpConfig {
            min_rto: Duration::from_millis(500),
            initial_rto: Duration::from_secs(3),
            max_timeouts: 3,
            syn_retries: 0,
            mtu_probing: true,
            mtu_floor: 548,
            mtu_ceiling: 1472,
            cc,
            ..UtpConfig::default()
        }
    }
}
