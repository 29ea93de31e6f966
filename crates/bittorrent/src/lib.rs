//! # torrentlab-bittorrent
//!
//! The BitTorrent layer, sans-IO like the transports below it:
//!
//! * [`bencode`]: a bencode parser with precise errors, and reading the fields
//!   a simulation needs from a real `.torrent` file;
//! * [`torrent`]: file size, piece size, 16 KiB blocks, the short last piece;
//! * [`bitfield`]: which pieces a peer has, with the BEP 3 wire layout;
//! * [`wire`]: the BEP 3 peer wire messages with their real sizes (68-byte
//!   handshake, 4-byte length prefix, `piece` = 13 + block bytes), encoded and
//!   decoded (the Fast Extension's of BEP 6 too);
//! * [`fast`]: the Fast Extension's allowed-fast set (BEP 6, as libtorrent
//!   computes it), over [`sha1`];
//! * [`rate`]: mainline's 20 s decaying rate estimator;
//! * [`choker`]: mainline 4.0.x's leecher and seed choking, behind a trait;
//! * [`picker`]: mainline 4.0.x's piece picker (strict priority, random first,
//!   rarest first, end game);
//! * [`pipeline`]: how many requests to keep outstanding with a peer;
//! * [`limiter`]: upload rate limiters: mainline's round robin, libtorrent's
//!   bandwidth manager (quota in 500 ms ticks);
//! * [`tracker`]: announces, the tracker, re-announce rules;
//! * [`dial`]: which transports a client dials and answers (mainline,
//!   uTorrent's disposition bits, libtorrent's uTP-then-TCP);
//! * [`client`]: one peer's client tying them together over the peer wire.
//!
//! No payload bytes are stored anywhere: blocks are lengths.

pub mod bencode;
pub mod bitfield;
pub mod choker;
pub mod client;
pub mod dial;
pub mod fast;
pub mod limiter;
pub mod picker;
pub mod pipeline;
pub mod rate;
pub mod sha1;
pub mod torrent;
pub mod tracker;
pub mod wire;
