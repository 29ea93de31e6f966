//! Swarm scenarios: a torrent, classes of peers (seeds and leechers, how they
//! arrive and leave, their client, and the transport they dial with: TCP or
//! uTP, with its settings), the latency between them (one RTT for every pair,
//! or emulated ASes) and ingress loss.
//!
//! ```toml
//! [run]
//! seed = 1
//! duration = "4 h"            # a cap: the run ends when the last leecher is done
//! [torrent]
//! size = "50 MB"
//! piece_size = "256 KiB"
//! [network]
//! rtt = "400 ms"
//! [[peers]]
//! role = "seed"
//! upload_limit = "20 kB/s"
//! [[peers]]
//! role = "leecher"
//! count = 300
//! upload_limit = "20 kB/s"
//! ```

use std::collections::BTreeMap;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use torrentlab_bittorrent::bencode::TorrentMeta;
use torrentlab_bittorrent::client::ClientConfig;
use torrentlab_bittorrent::pipeline::Pipeline;
use torrentlab_bittorrent::torrent::{Torrent, TorrentLimit, MAX_PIECES};
use torrentlab_engine::Duration;
use torrentlab_net::LinkConfig;
use torrentlab_transport::cc::CcConfig;
use torrentlab_transport::tcp::TcpConfig;
use torrentlab_transport::utp::UtpConfig;

use super::capture::{self, CaptureSpec, RawCapture};
use super::controllers::{self, Controllers, RawCubic, RawLedbat, RawLp, RawNice, RawVegas};
use super::household::{self, Household, RawHousehold, RawTraffic, Traffic};
use super::pacing::{self, Pacing, RawPacing};
use super::profile::{self, ClientName, MixedModeName, RawAccess, UploadLimitStr, VersionName};
use super::raw::{CcName, ClockOffsetsName, RawTcp, TransportName};
use super::units::{DurationStr, SizeStr, MAX_DURATION};
use super::utp::{utp_config, RawUtp};
use super::validate::{probability, scenario_name, tcp_config, tcp_path, Ctx};
use super::{ClockOffsets, ScenarioError};

// ---- the model ---------------------------------------------------------------

/// When the peers of a class join.
#[derive(Clone, Debug, PartialEq)]
pub enum JoinSpec {
    /// All at this time (a flash crowd).
    At(Duration),
    /// A Poisson process from `start` with this mean gap between arrivals.
    Poisson { start: Duration, mean_gap: Duration },
    /// One time per peer.
    Times(Vec<Duration>),
}

/// When a peer leaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Departure {
    /// Stays until the last leecher has finished (the run then ends).
    Stay,
    /// Leaves as soon as it has every piece.
    Leave,
    /// Seeds for this long after completing, then leaves.
    SeedFor(Duration),
}

/// An emulated AS: one-way delays of its intra-AS and inter-AS devices.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub name: String,
    /// RTT between two peers of the group = 4 x intra.
    pub intra: Duration,
    /// RTT between groups i and j = 2 x (inter_i + inter_j).
    pub inter: Duration,
}

/// A class of identical peers.
#[derive(Clone, Debug, PartialEq)]
pub struct PeerClass {
    pub label: String,
    /// Starts with every piece.
    pub seed: bool,
    pub count: u32,
    /// Index into [`SwarmScenario::groups`].
    pub group: Option<usize>,
    pub join: JoinSpec,
    pub departure: Departure,
    /// Which client the peers run.
    pub profile: ClientName,
    /// Its settings; `client.transports` says which transports the peers
    /// dial and answer: a TCP connection with `tcp` and `cc`, a uTP one
    /// with `utp`.
    pub client: ClientConfig,
    /// Each peer's access links.
    pub uplink: LinkConfig,
    pub downlink: LinkConfig,
    pub tcp: TcpConfig,
    pub cc: CcConfig,
    pub utp: UtpConfig,
    /// The household's own client (a household run; one peer).
    pub home: bool,
    /// How its uploads are paced (the world's pacer).
    pub pacing: Pacing,
}

/// What a swarm run records besides the always-on tables.
#[derive(Clone, Debug, PartialEq)]
pub struct SwarmMetrics {
    /// Every application send of this many leechers (the first ones) is logged
    /// with the TCP RTT estimate and cwnd at that moment.
    pub send_log_peers: u32,
    /// Log every piece verified (the HAVE broadcast).
    pub haves: bool,
    /// Log every choke and unchoke.
    pub chokes: bool,
    /// One row per connection.
    pub connections: bool,
    /// Every dequeue at the uplinks of this many peers (the first ones, seeds
    /// included) is logged in `uplink_queue`.
    pub uplink_log_peers: u32,
}

/// A validated swarm scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct SwarmScenario {
    pub name: String,
    pub description: String,
    pub seed: u64,
    /// The run stops here at the latest.
    pub duration: Duration,
    pub torrent: Torrent,
    /// Homogeneous RTT between every pair (when `groups` is empty).
    pub rtt: Duration,
    pub groups: Vec<Group>,
    /// The group the tracker sits in (with the first seed's by default).
    pub tracker_group: Option<usize>,
    /// Bernoulli loss of every packet arriving at a peer.
    pub ingress_loss: f64,
    /// Where each host's clock starts (uTP reads one-way delays against them).
    pub clock_offsets: ClockOffsets,
    pub classes: Vec<PeerClass>,
    pub metrics: SwarmMetrics,
    /// A household run: the home's line (and the RTT beyond it is `rtt`).
    pub household: Option<Household>,
    /// Cross traffic beside BitTorrent (household runs).
    pub traffic: Vec<Traffic>,
    /// The peers whose packets are written to pcapng traces (`[capture]`).
    pub capture: Option<CaptureSpec>,
}

impl SwarmScenario {
    pub fn peer_count(&self) -> usize {
        self.classes.iter().map(|c| c.count as usize).sum()
    }

    pub fn leecher_count(&self) -> usize {
        self.classes.iter().filter(|c| !c.seed).map(|c| c.count as usize).sum()
    }
}

// ---- the file ----------------------------------------------------------------

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSwarmScenario {
    name: Option<String>,
    description: Option<String>,
    run: super::raw::RawRun,
    torrent: Option<RawTorrent>,
    network: Option<RawSwarmNetwork>,
    tcp: Option<RawTcp>,
    cubic: Option<RawCubic>,
    vegas: Option<RawVegas>,
    lp: Option<RawLp>,
    nice: Option<RawNice>,
    ledbat: Option<RawLedbat>,
    utp: Option<RawUtp>,
    #[serde(default)]
    peers: Vec<RawPeers>,
    metrics: Option<RawSwarmMetrics>,
    household: Option<RawHousehold>,
    #[serde(default)]
    traffic: Vec<RawTraffic>,
    capture: Option<RawCapture>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTorrent {
    size: Option<SizeStr>,
    piece_size: Option<SizeStr>,
    /// A real `.torrent` file (relative to the scenario file).
    file: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawSwarmNetwork {
    rtt: Option<DurationStr>,
    groups: Option<BTreeMap<String, RawGroup>>,
    tracker_group: Option<String>,
    ingress_loss: Option<f64>,
    access: Option<RawAccess>,
    clock_offsets: Option<ClockOffsetsName>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    intra: DurationStr,
    inter: DurationStr,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Role {
    Seed,
    Leecher,
}

/// `join = "0 s"`, `join = ["0 s", "5 s"]` or `join = { poisson = "10 s", start = "0 s" }`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawJoin {
    At(DurationStr),
    Times(Vec<DurationStr>),
    Poisson(RawPoisson),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPoisson {
    poisson: DurationStr,
    start: Option<DurationStr>,
}

/// `"stay"`, `"leave"` or a seeding time such as `"10 min"`.
#[derive(Debug)]
struct RawDeparture(Departure);

impl<'de> Deserialize<'de> for RawDeparture {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = RawDeparture;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("\"stay\", \"leave\", or a seeding time such as \"10 min\"")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<RawDeparture, E> {
                Ok(RawDeparture(match s.trim() {
                    "stay" => Departure::Stay,
                    "leave" => Departure::Leave,
                    t => Departure::SeedFor(
                        super::units::parse_duration(t)
                            .map_err(|e| E::custom(format!("{e}; or \"stay\" / \"leave\"")))?,
                    ),
                }))
            }
        }
        d.deserialize_str(V)
    }
}

/// `pipeline = "mainline"` or a fixed depth such as `pipeline = 5`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawPipeline {
    Name(String),
    Fixed(i64),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPeers {
    role: Role,
    label: Option<String>,
    count: Option<u32>,
    group: Option<String>,
    join: Option<RawJoin>,
    departure: Option<RawDeparture>,
    upload_limit: Option<UploadLimitStr>,
    upload_slots: Option<u32>,
    pipeline: Option<RawPipeline>,
    max_initiate: Option<u32>,
    max_allow_in: Option<u32>,
    fast_extension: Option<bool>,
    cc: Option<CcName>,
    tcp: Option<RawTcp>,
    transport: Option<TransportName>,
    utp: Option<RawUtp>,
    client: Option<ClientName>,
    disposition: Option<u32>,
    access: Option<RawAccess>,
    mixed_mode: Option<MixedModeName>,
    version: Option<VersionName>,
    rate_limit_ip_overhead: Option<bool>,
    home: Option<bool>,
    pacing: Option<RawPacing>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawSwarmMetrics {
    send_log_peers: Option<u32>,
    haves: Option<bool>,
    chokes: Option<bool>,
    connections: Option<bool>,
    uplink_log_peers: Option<u32>,
}

/// The most `count x join.poisson` may be: ten years.
const MAX_POISSON_SPAN: Duration = Duration(10 * MAX_DURATION.0);

/// Peers a scenario may hold: a peer needs some 200 KB (docs/scenarios.md,
/// the memory estimate refuses a run that would not fit), so 100,000 is about
/// 20 GB, the size of a large workstation's memory.
pub(crate) const MAX_PEERS: u32 = 100_000;

pub(super) fn validate(raw: RawSwarmScenario, file: &str) -> Result<SwarmScenario, ScenarioError> {
    let cx = Ctx { file };
    let duration = raw.run.duration.0;
    if duration == Duration::ZERO {
        return Err(cx.err("run.duration", "must be greater than zero"));
    }
    let torrent = match (&raw.torrent, &raw.household) {
        (Some(t), _) => torrent(&cx, t, file)?,
        // Cross traffic alone: no swarm, so any torrent will do.
        (None, Some(_)) if raw.peers.is_empty() => Torrent::checked(16_384, 16_384).expect("one piece"),
        (None, _) => return Err(cx.err("torrent", "missing: a swarm needs [torrent] (size, or a .torrent file)")),
    };

    let net = raw.network.unwrap_or_default();
    let mut groups = Vec::new();
    for (name, g) in net.groups.iter().flatten() {
        groups.push(Group { name: name.clone(), intra: g.intra.0, inter: g.inter.0 });
    }
    let group_index = |field: &str, name: &str| {
        groups.iter().position(|g| g.name == *name).ok_or_else(|| {
            let known: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
            cx.err(
                field,
                if known.is_empty() {
                    format!("\"{name}\": no groups are defined (add [network.groups.{name}])")
                } else {
                    format!("\"{name}\" is not a group; allowed: {}", known.join(", "))
                },
            )
        })
    };
    if !groups.is_empty() && net.rtt.is_some() {
        return Err(cx.err("network.rtt", "give either one rtt for every pair or network.groups, not both"));
    }
    let rtt = net.rtt.map_or(Duration::ZERO, |d| d.0);
    let ingress_loss = probability(&cx, "network.ingress_loss", net.ingress_loss.unwrap_or(0.0))?;
    let access = net.access.unwrap_or_default();
    let global_tcp = raw.tcp.clone().unwrap_or_default();
    let global_cc = Controllers {
        cubic: raw.cubic.as_ref(),
        vegas: raw.vegas.as_ref(),
        lp: raw.lp.as_ref(),
        nice: raw.nice.as_ref(),
        ledbat: raw.ledbat.as_ref(),
    };
    controllers::check_globals(&cx, &global_cc)?;
    let global_utp = raw.utp.clone().unwrap_or_default();
    if raw.peers.is_empty() && raw.household.is_none() {
        return Err(cx.err("peers", "at least one [[peers]] class is needed"));
    }
    let household = match &raw.household {
        None => None,
        Some(h) => {
            if !groups.is_empty() {
                return Err(cx.err(
                    "network.groups",
                    "a household places its hosts itself; use network.rtt for the remote peers",
                ));
            }
            Some(household::household(&cx, h, rtt)?)
        }
    };
    if household.is_none() && !raw.traffic.is_empty() {
        return Err(cx.err("traffic", "cross traffic runs in a household; add [household] (the home's line)"));
    }
    let traffic = household::traffic(&cx, &raw.traffic, &global_cc, duration)?;
    let mut classes = Vec::new();
    let mut total = 0u32;
    for (i, p) in raw.peers.iter().enumerate() {
        let at = |f: &str| format!("peers[{i}].{f}");
        let count = p.count.unwrap_or(1);
        if count == 0 || count > MAX_PEERS {
            return Err(cx.err(at("count"), format!("must be between 1 and {MAX_PEERS}")));
        }
        total += count;
        if total > MAX_PEERS {
            return Err(cx.err(at("count"), format!("the swarm would exceed {MAX_PEERS} peers")));
        }
        let group = match (&p.group, groups.is_empty()) {
            (Some(g), _) => Some(group_index(&at("group"), g)?),
            (None, false) => return Err(cx.err(at("group"), "missing: with network.groups every class needs a group")),
            (None, true) => None,
        };
        let join = match &p.join {
            None => JoinSpec::At(Duration::ZERO),
            Some(RawJoin::At(t)) => JoinSpec::At(t.0),
            Some(RawJoin::Times(ts)) => {
                if ts.len() != count as usize {
                    return Err(cx.err(at("join"), format!("lists {} times for {count} peers", ts.len())));
                }
                JoinSpec::Times(ts.iter().map(|t| t.0).collect())
            }
            Some(RawJoin::Poisson(pz)) => {
                if pz.poisson.0 == Duration::ZERO {
                    return Err(cx.err(at("join.poisson"), "the mean gap between arrivals must be greater than zero"));
                }
                // Arrival times are sums of exponential gaps of at most 37 means
                // each (-ln of the smallest 53-bit uniform), so with count x mean
                // gap <= 10 years the last stays below 371 years: inside the
                // u64-ns clock (584 years).
                if pz.poisson.0.as_nanos() as u128 * count as u128 > MAX_POISSON_SPAN.as_nanos() as u128 {
                    return Err(cx.err(
                        at("join.poisson"),
                        format!(
                            "{count} arrivals with a mean gap of {} would span more than 87600 h (ten years); \
                             count x poisson must be at most that (arrivals after run.duration never happen)",
                            pz.poisson.0
                        ),
                    ));
                }
                JoinSpec::Poisson { start: pz.start.map_or(Duration::ZERO, |s| s.0), mean_gap: pz.poisson.0 }
            }
        };
        let earliest = match &join {
            JoinSpec::At(t) | JoinSpec::Poisson { start: t, .. } => *t,
            JoinSpec::Times(ts) => ts.iter().copied().min().unwrap_or(Duration::ZERO),
        };
        if earliest >= duration {
            return Err(cx.err(at("join"), format!("is at or after the end of the run ({earliest} >= {duration})")));
        }
        let seed = p.role == Role::Seed;
        let profile = p.client.unwrap_or_default();
        let home = p.home.unwrap_or(false);
        let (uplink, downlink) = match (&household, home) {
            (None, true) => {
                return Err(cx.err(at("home"), "only a household has a home; add [household] or remove this"))
            }
            (Some(_), true) if count != 1 => {
                return Err(
                    cx.err(at("count"), format!("{count}: a home class is the household's one client; allowed: 1"))
                )
            }
            (Some(_), true) if p.access.is_some() => {
                return Err(
                    cx.err(at("access"), "the home's line is [household] (up, down and their buffers); remove this")
                )
            }
            (Some(h), true) => (h.modem, h.dslam),
            _ => profile::access_links(&cx, &access, p.access.as_ref(), &at("access"))?,
        };
        let limit = profile::upload_rate(&cx, &at("upload_limit"), profile, p.upload_limit.map(|u| u.0), &uplink)?;
        let pacing = pacing::pacing(&cx, &at("pacing"), p.pacing, limit.map(|r| r as u64))?;
        // A client that sends at most N packets a second uploads no faster
        // than N full packets a second.
        let upload_rate = match pacing.rate_cap() {
            Some(cap) => Some(limit.map_or(cap as f64, |l| l.min(cap as f64))),
            None => limit,
        };
        let mut client = match profile {
            ClientName::Libtorrent => ClientConfig::libtorrent(upload_rate),
            _ => ClientConfig::mainline(upload_rate),
        };
        client.transports = profile::transports(&cx, &at, profile, p.transport, p.disposition)?;
        client.mixed_mode = profile::mixed_mode(&cx, &at, profile, p.mixed_mode, p.version)?;
        client.rate_limit_ip_overhead = profile::rate_limit_ip_overhead(&cx, &at, profile, p.rate_limit_ip_overhead)?;
        if let Some(s) = p.upload_slots {
            if s == 0 || s > 1000 {
                return Err(cx.err(at("upload_slots"), "must be between 1 and 1000"));
            }
            client.upload_slots = s;
        }
        client.pipeline = match &p.pipeline {
            None => client.pipeline,
            Some(RawPipeline::Name(n)) if n == "mainline" => Pipeline::Mainline,
            Some(RawPipeline::Name(n)) if n == "libtorrent" => Pipeline::Libtorrent,
            Some(RawPipeline::Name(n)) => {
                return Err(cx.err(
                    at("pipeline"),
                    format!("\"{n}\": allowed: \"mainline\", \"libtorrent\" or a fixed depth 1 to 1000"),
                ))
            }
            Some(RawPipeline::Fixed(n)) if (1..=1000).contains(n) => Pipeline::Fixed(*n as u32),
            Some(RawPipeline::Fixed(n)) => {
                return Err(cx.err(at("pipeline"), format!("{n}: a fixed depth must be between 1 and 1000")))
            }
        };
        if let Some(m) = p.max_initiate {
            client.max_initiate = m;
        }
        if let Some(m) = p.max_allow_in {
            if m == 0 {
                return Err(cx.err(at("max_allow_in"), "must be at least 1"));
            }
            client.max_allow_in = m;
        }
        match p.fast_extension {
            Some(true) if profile != ClientName::Libtorrent => {
                return Err(cx.err(
                    at("fast_extension"),
                    format!("{} has no Fast Extension (BEP 6); only the libtorrent profile has it", profile.name()),
                ))
            }
            Some(on) => client.fast_extension = on,
            None => {}
        }
        // Peers talk Linux TCP with a handshake, Nagle on (no TCP_NODELAY).
        let mut tcp_raw = global_tcp.overlaid(p.tcp.as_ref());
        tcp_raw.preset = tcp_raw.preset.or(Some(super::raw::Preset::Linux));
        let mut tcp = tcp_config(&cx, &tcp_raw, &|f| tcp_path(p.tcp.as_ref(), f, &at))?;
        if tcp_raw.handshake == Some(false) {
            let f = tcp_path(p.tcp.as_ref(), "handshake", &at);
            return Err(cx.err(f, "peers always open connections with a handshake; remove this field"));
        }
        tcp.handshake = true;
        if tcp_raw.nagle.is_none() {
            tcp.nagle = true;
        }
        let departure = p.departure.as_ref().map_or(Departure::Stay, |d| d.0);
        if seed && departure == Departure::Leave {
            return Err(cx.err(
                at("departure"),
                "a seed has every piece from the start, so \"leave\" would leave at once; use \"stay\" or a seeding time",
            ));
        }
        let cc = controllers::build(&cx, p.cc.unwrap_or(CcName::Cubic), &global_cc, &Controllers::default(), &at)?;
        let utp_path = if p.utp.is_some() { at("utp") } else { "utp".to_string() };
        let utp_base = if profile == ClientName::Libtorrent { UtpConfig::libtorrent() } else { UtpConfig::default() };
        let mut utp = utp_config(&cx, &global_utp.overlaid(p.utp.as_ref()), &utp_path, &utp_base)?;
        pacing.cap_packets(&mut tcp, &mut utp);
        classes.push(PeerClass {
            label: p.label.clone().unwrap_or_else(|| if seed { "seed".into() } else { "leecher".into() }),
            seed,
            count,
            group,
            join,
            departure,
            profile,
            client,
            uplink,
            downlink,
            tcp,
            cc,
            utp,
            home,
            pacing,
        });
    }
    if household.is_some() && !classes.is_empty() && !classes.iter().any(|c| c.home) {
        return Err(cx.err("peers", "a household's swarm needs its home: mark one class of one peer with home = true"));
    }
    if classes.iter().filter(|c| c.home).count() > 1 {
        let second = classes.iter().enumerate().filter(|(_, c)| c.home).nth(1).map_or(0, |(i, _)| i);
        return Err(
            cx.err(format!("peers[{second}].home"), "a household has one home; allowed: one class with home = true")
        );
    }
    // (Without classes, a household runs its cross traffic alone.)
    if !classes.is_empty() && !classes.iter().any(|c| c.seed) {
        return Err(cx.err("peers", "no class has role = \"seed\": nobody has the content"));
    }
    if !classes.is_empty() && !classes.iter().any(|c| !c.seed) {
        return Err(cx.err("peers", "no class has role = \"leecher\": there is nothing to measure"));
    }
    let tracker_group = match &net.tracker_group {
        Some(g) => Some(group_index("network.tracker_group", g)?),
        None => classes.iter().find(|c| c.seed).and_then(|c| c.group),
    };
    let m = raw.metrics.unwrap_or_default();
    let uplink_log_peers = m.uplink_log_peers.unwrap_or(0);
    let peers = classes.iter().map(|c| c.count).sum::<u32>();
    // The logged uplinks are the first peers': each must queue.
    let mut first = 0u32;
    for (i, c) in classes.iter().enumerate() {
        if first >= uplink_log_peers {
            break;
        }
        if c.uplink.capacity_bps.is_none() {
            let field = if raw.peers[i].access.as_ref().is_some_and(|a| a.up.is_some()) {
                format!("peers[{i}].access.up")
            } else {
                "network.access.up".to_string()
            };
            return Err(cx.err(
                "metrics.uplink_log_peers",
                format!(
                    "the first {uplink_log_peers} peers' uplinks are logged, but {field} (class {i}) is \"unlimited\": \
                     an unlimited uplink never queues, so there is nothing to log; allowed: 0 to {first}, or give it a rate"
                ),
            ));
        }
        first += c.count;
    }
    if uplink_log_peers > peers {
        return Err(cx.err(
            "metrics.uplink_log_peers",
            format!("{uplink_log_peers} is more than the {peers} peers; allowed: 0 to {peers}"),
        ));
    }
    let capture =
        match &raw.capture {
            None => None,
            Some(_) if household.is_some() => return Err(cx.err(
                "capture",
                "a household run cannot be captured (its cross traffic has no packet synthesis yet); remove [capture]",
            )),
            Some(c) => Some(capture::capture(&cx, c, &classes)?),
        };
    let name = scenario_name(&cx, raw.name, file)?;
    let info_hash = stand_in_info_hash(&name, &torrent);
    Ok(SwarmScenario {
        name,
        description: raw.description.unwrap_or_default(),
        seed: raw.run.seed.unwrap_or(1),
        duration,
        torrent: torrent.with_info_hash(info_hash),
        rtt,
        groups,
        tracker_group,
        ingress_loss,
        clock_offsets: match net.clock_offsets {
            Some(ClockOffsetsName::Zero) => ClockOffsets::Zero,
            _ => ClockOffsets::Random,
        },
        classes,
        metrics: SwarmMetrics {
            send_log_peers: m.send_log_peers.unwrap_or(0),
            haves: m.haves.unwrap_or(true),
            chokes: m.chokes.unwrap_or(true),
            connections: m.connections.unwrap_or(true),
            uplink_log_peers,
        },
        household,
        traffic,
        capture,
    })
}

/// A stand-in info hash (the model has no metainfo): the first 20 bytes of
/// SHA-256 over the scenario's name and the torrent's sizes. The handshakes
/// of a capture carry it, and the Fast Extension's allowed-fast sets hash it.
fn stand_in_info_hash(name: &str, t: &Torrent) -> [u8; 20] {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(format!("{name} {} {}", t.length, t.piece_length).as_bytes());
    d[..20].try_into().expect("32 bytes")
}

fn torrent(cx: &Ctx, t: &RawTorrent, file: &str) -> Result<Torrent, ScenarioError> {
    if let Some(path) = &t.file {
        if t.size.is_some() || t.piece_size.is_some() {
            return Err(cx.err("torrent.file", "give either a .torrent file or size and piece_size, not both"));
        }
        let full = std::path::Path::new(file).parent().map_or_else(|| path.into(), |d| d.join(path));
        let bytes = std::fs::read(&full)
            .map_err(|e| cx.err("torrent.file", format!("{} cannot be read: {e}", full.display())))?;
        let meta =
            TorrentMeta::from_bytes(&bytes).map_err(|e| cx.err("torrent.file", format!("{}: {e}", full.display())))?;
        // The same limits as for size and piece_size.
        return Torrent::checked(meta.length, meta.piece_length as u64)
            .map_err(|e| cx.err("torrent.file", format!("{}: {e}", full.display())));
    }
    let size = t
        .size
        .ok_or_else(|| cx.err("torrent.size", "missing: give the content size (e.g. \"50 MB\") or torrent.file"))?
        .0;
    let piece = t.piece_size.map_or(262_144, |p| p.0);
    Torrent::checked(size, piece).map_err(|e| match e {
        TorrentLimit::Empty => cx.err("torrent.size", "must be greater than zero"),
        TorrentLimit::PieceLength(_) => {
            cx.err("torrent.piece_size", format!("{piece} bytes is out of range; allowed: 16 KiB to 64 MiB"))
        }
        TorrentLimit::TooManyPieces(n) => cx.err(
            "torrent.size",
            format!("{n} pieces is more than {MAX_PIECES}; use a larger piece_size (at most 64 MiB)"),
        ),
    })
}
