//! `pacing` of a peer class: how the BitTorrent client spaces its uploads
//! (see the world's pacer for the mechanism).
//!
//! `"off"` (the default: whatever the transports send, back to back),
//! `"even"` (data packets spaced evenly at the upload limit), a preset, or
//! `{ packet_bytes = 815, packets_per_second = 50 }`: IP packets of at most
//! `packet_bytes`, at most `packets_per_second` of them. The presets are
//! the ones of the practitioner's write-up E3 follows: `"voip-friendly"`
//! (815-byte packets at 50/s) and `"game-friendly"` (679-byte packets at
//! 60/s).

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use torrentlab_engine::Duration;
use torrentlab_transport::tcp::TcpConfig;
use torrentlab_transport::utp::UtpConfig;

use super::validate::Ctx;
use super::ScenarioError;

/// How a class's peers pace their uploads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Pacing {
    #[default]
    Off,
    /// Data packets spaced evenly at the class's upload limit.
    Even,
    /// IP packets of at most `packet_bytes`, at most `per_second` a second.
    Packets { packet_bytes: u32, per_second: u32 },
}

/// IPv4 + TCP headers, and the timestamps option when it is on.
const TCP_HEADERS: u32 = 40;
const TCP_TIMESTAMPS: u32 = 12;
/// IPv4 + UDP headers and uTP's own.
const UTP_HEADERS: u32 = 20 + 8 + 20;

/// The smallest `packet_bytes` allowed: a TCP segment with timestamps and
/// 100 payload bytes.
const MIN_PACKET: u32 = TCP_HEADERS + TCP_TIMESTAMPS + 100;

impl Pacing {
    /// The name of a preset or mode, as written in scenarios.
    pub fn name(&self) -> String {
        match *self {
            Pacing::Off => "off".into(),
            Pacing::Even => "even".into(),
            Pacing::Packets { packet_bytes: 815, per_second: 50 } => "voip-friendly".into(),
            Pacing::Packets { packet_bytes: 679, per_second: 60 } => "game-friendly".into(),
            Pacing::Packets { packet_bytes, per_second } => format!("{packet_bytes} B x {per_second}/s"),
        }
    }

    /// The gap between two packets, for a packet count.
    pub fn gap(&self) -> Option<Duration> {
        match *self {
            Pacing::Packets { per_second, .. } => Some(Duration(1_000_000_000 / per_second as u64)),
            _ => None,
        }
    }

    /// Caps the transports' packets at `packet_bytes` of IP packet: TCP's
    /// MSS and uTP's payload per packet (and its MTU probing bounds).
    pub fn cap_packets(&self, tcp: &mut TcpConfig, utp: &mut UtpConfig) {
        let Pacing::Packets { packet_bytes, .. } = *self else { return };
        let opts = if tcp.timestamps { TCP_TIMESTAMPS } else { 0 };
        tcp.mss = tcp.mss.min(packet_bytes - TCP_HEADERS - opts);
        utp.packet_size = utp.packet_size.min(packet_bytes - UTP_HEADERS);
        // MTU probing bounds are UDP payloads (uTP header included).
        utp.mtu_ceiling = utp.mtu_ceiling.min(packet_bytes - 28);
        utp.mtu_floor = utp.mtu_floor.min(utp.mtu_ceiling);
    }

    /// The most payload a second a packet count lets through (bytes/s):
    /// full TCP segments with timestamps (uTP's carry 4 bytes more).
    pub fn rate_cap(&self) -> Option<u64> {
        match *self {
            Pacing::Packets { packet_bytes, per_second } => {
                Some(per_second as u64 * (packet_bytes - TCP_HEADERS - TCP_TIMESTAMPS) as u64)
            }
            _ => None,
        }
    }
}

/// As written: a name or a table.
#[derive(Debug, Clone, Copy)]
pub(super) enum RawPacing {
    Name(PacingName),
    Table { packet_bytes: i64, packets_per_second: i64 },
}

#[derive(Debug, Clone, Copy)]
pub(super) enum PacingName {
    Off,
    Even,
    VoipFriendly,
    GameFriendly,
}

impl<'de> Deserialize<'de> for RawPacing {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawPacing;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "\"off\", \"even\", \"voip-friendly\", \"game-friendly\" or { packet_bytes = N, packets_per_second = M }",
                )
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<RawPacing, E> {
                Ok(RawPacing::Name(match s.trim() {
                    "off" => PacingName::Off,
                    "even" => PacingName::Even,
                    "voip-friendly" => PacingName::VoipFriendly,
                    "game-friendly" => PacingName::GameFriendly,
                    other => {
                        return Err(E::custom(format!(
                            "\"{other}\": allowed: \"off\", \"even\", \"voip-friendly\", \"game-friendly\" \
                             or {{ packet_bytes = N, packets_per_second = M }}"
                        )))
                    }
                }))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawPacing, A::Error> {
                let (mut bytes, mut pps) = (None, None);
                while let Some(k) = map.next_key::<String>()? {
                    match k.as_str() {
                        "packet_bytes" => bytes = Some(map.next_value::<i64>()?),
                        "packets_per_second" => pps = Some(map.next_value::<i64>()?),
                        other => {
                            return Err(de::Error::custom(format!(
                                "unknown field `{other}`; allowed: packet_bytes, packets_per_second"
                            )))
                        }
                    }
                }
                match (bytes, pps) {
                    (Some(packet_bytes), Some(packets_per_second)) => {
                        Ok(RawPacing::Table { packet_bytes, packets_per_second })
                    }
                    _ => Err(de::Error::custom("give both packet_bytes and packets_per_second")),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// The class's pacing; `upload_rate` is its upload limit (bytes/s).
pub(super) fn pacing(
    cx: &Ctx,
    at: &str,
    raw: Option<RawPacing>,
    upload_rate: Option<u64>,
) -> Result<Pacing, ScenarioError> {
    let p = match raw {
        None | Some(RawPacing::Name(PacingName::Off)) => Pacing::Off,
        Some(RawPacing::Name(PacingName::Even)) => {
            if upload_rate.is_none() {
                return Err(cx.err(
                    at,
                    "\"even\" spaces packets at the upload limit, and this class has none; give upload_limit a rate",
                ));
            }
            Pacing::Even
        }
        Some(RawPacing::Name(PacingName::VoipFriendly)) => Pacing::Packets { packet_bytes: 815, per_second: 50 },
        Some(RawPacing::Name(PacingName::GameFriendly)) => Pacing::Packets { packet_bytes: 679, per_second: 60 },
        Some(RawPacing::Table { packet_bytes, packets_per_second }) => {
            if !(MIN_PACKET as i64..=1500).contains(&packet_bytes) {
                return Err(cx.err(
                    format!("{at}.packet_bytes"),
                    format!("{packet_bytes}: allowed {MIN_PACKET} to 1500 (bytes of IP packet)"),
                ));
            }
            if !(1..=100_000).contains(&packets_per_second) {
                return Err(
                    cx.err(format!("{at}.packets_per_second"), format!("{packets_per_second}: allowed 1 to 100000"))
                );
            }
            Pacing::Packets { packet_bytes: packet_bytes as u32, per_second: packets_per_second as u32 }
        }
    };
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_voip_friendly_cap_makes_815_byte_packets_on_either_transport() {
        let (mut tcp, mut utp) = (TcpConfig::linux(), UtpConfig::default());
        Pacing::Packets { packet_bytes: 815, per_second: 50 }.cap_packets(&mut tcp, &mut utp);
        assert_eq!(tcp.mss + TCP_HEADERS + TCP_TIMESTAMPS, 815);
        assert_eq!(utp.packet_size + UTP_HEADERS, 815);
        assert!(utp.mtu_ceiling + 28 <= 815 && utp.mtu_floor <= utp.mtu_ceiling);
    }

    #[test]
    fn fifty_815_byte_packets_a_second_carry_at_most_38150_bytes_of_payload() {
        assert_eq!(Pacing::Packets { packet_bytes: 815, per_second: 50 }.rate_cap(), Some(38_150));
        assert_eq!(Pacing::Even.rate_cap(), None);
    }

    #[test]
    fn even_pacing_without_an_upload_limit_is_refused() {
        let e =
            pacing(&Ctx { file: "f" }, "peers[0].pacing", Some(RawPacing::Name(PacingName::Even)), None).unwrap_err();
        assert_eq!(e.field, "peers[0].pacing");
    }

    #[test]
    fn presets_keep_their_names() {
        for (raw, name) in [(PacingName::VoipFriendly, "voip-friendly"), (PacingName::GameFriendly, "game-friendly")] {
            let p = pacing(&Ctx { file: "f" }, "p", Some(RawPacing::Name(raw)), None).unwrap();
            assert_eq!(p.name(), name);
        }
    }
}
