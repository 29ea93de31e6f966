//! Hosts, their access links, the latency core and ingress loss.

use torrentlab_engine::{Duration, EntityId, EntityRng, Time};

use crate::link::{Link, LinkConfig, LinkStats, Offer};

/// Index of a host in a [`Network`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostId(pub u32);

/// Index of a link in a [`Network`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LinkId(pub u32);

/// RNG stream kind tag for hosts (see [`EntityId::new`]).
const RNG_KIND_HOST: u16 = 1;

/// A host's attachment to the network.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostConfig {
    /// Host -> core direction.
    pub uplink: LinkConfig,
    /// Core -> host direction.
    pub downlink: LinkConfig,
    /// Probability that a packet arriving at the host (after its downlink) is
    /// lost, independently per packet (Bernoulli), in [0, 1].
    pub ingress_loss: f64,
}

/// The core: one-way propagation delay per (src, dst) pair, no capacity limit.
#[derive(Clone, Debug, PartialEq)]
pub enum Latency {
    /// The same one-way delay between every pair.
    Uniform(Duration),
    /// Row-major `n x n` one-way delays: `delays[src * n + dst]`.
    Matrix { n: usize, delays: Vec<Duration> },
    /// Hosts in groups (emulated ASes): `delays[g_src * groups + g_dst]`
    /// between the groups of `of_host[src]` and `of_host[dst]`.
    Groups { of_host: Vec<u16>, groups: usize, delays: Vec<Duration> },
}

impl Latency {
    #[inline]
    pub fn one_way(&self, src: HostId, dst: HostId) -> Duration {
        match self {
            Latency::Uniform(d) => *d,
            Latency::Matrix { n, delays } => delays[src.0 as usize * n + dst.0 as usize],
            Latency::Groups { of_host, groups, delays } => {
                delays[of_host[src.0 as usize] as usize * groups + of_host[dst.0 as usize] as usize]
            }
        }
    }
}

/// Where a packet is going next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transit {
    /// Dropped by a full queue on `link`.
    Dropped { link: LinkId },
    /// Will reach the entrance of `link` (a host's downlink) at `time`;
    /// call [`Network::arrive`] then.
    AtLink { link: LinkId, time: Time },
    /// Will reach `host` at `time`; call [`Network::ingress`] then.
    AtHost { host: HostId, time: Time },
}

/// Packet counters for the whole network.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetworkStats {
    /// Packets handed to [`Network::send`].
    pub sent_packets: u64,
    pub sent_bytes: u64,
    /// Packets dropped by full queues.
    pub dropped_packets: u64,
    pub dropped_bytes: u64,
    /// Packets lost to ingress loss.
    pub lost_packets: u64,
    pub lost_bytes: u64,
    /// Packets that made it to their destination host.
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
}

impl NetworkStats {
    /// Packets still in flight: sent minus delivered, dropped and lost.
    pub fn in_flight_packets(&self) -> u64 {
        self.sent_packets - self.delivered_packets - self.dropped_packets - self.lost_packets
    }
}

struct Host {
    uplink: LinkId,
    downlink: LinkId,
    ingress_loss: f64,
    rng: EntityRng,
}

/// The whole network of one run.
///
/// Every capacity-limited uplink keeps its queueing-delay histogram and the
/// time its queue was non-empty ([`Link::enable_queue_stats`]).
pub struct Network {
    hosts: Vec<Host>,
    links: Vec<Link>,
    /// Owner host of each link's far end (the host a downlink feeds).
    link_dst: Vec<HostId>,
    latency: Latency,
    stats: NetworkStats,
}

impl Network {
    /// Builds a network; host `i` gets `HostId(i)` and its own loss RNG stream.
    pub fn new(run_seed: u64, hosts: &[HostConfig], latency: Latency) -> Self {
        if let Latency::Matrix { n, delays } = &latency {
            assert_eq!(*n, hosts.len(), "latency matrix size must equal the host count");
            assert_eq!(delays.len(), n * n, "latency matrix must be n x n");
        }
        if let Latency::Groups { of_host, groups, delays } = &latency {
            assert_eq!(of_host.len(), hosts.len(), "every host needs a group");
            assert!(of_host.iter().all(|&g| (g as usize) < *groups), "group index out of range");
            assert_eq!(delays.len(), groups * groups, "group delays must be groups x groups");
        }
        let mut links = Vec::with_capacity(hosts.len() * 2);
        let mut link_dst = Vec::with_capacity(hosts.len() * 2);
        let hosts = hosts
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let uplink = LinkId(links.len() as u32);
                let mut up = Link::new(h.uplink);
                up.enable_queue_stats(); // per-host uplink summaries; nothing if unlimited
                links.push(up);
                link_dst.push(HostId(u32::MAX)); // an uplink feeds the core
                let downlink = LinkId(links.len() as u32);
                links.push(Link::new(h.downlink));
                link_dst.push(HostId(i as u32));
                Host {
                    uplink,
                    downlink,
                    ingress_loss: h.ingress_loss,
                    rng: EntityRng::new(run_seed, EntityId::new(RNG_KIND_HOST, i as u64)),
                }
            })
            .collect();
        Network { hosts, links, link_dst, latency, stats: NetworkStats::default() }
    }

    pub fn host_count(&self) -> usize {
        self.hosts.len()
    }

    pub fn uplink(&self, h: HostId) -> LinkId {
        self.hosts[h.0 as usize].uplink
    }

    pub fn downlink(&self, h: HostId) -> LinkId {
        self.hosts[h.0 as usize].downlink
    }

    pub fn link_mut(&mut self, l: LinkId) -> &mut Link {
        &mut self.links[l.0 as usize]
    }

    pub fn link(&self, l: LinkId) -> &Link {
        &self.links[l.0 as usize]
    }

    pub fn stats(&self) -> NetworkStats {
        self.stats
    }

    /// Per-link counters as of `now`, in link order.
    pub fn link_stats(&mut self, now: Time) -> Vec<LinkStats> {
        self.links.iter_mut().map(|l| l.stats(now)).collect()
    }

    /// A host hands a packet of `bytes` wire bytes to its uplink at `now`.
    #[inline]
    pub fn send(&mut self, now: Time, src: HostId, dst: HostId, bytes: u32) -> Transit {
        self.stats.sent_packets += 1;
        self.stats.sent_bytes += bytes as u64;
        let up = self.hosts[src.0 as usize].uplink;
        match self.links[up.0 as usize].offer(now, bytes) {
            Offer::Dropped => self.dropped(up, bytes),
            Offer::Departs { arrival, .. } => {
                let t = arrival + self.latency.one_way(src, dst);
                let down = &mut self.links[self.hosts[dst.0 as usize].downlink.0 as usize];
                if down.capacity_bps().is_none() {
                    // No queue and no serialisation: the downlink only adds its
                    // delay, so the packet's arrival at the host is known now.
                    match down.offer(t, bytes) {
                        Offer::Departs { arrival, .. } => Transit::AtHost { host: dst, time: arrival },
                        Offer::Dropped => unreachable!("an unlimited link never drops"),
                    }
                } else {
                    Transit::AtLink { link: self.hosts[dst.0 as usize].downlink, time: t }
                }
            }
        }
    }

    /// A packet reaches the entrance of `link` (a downlink) at `now`.
    #[inline]
    pub fn arrive(&mut self, now: Time, link: LinkId, bytes: u32) -> Transit {
        match self.links[link.0 as usize].offer(now, bytes) {
            Offer::Dropped => self.dropped(link, bytes),
            Offer::Departs { arrival, .. } => Transit::AtHost { host: self.link_dst[link.0 as usize], time: arrival },
        }
    }

    /// A packet reaches `host`: applies its ingress loss. True if delivered.
    #[inline]
    pub fn ingress(&mut self, host: HostId, bytes: u32) -> bool {
        let h = &mut self.hosts[host.0 as usize];
        if h.ingress_loss > 0.0 && h.rng.bernoulli(h.ingress_loss) {
            self.stats.lost_packets += 1;
            self.stats.lost_bytes += bytes as u64;
            false
        } else {
            self.stats.delivered_packets += 1;
            self.stats.delivered_bytes += bytes as u64;
            true
        }
    }

    fn dropped(&mut self, link: LinkId, bytes: u32) -> Transit {
        self.stats.dropped_packets += 1;
        self.stats.dropped_bytes += bytes as u64;
        Transit::Dropped { link }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::BufferLimit;

    fn host(up: Option<u64>, down: Option<u64>, loss: f64) -> HostConfig {
        let l = |c| LinkConfig { capacity_bps: c, buffer: BufferLimit::Packets(10), delay: Duration::ZERO };
        HostConfig { uplink: l(up), downlink: l(down), ingress_loss: loss }
    }

    #[test]
    fn a_packet_crosses_uplink_core_and_downlink_in_order() {
        let hosts = [host(Some(8_000_000), None, 0.0), host(None, Some(8_000_000), 0.0)];
        let mut n = Network::new(1, &hosts, Latency::Uniform(Duration::from_millis(25)));
        // 1000 bytes at 1 byte/us = 1 ms on the uplink, 25 ms core.
        let t1 = match n.send(Time::ZERO, HostId(0), HostId(1), 1000) {
            Transit::AtLink { link, time } => {
                assert_eq!(link, n.downlink(HostId(1)));
                time
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(t1, Time(26_000_000));
        assert_eq!(
            n.arrive(t1, n.downlink(HostId(1)), 1000),
            Transit::AtHost { host: HostId(1), time: Time(27_000_000) }
        );
        assert!(n.ingress(HostId(1), 1000));
        assert_eq!(n.stats().in_flight_packets(), 0);
    }

    #[test]
    fn the_latency_matrix_is_indexed_by_source_then_destination() {
        let ms = Duration::from_millis;
        let lat = Latency::Matrix { n: 2, delays: vec![ms(0), ms(5), ms(7), ms(0)] };
        assert_eq!(lat.one_way(HostId(0), HostId(1)), ms(5));
        assert_eq!(lat.one_way(HostId(1), HostId(0)), ms(7));
    }

    #[test]
    fn group_latency_is_looked_up_by_the_groups_of_both_hosts() {
        let ms = Duration::from_millis;
        let lat = Latency::Groups { of_host: vec![0, 1, 1], groups: 2, delays: vec![ms(4), ms(30), ms(30), ms(10)] };
        assert_eq!(lat.one_way(HostId(1), HostId(2)), ms(10), "same group");
        assert_eq!(lat.one_way(HostId(0), HostId(2)), ms(30));
        assert_eq!(lat.one_way(HostId(0), HostId(0)), ms(4));
    }

    #[test]
    fn ingress_loss_of_one_loses_everything_and_zero_loses_nothing() {
        let hosts = [host(None, None, 1.0), host(None, None, 0.0)];
        let mut n = Network::new(1, &hosts, Latency::Uniform(Duration::ZERO));
        for _ in 0..100 {
            assert!(!n.ingress(HostId(0), 100));
            assert!(n.ingress(HostId(1), 100));
        }
        assert_eq!(n.stats().lost_packets, 100);
    }
}
