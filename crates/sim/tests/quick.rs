use std::path::Path;
use torrentlab_sim::{run_checked, Scenario};

#[test]
fn rossi_a_runs() {
    let sc = Scenario::from_file(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/rossi2010/a-newreno-vs-ledbat.toml"))).unwrap();
    let t = std::time::Instant::now();
    let (out, _) = run_checked(&sc);
    eprintln!("wall {:?} perf {:?}", t.elapsed(), out.perf);
    eprintln!("{:?}", out.summary);
    eprintln!("{:?}", out.flows);
}
