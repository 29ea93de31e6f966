//! Fuzz target: the bencode parser and the `.torrent` reader.
//!
//! The parser is strict (no leading zeros, `-0`, unsorted or repeated keys,
//! trailing bytes), so every input it accepts is in canonical form: encoding the
//! parsed value again must give back exactly the input. A `.torrent` it accepts
//! must have a consistent geometry that `Torrent` can walk.

#![no_main]

use libfuzzer_sys::fuzz_target;
use torrentlab_bittorrent::bencode::{parse, TorrentMeta, Value};
use torrentlab_bittorrent::torrent::Torrent;

/// Canonical bencoding of `v` (the crate reads bencode but never writes it).
fn encode(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Int(n) => out.extend(format!("i{n}e").bytes()),
        Value::Bytes(b) => {
            out.extend(format!("{}:", b.len()).bytes());
            out.extend(b);
        }
        Value::List(items) => {
            out.push(b'l');
            items.iter().for_each(|i| encode(i, out));
            out.push(b'e');
        }
        Value::Dict(entries) => {
            out.push(b'd');
            for (k, v) in entries {
                encode(&Value::Bytes(k.clone()), out);
                encode(v, out);
            }
            out.push(b'e');
        }
    }
}

fuzz_target!(|data: &[u8]| {
    match parse(data) {
        Ok(v) => {
            let mut again = Vec::with_capacity(data.len());
            encode(&v, &mut again);
            assert_eq!(again, data, "an accepted input is canonical bencode");
            assert_eq!(parse(&again), Ok(v));
        }
        Err(e) => {
            assert!(e.offset <= data.len(), "error offset {} past the end ({})", e.offset, data.len());
            let _ = e.to_string();
        }
    }
    if let Ok(meta) = TorrentMeta::from_bytes(data) {
        assert!(meta.length > 0 && meta.piece_length > 0);
        assert_eq!(meta.length.div_ceil(meta.piece_length as u64), meta.pieces as u64);
        let t = Torrent::new(meta.length, meta.piece_length);
        assert_eq!(t.pieces(), meta.pieces);
        let last = t.pieces() - 1;
        assert!(t.piece_len(last) > 0 && t.piece_len(last) <= meta.piece_length);
        assert!(t.total_blocks() >= t.pieces() as u64);
    }
});
