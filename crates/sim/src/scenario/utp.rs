//! `[utp]` (defaults for every uTP flow) and a flow's own `utp = { ... }`.

use serde::Deserialize;
use torrentlab_engine::Duration;
use torrentlab_transport::utp::{UtpCcConfig, UtpConfig};

use super::units::{DurationStr, SizeStr};
use super::validate::Ctx;
use super::ScenarioError;

/// Which LEDBAT a uTP flow runs.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum UtpVariantName {
    Bep29,
    Rfc6817,
    Draft,
}

params!(
    /// The uTP table as written; every field optional.
    RawUtp {
        variant: UtpVariantName,
        target: DurationStr,
        gain: f64,
        max_increase: SizeStr,
        min_window: f64,
        slow_start: bool,
        packet_size: u32,
        receive_buffer: SizeStr,
        min_rto: DurationStr,
        max_timeouts: u32,
        nagle: bool,
        mtu_probing: bool,
    }
);

/// Builds a uTP configuration over `base` (libutp's defaults, or a client
/// profile's); `at` is the table's path for errors.
pub(super) fn utp_config(cx: &Ctx, r: &RawUtp, at: &str, base: &UtpConfig) -> Result<UtpConfig, ScenarioError> {
    let err = |field: &str, msg: String| cx.err(format!("{at}.{field}"), msg);
    let mut cc = match r.variant {
        None => base.cc.clone(),
        Some(UtpVariantName::Bep29) => UtpCcConfig::bep29(),
        Some(UtpVariantName::Rfc6817) => UtpCcConfig::rfc6817(),
        Some(UtpVariantName::Draft) => UtpCcConfig::draft(),
    };
    let rfc = cc.variant == torrentlab_transport::utp::Variant::Rfc6817;
    if let Some(t) = r.target {
        if t.0 == Duration::ZERO || (rfc && t.0 > Duration::from_millis(100)) {
            let allowed = if rfc { "0 < target <= 100 ms (RFC 6817 §2.5)" } else { "target > 0" };
            return Err(err("target", format!("{} is not allowed; {allowed}", t.0)));
        }
        cc.target = t.0;
    }
    if let Some(g) = r.gain {
        if !(g.is_finite() && g > 0.0) || (rfc && g > 1.0) {
            return Err(err(
                "gain",
                format!("{g} is not allowed; 0 < gain{}", if rfc { " <= 1 (RFC 6817)" } else { "" }),
            ));
        }
        cc.gain = g;
    }
    if let Some(b) = r.max_increase {
        if b.0 == 0 {
            return Err(err("max_increase", "must be greater than zero".into()));
        }
        cc.max_increase_bytes_per_rtt = b.0 as f64;
    }
    if let Some(m) = r.min_window {
        if !(m.is_finite() && m > 0.0) {
            return Err(err("min_window", format!("{m} is not allowed; must be > 0 packets")));
        }
        cc.min_window_packets = m;
    }
    if let Some(ss) = r.slow_start {
        cc.slow_start = ss;
    }
    let mut c = UtpConfig { cc, ..base.clone() };
    if let Some(p) = r.packet_size {
        // A fixed packet size: no MTU search (unless asked for below, an error).
        c.mtu_probing = false;
        // BEP 29 allows packets down to 150 bytes; 1472 - 20 fills a 1500-byte MTU.
        if !(150..=1452).contains(&p) {
            return Err(err("packet_size", format!("{p} is out of range; allowed: 150 to 1452 payload bytes")));
        }
        c.packet_size = p;
    }
    if let Some(b) = r.receive_buffer {
        if b.0 < c.packet_size as u64 || b.0 > u32::MAX as u64 {
            return Err(err("receive_buffer", "must hold at least one packet and fit in 32 bits".into()));
        }
        c.receive_buffer = b.0 as u32;
    }
    if let Some(m) = r.min_rto {
        if m.0 == Duration::ZERO {
            return Err(err("min_rto", "must be greater than zero".into()));
        }
        c.min_rto = m.0;
    }
    if let Some(n) = r.max_timeouts {
        if n == 0 {
            return Err(err("max_timeouts", "must be at least 1".into()));
        }
        c.max_timeouts = n;
    }
    if let Some(n) = r.nagle {
        c.nagle = n;
    }
    if let Some(m) = r.mtu_probing {
        if m && r.packet_size.is_some() {
            return Err(err(
                "mtu_probing",
                "packet sizes come from the MTU search; drop packet_size or the probing".into(),
            ));
        }
        c.mtu_probing = m;
    }
    Ok(c)
}
