//! # torrentlab-sim
//!
//! From a scenario to results:
//!
//! 1. [`scenario`]: a TOML file (or JSON from Python) is parsed, checked field by
//!    field, and turned into a [`Scenario`].
//! 2. `world`: the scenario is wired into hosts, links and flows, and the event
//!    loop runs them to the end (integer-nanosecond time, total event order, one
//!    RNG stream per entity derived from the run seed).
//! 3. [`RunOutput`]: columnar tables (flows, time series, bottleneck queue log,
//!    summary) ready for DataFrames and Parquet.
//!
//! Same scenario + same seed => identical output, bit for bit.

mod apps;
pub mod capture;
pub mod endpoint;
mod event_bits;
pub mod footprint;
mod hugepages;
pub use hugepages::{adopt_heap, HugePageHeap};
mod recorder;
mod report;
pub mod scenario;
pub mod swarm;
pub mod table;
mod timer;
mod topology;
pub mod watch;
mod world;

pub use endpoint::TransportKind;
pub use report::RunOutput;
pub use scenario::{AnyScenario, Scenario, ScenarioError, SwarmScenario};
pub use swarm::{run_swarm, run_swarm_watched, SwarmOutput};
pub use table::{digest_tables, jain_index, Column, ColumnData, Table};
pub use watch::{Cancelled, Look, Spill, Watch};
pub use world::Perf;

use std::ops::ControlFlow;

use torrentlab_engine::{Duration, Time};

/// Runs a scenario to completion.
pub fn run(sc: &Scenario) -> RunOutput {
    run_with_progress(sc, &mut |_| {})
}

/// Runs a scenario, calling `progress` with the simulated time at least once
/// per simulated second (and once at the end).
pub fn run_with_progress(sc: &Scenario, progress: &mut dyn FnMut(Time)) -> RunOutput {
    run_watched(sc, &mut watch::progress_only(progress), None).expect("a progress-only watch never stops a run")
}

/// Runs a scenario under a [`Watch`], called at least once per simulated
/// second and once per [`watch::WATCH_EVENTS`] events; a break stops the run
/// and returns [`Cancelled`]. With a [`Spill`], the growing logs are handed
/// over in chunks as the run goes, and the output holds only their last rows.
pub fn run_watched(
    sc: &Scenario,
    watch: &mut Watch<'_>,
    spill: Option<&mut Spill<'_>>,
) -> Result<RunOutput, Cancelled> {
    let mut w = topology::dumbbell::build(sc);
    watch::watched(watch, |watch| w.run(Duration::from_secs(1), watch, spill))?;
    Ok(report::report(sc, w))
}

/// Runs a scenario and checks conservation at the end: every packet and every
/// wire byte sent was delivered, dropped, lost, or is still in flight. Returns
/// the output and the packets in flight. For tests.
pub fn run_checked(sc: &Scenario) -> (RunOutput, u64) {
    let mut w = topology::dumbbell::build(sc);
    let _ = w.run(Duration::from_secs(1), &mut |_| ControlFlow::Continue(()), None);
    let s = w.f.net.stats();
    let (packets, bytes) = w.f.in_flight();
    assert_eq!(
        s.sent_packets,
        s.delivered_packets + s.dropped_packets + s.lost_packets + packets,
        "packets sent = delivered + dropped + lost + in flight"
    );
    assert_eq!(
        s.sent_bytes,
        s.delivered_bytes + s.dropped_bytes + s.lost_bytes + bytes,
        "bytes sent = delivered + dropped + lost + in flight"
    );
    (report::report(sc, w), packets)
}
