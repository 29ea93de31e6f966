//! Fuzz target: the uTP (BEP 29) header and extension-chain decoder.
//!
//! A decoded header re-encodes to `byte_len()` bytes that decode to the same
//! header, and its 18 bytes after the extension byte are those it was read from.

#![no_main]

use libfuzzer_sys::fuzz_target;
use torrentlab_transport::utp::Header;

fuzz_target!(|data: &[u8]| {
    let Some(h) = Header::decode(data) else {
        return;
    };
    let mut buf = [0u8; 32];
    let n = h.encode(&mut buf);
    assert_eq!(n as u32, h.byte_len());
    assert_eq!(buf[0], data[0], "type and version");
    assert_eq!(&buf[2..20], &data[2..20], "fixed fields");
    assert_eq!(Header::decode(&buf[..n]), Some(h), "{h:?} does not round-trip");
});
