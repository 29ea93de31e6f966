//! Swarm runs: peers running BitTorrent clients over packet-level TCP or
//! uTP (see [`crate::scenario::swarm`] for the scenario and
//! [`crate::topology::swarm`] for the world it builds).

pub(crate) mod connections;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::AnyScenario;
    use crate::world::ConnTable;

    /// Leechers arriving one by one and leaving when done (connections open
    /// and close all run long), over TCP and uTP.
    fn churning_swarm() -> SwarmScenario {
        let toml = r#"
            [run]
            seed = 7
            duration = "30 min"
            [torrent]
            size = "1 MB"
            piece_size = "64 KiB"
            [network]
            rtt = "40 ms"
            [network.access]
            up = "2 Mbit/s"
            down = "unlimited"
            buffer = "1 s"
            [metrics]
            connections = true
            send_log_peers = 4
            [[peers]]
            role = "seed"
            upload_limit = "unlimited"
            [[peers]]
            role = "leecher"
            count = 40
            join = { poisson = "4 s", start = "0 s" }
            departure = "leave"
            upload_limit = "unlimited"
            [[peers]]
            role = "leecher"
            count = 20
            transport = "utp"
            join = { poisson = "8 s", start = "0 s" }
            departure = "leave"
            upload_limit = "unlimited"
        "#;
        match AnyScenario::from_toml_str(toml, "churning.toml") {
            Ok(AnyScenario::Swarm(s)) => s,
            other => panic!("not a swarm: {:?}", other.err()),
        }
    }

    fn run(sc: &SwarmScenario, recycle: bool) -> (SwarmOutput, usize) {
        let mut w = build(sc);
        w.f.conns = ConnTable::new(recycle, 0);
        let _ = w.run(Duration::from_secs(60), &mut |_| ControlFlow::Continue(()), None);
        let places = w.f.conns.len();
        (report::report(sc, w), places)
    }

    #[test]
    fn reusing_the_places_of_connections_that_are_over_changes_no_table() {
        let sc = churning_swarm();
        let (kept, places_kept) = run(&sc, false);
        let (reused, places_reused) = run(&sc, true);
        for ((name, a), (_, b)) in kept.tables.iter().zip(&reused.tables) {
            assert_eq!(a.digest(), b.digest(), "table {name}");
        }
        let conns = kept.table("connections").rows();
        assert_eq!(places_kept, conns, "without reuse, a place per connection opened");
        assert!(places_reused * 2 < conns, "{places_reused} places for {conns} connections");
    }
}
