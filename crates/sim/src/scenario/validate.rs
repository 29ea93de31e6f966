//! Interprets a [`RawScenario`]: fills defaults, checks every value against what
//! is physically possible, and builds the model. Each check names its field.

use torrentlab_engine::Duration;
use torrentlab_net::{BufferLimit, LinkConfig};
use torrentlab_transport::tcp::{TcpConfig, TSO_MAX_PACKET};
use torrentlab_transport::utp::UtpConfig;

use super::controllers;
use super::raw::{
    CcName, ClockOffsetsName, DelayedAck, Preset, RawScenario, RawStart, RawTcp, Topology, TransportName,
};
use super::units::{BufferSpec, DurationStr};
use super::utp;
use super::{ClockOffsets, DumbbellSpec, FlowSpec, MetricsSpec, Scenario, ScenarioError, StartSpec};
use torrentlab_transport::cc::CcConfig;

/// Default access-link queue when a capacity is given without a buffer: Linux's
/// default `txqueuelen`.
const DEFAULT_ACCESS_BUFFER: BufferLimit = BufferLimit::Packets(1000);
/// Default time-series period.
const DEFAULT_SAMPLE_INTERVAL: Duration = Duration::from_millis(100);

pub(super) struct Ctx<'a> {
    pub(super) file: &'a str,
}

impl Ctx<'_> {
    pub(super) fn err(&self, field: impl Into<String>, message: impl Into<String>) -> ScenarioError {
        ScenarioError { file: self.file.into(), field: field.into(), message: message.into() }
    }
}

pub(super) fn validate(raw: RawScenario, file: &str) -> Result<Scenario, ScenarioError> {
    let cx = Ctx { file };
    let duration = raw.run.duration.0;
    if duration == Duration::ZERO {
        return Err(cx.err("run.duration", "must be greater than zero"));
    }

    let net = &raw.network;
    // The dumbbell is the only topology so far; the field exists so files say
    // what they assume and later topologies do not change their meaning.
    let (Some(Topology::Dumbbell) | None) = net.topology;
    let bottleneck_rate = net.bottleneck.capacity.0.ok_or_else(|| {
        cx.err("network.bottleneck.capacity", "the bottleneck cannot be unlimited; give a rate such as \"10 Mbit/s\"")
    })?;
    if bottleneck_rate == 0 {
        return Err(cx.err("network.bottleneck.capacity", "must be greater than zero"));
    }
    let bottleneck = LinkConfig {
        capacity_bps: Some(bottleneck_rate),
        buffer: buffer_limit(&cx, "network.bottleneck.buffer", net.bottleneck.buffer.0, Some(bottleneck_rate))?,
        delay: Duration::ZERO,
    };

    let access = match &net.access {
        None => LinkConfig::TRANSPARENT,
        Some(a) => {
            let rate = a.capacity.and_then(|c| c.0);
            if rate == Some(0) {
                return Err(cx.err("network.access.capacity", "must be greater than zero (or \"unlimited\")"));
            }
            let buffer = match a.buffer {
                Some(b) => buffer_limit(&cx, "network.access.buffer", b.0, rate)?,
                None => DEFAULT_ACCESS_BUFFER,
            };
            LinkConfig { capacity_bps: rate, buffer, delay: a.delay.map_or(Duration::ZERO, |d| d.0) }
        }
    };

    let (data_loss, ack_loss) = match &net.loss {
        None => (0.0, 0.0),
        Some(l) => (
            probability(&cx, "network.loss.data", l.data.unwrap_or(0.0))?,
            probability(&cx, "network.loss.ack", l.ack.unwrap_or(0.0))?,
        ),
    };

    let global_tcp = raw.tcp.clone().unwrap_or_default();
    let global_cc = raw.controllers();
    controllers::check_globals(&cx, &global_cc)?;
    if raw.flows.is_empty() {
        return Err(cx.err("flows", "at least one [[flows]] entry is needed"));
    }
    let mut flows = Vec::new();
    for (i, f) in raw.flows.iter().enumerate() {
        let at = |field: &str| format!("flows[{i}].{field}");
        let tcp_raw = global_tcp.overlaid(f.tcp.as_ref());
        let tcp = tcp_config(&cx, &tcp_raw, &|field| tcp_path(f.tcp.as_ref(), field, &at))?;
        let global_utp = raw.utp.clone().unwrap_or_default();
        let (cc, utp) = match f.transport.unwrap_or(TransportName::Tcp) {
            TransportName::Tcp => {
                if f.utp.is_some() {
                    return Err(cx.err(at("utp"), "only allowed when transport = \"utp\""));
                }
                let Some(name) = f.cc else {
                    return Err(cx.err(
                        at("cc"),
                        "missing: a TCP flow needs a congestion controller (newreno, cubic, vegas, lp, nice, ledbat)",
                    ));
                };
                (controllers::build(&cx, name, &global_cc, &f.controllers(), &at)?, None)
            }
            TransportName::Utp => {
                if f.cc.is_some_and(|c| c != CcName::Ledbat) {
                    return Err(cx.err(at("cc"), "uTP always runs LEDBAT; choose its form with utp.variant instead"));
                }
                if f.tcp.is_some() || f.controllers().any() {
                    return Err(cx.err(at("transport"), "a uTP flow takes a `utp` table, not tcp or controller tables"));
                }
                let path = if f.utp.is_some() { at("utp") } else { "utp".to_string() };
                let u = utp::utp_config(&cx, &global_utp.overlaid(f.utp.as_ref()), &path, &UtpConfig::default())?;
                (CcConfig::NewReno, Some(u))
            }
        };
        let start = match f.start.unwrap_or(RawStart::At(DurationStr(Duration::ZERO))) {
            RawStart::At(t) => StartSpec::At(t.0),
            RawStart::Uniform(lo, hi) => {
                if lo.0 > hi.0 {
                    return Err(cx.err(at("start.uniform"), format!("the range is reversed: {} > {}", lo.0, hi.0)));
                }
                StartSpec::Uniform(lo.0, hi.0)
            }
        };
        if start.latest() >= duration {
            return Err(cx.err(
                at("start"),
                format!("starts at or after the end of the run ({} >= run.duration {})", start.latest(), duration),
            ));
        }
        let stop = f.stop.map(|s| s.0);
        if let Some(stop) = stop {
            if stop <= start.latest() {
                return Err(cx.err(at("stop"), format!("must be after the start ({} <= {})", stop, start.latest())));
            }
            if stop > duration {
                return Err(cx.err(at("stop"), format!("is after the end of the run ({} > {})", stop, duration)));
            }
        }
        let size = f.size.map(|s| s.0);
        if size == Some(0) {
            return Err(cx.err(at("size"), "must be greater than zero (omit it for an unlimited flow)"));
        }
        let count = f.count.unwrap_or(1);
        if count == 0 || count > 100_000 {
            return Err(cx.err(at("count"), "must be between 1 and 100000"));
        }
        let default_label = if utp.is_some() { "utp" } else { cc.name() };
        let base_label = f.label.clone().unwrap_or_else(|| default_label.to_string());
        for k in 0..count {
            let label = if count == 1 { base_label.clone() } else { format!("{base_label}-{k}") };
            let one_way_delay = f.one_way_delay.map(|d| d.0);
            flows.push(FlowSpec {
                label,
                cc: cc.clone(),
                tcp: tcp.clone(),
                start,
                stop,
                size,
                one_way_delay,
                utp: utp.clone(),
            });
        }
    }

    let m = raw.metrics.unwrap_or_default();
    let sample_interval = if m.timeseries == Some(false) {
        None
    } else {
        let s = m.sample_interval.map_or(DEFAULT_SAMPLE_INTERVAL, |d| d.0);
        if s == Duration::ZERO {
            return Err(cx.err(
                "metrics.sample_interval",
                "must be greater than zero (set metrics.timeseries = false to turn sampling off)",
            ));
        }
        Some(s)
    };
    let summary_start = m.summary_start.map(|d| d.0);
    if summary_start.is_some_and(|s| s >= duration) {
        return Err(cx.err("metrics.summary_start", "must be before the end of the run"));
    }

    Ok(Scenario {
        name: scenario_name(&cx, raw.name, file)?,
        description: raw.description.unwrap_or_default(),
        seed: raw.run.seed.unwrap_or(1),
        duration,
        network: DumbbellSpec {
            one_way_delay: net.one_way_delay.0,
            bottleneck,
            access,
            data_loss,
            ack_loss,
            clock_offsets: match net.clock_offsets {
                Some(ClockOffsetsName::Zero) => ClockOffsets::Zero,
                _ => ClockOffsets::Random,
            },
        },
        flows,
        metrics: MetricsSpec { sample_interval, queue_log: m.queue_log.unwrap_or(true), summary_start },
    })
}

/// The longest name, in bytes: most file systems allow 255 bytes per component.
const MAX_NAME_BYTES: usize = 255;

/// The scenario's name: the one given, checked by [`name_problem`], or one
/// made from the file name by [`default_name`]. Without `-o` the results go to
/// `results/NAME`, so a name must be one plain path component.
pub(super) fn scenario_name(cx: &Ctx, given: Option<String>, file: &str) -> Result<String, ScenarioError> {
    match given {
        None => Ok(default_name(file)),
        Some(name) => match name_problem(&name) {
            None => Ok(name),
            Some(problem) => Err(cx.err("name", format!("{problem}: {name:?}"))),
        },
    }
}

/// What makes `name` unusable as one path component, or `None` if it is fine.
pub(super) fn name_problem(name: &str) -> Option<String> {
    let plain = "must be one plain file name (no '/' or '\\', no control characters, not '.' or '..', not empty)";
    let path = std::path::Path::new(name);
    if name.trim().is_empty()
        || name == "."
        || name == ".."
        || name.chars().any(|c| c == '/' || c == '\\' || c.is_control())
        || path.is_absolute()
        || path.has_root()
    {
        return Some(plain.to_string());
    }
    if name.len() > MAX_NAME_BYTES {
        return Some(format!("is {} bytes long; at most {MAX_NAME_BYTES} are allowed", name.len()));
    }
    None
}

/// The name of a scenario that gives none: its file's name without the
/// extension (`a.toml` -> `a`), with `\` and control characters replaced by
/// `_` and cut to [`MAX_NAME_BYTES`]; `"scenario"` if that leaves no usable name
/// (as for `..toml`, whose stem is `.`).
pub(super) fn default_name(file: &str) -> String {
    let stem = std::path::Path::new(file).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let cleaned: String = stem.chars().map(|c| if c == '/' || c == '\\' || c.is_control() { '_' } else { c }).collect();
    let cleaned: String = cleaned
        .chars()
        .scan(0, |n, c| {
            *n += c.len_utf8();
            (*n <= MAX_NAME_BYTES).then_some(c)
        })
        .collect();
    if name_problem(&cleaned).is_some() {
        "scenario".into()
    } else {
        cleaned
    }
}

/// Where a TCP field's error points: the entry's own `tcp` table (`at`) if it
/// set the field, else the top-level `[tcp]`.
pub(super) fn tcp_path(own: Option<&RawTcp>, field: &str, at: &dyn Fn(&str) -> String) -> String {
    if own.is_some_and(|t| has_field(t, field)) {
        at(&format!("tcp.{field}"))
    } else {
        format!("tcp.{field}")
    }
}

fn has_field(t: &RawTcp, field: &str) -> bool {
    match field {
        "preset" => t.preset.is_some(),
        "mss" => t.mss.is_some(),
        "initial_window" => t.initial_window.is_some(),
        "slow_start" => t.slow_start.is_some(),
        "min_rto" => t.min_rto.is_some(),
        "max_rto" => t.max_rto.is_some(),
        "initial_rto" => t.initial_rto.is_some(),
        "delayed_ack" => t.delayed_ack.is_some(),
        "timestamps" => t.timestamps.is_some(),
        "receive_window" => t.receive_window.is_some(),
        "sack" => t.sack.is_some(),
        "tso" => t.tso.is_some(),
        "handshake" => t.handshake.is_some(),
        "nagle" => t.nagle.is_some(),
        "cwnd_validation" => t.cwnd_validation.is_some(),
        "slow_start_after_idle" => t.slow_start_after_idle.is_some(),
        _ => false,
    }
}

pub(super) fn probability(cx: &Ctx, field: &str, p: f64) -> Result<f64, ScenarioError> {
    if !(0.0..1.0).contains(&p) {
        return Err(cx.err(field, format!("{p} is not a loss probability; allowed: 0 <= p < 1")));
    }
    Ok(p)
}

pub(super) fn buffer_limit(
    cx: &Ctx,
    field: &str,
    b: BufferSpec,
    rate: Option<u64>,
) -> Result<BufferLimit, ScenarioError> {
    let limit = match b {
        BufferSpec::Packets(n) => {
            BufferLimit::Packets(u32::try_from(n).map_err(|_| cx.err(field, "too many packets"))?)
        }
        BufferSpec::Bytes(n) => BufferLimit::Bytes(n),
        BufferSpec::Time(t) => {
            let Some(rate) = rate else {
                return Err(cx.err(field, "a buffer given as time needs a capacity; give packets or bytes instead"));
            };
            // At most 1 Tbit/s x 1 year / 8 = 3.9e18 bytes: fits, but checked.
            let bytes = rate as u128 * t.0 as u128 / 8_000_000_000;
            BufferLimit::Bytes(u64::try_from(bytes).map_err(|_| cx.err(field, "is too large at this capacity"))?)
        }
    };
    if matches!(limit, BufferLimit::Packets(0) | BufferLimit::Bytes(0)) {
        return Err(cx.err(field, "must hold at least one packet (zero-size buffers are not allowed)"));
    }
    Ok(limit)
}

pub(super) fn tcp_config(cx: &Ctx, t: &RawTcp, at: &dyn Fn(&str) -> String) -> Result<TcpConfig, ScenarioError> {
    let preset = t.preset.unwrap_or(Preset::Rfc);
    let mut c = match preset {
        Preset::Rfc => TcpConfig::rfc(),
        Preset::Linux => TcpConfig::linux(),
        Preset::Linux2632 => TcpConfig::linux_2_6_32(),
        Preset::Linux6 => TcpConfig::linux_6(),
    };
    if let Some(mss) = t.mss {
        if !(64..=65_495).contains(&mss) {
            return Err(cx.err(at("mss"), format!("{mss} is out of range; allowed: 64 to 65495 bytes")));
        }
        c.mss = mss;
        // The initial window of the RFC and of 2.6 depends on the MSS; 10 does not.
        if t.initial_window.is_none() {
            match preset {
                Preset::Rfc => c.initial_window = TcpConfig::rfc5681_initial_window(mss),
                Preset::Linux2632 => c.initial_window = TcpConfig::linux_2_6_32_initial_window(mss),
                Preset::Linux | Preset::Linux6 => {}
            }
        }
    }
    if let Some(iw) = t.initial_window {
        if !(1..=1000).contains(&iw) {
            return Err(cx.err(at("initial_window"), format!("{iw} is out of range; allowed: 1 to 1000 segments")));
        }
        c.initial_window = iw;
    }
    if let Some(ss) = t.slow_start {
        c.slow_start = ss;
    }
    for (name, v, slot) in [
        ("min_rto", t.min_rto, &mut c.min_rto),
        ("max_rto", t.max_rto, &mut c.max_rto),
        ("initial_rto", t.initial_rto, &mut c.initial_rto),
    ] {
        if let Some(d) = v {
            if d.0 == Duration::ZERO {
                return Err(cx.err(at(name), "must be greater than zero"));
            }
            *slot = d.0;
        }
    }
    if c.min_rto > c.max_rto {
        return Err(cx.err(at("min_rto"), format!("min_rto ({}) exceeds max_rto ({})", c.min_rto, c.max_rto)));
    }
    match t.delayed_ack {
        None => {}
        Some(DelayedAck::Off) => c.delayed_ack = None,
        Some(DelayedAck::On) => c.delayed_ack = Some(c.delayed_ack.unwrap_or(Duration::from_millis(40))),
        Some(DelayedAck::After(d)) => {
            if d == Duration::ZERO || d > Duration::from_millis(500) {
                return Err(cx.err(at("delayed_ack"), "must be between 0 and 500 ms (RFC 5681 §4.2), or false"));
            }
            c.delayed_ack = Some(d);
        }
    }
    if let Some(ts) = t.timestamps {
        c.timestamps = ts;
    }
    if let Some(sack) = t.sack {
        c.sack = sack;
    }
    if let Some(h) = t.handshake {
        c.handshake = h;
    }
    if let Some(v) = t.cwnd_validation {
        c.cwnd_validation = v;
    }
    if let Some(v) = t.slow_start_after_idle {
        c.slow_start_after_idle = v;
    }
    if let Some(n) = t.nagle {
        c.nagle = n;
    }
    if t.tso == Some(true) {
        // Whole segments in a 64 KiB IP packet (IPv4 20 + TCP 20 + options).
        let headers = 40 + if c.timestamps { 12 } else { 0 };
        c.tso_max = Some((TSO_MAX_PACKET - headers) / c.mss * c.mss);
    }
    if let Some(w) = t.receive_window {
        if w.0 < c.mss as u64 {
            return Err(cx.err(at("receive_window"), format!("must hold at least one segment ({} bytes)", c.mss)));
        }
        if w.0 > 1 << 30 {
            return Err(cx.err(at("receive_window"), "is larger than TCP's largest window, 1 GiB (RFC 7323 §2.3)"));
        }
        c.receive_window = w.0;
    }
    Ok(c)
}
