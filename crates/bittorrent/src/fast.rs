//! The Fast Extension's allowed-fast set (BEP 6): the pieces a peer lets a
//! remote download while it chokes it, chosen from a hash of the remote's
//! address and the info hash, so that every peer computes the same set for
//! the same remote.
//!
//! [`allowed_fast_set`] is libtorrent's `send_allowed_set`: SHA-1 over the
//! address bytes and the info hash; each 4-byte big-endian word of the hash
//! modulo the number of pieces is a candidate, and the hash is rehashed when
//! its five words are used up. A candidate already chosen is skipped (each
//! repeat counts twice against libtorrent's 500 loops; past them the set is
//! left as it is); a new one counts towards the set's size whether or not
//! the remote has it, but only those it lacks are offered. A set as large as
//! the torrent offers every piece the remote lacks.
//!
//! BEP 6 masks an IPv4 address to its /24 (`0xFFFFFF00`) before hashing;
//! libtorrent (1.2 to 2.1, `peer_connection.cpp`) hashes the whole address.
//! The caller passes the bytes to hash: [`bep6_address`] gives BEP 6's.

use crate::sha1::sha1;

/// How many repeated candidates libtorrent tolerates before it gives up.
const MAX_LOOPS: u32 = 500;

/// BEP 6's bytes of an IPv4 address: masked to its /24 (`0xFFFFFF00`).
pub fn bep6_address(ip: [u8; 4]) -> [u8; 4] {
    [ip[0], ip[1], ip[2], 0]
}

/// The allowed-fast pieces offered to a remote whose address hashes as
/// `address`, in the order they are offered: up to `size` candidates of a
/// `pieces`-piece torrent with info hash `info_hash`, less those the remote
/// has (`has`).
pub fn allowed_fast_set(
    address: &[u8],
    info_hash: &[u8; 20],
    size: u32,
    pieces: u32,
    has: impl Fn(u32) -> bool,
) -> Vec<u32> {
    let mut set = Vec::new();
    if size == 0 || pieces == 0 {
        return set;
    }
    if size >= pieces {
        set.extend((0..pieces).filter(|&p| !has(p)));
        return set;
    }
    let mut x = address.to_vec();
    x.extend_from_slice(info_hash);
    let mut hash = sha1(&x);
    let (mut attempts, mut loops) = (0, 0);
    loop {
        for word in hash.chunks_exact(4) {
            loops += 1;
            let piece = u32::from_be_bytes([word[0], word[1], word[2], word[3]]) % pieces;
            if set.contains(&piece) {
                // libtorrent counts a repeat twice against its safety net.
                loops += 1;
                if loops > MAX_LOOPS {
                    return set;
                }
                continue;
            }
            if !has(piece) {
                set.push(piece);
            }
            attempts += 1;
            if attempts >= size {
                return set;
            }
        }
        hash = sha1(&hash);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canonical_set_is_bep_6s_worked_example_for_80_4_4_200_and_an_info_hash_of_0xaa() {
        let a = bep6_address([80, 4, 4, 200]);
        assert_eq!(a, [80, 4, 4, 0]);
        let seven = allowed_fast_set(&a, &[0xaa; 20], 7, 1313, |_| false);
        assert_eq!(seven, vec![1059, 431, 808, 1217, 287, 376, 1188]);
        let nine = allowed_fast_set(&a, &[0xaa; 20], 9, 1313, |_| false);
        assert_eq!(nine, vec![1059, 431, 808, 1217, 287, 376, 1188, 353, 508]);
    }

    #[test]
    fn pieces_the_remote_has_count_towards_the_size_but_are_not_offered() {
        let a = bep6_address([80, 4, 4, 200]);
        let set = allowed_fast_set(&a, &[0xaa; 20], 7, 1313, |p| p == 808 || p == 287);
        assert_eq!(set, vec![1059, 431, 1217, 376, 1188]);
    }

    #[test]
    fn libtorrent_hashes_the_whole_address_so_neighbours_in_one_slash_24_get_different_sets() {
        let one = allowed_fast_set(&[10, 0, 0, 1], &[0xaa; 20], 5, 1313, |_| false);
        let two = allowed_fast_set(&[10, 0, 0, 2], &[0xaa; 20], 5, 1313, |_| false);
        assert_eq!(one, vec![258, 463, 531, 831, 1273]);
        assert_eq!(two, vec![627, 818, 1165, 1028, 1246]);
    }

    #[test]
    fn a_set_as_large_as_the_torrent_offers_every_piece_the_remote_lacks() {
        assert_eq!(allowed_fast_set(&[1, 2, 3, 4], &[0; 20], 5, 4, |p| p == 2), vec![0, 1, 3]);
        assert!(allowed_fast_set(&[1, 2, 3, 4], &[0; 20], 0, 100, |_| false).is_empty());
    }

    #[test]
    fn with_fewer_distinct_candidates_than_the_size_it_gives_up_after_500_repeats() {
        // Two pieces, a set of one: found at once. Three pieces and a set
        // of two: found; the loop ends either way.
        let set = allowed_fast_set(&[9, 9, 9, 9], &[1; 20], 2, 3, |_| false);
        assert_eq!(set.len(), 2);
        assert!(set.iter().all(|&p| p < 3) && set[0] != set[1]);
        // Every piece but one held: the one left is offered, the rest counted.
        let set = allowed_fast_set(&[9, 9, 9, 9], &[1; 20], 2, 3, |p| p != 1);
        assert!(set.iter().all(|&p| p == 1));
    }
}
