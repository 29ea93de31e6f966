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

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    Rfc,
    Linux,
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

#[derive(Debug, Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
pub struct RawTcp {
    pub preset: Option<Preset>,
    pub mss: Option<u32>,
    pub initial_window: Option<u32>,
    pub slow_start: Option<bool>,
    pub min_rto: Option<DurationStr>,
    pub max_rto: Option<DurationStr>,
    pub initial_rto: Option<DurationStr>,
    pub delayed_ack: Option<DelayedAck>,
    pub timestamps: Option<bool>,
    pub receive_window: Option<SizeStr>,
    pub sack: Option<bool>,
    pub tso: Option<bool>,
    pub handshake: Option<bool>,
}

impl RawTcp {
    /// Field-wise: `over`'s value where it has one, else `self`'s.
    pub fn overlaid(&self, over: &RawTcp) -> RawTcp {
        RawTcp {
            preset: over.preset.or(self.preset),
            mss: over.mss.or(self.mss),
            initial_window: over.initial_window.or(self.initial_window),
            slow_start: over.slow_start.or(self.slow_start),
            min_rto: over.min_rto.or(self.min_rto),
            max_rto: over.max_rto.or(self.max_rto),
            initial_rto: over.initial_rto.or(self.initial_rto),
            delayed_ack: over.delayed_ack.or(self.delayed_ack),
            timestamps: over.timestamps.or(self.timestamps),
            receive_window: over.receive_window.or(self.receive_window),
            sack: over.sack.or(self.sack),
            tso: over.tso.or(self.tso),
            handshake: over.handshake.or(self.handshake),
        }
    }
}

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
