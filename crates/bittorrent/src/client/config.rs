//! A client's settings, with the mainline 4.0.x and libtorrent defaults.

use torrentlab_engine::Duration;

use super::interest::InterestRule;
use super::peer_end_game::EndGameRule;
use crate::choker::{upload_slots, ChokerKind};
use crate::dial::{Transport, Transports};
use crate::limiter::{LimiterKind, MixedMode, Series};
use crate::picker::PickOrder;
use crate::pipeline::Pipeline;

/// Client settings (mainline 4.0.x defaults from [`ClientConfig::mainline`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ClientConfig {
    /// Upload limit in bytes/s (`max_upload_rate`); `None`: unlimited.
    pub upload_rate: Option<f64>,
    /// Upload slots (mainline derives them from the limit, see [`upload_slots`]).
    pub upload_slots: u32,
    pub pipeline: Pipeline,
    /// Stop dialling out at this many connections (`max_initiate`, 40).
    pub max_initiate: u32,
    /// Refuse incoming connections at this many (`max_allow_in`, 80).
    pub max_allow_in: u32,
    /// Rechoke period (10 s); every third one rotates the optimistic unchoke.
    pub rechoke_interval: Duration,
    /// A peer that sent no piece data for this long is snubbed (30 s).
    pub snub_time: Duration,
    /// Keep-alive period (120 s).
    pub keepalive_interval: Duration,
    /// Which transports it dials and answers (mainline: dials TCP).
    pub transports: Transports,
    /// Whose choker: mainline's (its optimistic unchoke moves every third
    /// rechoke) or libtorrent's (every `optimistic_interval`).
    pub choker: ChokerKind,
    /// libtorrent's optimistic unchoke period (30 s); mainline's is three rechokes.
    pub optimistic_interval: Duration,
    /// Peers asked of the tracker (mainline 50; 0 at `max_initiate` connections).
    pub numwant: u32,
    /// libtorrent's throttling of TCP beside uTP (`None`: mainline's single
    /// limiter, no classes).
    pub mixed_mode: Option<MixedMode>,
    /// Whose upload limiter: mainline's round robin of 1380-byte writes, or
    /// libtorrent's bandwidth manager (quota in 500 ms ticks).
    pub limiter: LimiterKind,
    /// libtorrent's `rate_limit_ip_overhead`: its limiter charges the
    /// estimated IP overhead of every read and write, and every write
    /// (control messages too) waits for its quota. Mainline: off.
    pub rate_limit_ip_overhead: bool,
    /// The Fast Extension (BEP 6): announced in the handshake and used with
    /// a remote that announces it too (libtorrent; mainline 4.0.x has none).
    pub fast_extension: bool,
    /// Pieces offered as allowed fast to a remote when it first says it is
    /// interested (libtorrent `allowed_fast_set_size`, 5; 0: none).
    pub allowed_fast_set_size: u32,
    /// Whose piece-picking order: mainline's or libtorrent's.
    pub pick_order: PickOrder,
    /// libtorrent's `whole_pieces_threshold`, s (20; 0: off, as mainline):
    /// a peer whose download rate would bring a whole piece within it is
    /// given whole pieces (`prefer_contiguous_blocks`, queued in its request
    /// queue). Needs libtorrent's pipeline and order.
    pub whole_pieces_threshold: u32,
    /// Whose interest rule: mainline's (interested while the remote has
    /// blocks nobody was asked for) or libtorrent's (while it has a piece we
    /// lack, `peer_connection::do_update_interest`).
    pub interest: InterestRule,
    /// Whose end game: mainline's (the torrent's, once every block is
    /// requested) or libtorrent's (each peer's, strict end game with one
    /// busy block and a retry after 5 s; needs libtorrent's pipeline).
    pub end_game: EndGameRule,
}

impl ClientConfig {
    /// Mainline 4.0.x with an upload limit in bytes/s (`None`: unlimited).
    pub fn mainline(upload_rate: Option<f64>) -> Self {
        ClientConfig {
            upload_rate,
            // The slot table is in mainline's kB/s (KiB/s: it multiplies by 1024).
            upload_slots: upload_slots(upload_rate.map_or(0.0, |r| r / 1024.0)),
            pipeline: Pipeline::Mainline,
            max_initiate: 40,
            max_allow_in: 80,
            rechoke_interval: Duration::from_secs(10),
            snub_time: Duration::from_secs(30),
            keepalive_interval: Duration::from_secs(120),
            transports: Transports::mainline(Transport::Tcp),
            choker: ChokerKind::Mainline,
            optimistic_interval: Duration::from_secs(30),
            numwant: crate::tracker::DEFAULT_NUMWANT,
            mixed_mode: None,
            limiter: LimiterKind::Mainline,
            rate_limit_ip_overhead: false,
            fast_extension: false,
            allowed_fast_set_size: 0,
            pick_order: PickOrder::Mainline,
            whole_pieces_threshold: 0,
            interest: InterestRule::Mainline,
            end_game: EndGameRule::Mainline,
        }
    }

    /// libtorrent (RC_1_2 `settings_pack` defaults) with an upload limit in
    /// bytes/s (`None`: unlimited, its default): 8 unchoke slots, rechoke
    /// every 15 s and an optimistic unchoke every 30 s, its request queue
    /// (3 s of the peer's rate, slow start from 4, strict end game), a
    /// snubbed peer after 20 s without a piece (`piece_timeout`), 200
    /// connections (`connections_limit`), 200 peers asked of the tracker,
    /// uTP dialled first with TCP after a failed uTP connect, TCP uploads
    /// throttled beside uploading uTP peers (`peer_proportional`), upload
    /// quota handed out in 500 ms ticks (its bandwidth manager), the
    /// estimated IP overhead charged to it (`rate_limit_ip_overhead`), the
    /// Fast Extension (allowed-fast sets of 5) and its piece order, with
    /// whole pieces for peers that would send one within 20 s, and its
    /// interest rule (interested in a remote with a piece we lack, not
    /// interested in anyone once finished), and its end game, each peer's
    /// (`strict_end_game_mode`).
    pub fn libtorrent(upload_rate: Option<f64>) -> Self {
        ClientConfig {
            upload_rate,
            upload_slots: 8,
            pipeline: Pipeline::Libtorrent,
            max_initiate: 200,
            max_allow_in: 200,
            rechoke_interval: Duration::from_secs(15),
            snub_time: Duration::from_secs(20),
            keepalive_interval: Duration::from_secs(120),
            transports: Transports::libtorrent(),
            choker: ChokerKind::Libtorrent,
            optimistic_interval: Duration::from_secs(30),
            numwant: 200,
            mixed_mode: Some(MixedMode::PeerProportional(Series::V1_2)),
            limiter: LimiterKind::Libtorrent,
            rate_limit_ip_overhead: true,
            fast_extension: true,
            allowed_fast_set_size: 5,
            pick_order: PickOrder::Libtorrent,
            whole_pieces_threshold: 20,
            interest: InterestRule::Libtorrent,
            end_game: EndGameRule::Libtorrent,
        }
    }
}
