//! Fuzz target: the BEP 3 peer wire message decoder.
//!
//! A decoded message re-encodes to exactly the header bytes it was read from
//! (the input's prefix), that encoding decodes to the same message, and its
//! length prefix is the one on the wire.

#![no_main]

use libfuzzer_sys::fuzz_target;
use torrentlab_bittorrent::wire::Message;

fuzz_target!(|data: &[u8]| {
    let Ok(m) = Message::decode(data) else {
        return;
    };
    let header = m.encode_header();
    assert!(header.len() <= data.len(), "{m:?} encodes to more than it was read from");
    assert_eq!(&data[..header.len()], &header[..], "{m:?} does not re-encode to its input");
    assert_eq!(Message::decode(&header), Ok(m));
    assert_eq!(m.length_prefix(), u32::from_be_bytes([data[0], data[1], data[2], data[3]]));
    assert_eq!(m.wire_len(), 4 + m.length_prefix());
});
