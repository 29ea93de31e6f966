//! A torrent's geometry: pieces of `piece_length` bytes (the last one may be
//! short), each split into 16 KiB blocks (BEP 3; every client requests 2^14).

/// Bytes per block: what a `request` asks for (BEP 3, mainline `download_slice_size`).
pub const BLOCK: u32 = 16 * 1024;

/// The smallest piece a simulated torrent may have, bytes: one block.
pub const MIN_PIECE_LENGTH: u32 = BLOCK;
/// The largest piece a simulated torrent may have, bytes: 64 MiB.
pub const MAX_PIECE_LENGTH: u32 = 64 << 20;
/// The most pieces a simulated torrent may have (every peer keeps a bitfield
/// and the piece picker counts of this length).
pub const MAX_PIECES: u64 = 1_000_000;

/// Why a length and piece length make no torrent a simulation accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TorrentLimit {
    /// The content length is zero.
    Empty,
    /// The piece length (bytes) is outside [`MIN_PIECE_LENGTH`] to [`MAX_PIECE_LENGTH`].
    PieceLength(u64),
    /// The content would have this many pieces, more than [`MAX_PIECES`].
    TooManyPieces(u64),
}

impl std::fmt::Display for TorrentLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            TorrentLimit::Empty => write!(f, "the content is empty; its length must be greater than zero"),
            TorrentLimit::PieceLength(p) => write!(
                f,
                "a piece length of {p} bytes is out of range; allowed: 16 KiB to 64 MiB \
                 ({MIN_PIECE_LENGTH} to {MAX_PIECE_LENGTH} bytes)"
            ),
            TorrentLimit::TooManyPieces(n) => {
                write!(f, "{n} pieces is more than {MAX_PIECES}; larger pieces are needed")
            }
        }
    }
}

/// Pieces and blocks of one torrent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Torrent {
    /// Total content length in bytes.
    pub length: u64,
    /// Bytes per piece (a power of two in practice; mainline 4.0.x: 256 KiB).
    pub piece_length: u32,
    /// The info hash the handshake carries, and which the Fast Extension's
    /// allowed-fast set hashes (zero unless set: the model has no metainfo).
    pub info_hash: [u8; 20],
}

impl Torrent {
    /// # Panics
    /// If `length` or `piece_length` is zero.
    pub fn new(length: u64, piece_length: u32) -> Self {
        assert!(length > 0 && piece_length > 0, "a torrent has content and pieces");
        Torrent { length, piece_length, info_hash: [0; 20] }
    }

    /// The same torrent with this info hash.
    pub fn with_info_hash(self, info_hash: [u8; 20]) -> Self {
        Torrent { info_hash, ..self }
    }

    /// A torrent of `length` bytes in pieces of `piece_length` bytes, if both
    /// are within the limits: length > 0, piece length from
    /// [`MIN_PIECE_LENGTH`] to [`MAX_PIECE_LENGTH`], at most [`MAX_PIECES`] pieces.
    pub fn checked(length: u64, piece_length: u64) -> Result<Self, TorrentLimit> {
        if length == 0 {
            return Err(TorrentLimit::Empty);
        }
        if !(MIN_PIECE_LENGTH as u64..=MAX_PIECE_LENGTH as u64).contains(&piece_length) {
            return Err(TorrentLimit::PieceLength(piece_length));
        }
        let pieces = length.div_ceil(piece_length);
        if pieces > MAX_PIECES {
            return Err(TorrentLimit::TooManyPieces(pieces));
        }
        Ok(Torrent::new(length, piece_length as u32))
    }

    /// Number of pieces: `ceil(length / piece_length)`.
    pub fn pieces(&self) -> u32 {
        self.length.div_ceil(self.piece_length as u64) as u32
    }

    /// Bytes in piece `i` (the last piece may be short).
    pub fn piece_len(&self, i: u32) -> u32 {
        debug_assert!(i < self.pieces());
        let start = i as u64 * self.piece_length as u64;
        (self.length - start).min(self.piece_length as u64) as u32
    }

    /// Blocks in piece `i`.
    pub fn blocks_in(&self, i: u32) -> u32 {
        self.piece_len(i).div_ceil(BLOCK)
    }

    /// Bytes of block `b` of piece `i` (the last block of a piece may be short).
    pub fn block_len(&self, i: u32, b: u32) -> u32 {
        let piece = self.piece_len(i);
        debug_assert!(b < self.blocks_in(i));
        (piece - b * BLOCK).min(BLOCK)
    }

    /// Total number of blocks.
    pub fn total_blocks(&self) -> u64 {
        let full = self.pieces() as u64 - 1;
        full * self.blocks_in(0) as u64 + self.blocks_in(self.pieces() - 1) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_50_mb_file_in_256_kib_pieces_has_a_short_last_piece() {
        let t = Torrent::new(50_000_000, 256 * 1024);
        assert_eq!(t.pieces(), 191);
        assert_eq!(t.piece_len(0), 262_144);
        assert_eq!(t.blocks_in(0), 16);
        let last = t.pieces() - 1;
        assert_eq!(t.piece_len(last), 50_000_000 - 190 * 262_144);
        assert_eq!(t.blocks_in(last), (t.piece_len(last)).div_ceil(BLOCK));
        let last_block = t.blocks_in(last) - 1;
        assert_eq!(t.block_len(last, last_block), t.piece_len(last) - last_block * BLOCK);
    }

    #[test]
    fn a_checked_torrent_keeps_to_the_piece_size_and_piece_count_limits() {
        assert_eq!(Torrent::checked(50_000_000, 262_144), Ok(Torrent::new(50_000_000, 262_144)));
        assert_eq!(Torrent::checked(0, 262_144), Err(TorrentLimit::Empty));
        assert_eq!(Torrent::checked(1 << 20, 8192), Err(TorrentLimit::PieceLength(8192)));
        assert_eq!(Torrent::checked(1 << 30, (64 << 20) + 1), Err(TorrentLimit::PieceLength((64 << 20) + 1)));
        assert!(Torrent::checked(1 << 30, 64 << 20).is_ok());
        assert!(Torrent::checked(MAX_PIECES * 16_384, 16_384).is_ok());
        assert_eq!(Torrent::checked(MAX_PIECES * 16_384 + 1, 16_384), Err(TorrentLimit::TooManyPieces(MAX_PIECES + 1)));
        let m = TorrentLimit::PieceLength(8192).to_string();
        assert!(m.contains("8192 bytes") && m.contains("16 KiB to 64 MiB"), "{m}");
        let m = TorrentLimit::TooManyPieces(2_000_000).to_string();
        assert!(m.contains("2000000 pieces is more than 1000000"), "{m}");
    }

    #[test]
    fn the_blocks_add_up_to_the_content_length() {
        for (len, piece) in [(1u64, 16384u32), (16385, 16384), (1_000_000, 32768), (50_000_000, 262_144)] {
            let t = Torrent::new(len, piece);
            let sum: u64 = (0..t.pieces())
                .flat_map(|i| (0..t.blocks_in(i)).map(move |b| (i, b)))
                .map(|(i, b)| t.block_len(i, b) as u64)
                .sum();
            assert_eq!(sum, len);
            let blocks: u64 = (0..t.pieces()).map(|i| t.blocks_in(i) as u64).sum();
            assert_eq!(blocks, t.total_blocks());
        }
    }
}
