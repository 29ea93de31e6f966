//! Spilling: a run that hands over its growing logs in chunks gives, chunk
//! after chunk and then its final rows, exactly the tables of a run that keeps
//! them in memory.

mod common;

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use torrentlab_sim::{Spill, Table};

/// Tables as comparable text (Debug compares NaN cells as equal, unlike `==`).
fn text(tables: &BTreeMap<&'static str, Table>) -> BTreeMap<&'static str, String> {
    tables.iter().map(|(k, t)| (*k, format!("{:?}", t.columns))).collect()
}

/// Appends `more`'s rows to `t` (same columns).
fn append(t: &mut Table, more: Table) {
    if t.columns.is_empty() {
        *t = more;
        return;
    }
    for (c, m) in t.columns.iter_mut().zip(more.columns) {
        assert_eq!(c.name, m.name);
        match (&mut c.data, m.data) {
            (torrentlab_sim::ColumnData::F64(a), torrentlab_sim::ColumnData::F64(b)) => a.extend(b),
            (torrentlab_sim::ColumnData::I64(a), torrentlab_sim::ColumnData::I64(b)) => a.extend(b),
            (torrentlab_sim::ColumnData::Str(a), torrentlab_sim::ColumnData::Str(b)) => a.extend(b),
            _ => panic!("column {} changed type", c.name),
        }
    }
}

/// Runs with a spill of `rows` rows; returns every table reassembled and the
/// number of chunks handed over.
fn spilled(
    rows: usize,
    run: impl FnOnce(&mut Spill<'_>) -> Vec<(&'static str, Table)>,
) -> (BTreeMap<&'static str, Table>, usize) {
    let mut chunks: Vec<(&'static str, Table)> = Vec::new();
    let mut sink = |name: &'static str, t: Table| chunks.push((name, t));
    let last = run(&mut Spill { rows, sink: &mut sink });
    let n = chunks.len();
    let mut all: BTreeMap<&'static str, Table> = BTreeMap::new();
    for (name, t) in chunks.into_iter().chain(last) {
        append(all.entry(name).or_default(), t);
    }
    (all, n)
}

fn swarm(toml: &str) -> torrentlab_sim::SwarmScenario {
    match torrentlab_sim::AnyScenario::from_toml_str(toml, "spill.toml") {
        Ok(torrentlab_sim::AnyScenario::Swarm(sc)) => sc,
        other => panic!("not a valid swarm: {other:?}"),
    }
}

#[test]
fn a_dumbbell_run_spilled_in_small_chunks_reassembles_into_the_tables_of_one_kept_in_memory() {
    let sc = common::shipped("rossi2010/b-ledbat-vs-ledbat.toml", Some(20));
    let whole: BTreeMap<_, _> = torrentlab_sim::run(&sc).into_tables().into_iter().collect();
    assert!(whole["queue"].rows() > 5_000 && whole["timeseries"].rows() > 100);
    let (parts, chunks) = spilled(1000, |sp| {
        torrentlab_sim::run_watched(&sc, &mut |_| ControlFlow::Continue(()), Some(sp)).unwrap().into_tables()
    });
    assert!(chunks >= 5, "the queue log was handed over in several chunks ({chunks})");
    assert_eq!(text(&parts), text(&whole));
}

#[test]
fn a_swarm_run_spilled_in_small_chunks_reassembles_into_the_tables_of_one_kept_in_memory() {
    let sc = swarm(
        r#"
        [run]
        seed = 5
        duration = "3 h"
        [torrent]
        size = "2 MB"
        [network]
        rtt = "100 ms"
        [metrics]
        chokes = true
        send_log_peers = 2
        [[peers]]
        role = "seed"
        upload_limit = "20 kB/s"
        [[peers]]
        role = "leecher"
        count = 8
        upload_limit = "20 kB/s"
        "#,
    );
    let whole: BTreeMap<_, _> = torrentlab_sim::run_swarm(&sc, &mut |_| {}).tables.into_iter().collect();
    assert!(whole["sends"].rows() > 500 && whole["chokes"].rows() > 50);
    let (parts, chunks) = spilled(100, |sp| {
        torrentlab_sim::run_swarm_watched(&sc, &mut |_| ControlFlow::Continue(()), Some(sp)).unwrap().tables
    });
    assert!(chunks >= 3, "the logs were handed over in several chunks ({chunks})");
    assert_eq!(text(&parts), text(&whole));
}

#[test]
fn a_swarm_whose_uplinks_are_logged_spills_the_uplink_log_in_chunks_that_reassemble_into_the_whole() {
    let sc = swarm(
        r#"
        [run]
        seed = 4
        duration = "3 h"
        [torrent]
        size = "6 MB"
        [network]
        rtt = "100 ms"
        [network.access]
        up = "400 kbit/s"
        buffer = "50 packets"
        [metrics]
        uplink_log_peers = 3
        [[peers]]
        role = "seed"
        upload_limit = "40 kB/s"
        [[peers]]
        role = "leecher"
        count = 5
        upload_limit = "20 kB/s"
        "#,
    );
    let whole: BTreeMap<_, _> = torrentlab_sim::run_swarm(&sc, &mut |_| {}).tables.into_iter().collect();
    assert!(whole["uplink_queue"].rows() > 1000);
    let (parts, chunks) = spilled(50, |sp| {
        torrentlab_sim::run_swarm_watched(&sc, &mut |_| ControlFlow::Continue(()), Some(sp)).unwrap().tables
    });
    assert!(chunks >= 3, "the uplink log was handed over in several chunks ({chunks})");
    assert_eq!(text(&parts), text(&whole));
}
