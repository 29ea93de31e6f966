//! Runs a scenario (default: the benchmark dumbbell) without Python, for
//! profilers: `cargo run --release -p torrentlab-sim --features hugepages --example bench [FILE] [--digest]`.
//!
//! Like the Python front, a swarm hands the rows of its growing logs over
//! every `SPILL_ROWS` rows (here they are dropped; not with `--digest`), so the peak
//! memory it prints (the kernel's `VmHWM`) is the engine's and its tables'.
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
            let mut spilled = 0usize;
            let mut sink = |_: &'static str, t: torrentlab_sim::Table| spilled += t.rows();
            let mut spill = torrentlab_sim::Spill { rows: torrentlab_sim::watch::SPILL_ROWS, sink: &mut sink };
            // The digests cover whole tables: nothing is spilled for them.
            let spill = if digest { None } else { Some(&mut spill) };
            let out = torrentlab_sim::run_swarm_watched(sc, &mut |_| std::ops::ControlFlow::Continue(()), spill)
                .expect("a watch that never breaks never stops a run");
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
    if let Some(kb) = peak_kb() {
        println!("peak memory {:.1} MB", kb as f64 / 1024.0);
    }
}

/// The process's peak resident memory (`VmHWM`, KB), where the kernel says.
fn peak_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
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
