//! Runs a scenario (default: the benchmark dumbbell) without Python, for
//! profilers: `cargo run --release -p torrentlab-sim --example bench [FILE] [--digest]`.
//!
//! `--digest` also prints a hash of every row of every output table (swarm or
//! dumbbell), so a change meant only to make things faster can be checked to
//! leave every result as it was.

use std::path::PathBuf;
use std::time::Instant;

/// As the Python extension does: the heap on huge pages.
#[global_allocator]
static ALLOC: torrentlab_sim::HugePageHeap = torrentlab_sim::HugePageHeap;

fn main() {
    let digest = std::env::args().any(|a| a == "--digest");
    let path = std::env::args().skip(1).find(|a| a != "--digest").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/bench/dumbbell-100-newreno.toml")
    });
    let sc = match torrentlab_sim::AnyScenario::from_file(&path) {
        Ok(sc) => sc,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let t0 = Instant::now();
    let p = match &sc {
        torrentlab_sim::AnyScenario::Dumbbell(sc) => {
            let out = torrentlab_sim::run(sc);
            if digest {
                let tables = [&out.flows, &out.timeseries, &out.queue, &out.summary];
                print_digest(tables.iter().map(|t| format!("{:?}", t.columns)));
            }
            out.perf
        }
        torrentlab_sim::AnyScenario::Swarm(sc) => {
            let out = torrentlab_sim::run_swarm(sc, &mut |_| {});
            let s = out.table("summary");
            println!(
                "completed {} of {} leechers, mean download {:.1} s (min {:.1}, max {:.1})",
                s.i64_column("completed")[0],
                s.i64_column("leechers")[0],
                s.f64_column("mean_download_time_s")[0],
                s.f64_column("min_download_time_s")[0],
                s.f64_column("max_download_time_s")[0]
            );
            if digest {
                print_digest(out.tables.iter().map(|(name, t)| format!("{name}: {:?}", t.columns)));
            }
            out.perf
        }
    };
    let wall = t0.elapsed().as_secs_f64();
    println!(
        "wall {wall:.3} s, {} events ({:.0}/s), {} data packets delivered ({:.0}/s), {:.1} sim s per wall s",
        p.events,
        p.events as f64 / wall,
        p.data_packets_delivered,
        p.data_packets_delivered as f64 / wall,
        p.sim_seconds / wall
    );
}

/// Prints a hash of the tables' text (`Debug` prints floats exactly, in their
/// shortest round-trip form).
fn print_digest(tables: impl Iterator<Item = String>) {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut h = DefaultHasher::new();
    let mut n = 0;
    for t in tables {
        t.hash(&mut h);
        n += 1;
    }
    println!("digest {:016x} over {n} tables", h.finish());
}
