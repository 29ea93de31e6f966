#![allow(dead_code)]
use std::path::{Path, PathBuf};

use torrentlab_engine::Duration;
use torrentlab_sim::Scenario;

pub fn scenario_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(rel)
}

/// A shipped scenario, optionally shortened to `secs` seconds.
pub fn shipped(rel: &str, secs: Option<u64>) -> Scenario {
    let mut sc = Scenario::from_file(&scenario_path(rel)).expect("shipped scenario is valid");
    if let Some(s) = secs {
        sc.duration = Duration::from_secs(s);
    }
    sc
}

/// Window rates (bit/s) by flow label.
pub fn rate(out: &torrentlab_sim::RunOutput, flow: usize) -> f64 {
    out.flows.f64_column("window_rate_bps")[flow]
}

pub fn summary(out: &torrentlab_sim::RunOutput, col: &str) -> f64 {
    out.summary.f64_column(col)[0]
}

/// A swarm scenario from TOML text (`file` names it in errors); panics on
/// any other kind or an error.
pub fn swarm_from_toml(toml: &str, file: &str) -> torrentlab_sim::SwarmScenario {
    match torrentlab_sim::AnyScenario::from_toml_str(toml, file) {
        Ok(torrentlab_sim::AnyScenario::Swarm(s)) => s,
        Ok(_) => panic!("{file}: not a swarm"),
        Err(e) => panic!("{e}"),
    }
}

/// A text column of a swarm run's table.
pub fn strs(out: &torrentlab_sim::SwarmOutput, table: &str, col: &str) -> Vec<String> {
    match out.table(table).column(col) {
        Some(torrentlab_sim::ColumnData::Str(v)) => v.clone(),
        _ => panic!("no {table}.{col}"),
    }
}
