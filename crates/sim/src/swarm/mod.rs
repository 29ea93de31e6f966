//! Swarm runs: peers running BitTorrent clients over packet-level TCP (see
//! [`crate::scenario::swarm`] for the scenario).

mod conn;
mod packet;
mod recorder;
mod report;
mod world;

pub use report::SwarmOutput;

use torrentlab_engine::{Duration, Time};

use crate::scenario::SwarmScenario;

/// Runs a swarm until every leecher is done (or the scenario's duration),
/// calling `progress` with the simulated time about once per simulated minute.
pub fn run_swarm(sc: &SwarmScenario, progress: &mut dyn FnMut(Time)) -> SwarmOutput {
    let mut w = world::SwarmWorld::build(sc);
    w.run(Duration::from_secs(60), progress);
    report::report(sc, w)
}

/// Runs a swarm and checks conservation: every packet and wire byte sent was
/// delivered, dropped, lost, or is in flight. Returns the output and the
/// packets in flight. For tests.
pub fn run_swarm_checked(sc: &SwarmScenario) -> (SwarmOutput, u64) {
    let mut w = world::SwarmWorld::build(sc);
    w.run(Duration::from_secs(60), &mut |_| {});
    let s = w.net.stats();
    let (packets, bytes) = w.in_flight();
    assert_eq!(s.sent_packets, s.delivered_packets + s.dropped_packets + s.lost_packets + packets);
    assert_eq!(s.sent_bytes, s.delivered_bytes + s.dropped_bytes + s.lost_bytes + bytes);
    (report::report(sc, w), packets)
}
