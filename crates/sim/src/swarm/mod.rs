//! Swarm runs: peers running BitTorrent clients over packet-level TCP or
//! uTP (see [`crate::scenario::swarm`] for the scenario and
//! [`crate::topology::swarm`] for the world it builds).

pub(crate) mod recorder;
mod report;

pub use report::SwarmOutput;

use std::ops::ControlFlow;

use torrentlab_engine::{Duration, Time};

use crate::scenario::SwarmScenario;
use crate::topology;
use crate::watch::{progress_only, watched, Cancelled, Spill, Watch};

/// Runs a swarm until every leecher is done (or the scenario's duration),
/// calling `progress` with the simulated time at least once per simulated minute.
pub fn run_swarm(sc: &SwarmScenario, progress: &mut dyn FnMut(Time)) -> SwarmOutput {
    run_swarm_watched(sc, &mut progress_only(progress), None).expect("a progress-only watch never stops a run")
}

/// Runs a swarm under a [`Watch`], called at least once per simulated minute
/// and once per [`crate::watch::WATCH_EVENTS`] events; a break stops the run
/// and returns [`Cancelled`]. With a [`Spill`], `haves`, `chokes`, `sends` and
/// `uplink_queue` are handed over in chunks as the run goes, and the output holds only their
/// last rows.
pub fn run_swarm_watched(
    sc: &SwarmScenario,
    watch: &mut Watch<'_>,
    spill: Option<&mut Spill<'_>>,
) -> Result<SwarmOutput, Cancelled> {
    let mut w = build(sc);
    watched(watch, |watch| w.run(Duration::from_secs(60), watch, spill))?;
    Ok(report::report(sc, w))
}

/// The world of a swarm run, with the uplink monitors of `metrics.uplink_log_peers` on.
fn build(sc: &SwarmScenario) -> crate::world::World {
    let mut w = topology::swarm::build(sc);
    recorder::enable_uplink_logs(&mut w.f.net, sc.metrics.uplink_log_peers);
    w
}

/// Runs a swarm and checks conservation: every packet and wire byte sent was
/// delivered, dropped, lost, or is in flight. Returns the output and the
/// packets in flight. For tests.
pub fn run_swarm_checked(sc: &SwarmScenario) -> (SwarmOutput, u64) {
    let mut w = build(sc);
    let _ = w.run(Duration::from_secs(60), &mut |_| ControlFlow::Continue(()), None);
    let s = w.f.net.stats();
    let (packets, bytes) = w.f.in_flight();
    assert_eq!(s.sent_packets, s.delivered_packets + s.dropped_packets + s.lost_packets + packets);
    assert_eq!(s.sent_bytes, s.delivered_bytes + s.dropped_bytes + s.lost_bytes + bytes);
    (report::report(sc, w), packets)
}
