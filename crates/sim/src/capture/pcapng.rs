//! The pcapng file format (draft-ietf-opsawg-pcapng), little-endian: what a
//! capture writes ([`Writer`]: one section, one interface, a name
//! resolution block, enhanced packet blocks) and a reader of the same blocks
//! ([`read`]), for tests and tools.
//!
//! The interface's link type is `LINKTYPE_RAW` (101): each packet starts with
//! its IPv4 header, as the model's sizes count it (no link-layer header).
//! Timestamps are nanoseconds (`if_tsresol` = 9) of simulated time from the
//! start of the run, so the run starts at 1970-01-01 00:00:00 UTC.

/// Block types (pcapng §4).
pub const SECTION_HEADER: u32 = 0x0A0D_0D0A;
pub const INTERFACE_DESCRIPTION: u32 = 1;
pub const NAME_RESOLUTION: u32 = 4;
pub const ENHANCED_PACKET: u32 = 6;
/// The byte-order magic of a section header.
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
/// `LINKTYPE_RAW`: raw IPv4 or IPv6, no link-layer header.
pub const LINKTYPE_RAW: u16 = 101;

/// Option codes (pcapng §4.2, §4.3, §4.6).
const OPT_END: u16 = 0;
const SHB_USERAPPL: u16 = 4;
const IF_NAME: u16 = 2;
const IF_DESCRIPTION: u16 = 3;
const IF_TSRESOL: u16 = 9;
const EPB_FLAGS: u16 = 2;
const NRB_IPV4: u16 = 1;

/// `epb_flags` direction bits (pcapng §4.3.1).
pub const INBOUND: u32 = 1;
pub const OUTBOUND: u32 = 2;

/// Appends a little-endian pcapng file to a byte buffer, block by block.
pub struct Writer {
    buf: Vec<u8>,
}

fn pad4(n: usize) -> usize {
    n.div_ceil(4) * 4
}

/// One option: code, length, value, padding to 32 bits.
fn option(out: &mut Vec<u8>, code: u16, value: &[u8]) {
    out.extend_from_slice(&code.to_le_bytes());
    out.extend_from_slice(&(value.len() as u16).to_le_bytes());
    out.extend_from_slice(value);
    out.resize(out.len() + pad4(value.len()) - value.len(), 0);
}

impl Writer {
    /// A file with one section (written by `app`) and one interface named
    /// `if_name` (described by `if_description`) keeping at most `snaplen`
    /// bytes of each packet; then the addresses of `names` (IPv4, name).
    pub fn new(app: &str, if_name: &str, if_description: &str, snaplen: u32, names: &[([u8; 4], String)]) -> Writer {
        let mut w = Writer { buf: Vec::new() };
        let mut body = Vec::new();
        body.extend_from_slice(&BYTE_ORDER_MAGIC.to_le_bytes());
        body.extend_from_slice(&1u16.to_le_bytes()); // major version
        body.extend_from_slice(&0u16.to_le_bytes()); // minor version
        body.extend_from_slice(&(-1i64).to_le_bytes()); // section length: not given
        option(&mut body, SHB_USERAPPL, app.as_bytes());
        option(&mut body, OPT_END, &[]);
        w.block(SECTION_HEADER, &body);

        body.clear();
        body.extend_from_slice(&LINKTYPE_RAW.to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes()); // reserved
        body.extend_from_slice(&snaplen.to_le_bytes());
        option(&mut body, IF_NAME, if_name.as_bytes());
        option(&mut body, IF_DESCRIPTION, if_description.as_bytes());
        option(&mut body, IF_TSRESOL, &[9]); // 10^-9 s
        option(&mut body, OPT_END, &[]);
        w.block(INTERFACE_DESCRIPTION, &body);

        if !names.is_empty() {
            body.clear();
            for (addr, name) in names {
                let mut v = addr.to_vec();
                v.extend_from_slice(name.as_bytes());
                v.push(0);
                option(&mut body, NRB_IPV4, &v);
            }
            option(&mut body, OPT_END, &[]); // nrb_record_end
            w.block(NAME_RESOLUTION, &body);
        }
        w
    }

    /// Appends a block: type, total length, body (a multiple of 4 bytes), total length.
    fn block(&mut self, kind: u32, body: &[u8]) {
        debug_assert_eq!(body.len() % 4, 0);
        let total = (12 + body.len()) as u32;
        self.buf.extend_from_slice(&kind.to_le_bytes());
        self.buf.extend_from_slice(&total.to_le_bytes());
        self.buf.extend_from_slice(body);
        self.buf.extend_from_slice(&total.to_le_bytes());
    }

    /// Appends an enhanced packet block on interface 0: `data` (the captured
    /// bytes) of a packet of `orig_len` bytes at `ts_ns`, with the direction
    /// `flags` ([`INBOUND`] or [`OUTBOUND`]).
    pub fn packet(&mut self, ts_ns: u64, data: &[u8], orig_len: u32, flags: u32) {
        let cap = data.len();
        let total = (12 + 20 + pad4(cap) + 8 + 4) as u32;
        let b = &mut self.buf;
        b.extend_from_slice(&ENHANCED_PACKET.to_le_bytes());
        b.extend_from_slice(&total.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes()); // interface
        b.extend_from_slice(&((ts_ns >> 32) as u32).to_le_bytes());
        b.extend_from_slice(&(ts_ns as u32).to_le_bytes());
        b.extend_from_slice(&(cap as u32).to_le_bytes());
        b.extend_from_slice(&orig_len.to_le_bytes());
        b.extend_from_slice(data);
        b.resize(b.len() + pad4(cap) - cap, 0);
        b.extend_from_slice(&EPB_FLAGS.to_le_bytes());
        b.extend_from_slice(&4u16.to_le_bytes());
        b.extend_from_slice(&flags.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes()); // opt_endofopt
        b.extend_from_slice(&total.to_le_bytes());
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether nothing was written (never: a new file has its header blocks).
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The file.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }
}

/// One block read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Block {
    Section { app: Option<String> },
    Interface { linktype: u16, snaplen: u32, name: Option<String>, tsresol: Option<u8> },
    Names(Vec<([u8; 4], String)>),
    Packet { ts_ns: u64, data: Vec<u8>, orig_len: u32, flags: Option<u32> },
}

fn le16(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}

fn le32(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// The options in `b` (code, value), up to `opt_endofopt`.
fn options(b: &[u8]) -> Result<Vec<(u16, &[u8])>, String> {
    let (mut out, mut i) = (Vec::new(), 0);
    while i + 4 <= b.len() {
        let (code, len) = (le16(b, i), le16(b, i + 2) as usize);
        if code == OPT_END {
            return Ok(out);
        }
        let v = b.get(i + 4..i + 4 + len).ok_or(format!("option {code} runs past its block"))?;
        out.push((code, v));
        i += 4 + pad4(len);
    }
    if i == b.len() {
        Ok(out)
    } else {
        Err("options end in the middle of an option header".into())
    }
}

fn text(v: &[u8]) -> String {
    String::from_utf8_lossy(v).into_owned()
}

/// Reads a little-endian pcapng file of the blocks [`Writer`] writes;
/// an error names what is wrong (a bad length, a block cut short, a packet
/// longer than its block, an unknown block type...).
pub fn read(bytes: &[u8]) -> Result<Vec<Block>, String> {
    let (mut blocks, mut at) = (Vec::new(), 0usize);
    while at < bytes.len() {
        if bytes.len() - at < 12 {
            return Err(format!("{} bytes at offset {at}: shorter than a block", bytes.len() - at));
        }
        let (kind, total) = (le32(bytes, at), le32(bytes, at + 4) as usize);
        if total < 12 || total % 4 != 0 || at + total > bytes.len() {
            return Err(format!("block at offset {at} has a bad total length {total}"));
        }
        if le32(bytes, at + total - 4) as usize != total {
            return Err(format!("block at offset {at}: its trailing length differs from its leading one"));
        }
        let body = &bytes[at + 8..at + total - 4];
        let block = match kind {
            SECTION_HEADER => {
                if body.len() < 16 || le32(body, 0) != BYTE_ORDER_MAGIC || le16(body, 4) != 1 {
                    return Err(format!("section header at offset {at}: not little-endian pcapng 1.x"));
                }
                let app = options(&body[16..])?.into_iter().find(|(c, _)| *c == SHB_USERAPPL).map(|(_, v)| text(v));
                Block::Section { app }
            }
            INTERFACE_DESCRIPTION => {
                if body.len() < 8 {
                    return Err(format!("interface block at offset {at} is cut short"));
                }
                let opts = options(&body[8..])?;
                let find = |code| opts.iter().find(|(c, _)| *c == code).map(|(_, v)| *v);
                Block::Interface {
                    linktype: le16(body, 0),
                    snaplen: le32(body, 4),
                    name: find(IF_NAME).map(text),
                    tsresol: find(IF_TSRESOL).and_then(|v| v.first().copied()),
                }
            }
            NAME_RESOLUTION => {
                let mut names = Vec::new();
                for (code, v) in options(body)? {
                    if code == NRB_IPV4 && v.len() > 4 {
                        let addr = [v[0], v[1], v[2], v[3]];
                        let name = v[4..].split(|&c| c == 0).next().unwrap_or_default();
                        names.push((addr, text(name)));
                    }
                }
                Block::Names(names)
            }
            ENHANCED_PACKET => {
                if body.len() < 20 {
                    return Err(format!("packet block at offset {at} is cut short"));
                }
                let cap = le32(body, 12) as usize;
                let data = body.get(20..20 + cap).ok_or(format!("packet at offset {at} is longer than its block"))?;
                let orig_len = le32(body, 16);
                if cap > orig_len as usize {
                    return Err(format!("packet at offset {at}: {cap} bytes captured of {orig_len}"));
                }
                let opts = options(&body[(20 + pad4(cap)).min(body.len())..])?;
                let flags = opts.iter().find(|(c, v)| *c == EPB_FLAGS && v.len() == 4).map(|(_, v)| le32(v, 0));
                Block::Packet {
                    ts_ns: (le32(body, 4) as u64) << 32 | le32(body, 8) as u64,
                    data: data.to_vec(),
                    orig_len,
                    flags,
                }
            }
            other => return Err(format!("block at offset {at} has an unknown type {other:#x}")),
        };
        blocks.push(block);
        at += total;
    }
    Ok(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_reads_back_block_for_block() {
        let mut w = Writer::new("torrentlab test", "peer-3", "10.0.0.4", 96, &[([10, 0, 0, 4], "peer-3".into())]);
        w.packet((7 << 32) + 5, &[0x45, 1, 2], 1500, OUTBOUND);
        w.packet(u64::MAX, &[], 40, INBOUND);
        let bytes = w.into_bytes();
        assert_eq!(bytes.len() % 4, 0);
        assert_eq!(
            read(&bytes).unwrap(),
            vec![
                Block::Section { app: Some("torrentlab test".into()) },
                Block::Interface { linktype: 101, snaplen: 96, name: Some("peer-3".into()), tsresol: Some(9) },
                Block::Names(vec![([10, 0, 0, 4], "peer-3".into())]),
                Block::Packet { ts_ns: (7 << 32) + 5, data: vec![0x45, 1, 2], orig_len: 1500, flags: Some(OUTBOUND) },
                Block::Packet { ts_ns: u64::MAX, data: vec![], orig_len: 40, flags: Some(INBOUND) },
            ]
        );
    }

    #[test]
    fn the_section_header_block_is_byte_exact() {
        let bytes = Writer::new("ab", "i", "", 65535, &[]).into_bytes();
        assert_eq!(
            bytes[..36],
            [
                0x0a, 0x0d, 0x0d, 0x0a, 40, 0, 0, 0, // type, length
                0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, // byte-order magic, version 1.0
                0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // section length -1
                4, 0, 2, 0, b'a', b'b', 0, 0, // shb_userappl "ab", padded
                0, 0, 0, 0 // opt_endofopt
            ]
        );
        assert_eq!(bytes[36..40], [40, 0, 0, 0], "the length again, closing the block");
    }

    #[test]
    fn damaged_files_are_refused_with_a_reason() {
        let mut w = Writer::new("x", "i", "", 64, &[]);
        w.packet(1, &[1, 2, 3, 4, 5], 5, INBOUND);
        let good = w.into_bytes();
        assert!(read(&good[..good.len() - 1]).unwrap_err().contains("bad total length"));
        let mut tail = good.clone();
        tail.extend_from_slice(&[0, 0, 0]);
        assert!(read(&tail).unwrap_err().contains("shorter than a block"));
        let mut bad = good.clone();
        let last = bad.len() - 4;
        bad[last] ^= 4;
        assert!(read(&bad).unwrap_err().contains("trailing length"));
        let mut unknown = good;
        unknown[0] = 0x77;
        assert!(read(&unknown).unwrap_err().contains("unknown type"));
    }
}
