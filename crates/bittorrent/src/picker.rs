//! Mainline 4.0.x's piece picker (`PiecePicker.py`, `Downloader.py`), from what
//! each peer has:
//!
//! * **strict priority**: a piece already started that the peer has and that
//!   still has blocks to request comes first, the one with the fewest copies.
//!   A piece is started from its first request until it completes, even if a
//!   choke sends all its requests back (`PiecePicker.requested`/`complete`).
//!   When the peer has every piece (a seed, or a leecher that finished), only
//!   pieces started from such peers count (`seedstarted`: `Downloader` passes
//!   `have.numfalse == 0`), so a leecher asks a seed for its rarest missing
//!   piece, not for one it is getting from other leechers;
//! * **random first**: while fewer than `rarest_first_cutoff` (4) pieces are
//!   complete, the first wanted piece the peer has in a per-torrent random
//!   permutation;
//! * **rarest first**: otherwise a wanted piece the peer has with the fewest
//!   copies among connected peers, ties broken at random; pieces nobody has are
//!   never picked;
//! * **end game**: once every block of every missing piece has been requested.
//!
//! The libtorrent profile picks in libtorrent's order instead
//! ([`PickOrder::Libtorrent`], module [`libtorrent`]), with whole pieces for
//! fast peers (module [`whole_pieces`]); the block bookkeeping is the same.
//!
//! Random choices draw from the picker's own stream, so runs are reproducible.

mod busy;
mod libtorrent;
mod whole_pieces;

pub use whole_pieces::ALL_BLOCKS;

use torrentlab_engine::EntityRng;

use crate::bitfield::Bitfield;
use crate::torrent::Torrent;

/// Pieces completed before rarest first takes over (mainline `rarest_first_cutoff`).
pub const RAREST_FIRST_CUTOFF: u32 = 4;

/// Whose order [`PiecePicker::pick_for`] picks pieces in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PickOrder {
    /// Mainline 4.0.x: strict priority for started pieces, random first,
    /// rarest first (this module's doc).
    #[default]
    Mainline,
    /// libtorrent 2.1 (`piece_picker::pick_pieces`): rarest first where a
    /// piece being downloaded wins only ties, random with partial pieces
    /// first below 4 pieces, partial pieces first when there are too many,
    /// most common first for a snubbed peer ([`libtorrent`]).
    Libtorrent,
}

/// What a pick may depend on beyond the peer's pieces (libtorrent's order;
/// mainline's ignores it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PickContext {
    /// Connections of the torrent (libtorrent `torrent::num_peers`).
    pub peers: u32,
    /// The peer is snubbed (libtorrent `m_snubbed`: picks in reverse).
    pub snubbed: bool,
}

/// Where one block stands at this peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockState {
    /// Never requested, or its request was dropped (choke, lost peer).
    Free,
    /// Requested from at least one peer, not received yet.
    Requested,
    Received,
}

/// What a received block did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// The block was already here (an end-game duplicate): wasted bytes.
    Duplicate,
    /// A new block; its piece still misses some.
    Block,
    /// The last block of its piece: the piece is complete and checked.
    PieceComplete,
}

/// A piece-picking policy with the block bookkeeping it needs: what the
/// client asks of a picker. [`PiecePicker`] is mainline 4.0.x's; other client
/// profiles implement their own.
pub trait Picker: Send {
    /// Pieces we have (complete and checked).
    fn have(&self) -> &Bitfield;
    /// A connected peer announced `piece` (HAVE).
    fn peer_has(&mut self, piece: u32);
    /// A peer with bitfield `b` connected or left.
    fn peer_bitfield(&mut self, b: &Bitfield, connected: bool);
    /// Copies of `piece` among connected peers.
    fn availability(&self, piece: u32) -> u32;
    /// We lack `piece` and it has blocks never requested, or whose request
    /// was dropped (mainline `do_I_have_requests`).
    fn has_free_blocks(&self, piece: u32) -> bool;
    /// The peer has a piece with free blocks (mainline's interest test).
    fn has_requests_from(&self, peer: &Bitfield) -> bool;
    /// Every block of every missing piece has been requested.
    fn in_end_game(&self) -> bool;
    /// The piece to request blocks from next, among those `peer` has.
    fn pick(&mut self, peer: &Bitfield, ctx: PickContext) -> Option<u32>;
    /// libtorrent's whole-piece preference for a fast peer: the pieces to
    /// request and how many free blocks of each ([`ALL_BLOCKS`]: all),
    /// appended to `out`, at least `num_blocks` of them where it can;
    /// `prefer`: `prefer_contiguous_blocks`; `mine(piece)`: blocks of it
    /// outstanding with this peer. `false` when the picker has no such
    /// mode or it does not apply now (then [`Picker::pick`] picks). See
    /// [`PiecePicker::pick_whole_pieces`].
    fn pick_whole_pieces(
        &mut self,
        _peer: &Bitfield,
        _ctx: PickContext,
        _num_blocks: u32,
        _prefer: u32,
        _mine: &dyn Fn(u32) -> u32,
        _out: &mut Vec<(u32, u32)>,
    ) -> bool {
        false
    }
    /// Marks the next block of `piece` requested and returns it.
    fn next_block(&mut self, piece: u32) -> Option<u32>;
    /// Blocks of `piece` are about to be requested from a peer; `from_seed`
    /// when that peer has every piece (mainline `PiecePicker.requested`),
    /// `snubbed` when it is snubbed (libtorrent's reverse pieces).
    fn requested(&mut self, _piece: u32, _from_seed: bool, _snubbed: bool) {}
    /// A request was dropped.
    fn block_unrequested(&mut self, piece: u32, block: u32);
    /// libtorrent: no piece we lack is open (see [`PiecePicker::all_wanted_downloading`]).
    fn all_wanted_downloading(&self) -> bool {
        false
    }
    /// libtorrent's busy block for `peer` ([`PiecePicker::pick_busy_block`]).
    fn pick_busy_block(&mut self, _peer: &Bitfield) -> Option<(u32, u32)> {
        None
    }
    /// A requested block was asked of one more peer.
    fn busy_requested(&mut self, _piece: u32, _block: u32) {}
    fn block_received(&mut self, piece: u32, block: u32) -> Arrival;
    /// Blocks of `piece` received so far.
    fn received_in(&self, piece: u32) -> u32;
    /// The block is requested from someone and has not arrived.
    fn is_outstanding(&self, piece: u32, block: u32) -> bool;
}

impl Picker for PiecePicker {
    fn have(&self) -> &Bitfield {
        PiecePicker::have(self)
    }
    fn peer_has(&mut self, piece: u32) {
        PiecePicker::peer_has(self, piece)
    }
    fn peer_bitfield(&mut self, b: &Bitfield, connected: bool) {
        PiecePicker::peer_bitfield(self, b, connected)
    }
    fn availability(&self, piece: u32) -> u32 {
        PiecePicker::availability(self, piece)
    }
    #[inline]
    fn has_free_blocks(&self, piece: u32) -> bool {
        PiecePicker::has_free_blocks(self, piece)
    }
    fn has_requests_from(&self, peer: &Bitfield) -> bool {
        PiecePicker::has_requests_from(self, peer)
    }
    fn in_end_game(&self) -> bool {
        PiecePicker::in_end_game(self)
    }
    fn pick(&mut self, peer: &Bitfield, ctx: PickContext) -> Option<u32> {
        PiecePicker::pick_for(self, peer, ctx)
    }
    fn pick_whole_pieces(
        &mut self,
        peer: &Bitfield,
        ctx: PickContext,
        num_blocks: u32,
        prefer: u32,
        mine: &dyn Fn(u32) -> u32,
        out: &mut Vec<(u32, u32)>,
    ) -> bool {
        PiecePicker::pick_whole_pieces(self, peer, ctx, num_blocks, prefer, mine, out)
    }
    fn next_block(&mut self, piece: u32) -> Option<u32> {
        PiecePicker::next_block(self, piece)
    }
    fn requested(&mut self, piece: u32, from_seed: bool, snubbed: bool) {
        PiecePicker::requested_by(self, piece, from_seed, snubbed)
    }
    fn block_unrequested(&mut self, piece: u32, block: u32) {
        PiecePicker::block_unrequested(self, piece, block)
    }
    fn all_wanted_downloading(&self) -> bool {
        PiecePicker::all_wanted_downloading(self)
    }
    fn pick_busy_block(&mut self, peer: &Bitfield) -> Option<(u32, u32)> {
        PiecePicker::pick_busy_block(self, peer)
    }
    fn busy_requested(&mut self, piece: u32, block: u32) {
        PiecePicker::busy_requested(self, piece, block)
    }
    fn block_received(&mut self, piece: u32, block: u32) -> Arrival {
        PiecePicker::block_received(self, piece, block)
    }
    fn received_in(&self, piece: u32) -> u32 {
        PiecePicker::received_in(self, piece)
    }
    fn is_outstanding(&self, piece: u32, block: u32) -> bool {
        PiecePicker::is_outstanding(self, piece, block)
    }
}

/// One piece's block counts.
#[derive(Clone, Copy, Debug)]
struct PieceCounts {
    /// Index in `block` of the piece's first block.
    base: u32,
    blocks: u32,
    /// Blocks not `Free`, and blocks `Received`.
    requested: u32,
    received: u32,
}

/// The piece picker of one peer.
#[derive(Clone, Debug)]
pub struct PiecePicker {
    /// Per piece, its block counts, together: a pick reads them piece by
    /// piece (a quarter of a cache line each, where three arrays cost a
    /// line each).
    pieces: Vec<PieceCounts>,
    block: Vec<BlockState>,
    have: Bitfield,
    availability: Vec<u32>,
    random_order: Vec<u32>,
    /// Pieces we lack with blocks never requested (`has_free_blocks`).
    free: Bitfield,
    /// Pieces started (requested at least once) and not complete; may hold
    /// complete ones, which `pick` drops (mainline `started`).
    started: Vec<u32>,
    in_started: Vec<bool>,
    /// Of those, the ones started from peers that have every piece
    /// (mainline `seedstarted`).
    seed_started: Vec<u32>,
    in_seed_started: Vec<bool>,
    /// Free blocks of missing pieces; end game begins when it reaches 0.
    free_blocks: u64,
    end_game: bool,
    rng: EntityRng,
    order: PickOrder,
    /// Pieces we lack with some blocks requested or received and some free
    /// (libtorrent's `piece_downloading` queue).
    partial: Bitfield,
    /// Pieces started by a snubbed peer and since requested only by snubbed
    /// peers (libtorrent `piece_downloading_reverse`).
    reverse: Bitfield,
    /// Blocks (index in `block`) requested from more than one peer, with
    /// how many more (libtorrent `num_peers` less one).
    busy: std::collections::BTreeMap<u32, u32>,
}

impl PiecePicker {
    pub fn new(torrent: &Torrent, mut rng: EntityRng) -> Self {
        let n = torrent.pieces();
        let mut random_order: Vec<u32> = (0..n).collect();
        rng.shuffle(&mut random_order);
        let mut pieces = Vec::with_capacity(n as usize);
        let mut total = 0u32;
        for i in 0..n {
            let blocks = torrent.blocks_in(i);
            pieces.push(PieceCounts { base: total, blocks, requested: 0, received: 0 });
            total += blocks;
        }
        PiecePicker {
            pieces,
            block: vec![BlockState::Free; total as usize],
            have: Bitfield::new(n),
            availability: vec![0; n as usize],
            random_order,
            free: Bitfield::full(n),
            started: Vec::new(),
            in_started: vec![false; n as usize],
            seed_started: Vec::new(),
            in_seed_started: vec![false; n as usize],
            free_blocks: total as u64,
            end_game: false,
            rng,
            order: PickOrder::Mainline,
            partial: Bitfield::new(n),
            reverse: Bitfield::new(n),
            busy: Default::default(),
        }
    }

    /// Picks in `order` from now on.
    pub fn with_order(mut self, order: PickOrder) -> Self {
        self.order = order;
        self
    }

    /// A picker that already has every piece (a seed).
    pub fn complete(torrent: &Torrent, rng: EntityRng) -> Self {
        let mut p = Self::new(torrent, rng);
        for i in 0..torrent.pieces() {
            p.have.set(i);
            let c = &mut p.pieces[i as usize];
            let (a, b) = (c.base as usize, (c.base + c.blocks) as usize);
            (c.requested, c.received) = (c.blocks, c.blocks);
            p.block[a..b].fill(BlockState::Received);
            p.free.unset(i);
        }
        p.free_blocks = 0;
        p
    }

    pub fn have(&self) -> &Bitfield {
        &self.have
    }

    /// Blocks in `piece`.
    #[inline]
    pub fn blocks_in(&self, piece: u32) -> u32 {
        self.pieces[piece as usize].blocks
    }

    #[inline]
    fn state(&self, piece: u32, block: u32) -> BlockState {
        self.block[(self.pieces[piece as usize].base + block) as usize]
    }

    #[inline]
    fn set_state(&mut self, piece: u32, block: u32, s: BlockState) {
        self.block[(self.pieces[piece as usize].base + block) as usize] = s;
    }

    /// A connected peer announced `piece` (HAVE).
    pub fn peer_has(&mut self, piece: u32) {
        self.availability[piece as usize] += 1;
    }

    /// A peer with bitfield `b` connected (`+1`) or left (`-1`).
    pub fn peer_bitfield(&mut self, b: &Bitfield, connected: bool) {
        for i in 0..b.len() {
            if b.has(i) {
                let a = &mut self.availability[i as usize];
                *a = if connected { *a + 1 } else { a.saturating_sub(1) };
            }
        }
    }

    /// Copies of `piece` among connected peers.
    pub fn availability(&self, piece: u32) -> u32 {
        self.availability[piece as usize]
    }

    /// The piece still has blocks never requested (or whose request was dropped).
    #[inline]
    pub fn has_free_blocks(&self, piece: u32) -> bool {
        !self.have.has(piece) && self.pieces[piece as usize].requested < self.blocks_in(piece)
    }

    /// True once every block of every missing piece has been requested; it
    /// stays true (mainline's `endgamemode`).
    pub fn in_end_game(&self) -> bool {
        self.end_game
    }

    /// The peer has a piece we lack with free blocks: mainline is
    /// interested in it (`got_have_bitfield`). Word-wise over the bitfields.
    pub fn has_requests_from(&self, peer: &Bitfield) -> bool {
        peer.words().iter().zip(self.free.words()).any(|(&p, &f)| p & f != 0)
    }

    /// Keeps `free`, `partial` and `reverse` in step with piece `i`'s counts.
    #[inline]
    fn refresh(&mut self, i: u32) {
        let free = self.has_free_blocks(i);
        if free {
            self.free.set(i);
        } else {
            self.free.unset(i);
        }
        let c = self.pieces[i as usize];
        if free && c.requested > 0 {
            self.partial.set(i);
        } else {
            self.partial.unset(i);
        }
        if c.requested == 0 {
            self.reverse.unset(i); // back to open
        }
    }

    /// Blocks of `piece` are about to be requested from a peer that has
    /// every piece (`from_seed`) or not: it is started from then on.
    pub fn requested(&mut self, piece: u32, from_seed: bool) {
        if !self.in_started[piece as usize] {
            self.in_started[piece as usize] = true;
            self.started.push(piece);
        }
        if from_seed && !self.in_seed_started[piece as usize] {
            self.in_seed_started[piece as usize] = true;
            self.seed_started.push(piece);
        }
    }

    /// [`PiecePicker::requested`], by a peer that is `snubbed` or not: in
    /// libtorrent's order a snubbed peer's request makes a piece with no
    /// block outstanding reverse, any other request makes it normal
    /// (`mark_as_downloading`).
    pub fn requested_by(&mut self, piece: u32, from_seed: bool, snubbed: bool) {
        self.requested(piece, from_seed);
        if self.order == PickOrder::Libtorrent {
            let c = self.pieces[piece as usize];
            if !snubbed {
                self.reverse.unset(piece);
            } else if c.requested == c.received {
                self.reverse.set(piece);
            }
        }
    }

    /// The piece to request blocks from next, among those `peer` has, in
    /// the picker's order.
    pub fn pick_for(&mut self, peer: &Bitfield, ctx: PickContext) -> Option<u32> {
        match self.order {
            PickOrder::Mainline => self.pick(peer),
            PickOrder::Libtorrent => self.pick_libtorrent(peer, ctx),
        }
    }

    /// The piece to request blocks from next, among those `peer` has, in
    /// mainline's order.
    pub fn pick(&mut self, peer: &Bitfield) -> Option<u32> {
        // Strict priority: started pieces the peer has with blocks to
        // request, the rarest of them; from a peer with every piece, only
        // those started from such peers.
        let seed = peer.count() == self.have.len();
        let mut list = std::mem::take(if seed { &mut self.seed_started } else { &mut self.started });
        let have = &self.have;
        list.retain(|&i| !have.has(i));
        let free = &self.free; // pieces with blocks to request
        let pick =
            rarest_of(&self.availability, &mut self.rng, list.iter().copied().filter(|&i| peer.has(i) && free.has(i)));
        *(if seed { &mut self.seed_started } else { &mut self.started }) = list;
        if pick.is_some() {
            return pick;
        }
        if self.have.count() < RAREST_FIRST_CUTOFF {
            return self.random_order.iter().copied().find(|&i| peer.has(i) && self.has_free_blocks(i));
        }
        // Rarest first over the pieces the peer has and we still need.
        self.rarest_first(peer)
    }

    /// A piece the peer has, we need and somebody has, with the fewest
    /// copies; ties at random. Word-wise over the bitfields.
    fn rarest_first(&mut self, peer: &Bitfield) -> Option<u32> {
        let avail = &self.availability;
        let candidates = libtorrent::both(peer.words(), self.free.words()).filter(|&i| avail[i as usize] > 0);
        rarest_of(avail, &mut self.rng, candidates)
    }

    /// Marks the first free block of `piece` requested and returns it.
    pub fn next_block(&mut self, piece: u32) -> Option<u32> {
        if !self.has_free_blocks(piece) {
            return None;
        }
        let b = (0..self.blocks_in(piece)).find(|&b| self.state(piece, b) == BlockState::Free)?;
        self.set_state(piece, b, BlockState::Requested);
        self.pieces[piece as usize].requested += 1;
        self.free_blocks -= 1;
        if self.free_blocks == 0 {
            self.end_game = true;
        }
        self.refresh(piece);
        Some(b)
    }

    /// A request was dropped (choke, lost peer): the block may be requested
    /// again. In mainline's end game requests stay outstanding elsewhere, so
    /// nothing changes. libtorrent has no end game of the torrent, only each
    /// peer's (`abort_download` frees the block whenever no other peer has
    /// it requested): in its order the block is free again and end game
    /// over, the caller having checked that no other peer still has it asked.
    pub fn block_unrequested(&mut self, piece: u32, block: u32) {
        let sticky = self.end_game && self.order == PickOrder::Mainline;
        if sticky || self.state(piece, block) != BlockState::Requested || self.unrequest_busy(piece, block) {
            return;
        }
        self.set_state(piece, block, BlockState::Free);
        self.pieces[piece as usize].requested -= 1;
        self.free_blocks += 1;
        self.end_game = false;
        self.refresh(piece);
    }

    /// The block is requested from someone and has not arrived (end-game candidates).
    #[inline]
    pub fn is_outstanding(&self, piece: u32, block: u32) -> bool {
        self.state(piece, block) == BlockState::Requested
    }

    /// A block arrived. A piece counts as had only once every block has
    /// arrived (and been checked).
    pub fn block_received(&mut self, piece: u32, block: u32) -> Arrival {
        match self.state(piece, block) {
            BlockState::Received => return Arrival::Duplicate,
            BlockState::Free => {
                // Arrived after its request was dropped: it counts all the same.
                self.pieces[piece as usize].requested += 1;
                self.free_blocks -= 1;
                if self.free_blocks == 0 {
                    self.end_game = true;
                }
            }
            BlockState::Requested => self.received_busy(piece, block),
        }
        self.set_state(piece, block, BlockState::Received);
        self.pieces[piece as usize].received += 1;
        self.refresh(piece);
        if self.pieces[piece as usize].received == self.blocks_in(piece) {
            self.have.set(piece);
            self.free.unset(piece);
            Arrival::PieceComplete
        } else {
            Arrival::Block
        }
    }

    /// Blocks of `piece` received so far.
    pub fn received_in(&self, piece: u32) -> u32 {
        self.pieces[piece as usize].received
    }
}

/// Among `candidates`, one with the fewest copies in `avail`, ties broken
/// uniformly at random.
fn rarest_of(avail: &[u32], rng: &mut EntityRng, candidates: impl Iterator<Item = u32> + Clone) -> Option<u32> {
    least_of(|i| avail[i as usize] as u64, rng, candidates)
}

/// Among `candidates`, one with the least `key`, ties broken uniformly at
/// random: two passes over the candidates, no allocation.
fn least_of(
    key: impl Fn(u32) -> u64,
    rng: &mut EntityRng,
    candidates: impl Iterator<Item = u32> + Clone,
) -> Option<u32> {
    let (mut min, mut ties) = (u64::MAX, 0u64);
    for i in candidates.clone() {
        let k = key(i);
        if k < min {
            (min, ties) = (k, 1);
        } else if k == min {
            ties += 1;
        }
    }
    if ties == 0 {
        return None;
    }
    let k = if ties == 1 { 0 } else { rng.range_inclusive(0, ties - 1) };
    candidates.filter(|&i| key(i) == min).nth(k as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use torrentlab_engine::EntityId;

    fn picker(pieces: u32) -> PiecePicker {
        PiecePicker::new(&Torrent::new(pieces as u64 * 32768, 32768), EntityRng::new(7, EntityId(3)))
    }

    fn complete(p: &mut PiecePicker, piece: u32) {
        while p.next_block(piece).is_some() {}
        for b in 0..p.blocks_in(piece) {
            p.block_received(piece, b);
        }
    }

    #[test]
    fn the_first_four_pieces_come_from_a_random_permutation() {
        let mut p = picker(100);
        let all = Bitfield::full(100);
        p.peer_bitfield(&all, true);
        let first = p.pick(&all).unwrap();
        assert_eq!(first, p.random_order[0]);
        assert_ne!(p.random_order, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn a_started_piece_is_finished_before_a_new_one_is_begun() {
        let mut p = picker(100);
        let all = Bitfield::full(100);
        let first = p.pick(&all).unwrap();
        p.next_block(first);
        assert_eq!(p.pick(&all), Some(first), "strict priority");
        p.next_block(first);
        assert_ne!(p.pick(&all), Some(first), "fully requested: no longer wanted");
    }

    #[test]
    fn a_piece_whose_requests_a_choke_sent_back_keeps_its_priority() {
        let mut p = picker(100);
        let all = Bitfield::full(100);
        let first = p.pick(&all).unwrap();
        p.requested(first, false);
        p.next_block(first);
        p.block_unrequested(first, 0); // the peer choked us
        assert_eq!(p.pick(&all), Some(first), "still started (mainline keeps it until complete)");
    }

    #[test]
    fn a_seed_is_asked_only_for_pieces_started_from_seeds() {
        let mut p = picker(20);
        let seed = Bitfield::full(20);
        let mut leecher = Bitfield::new(20);
        for i in 0..19 {
            leecher.set(i);
        }
        p.peer_bitfield(&seed, true);
        p.peer_bitfield(&leecher, true);
        for i in [0, 1, 2, 3] {
            complete(&mut p, i);
        }
        p.requested(7, false); // started from the leecher
        p.next_block(7);
        assert_eq!(p.pick(&leecher), Some(7), "strict priority from the leecher");
        let from_seed = p.pick(&seed).unwrap();
        assert_eq!(from_seed, 19, "the seed gives the rarest piece (only it has 19), not piece 7");
        p.requested(from_seed, true);
        p.next_block(from_seed);
        assert_eq!(p.pick(&seed), Some(19), "a piece started from a seed keeps the seed's priority");
    }

    #[test]
    fn after_four_pieces_the_rarest_piece_the_peer_has_is_picked() {
        let mut p = picker(20);
        let all = Bitfield::full(20);
        p.peer_bitfield(&all, true);
        p.peer_bitfield(&all, true);
        let mut rare = Bitfield::new(20);
        rare.set(13);
        p.peer_bitfield(&rare, true); // piece 13: 3 copies; the others: 2
        for i in [0, 1, 2, 3] {
            complete(&mut p, i);
        }
        let mut only = Bitfield::new(20);
        only.set(13);
        only.set(17);
        assert_eq!(p.pick(&only), Some(17), "17 has fewer copies than 13");
        assert_eq!(p.pick(&Bitfield::new(20)), None, "nothing the peer has");
    }

    #[test]
    fn pieces_nobody_else_has_are_never_picked_by_rarest_first() {
        let mut p = picker(10);
        for i in 0..4 {
            complete(&mut p, i);
        }
        assert_eq!(p.pick(&Bitfield::full(10)), None, "availability 0 everywhere");
    }

    #[test]
    fn end_game_starts_when_every_missing_block_is_requested() {
        let mut p = picker(5);
        for i in 0..5 {
            assert!(!p.in_end_game());
            while p.next_block(i).is_some() {}
        }
        assert!(p.in_end_game());
        p.block_unrequested(2, 0);
        assert!(p.in_end_game(), "end game, once entered, stays");
        assert!(p.is_outstanding(2, 0), "in end game a dropped request stays outstanding elsewhere");
    }

    #[test]
    fn in_libtorrents_order_a_request_dropped_in_end_game_frees_its_block_and_ends_end_game() {
        for order in [PickOrder::Libtorrent, PickOrder::Mainline] {
            let mut p = picker(5).with_order(order);
            for i in 0..5 {
                while p.next_block(i).is_some() {}
            }
            assert!(p.in_end_game());
            p.block_unrequested(2, 0);
            let lt = order == PickOrder::Libtorrent;
            assert_eq!(p.in_end_game(), !lt, "{order:?}: libtorrent has no torrent-wide end game to stay in");
            assert_eq!(p.has_free_blocks(2), lt, "{order:?}");
            assert_eq!(p.next_block(2), lt.then_some(0), "{order:?}");
        }
    }

    #[test]
    fn a_dropped_request_before_end_game_makes_that_block_free_again() {
        let mut p = picker(5);
        assert_eq!(p.next_block(3), Some(0));
        assert_eq!(p.next_block(3), Some(1));
        p.block_unrequested(3, 0);
        assert!(!p.is_outstanding(3, 0));
        assert_eq!(p.next_block(3), Some(0), "the dropped block is requested again first");
        assert_eq!(p.next_block(3), None);
    }

    #[test]
    fn a_peer_offers_requests_only_while_one_of_its_pieces_has_blocks_never_requested() {
        let mut p = picker(3);
        let mut peer = Bitfield::new(3);
        peer.set(2);
        assert!(p.has_requests_from(&peer) && p.has_free_blocks(2));
        p.next_block(2);
        assert!(p.has_requests_from(&peer), "one block of 2 is still free");
        p.next_block(2);
        assert!(!p.has_requests_from(&peer) && !p.has_free_blocks(2), "all of 2 is asked for");
        p.block_unrequested(2, 0);
        assert!(p.has_requests_from(&peer), "a dropped request frees its block");
        p.next_block(2);
        p.block_received(2, 0);
        p.block_received(2, 1);
        peer.set(0);
        assert!(p.has_requests_from(&peer) && !p.has_free_blocks(2), "2 is had; 0 is free");
    }

    #[test]
    fn a_duplicate_block_is_reported_and_not_counted_twice() {
        let mut p = picker(2);
        p.next_block(0);
        assert_eq!(p.block_received(0, 0), Arrival::Block);
        assert_eq!(p.block_received(0, 0), Arrival::Duplicate);
        assert_eq!(p.received_in(0), 1);
    }

    #[test]
    fn a_piece_counts_as_had_only_when_every_block_arrived() {
        let mut p = picker(3);
        p.next_block(1);
        p.next_block(1);
        assert_eq!(p.block_received(1, 1), Arrival::Block);
        assert!(!p.have().has(1));
        assert_eq!(p.block_received(1, 0), Arrival::PieceComplete);
        assert!(p.have().has(1));
    }

    proptest::proptest! {
        #[test]
        fn the_free_set_and_started_list_always_match_the_block_states(
            ops in proptest::collection::vec((0u8..4, 0u32..6, 0u32..2), 1..200),
            lt: bool,
        ) {
            let mut p = picker(6).with_order(if lt { PickOrder::Libtorrent } else { PickOrder::Mainline });
            let all = Bitfield::full(6);
            p.peer_bitfield(&all, true);
            for (op, piece, block) in ops {
                match op {
                    0 => { p.requested_by(piece, false, block == 1); p.next_block(piece); }
                    1 => p.block_unrequested(piece, block),
                    2 => { p.block_received(piece, block); }
                    _ => { p.pick_for(&all, PickContext { peers: 1, snubbed: block == 1 }); }
                }
                for i in 0..6 {
                    proptest::prop_assert_eq!(p.free.has(i), p.has_free_blocks(i));
                    if p.in_started[i as usize] && !p.have().has(i) {
                        proptest::prop_assert!(p.started.contains(&i), "started piece {} is listed", i);
                    }
                    proptest::prop_assert!(p.started.iter().filter(|&&j| j == i).count() <= 1, "listed once");
                    proptest::prop_assert_eq!(p.have().has(i), p.received_in(i) == p.blocks_in(i));
                    let c = p.pieces[i as usize];
                    let partial = !p.have().has(i) && c.requested > 0 && c.requested < c.blocks;
                    proptest::prop_assert_eq!(p.partial.has(i), partial, "piece {} partial", i);
                    proptest::prop_assert!(!p.reverse.has(i) || c.requested > 0, "reverse pieces are started");
                }
            }
        }
    }
}
