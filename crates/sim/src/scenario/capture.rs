//! `[capture]` of a swarm scenario: which peers get a pcapng trace of every
//! packet their access link carries, and how many bytes of each packet it
//! keeps (see docs/capture.md).
//!
//! ```toml
//! [capture]
//! peers = [0, "late"]   # peer 0, and every peer of the class labelled "late"
//! snaplen = 128         # bytes kept of each packet (default: all of it)
//! ```

use serde::Deserialize;

use super::swarm::PeerClass;
use super::validate::Ctx;
use super::ScenarioError;

/// The most peers one run may capture (each capture holds its file in memory
/// until the run ends).
pub const MAX_CAPTURED: usize = 64;
/// The largest `snaplen`, Wireshark's (`WTAP_MAX_PACKET_SIZE_STANDARD`); the
/// default, which keeps every packet whole (the largest, a TSO segment, is
/// under 64 KiB).
pub const MAX_SNAPLEN: u32 = 262_144;
/// The smallest `snaplen`: an IPv4 header, a TCP header with every option
/// (60 bytes) and a BitTorrent message's length prefix and id.
pub const MIN_SNAPLEN: u32 = 85;

/// Which peers are captured, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaptureSpec {
    /// Peer indices (peer `i` is host `i`), sorted, without repeats.
    pub peers: Vec<u32>,
    /// Bytes kept of each packet (the rest is counted in its original length).
    pub snaplen: u32,
}

/// `[capture]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCapture {
    peers: Option<Vec<RawPeerRef>>,
    snaplen: Option<i64>,
}

/// A peer by its index, or every peer of a class by its label.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawPeerRef {
    Index(i64),
    Label(String),
}

/// Validates `[capture]` against the peers of `classes`.
pub(super) fn capture(cx: &Ctx, raw: &RawCapture, classes: &[PeerClass]) -> Result<CaptureSpec, ScenarioError> {
    let total: u32 = classes.iter().map(|c| c.count).sum();
    let labels = || {
        let mut l: Vec<String> = Vec::new();
        for c in classes {
            let quoted = format!("\"{}\"", c.label);
            if !l.contains(&quoted) {
                l.push(quoted);
            }
        }
        l.join(", ")
    };
    let Some(refs) = &raw.peers else {
        return Err(cx.err("capture.peers", "missing: list the peers to capture, e.g. peers = [0, \"seed\"]"));
    };
    if refs.is_empty() {
        return Err(cx.err("capture.peers", "is empty: list at least one peer index or class label"));
    }
    let mut peers = Vec::new();
    for (i, r) in refs.iter().enumerate() {
        let field = format!("capture.peers[{i}]");
        match r {
            RawPeerRef::Index(p) if (0..total as i64).contains(p) => peers.push(*p as u32),
            RawPeerRef::Index(p) => {
                return Err(cx.err(
                    field,
                    format!(
                        "{p} is not a peer; allowed: a peer index 0 to {} or a class label ({})",
                        total - 1,
                        labels()
                    ),
                ))
            }
            RawPeerRef::Label(l) => {
                let mut first = 0u32;
                let mut found = false;
                for c in classes {
                    if c.label == *l {
                        peers.extend(first..first + c.count);
                        found = true;
                    }
                    first += c.count;
                }
                if !found {
                    return Err(cx.err(
                        field,
                        format!(
                            "\"{l}\" is no class's label; allowed: {} or a peer index 0 to {}",
                            labels(),
                            total - 1
                        ),
                    ));
                }
            }
        }
    }
    peers.sort_unstable();
    peers.dedup();
    if peers.len() > MAX_CAPTURED {
        return Err(cx.err(
            "capture.peers",
            format!("names {} peers; at most {MAX_CAPTURED} may be captured in one run", peers.len()),
        ));
    }
    let snaplen = match raw.snaplen {
        None => MAX_SNAPLEN,
        Some(s) if (MIN_SNAPLEN as i64..=MAX_SNAPLEN as i64).contains(&s) => s as u32,
        Some(s) => {
            return Err(cx.err(
                "capture.snaplen",
                format!(
                "{s} bytes is out of range; allowed: {MIN_SNAPLEN} to {MAX_SNAPLEN} (the default keeps whole packets)"
            ),
            ))
        }
    };
    Ok(CaptureSpec { peers, snaplen })
}
