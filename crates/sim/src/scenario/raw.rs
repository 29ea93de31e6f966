//! The scenario file as written: serde structs that mirror the TOML, with
//! `deny_unknown_fields` everywhere. No interpretation happens here beyond
//! parsing quantities with units; [`super::validate`] turns these into a model.

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::fmt;

use super::controllers::{Controllers, RawCubic, RawLedbat, RawLp, RawNice, RawVegas};
use super::units::{BufferStr, DurationStr, RateStr, SizeStr};
use super::utp::RawUtp;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    pub name: Option<String>,
    pub description: Option<String>,
    pub run: RawRun,
    pub network: RawNetwork,
    pub tcp: Option<RawTcp>,
    pub cubic: Option<RawCubic>,
    pub vegas: Option<RawVegas>,
    pub lp: Option<RawLp>,
    pub nice: Option<RawNice>,
    pub ledbat: Option<RawLedbat>,
    pub utp: Option<RawUtp>,
    pub flows: Vec<RawFlow>,
    pub metrics: Option<RawMetrics>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRun {
    pub seed: Option<u64>,
    pub duration: DurationStr,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Topology {
    Dumbbell,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNetwork {
    pub topology: Option<Topology>,
    pub one_way_delay: DurationStr,
    pub bottleneck: RawBottleneck,
    pub access: Option<RawAccess>,
    pub loss: Option<RawLoss>,
    pub clock_offsets: Option<ClockOffsetsName>,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ClockOffsetsName {
    Random,
    Zero,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TransportName {
    Tcp,
    Utp,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBottleneck {
    pub capacity: RateStr,
    pub buffer: BufferStr,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAccess {
    pub capacity: Option<RateStr>,
    pub buffer: Option<BufferStr>,
    pub delay: Option<DurationStr>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLoss {
    pub data: Option<f64>,
    pub ack: Option<f64>,
}

/// `preset`: where a TCP configuration starts (`TcpConfig::rfc`, `linux`,
/// `linux_2_6_32`, `linux_6`).
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    Rfc,
    Linux,
    #[serde(rename = "linux-2.6.32")]
    Linux2632,
    #[serde(rename = "linux-6")]
    Linux6,
}

/// `delayed_ack = false`, `true` (the preset's timer, 40 ms if it has none) or `"40 ms"`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DelayedAck {
    Off,
    On,
    After(torrentlab_engine::Duration),
}

impl<'de> Deserialize<'de> for DelayedAck {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = DelayedAck;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("false, true, or a delay such as \"40 ms\"")
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<DelayedAck, E> {
                Ok(if b { DelayedAck::On } else { DelayedAck::Off })
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<DelayedAck, E> {
                super::units::parse_duration(s).map(DelayedAck::After).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

params!(
    /// `[tcp]` and a flow's `tcp = { ... }`.
    RawTcp {
        preset: Preset,
        mss: u32,
        initial_window: u32,
        slow_start: bool,
        min_rto: DurationStr,
        max_rto: DurationStr,
        initial_rto: DurationStr,
        delayed_ack: DelayedAck,
        timestamps: bool,
        receive_window: SizeStr,
        sack: bool,
        tso: bool,
        handshake: bool,
        nagle: bool,
        cwnd_validation: bool,
        slow_start_after_idle: bool,
    }
);

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CcName {
    Newreno,
    Cubic,
    Vegas,
    Lp,
    Nice,
    Ledbat,
}

/// `start = "2 s"` or `start = { uniform = ["0 s", "10 s"] }`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RawStart {
    At(DurationStr),
    Uniform(DurationStr, DurationStr),
}

impl<'de> Deserialize<'de> for RawStart {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawStart;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a time such as \"2 s\" or a table { uniform = [\"0 s\", \"10 s\"] }")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<RawStart, E> {
                super::units::parse_duration(s).map(|d| RawStart::At(DurationStr(d))).map_err(E::custom)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawStart, A::Error> {
                let mut range: Option<[DurationStr; 2]> = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key != "uniform" {
                        return Err(de::Error::unknown_field(&key, &["uniform"]));
                    }
                    range = Some(map.next_value()?);
                }
                let [lo, hi] = range.ok_or_else(|| de::Error::missing_field("uniform"))?;
                Ok(RawStart::Uniform(lo, hi))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFlow {
    pub transport: Option<TransportName>,
    pub cc: Option<CcName>,
    pub label: Option<String>,
    pub start: Option<RawStart>,
    pub stop: Option<DurationStr>,
    pub size: Option<SizeStr>,
    pub count: Option<u32>,
    pub one_way_delay: Option<DurationStr>,
    pub tcp: Option<RawTcp>,
    pub cubic: Option<RawCubic>,
    pub vegas: Option<RawVegas>,
    pub lp: Option<RawLp>,
    pub nice: Option<RawNice>,
    pub ledbat: Option<RawLedbat>,
    pub utp: Option<RawUtp>,
}

macro_rules! controllers_of {
    ($t:ty) => {
        impl $t {
            /// The controller tables given here.
            pub fn controllers(&self) -> Controllers<'_> {
                Controllers {
                    cubic: self.cubic.as_ref(),
                    vegas: self.vegas.as_ref(),
                    lp: self.lp.as_ref(),
                    nice: self.nice.as_ref(),
                    ledbat: self.ledbat.as_ref(),
                }
            }
        }
    };
}
controllers_of!(RawScenario);
controllers_of!(RawFlow);

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawMetrics {
    pub sample_interval: Option<DurationStr>,
    pub timeseries: Option<bool>,
    pub queue_log: Option<bool>,
    pub summary_start: Option<DurationStr>,
}
