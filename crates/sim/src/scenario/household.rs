//! Household scenarios (experiment E3): a home behind a DSL line, the ISP's
//! first hop, and BitTorrent peers and servers beyond it, with the other
//! traffic of the household beside BitTorrent: ping, a VoIP call, an HTTP or
//! FTP transfer.
//!
//! A swarm scenario becomes a household with a `[household]` table; one
//! `[[peers]]` class (of one peer) may then be `home = true`, the others are
//! remote peers, and `[[traffic]]` entries add the cross traffic. Without
//! `[[peers]]` (and `[torrent]`) a household runs its cross traffic alone.
//!
//! ```toml
//! [network]
//! rtt = "60 ms"                  # home <-> remote peers and servers
//! [household]
//! up = "416 kbit/s"              # the modem's uplink
//! down = "2.4 Mbit/s"            # the DSLAM's downlink to the home
//! up_buffer = "64 packets"       # the modem's drop-tail queue
//! down_buffer = "64 packets"     # the DSLAM's drop-tail queue
//! first_hop_rtt = "12 ms"        # home <-> the ISP's first hop
//! [[traffic]]
//! kind = "ping"
//! from = "home"
//! to = "isp"
//! interval = "500 ms"
//! timeout = "1 s"
//! ```

use serde::Deserialize;
use torrentlab_engine::Duration;
use torrentlab_net::LinkConfig;
use torrentlab_transport::cc::CcConfig;
use torrentlab_transport::datagram::RTP_HEADER;

use super::controllers::{self, Controllers};
use super::raw::CcName;
use super::units::{BufferStr, DurationStr, RateStr, SizeStr};
use super::validate::Ctx;
use super::ScenarioError;

/// The home's line and where the rest of the network sits.
#[derive(Clone, Debug, PartialEq)]
pub struct Household {
    /// The home's uplink: the modem's rate and drop-tail queue.
    pub modem: LinkConfig,
    /// The home's downlink: the DSLAM's rate and drop-tail queue.
    pub dslam: LinkConfig,
    /// Round trip between the home and the ISP's first hop (propagation;
    /// serialisation on the line comes on top).
    pub first_hop_rtt: Duration,
    /// Round trip between the home and the hosts beyond the first hop
    /// (remote peers, servers), and between those hosts.
    pub remote_rtt: Duration,
}

/// A host of a household a traffic source or sink sits on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The home, behind the modem and the DSLAM.
    Home,
    /// The ISP's first hop (a router answering pings).
    Isp,
    /// A server beyond the first hop, as far as the remote peers.
    Remote,
}

impl Place {
    pub fn name(self) -> &'static str {
        match self {
            Place::Home => "home",
            Place::Isp => "isp",
            Place::Remote => "remote",
        }
    }
}

/// What a traffic entry sends.
#[derive(Clone, Debug, PartialEq)]
pub enum TrafficKind {
    /// ICMP echo requests every `interval` (`payload` bytes after the ICMP
    /// header), or with exponential gaps of that mean (`poisson`: RFC 2330
    /// §11.1.1's Poisson sampling, which no periodic process on the line can
    /// phase-lock with); a reply later than `timeout`, or none, is a timeout.
    Ping { interval: Duration, timeout: Duration, payload: u32, poisson: bool },
    /// A constant-bit-rate call both ways: one RTP packet of `payload` bytes
    /// (RTP header included) every `interval` from each side.
    Voip { interval: Duration, payload: u32 },
    /// One TCP transfer (HTTP, FTP) as fast as TCP allows, or written
    /// `chunk` bytes at a time at `rate` bytes/s.
    Transfer { rate: Option<u64>, chunk: u64, size: Option<u64>, cc: CcConfig },
}

impl TrafficKind {
    pub fn name(&self) -> &'static str {
        match self {
            TrafficKind::Ping { .. } => "ping",
            TrafficKind::Voip { .. } => "voip",
            TrafficKind::Transfer { .. } => "transfer",
        }
    }
}

/// One cross-traffic source and its sink.
#[derive(Clone, Debug, PartialEq)]
pub struct Traffic {
    pub label: String,
    pub kind: TrafficKind,
    pub from: Place,
    pub to: Place,
    pub start: Duration,
    /// It sends nothing after this (absent: the end of the run, less a
    /// ping's timeout or a second for a call, so that every probe and packet
    /// sent has had time to arrive).
    pub stop: Option<Duration>,
}

// ---- the file ----------------------------------------------------------------

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHousehold {
    up: RateStr,
    down: RateStr,
    up_buffer: BufferStr,
    down_buffer: BufferStr,
    first_hop_rtt: DurationStr,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum RawPlace {
    Home,
    Isp,
    Remote,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum RawKind {
    Ping,
    Voip,
    Transfer,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTraffic {
    kind: RawKind,
    label: Option<String>,
    from: Option<RawPlace>,
    to: Option<RawPlace>,
    start: Option<DurationStr>,
    stop: Option<DurationStr>,
    interval: Option<DurationStr>,
    timeout: Option<DurationStr>,
    payload: Option<u32>,
    rate: Option<RateStr>,
    chunk: Option<SizeStr>,
    size: Option<SizeStr>,
    cc: Option<CcName>,
    schedule: Option<RawSchedule>,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum RawSchedule {
    Periodic,
    Poisson,
}

/// ping's default payload (56 bytes: an 84-byte IP packet).
const PING_PAYLOAD: u32 = 56;
/// G.711 at 20 ms: 160 bytes of samples plus the RTP header.
const VOIP_PAYLOAD: u32 = 160 + RTP_HEADER;
/// A datagram's payload at most (a 1500-byte IP packet).
const MAX_PAYLOAD: u32 = 1472;

/// The household's line, with `remote_rtt` from `network.rtt`.
pub(super) fn household(cx: &Ctx, h: &RawHousehold, remote_rtt: Duration) -> Result<Household, ScenarioError> {
    let link = |rate: &RateStr, buffer: &BufferStr, field: &str, buffer_field: &str| {
        let Some(bps) = rate.0.filter(|&r| r > 0) else {
            return Err(cx.err(field, "the home's line needs a rate (such as \"416 kbit/s\"), not \"unlimited\""));
        };
        let limit = super::validate::buffer_limit(cx, buffer_field, buffer.0, Some(bps))?;
        Ok(LinkConfig { capacity_bps: Some(bps), buffer: limit, delay: Duration::ZERO })
    };
    let first_hop_rtt = h.first_hop_rtt.0;
    if remote_rtt < first_hop_rtt {
        return Err(cx.err(
            "network.rtt",
            format!(
                "{remote_rtt} is shorter than household.first_hop_rtt ({first_hop_rtt}): the remote hosts are beyond the first hop"
            ),
        ));
    }
    Ok(Household {
        modem: link(&h.up, &h.up_buffer, "household.up", "household.up_buffer")?,
        dslam: link(&h.down, &h.down_buffer, "household.down", "household.down_buffer")?,
        first_hop_rtt,
        remote_rtt,
    })
}

/// The cross traffic; `end` is the run's duration.
pub(super) fn traffic(
    cx: &Ctx,
    raw: &[RawTraffic],
    global_cc: &Controllers,
    end: Duration,
) -> Result<Vec<Traffic>, ScenarioError> {
    let mut out: Vec<Traffic> = Vec::new();
    for (i, t) in raw.iter().enumerate() {
        let at = |f: &str| format!("traffic[{i}].{f}");
        let not_for = |field: &str, present: bool| {
            if present {
                let kind = format!("{:?}", t.kind).to_lowercase();
                Err(cx.err(at(field), format!("is not a field of a {kind} entry; remove it")))
            } else {
                Ok(())
            }
        };
        let place = |p: Option<RawPlace>, default: Place| match p {
            None => default,
            Some(RawPlace::Home) => Place::Home,
            Some(RawPlace::Isp) => Place::Isp,
            Some(RawPlace::Remote) => Place::Remote,
        };
        let (from, to) = (place(t.from, Place::Home), place(t.to, Place::Isp));
        if from == to {
            return Err(cx.err(
                at("to"),
                format!("is \"{}\", the same host as from; allowed: another of home, isp, remote", to.name()),
            ));
        }
        let payload = |default: u32| -> Result<u32, ScenarioError> {
            match t.payload {
                None => Ok(default),
                Some(p) if p <= MAX_PAYLOAD => Ok(p),
                Some(p) => {
                    Err(cx
                        .err(at("payload"), format!("{p} bytes: allowed 0 to {MAX_PAYLOAD} (one 1500-byte IP packet)")))
                }
            }
        };
        let interval = |default: Duration| -> Result<Duration, ScenarioError> {
            let d = t.interval.map_or(default, |d| d.0);
            if d < Duration::from_millis(1) {
                return Err(cx.err(at("interval"), "must be at least 1 ms"));
            }
            Ok(d)
        };
        let kind = match t.kind {
            RawKind::Ping => {
                not_for("rate", t.rate.is_some())?;
                not_for("chunk", t.chunk.is_some())?;
                not_for("size", t.size.is_some())?;
                not_for("cc", t.cc.is_some())?;
                let timeout = t.timeout.map_or(Duration::from_secs(1), |d| d.0);
                if timeout == Duration::ZERO {
                    return Err(cx.err(at("timeout"), "must be greater than zero"));
                }
                TrafficKind::Ping {
                    interval: interval(Duration::from_secs(1))?,
                    timeout,
                    payload: payload(PING_PAYLOAD)?,
                    poisson: t.schedule == Some(RawSchedule::Poisson),
                }
            }
            RawKind::Voip => {
                for (f, set) in [("rate", t.rate.is_some()), ("chunk", t.chunk.is_some()), ("size", t.size.is_some())] {
                    not_for(f, set)?;
                }
                not_for("cc", t.cc.is_some())?;
                not_for("timeout", t.timeout.is_some())?;
                not_for("schedule", t.schedule.is_some())?;
                TrafficKind::Voip { interval: interval(Duration::from_millis(20))?, payload: payload(VOIP_PAYLOAD)? }
            }
            RawKind::Transfer => {
                not_for("interval", t.interval.is_some())?;
                not_for("timeout", t.timeout.is_some())?;
                not_for("payload", t.payload.is_some())?;
                not_for("schedule", t.schedule.is_some())?;
                let rate = match t.rate.map(|r| r.0) {
                    None | Some(None) => None,
                    Some(Some(0)) => return Err(cx.err(at("rate"), "must be greater than zero (or \"unlimited\")")),
                    Some(Some(bps)) => Some(bps / 8),
                };
                let chunk = t.chunk.map_or(16_384, |c| c.0);
                if chunk == 0 {
                    return Err(cx.err(at("chunk"), "must be greater than zero"));
                }
                if t.chunk.is_some() && rate.is_none() {
                    return Err(cx.err(at("chunk"), "applies only with a rate; remove it or give rate"));
                }
                let size = t.size.map(|s| s.0);
                if size == Some(0) {
                    return Err(cx.err(at("size"), "must be greater than zero (or absent: no end)"));
                }
                let cc =
                    controllers::build(cx, t.cc.unwrap_or(CcName::Cubic), global_cc, &Controllers::default(), &|f| {
                        at(f)
                    })?;
                TrafficKind::Transfer { rate, chunk, size, cc }
            }
        };
        let start = t.start.map_or(Duration::ZERO, |d| d.0);
        if start >= end {
            return Err(cx.err(at("start"), format!("is at or after the end of the run ({start} >= {end})")));
        }
        let stop = t.stop.map(|d| d.0);
        if let Some(s) = stop {
            if s <= start {
                return Err(cx.err(at("stop"), format!("must be after start ({s} <= {start})")));
            }
        }
        let label = t.label.clone().unwrap_or_else(|| kind.name().to_string());
        if out.iter().any(|o| o.label == label) {
            return Err(
                cx.err(at("label"), format!("\"{label}\" is taken by another entry; give each a label of its own"))
            );
        }
        out.push(Traffic { label, kind, from, to, start, stop });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cx() -> Ctx<'static> {
        Ctx { file: "h.toml" }
    }

    fn parse(text: &str) -> Result<Vec<Traffic>, ScenarioError> {
        #[derive(Deserialize)]
        struct Doc {
            traffic: Vec<RawTraffic>,
        }
        let doc: Doc = toml::from_str(text).expect("toml");
        traffic(&cx(), &doc.traffic, &Controllers::default(), Duration::from_secs(60))
    }

    #[test]
    fn a_ping_entry_defaults_to_one_56_byte_probe_a_second_from_home_to_the_isp() {
        let t = parse("[[traffic]]\nkind = \"ping\"\n").unwrap();
        assert_eq!((t[0].from, t[0].to, t[0].label.as_str()), (Place::Home, Place::Isp, "ping"));
        assert_eq!(
            t[0].kind,
            TrafficKind::Ping {
                interval: Duration::from_secs(1),
                timeout: Duration::from_secs(1),
                payload: 56,
                poisson: false
            }
        );
    }

    #[test]
    fn a_voip_call_defaults_to_g711_every_20_ms() {
        let t = parse("[[traffic]]\nkind = \"voip\"\nto = \"remote\"\n").unwrap();
        assert_eq!(t[0].kind, TrafficKind::Voip { interval: Duration::from_millis(20), payload: 172 });
    }

    #[test]
    fn a_field_of_another_kind_is_refused_naming_it() {
        let e = parse("[[traffic]]\nkind = \"ping\"\nrate = \"1 Mbit/s\"\n").unwrap_err();
        assert_eq!(e.field, "traffic[0].rate");
        let e = parse("[[traffic]]\nkind = \"transfer\"\ntimeout = \"1 s\"\n").unwrap_err();
        assert_eq!(e.field, "traffic[0].timeout");
    }

    #[test]
    fn a_source_and_sink_on_one_host_or_two_entries_with_one_label_are_refused() {
        assert_eq!(parse("[[traffic]]\nkind = \"ping\"\nto = \"home\"\n").unwrap_err().field, "traffic[0].to");
        let e = parse("[[traffic]]\nkind = \"ping\"\n[[traffic]]\nkind = \"ping\"\nto = \"remote\"\n").unwrap_err();
        assert_eq!(e.field, "traffic[1].label");
    }

    #[test]
    fn a_capped_transfer_keeps_its_rate_in_bytes_per_second() {
        let t =
            parse("[[traffic]]\nkind = \"transfer\"\nfrom = \"remote\"\nto = \"home\"\nrate = \"260 kB/s\"\n").unwrap();
        let TrafficKind::Transfer { rate, chunk, size, .. } = &t[0].kind else { panic!() };
        assert_eq!((*rate, *chunk, *size), (Some(260_000), 16_384, None));
    }
}
