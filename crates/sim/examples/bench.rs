//! Runs a scenario (default: the benchmark dumbbell) without Python, for
//! profilers: `cargo run --release -p torrentlab-sim --features hugepages --example bench [FILE] [--digest]`.
//!
//! `--digest` also prints the SHA-256 of every output table (swarm or dumbbell;
//! `Table::digest`, as in `tests/golden/digests.txt`) and one over all of them
//! (`digest_tables`), so a change meant only to make things faster can be
//! checked to leave every result as it was.

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
            let perf = out.perf;
            if digest {
                print_digest(&out.into_tables());
            }
            perf
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
                print_digest(&out.tables);
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

/// Prints each table's SHA-256 (`table NAME ROWS SHA256`), then one over all
/// of them in order (`digest SHA256 over N tables`).
fn print_digest(tables: &[(&'static str, torrentlab_sim::Table)]) {
    for (name, t) in tables {
        println!("table {name} {} {}", t.rows(), t.digest());
    }
    let all = torrentlab_sim::digest_tables(tables.iter().map(|(name, t)| (*name, t)));
    println!("digest {all} over {} tables", tables.len());
}
