//! One connection as the peer wire protocol sees it from our side: what the
//! remote has, the four choke/interest flags (BEP 3), our requests to it, its
//! requests to us, and the piece message being written.

use std::collections::VecDeque;

use torrentlab_engine::Time;

use crate::bitfield::Bitfield;
use crate::dial::Transport;
use crate::pipeline::RequestQueue;
use crate::rate::RateMeasure;
use crate::wire::{Message, HANDSHAKE_LEN};

/// What a connection's byte stream carries, frame by frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// The 68-byte BEP 3 handshake; `fast`: its reserved bit of the Fast
    /// Extension (BEP 6) is set.
    Handshake { fast: bool },
    /// A `bitfield` message and the pieces it says the sender has (the one
    /// message whose content the simulation needs; block payloads are lengths).
    Bitfield(Box<Bitfield>),
    /// Any other message.
    Msg(Message),
}

impl Frame {
    /// Bytes of the frame on the wire.
    pub fn wire_len(&self) -> u32 {
        match self {
            Frame::Handshake { .. } => HANDSHAKE_LEN,
            Frame::Bitfield(b) => 5 + b.wire_len(),
            Frame::Msg(m) => m.wire_len(),
        }
    }
}

/// How far the BEP 3 handshake has got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The transport connection is being set up.
    Connecting,
    /// Our handshake is out (or we wait for the initiator's); theirs has not arrived.
    Handshaking,
    /// Both handshakes done: messages flow.
    Ready,
}

/// A block: (piece, block index within the piece).
pub type BlockRef = (u32, u32);

/// No piece (an unset [`PeerConn::example_interest`]).
pub const NO_PIECE: u32 = u32::MAX;

/// Our side of one connection.
///
/// A rechoke, which scans every connection, reads the flags it needs (and
/// when a piece last arrived) from the client's dense rows (`client::rows`),
/// and a connection's own state only for an interested, unsnubbed peer's
/// rate: a peer has dozens of connections.
#[derive(Clone, Debug)]
pub struct PeerConn {
    pub stage: Stage,
    /// The remote chokes us (BEP 3: connections start choked).
    pub remote_choking: bool,
    pub remote_interested: bool,
    /// We choke the remote (our decision; see `choke_sent` for the wire).
    pub am_choking: bool,
    /// The choke state the remote has last been sent: a change decided while a
    /// piece message is half-written waits until it is finished.
    pub choke_sent: bool,
    pub am_interested: bool,
    pub initiator: bool,
    /// The transport under the connection.
    pub transport: Transport,
    /// The driver's id of this connection end.
    pub link: u32,
    /// The remote peer.
    pub remote: u32,
    /// Bytes of the piece message being written still to go (0: none).
    pub partial_left: u32,
    pub opened: Time,
    /// The remote's requests to us, oldest first.
    pub queued: VecDeque<BlockRef>,
    /// Bytes/s the remote sends us in piece messages (20 s window); its
    /// `total()` is the block bytes received.
    pub down_rate: RateMeasure,
    /// Our requests to the remote not answered yet (libtorrent's download
    /// queue).
    pub active: Vec<BlockRef>,
    /// Blocks picked for the remote and not requested yet, oldest first
    /// (libtorrent's request queue `m_request_queue`: whole pieces beyond
    /// the queue size wait here, marked requested in the picker).
    pub pending: Vec<BlockRef>,
    /// Pieces the remote has (bitfield, then HAVEs).
    pub have: Bitfield,
    /// Control messages held back until that piece message is finished.
    pub outq: Vec<Message>,
    /// The piece last chosen to request from the remote, or [`NO_PIECE`]
    /// (mainline `example_interest`): while it has blocks to request, our
    /// interest is not re-checked when other pieces run out of them.
    pub example_interest: u32,
    /// Bytes/s we send the remote in piece messages; its `total()` is the
    /// block bytes sent.
    pub up_rate: RateMeasure,
    /// libtorrent's request queue of this connection (read only with
    /// `Pipeline::Libtorrent`).
    pub queue: RequestQueue,
    /// The Fast Extension's state, when both handshakes announced it (BEP 6).
    pub fast: Option<Box<FastConn>>,
    /// libtorrent's end-game mode of this connection (`m_endgame_mode`;
    /// read only with [`super::EndGameRule::Libtorrent`]).
    pub endgame: bool,
    /// When we last sent the remote a request (libtorrent `m_last_request`;
    /// the opening at first).
    pub last_request: Time,
}

/// One connection's Fast Extension state (BEP 6, as libtorrent keeps it).
#[derive(Clone, Debug, Default)]
pub struct FastConn {
    /// The remote's address as this client sees it (the allowed-fast set
    /// hashes it); `None`: unknown, so no set is offered.
    pub address: Option<[u8; 4]>,
    /// The allowed-fast set went out (on the remote's first `interested`).
    pub sent_set: bool,
    /// Upload side: the pieces offered to the remote as allowed fast, each
    /// with the requests for it accepted (libtorrent `m_accept_fast`,
    /// `m_accept_fast_piece_cnt`).
    pub offered: Vec<(u32, u32)>,
    /// When we last choked the remote (libtorrent `m_last_choke`; the
    /// connection's opening at first).
    pub last_choke: Time,
    /// Download side: the pieces the remote lets us request while it chokes
    /// us (libtorrent `m_allowed_fast`).
    pub allowed: Vec<u32>,
}

impl FastConn {
    /// Whether requests for `piece` are served while we choke the remote.
    pub fn offers(&self, piece: u32) -> bool {
        self.offered.iter().any(|&(p, _)| p == piece)
    }
}

impl PeerConn {
    pub fn new(now: Time, link: u32, remote: u32, initiator: bool, transport: Transport, pieces: u32) -> Self {
        PeerConn {
            link,
            remote,
            initiator,
            transport,
            stage: Stage::Connecting,
            have: Bitfield::new(pieces),
            remote_choking: true,
            remote_interested: false,
            am_choking: true,
            choke_sent: true,
            am_interested: false,
            example_interest: NO_PIECE,
            active: Vec::new(),
            pending: Vec::new(),
            queued: VecDeque::new(),
            partial_left: 0,
            outq: Vec::new(),
            down_rate: RateMeasure::new(now),
            up_rate: RateMeasure::new(now),
            queue: RequestQueue::default(),
            opened: now,
            fast: None,
            endgame: false,
            last_request: now,
        }
    }

    #[inline]
    pub fn ready(&self) -> bool {
        self.stage == Stage::Ready
    }

    /// Something to upload: a piece message under way, requests while
    /// unchoked (with the Fast Extension, also while choked: the requests
    /// kept then are for allowed-fast pieces), or control messages waiting
    /// for the limiter.
    pub fn has_upload_work(&self) -> bool {
        self.partial_left > 0
            || (!self.queued.is_empty() && (!self.am_choking || self.fast.is_some()))
            || !self.outq.is_empty()
    }

    /// Whether the queued request for `block` is served now: we unchoke the
    /// remote, or its piece is one we offered as allowed fast.
    #[inline]
    pub fn serves(&self, (piece, _): BlockRef) -> bool {
        !self.am_choking || self.fast.as_ref().is_some_and(|f| f.offers(piece))
    }
}
