//! A peer class's client profile and access links: which client it runs
//! (`client`), which transports it dials and answers (`transport`,
//! `disposition`), its upload limit (a rate, or a multiple of its uplink),
//! and its own `access` links over `network.access`.
//!
//! ```toml
//! [[peers]]
//! role = "leecher"
//! client = "utorrent"
//! disposition = 13             # attempt TCP out, accept TCP and uTP in
//! upload_limit = "5 x uplink"
//! access = { up = "1 Mbit/s", buffer = "1 s" }
//! ```

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use torrentlab_bittorrent::dial::{Transport, Transports};
use torrentlab_bittorrent::limiter::{MixedMode, Series};
use torrentlab_net::{BufferLimit, LinkConfig};

use super::raw::TransportName;
use super::units::{parse_rate_or_unlimited, BufferSpec, BufferStr, RateStr};
use super::validate::{buffer_limit, Ctx};
use super::ScenarioError;

/// The client a class runs.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum ClientName {
    /// Mainline 4.0.x (the default).
    #[default]
    Mainline,
    /// uTorrent's connection management (`disposition`) over mainline's
    /// algorithms: uTorrent is closed source (see docs/clients.md).
    Utorrent,
    /// libtorrent (RC_1_2 defaults): uTP first with TCP fallback, its
    /// choker, request queue and strict end game, its uTP.
    Libtorrent,
}

impl ClientName {
    pub fn name(self) -> &'static str {
        match self {
            ClientName::Mainline => "mainline",
            ClientName::Utorrent => "utorrent",
            ClientName::Libtorrent => "libtorrent",
        }
    }
}

/// libtorrent's `mixed_mode_algorithm` as written.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MixedModeName {
    PreferTcp,
    PeerProportional,
}

/// A libtorrent class's release series (`version`) as written: which of
/// libtorrent's rules the class follows where they changed (in the model,
/// `peer_proportional`; see [`torrentlab_bittorrent::limiter::classes`]).
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
pub enum VersionName {
    /// RC_1_2 (the default).
    #[serde(rename = "1.2")]
    V1_2,
    /// 2.0.6 and later, 2.1 included.
    #[serde(rename = "2.0")]
    V2_0,
}

/// A libtorrent class's mixed mode (default `peer_proportional`, by the
/// rule of its `version`, default 1.2); both fields are refused for the
/// other clients.
pub(super) fn mixed_mode(
    cx: &Ctx,
    at: &dyn Fn(&str) -> String,
    client: ClientName,
    name: Option<MixedModeName>,
    version: Option<VersionName>,
) -> Result<Option<MixedMode>, ScenarioError> {
    if client != ClientName::Libtorrent {
        if name.is_some() {
            return Err(cx.err(at("mixed_mode"), "is libtorrent's setting; set client = \"libtorrent\" or remove it"));
        }
        if version.is_some() {
            return Err(
                cx.err(at("version"), "is libtorrent's release series; set client = \"libtorrent\" or remove it")
            );
        }
        return Ok(None);
    }
    let series = match version {
        None | Some(VersionName::V1_2) => Series::V1_2,
        Some(VersionName::V2_0) => Series::V2_0,
    };
    Ok(Some(match name {
        None | Some(MixedModeName::PeerProportional) => MixedMode::PeerProportional(series),
        Some(MixedModeName::PreferTcp) => MixedMode::PreferTcp,
    }))
}

/// A libtorrent class's `rate_limit_ip_overhead` (default on, libtorrent's
/// default); refused for the other clients.
pub(super) fn rate_limit_ip_overhead(
    cx: &Ctx,
    at: &dyn Fn(&str) -> String,
    client: ClientName,
    value: Option<bool>,
) -> Result<bool, ScenarioError> {
    if client != ClientName::Libtorrent {
        if value.is_some() {
            return Err(cx.err(
                at("rate_limit_ip_overhead"),
                "is libtorrent's setting; set client = \"libtorrent\" or remove it",
            ));
        }
        return Ok(false);
    }
    Ok(value.unwrap_or(true))
}

params!(
    /// Access links: `network.access`, and a class's own `access` over it.
    RawAccess {
        up: RateStr,
        down: RateStr,
        buffer: BufferStr,
    }
);

/// `upload_limit = "20 kB/s"`, `"unlimited"`, or `"5 x uplink"`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UploadLimitSpec {
    /// bit/s, or `None`: unlimited.
    Rate(Option<u64>),
    /// This many times the class's uplink capacity.
    TimesUplink(f64),
}

#[derive(Debug, Clone, Copy)]
pub struct UploadLimitStr(pub UploadLimitSpec);

impl<'de> Deserialize<'de> for UploadLimitStr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = UploadLimitStr;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a rate such as \"20 kB/s\", \"unlimited\", or a multiple of the uplink such as \"5 x uplink\"",
                )
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<UploadLimitStr, E> {
                let t = s.trim();
                if let Some(k) = t.strip_suffix("uplink").map(str::trim_end).and_then(|k| k.strip_suffix(['x', '*'])) {
                    let k: f64 = k.trim().parse().map_err(|_| {
                        E::custom(format!("'{s}': the multiple must be a number, as in \"5 x uplink\""))
                    })?;
                    if !(k.is_finite() && k > 0.0 && k <= 1000.0) {
                        return Err(E::custom(format!("'{s}': the multiple must be greater than 0 and at most 1000")));
                    }
                    return Ok(UploadLimitStr(UploadLimitSpec::TimesUplink(k)));
                }
                parse_rate_or_unlimited(s).map(|r| UploadLimitStr(UploadLimitSpec::Rate(r))).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

/// A class's access links: `class` over `global`, each field on its own.
/// `at` is the class's field path (`peers[2].access`) when it has its own.
pub(super) fn access_links(
    cx: &Ctx,
    global: &RawAccess,
    class: Option<&RawAccess>,
    at: &str,
) -> Result<(LinkConfig, LinkConfig), ScenarioError> {
    let a = global.overlaid(class);
    // A field's path: the class's when the class sets it.
    let path = |f: &str, set: bool| if set { format!("{at}.{f}") } else { format!("network.access.{f}") };
    let set = |f: fn(&RawAccess) -> bool| class.is_some_and(f);
    let buffer_path = path("buffer", set(|c| c.buffer.is_some()));
    let link = |field: String, rate: Option<RateStr>| -> Result<LinkConfig, ScenarioError> {
        let rate = rate.and_then(|r| r.0);
        if rate == Some(0) {
            return Err(cx.err(field, "must be greater than zero (or \"unlimited\")"));
        }
        let buffer = match a.buffer {
            // A buffer given as time is that long at each link's own capacity;
            // an unlimited link never queues, so there it is ignored (and the
            // limit kept is the default's, which nothing ever reaches).
            Some(b) if rate.is_none() && matches!(b.0, BufferSpec::Time(_)) => BufferLimit::Packets(1000),
            Some(b) => buffer_limit(cx, &buffer_path, b.0, rate)?,
            None => BufferLimit::Packets(1000),
        };
        Ok(LinkConfig { capacity_bps: rate, buffer, delay: torrentlab_engine::Duration::ZERO })
    };
    let up = link(path("up", set(|c| c.up.is_some())), a.up)?;
    let down = link(path("down", set(|c| c.down.is_some())), a.down)?;
    Ok((up, down))
}

/// A class's upload limit in bytes/s (`None`: unlimited). Without one,
/// mainline's default (`max_upload_rate`, 20 kB/s x 1024); uTorrent's and
/// libtorrent's are unlimited.
pub(super) fn upload_rate(
    cx: &Ctx,
    at: &str,
    client: ClientName,
    limit: Option<UploadLimitSpec>,
    uplink: &LinkConfig,
) -> Result<Option<f64>, ScenarioError> {
    match limit {
        None if client == ClientName::Mainline => Ok(Some(20_480.0)),
        None => Ok(None),
        Some(UploadLimitSpec::Rate(None)) => Ok(None),
        Some(UploadLimitSpec::Rate(Some(0))) => Err(cx.err(at, "must be greater than zero (or \"unlimited\")")),
        Some(UploadLimitSpec::Rate(Some(bps))) => Ok(Some(bps as f64 / 8.0)),
        Some(UploadLimitSpec::TimesUplink(k)) => match uplink.capacity_bps {
            Some(c) => Ok(Some(k * c as f64 / 8.0)),
            None => Err(cx.err(
                at,
                "is a multiple of the uplink, but this class's uplink is \"unlimited\"; \
                 give network.access.up or the class's access.up a rate, or give upload_limit as a rate",
            )),
        },
    }
}

/// Which transports a class dials and answers. `at(f)` is a field's path.
pub(super) fn transports(
    cx: &Ctx,
    at: &dyn Fn(&str) -> String,
    client: ClientName,
    transport: Option<TransportName>,
    disposition: Option<u32>,
) -> Result<Transports, ScenarioError> {
    let dial = |t: TransportName| match t {
        TransportName::Tcp => Transport::Tcp,
        TransportName::Utp => Transport::Utp,
    };
    match client {
        ClientName::Mainline => {
            if disposition.is_some() {
                return Err(cx.err(
                    at("disposition"),
                    "is uTorrent's setting; set client = \"utorrent\", or use transport = \"tcp\" or \"utp\"",
                ));
            }
            Ok(Transports::mainline(dial(transport.unwrap_or(TransportName::Tcp))))
        }
        ClientName::Libtorrent => {
            if disposition.is_some() {
                return Err(cx.err(
                    at("disposition"),
                    "is uTorrent's setting; a libtorrent class dials uTP then TCP by default, or one transport \
                     with transport = \"tcp\" or \"utp\"",
                ));
            }
            Ok(match transport {
                None => Transports::libtorrent(),
                // enable_outgoing_utp or enable_outgoing_tcp off: one transport, both answered.
                Some(t) => {
                    Transports { dial: torrentlab_bittorrent::dial::Dial::Only(dial(t)), ..Transports::libtorrent() }
                }
            })
        }
        ClientName::Utorrent => {
            if transport.is_some() {
                return Err(cx.err(
                    at("transport"),
                    "a uTorrent class's transports come from its disposition (e.g. 31 both, 5 TCP only, 10 uTP only); \
                     remove transport",
                ));
            }
            let d = disposition.unwrap_or(torrentlab_bittorrent::dial::disposition::DEFAULT);
            if d > 255 || d & 15 == 0 {
                return Err(cx.err(
                    at("disposition"),
                    format!(
                        "{d} is not allowed; a bitmask of 1 (attempt TCP), 2 (attempt uTP), 4 (accept TCP), \
                         8 (accept uTP), 16 (new uTP header), at most 255, with at least one of 1, 2, 4, 8"
                    ),
                ));
            }
            Ok(Transports::disposition(d))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(s: &str) -> Result<UploadLimitSpec, String> {
        let v = toml::Value::String(s.into());
        UploadLimitStr::deserialize(v).map(|u| u.0).map_err(|e| e.to_string())
    }

    #[test]
    fn an_upload_limit_is_a_rate_unlimited_or_a_multiple_of_the_uplink() {
        assert_eq!(limit("20 kB/s").unwrap(), UploadLimitSpec::Rate(Some(160_000)));
        assert_eq!(limit("unlimited").unwrap(), UploadLimitSpec::Rate(None));
        assert_eq!(limit("5 x uplink").unwrap(), UploadLimitSpec::TimesUplink(5.0));
        assert_eq!(limit(" 1.5x uplink ").unwrap(), UploadLimitSpec::TimesUplink(1.5));
        assert!(limit("0 x uplink").unwrap_err().contains("greater than 0"));
        assert!(limit("many x uplink").unwrap_err().contains("must be a number"));
    }

    #[test]
    fn a_multiple_of_the_uplink_is_in_bytes_per_second_at_the_uplink_capacity() {
        let cx = Ctx { file: "f.toml" };
        let up =
            LinkConfig { capacity_bps: Some(1_000_000), buffer: BufferLimit::Packets(10), delay: Default::default() };
        let r = upload_rate(
            &cx,
            "peers[0].upload_limit",
            ClientName::Utorrent,
            Some(UploadLimitSpec::TimesUplink(5.0)),
            &up,
        );
        assert_eq!(r.unwrap(), Some(625_000.0));
        let open = LinkConfig { capacity_bps: None, ..up };
        let e = upload_rate(
            &cx,
            "peers[0].upload_limit",
            ClientName::Utorrent,
            Some(UploadLimitSpec::TimesUplink(5.0)),
            &open,
        )
        .unwrap_err();
        assert_eq!(e.field, "peers[0].upload_limit");
        assert_eq!(upload_rate(&cx, "x", ClientName::Mainline, None, &up).unwrap(), Some(20_480.0));
        assert_eq!(upload_rate(&cx, "x", ClientName::Utorrent, None, &up).unwrap(), None);
    }
}
