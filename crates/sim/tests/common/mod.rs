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
