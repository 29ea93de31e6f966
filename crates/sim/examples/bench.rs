//! Runs a scenario (default: the benchmark dumbbell) without Python, for
//! profilers: `cargo run --release -p torrentlab-sim --example bench [FILE]`.

use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/bench/dumbbell-100-newreno.toml")
    });
    let sc = match torrentlab_sim::Scenario::from_file(&path) {
        Ok(sc) => sc,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let t0 = Instant::now();
    let out = torrentlab_sim::run(&sc);
    let wall = t0.elapsed().as_secs_f64();
    let p = out.perf;
    println!(
        "wall {wall:.3} s, {} events ({:.0}/s), {} data packets delivered ({:.0}/s), {:.1} sim s per wall s",
        p.events,
        p.events as f64 / wall,
        p.data_packets_delivered,
        p.data_packets_delivered as f64 / wall,
        p.sim_seconds / wall
    );
}
