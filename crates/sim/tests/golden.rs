//! Golden result digests: runs every shipped scenario and compares a SHA-256
//! digest of each of its output tables ([`Table::digest`]) with the checked-in
//! `tests/golden/digests.txt`. Any change of any result fails here until that
//! file is rewritten and committed with a message saying why results changed:
//!
//! ```sh
//! TORRENTLAB_BLESS=1 cargo test -p torrentlab-sim --test golden
//! ```
//!
//! Sweeps (`*.sweep.toml`) are a Python-level format and are not run here
//! (`tests/test_golden_sweeps.py` expands and validates each shipped one).
//! Scenarios too slow for the test profile run at a smaller size, reduced
//! deterministically by [`REDUCED`]; the reduction is part of the scenario's
//! name in the digest file, so changing it shows as a mismatch too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use torrentlab_sim::{AnyScenario, Table};

/// Scenarios run at a smaller size than shipped, with the TOML fields set
/// (dotted key, value) before parsing. Each takes well over 10 s in the dev
/// profile at full size (a 50 MB torrent to 100-300 leechers); at 3 MB each
/// takes a few seconds, as `bench/ab.py --size "3 MB"` does for E0.
const REDUCED: &[(&str, &str, &str)] = &[
    ("scenarios/bench/rao2010-rtt400-20k.toml", "torrent.size", "3MB"),
    ("scenarios/bench/testa2012-31-75.toml", "torrent.size", "3MB"),
    ("scenarios/bench/testa2012-tcp-75.toml", "torrent.size", "3MB"),
    ("scenarios/bench/testa2012-utp-75.toml", "torrent.size", "3MB"),
    ("scenarios/bench/testa2013-cubic-utp-75.toml", "torrent.size", "3MB"),
    ("scenarios/rao2010/as-placement.toml", "torrent.size", "3MB"),
    ("scenarios/rao2010/flash-crowd.toml", "torrent.size", "3MB"),
    ("scenarios/testa2012/swarm.toml", "torrent.size", "3MB"),
    ("scenarios/testa2013/swarm.toml", "torrent.size", "3MB"),
];

/// A scenario that runs longer than this unreduced is reported (not failed:
/// the machine's speed varies), as a hint to add it to [`REDUCED`].
const SLOW_SECS: f64 = 10.0;

const BLESS: &str = "TORRENTLAB_BLESS";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn digest_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/digests.txt")
}

/// Every `*.toml` under `dir`, recursively, sweeps included.
fn toml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            toml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "toml") {
            out.push(path);
        }
    }
}

/// The shipped scenarios (not sweeps), as (name relative to the repository
/// root through the `scenarios/` link, file), sorted.
fn shipped_scenarios() -> Vec<(String, PathBuf)> {
    let dir = root().join("python/torrentlab/scenarios");
    let mut files = Vec::new();
    toml_files(&dir, &mut files);
    let mut out: Vec<_> = files
        .into_iter()
        .filter(|p| !p.to_string_lossy().ends_with(".sweep.toml"))
        .map(|p| {
            let rel = p.strip_prefix(&dir).unwrap().to_string_lossy().replace('\\', "/");
            (format!("scenarios/{rel}"), p)
        })
        .collect();
    out.sort();
    out
}

/// Sets the dotted field `key` (tables only) of a TOML document to the string `value`.
fn set_dotted(doc: &mut toml::Table, key: &str, value: &str) {
    let (parents, leaf) = key.rsplit_once('.').map_or((None, key), |(p, l)| (Some(p), l));
    let mut node = doc;
    for part in parents.into_iter().flat_map(|p| p.split('.')) {
        node = node
            .get_mut(part)
            .and_then(toml::Value::as_table_mut)
            .unwrap_or_else(|| panic!("reduction {key}: no table {part}"));
    }
    assert!(node.contains_key(leaf), "reduction {key}: the scenario has no such field");
    node.insert(leaf.to_string(), toml::Value::String(value.to_string()));
}

/// Loads a scenario, applying its reduction if it has one. Returns the name it
/// goes by in the digest file (`path` or `path[key=value]`) and the scenario.
fn load(name: &str, path: &Path) -> (String, AnyScenario) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{name}: {e}"));
    let (label, text) = match REDUCED.iter().find(|(n, ..)| *n == name) {
        None => (name.to_string(), text),
        Some((_, key, value)) => {
            let mut doc: toml::Table = toml::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            set_dotted(&mut doc, key, value);
            (format!("{name}[{key}={value}]"), toml::to_string(&doc).unwrap())
        }
    };
    let sc = AnyScenario::from_toml_str(&text, name).unwrap_or_else(|e| panic!("{name}: {e}"));
    (label, sc)
}

/// Runs a scenario; its output tables by name, in the order they are written.
fn run(sc: &AnyScenario) -> Vec<(&'static str, Table)> {
    match sc {
        AnyScenario::Dumbbell(sc) => torrentlab_sim::run(sc).into_tables(),
        AnyScenario::Swarm(sc) => torrentlab_sim::run_swarm(sc, &mut |_| {}).tables,
    }
}

/// The data lines of a digest file (comments and blank lines left out), keyed
/// by (scenario, table).
fn entries(text: &str) -> BTreeMap<(String, String), String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut f = l.split_whitespace();
            let key = (f.next().unwrap_or("").to_string(), f.next().unwrap_or("").to_string());
            (key, l.to_string())
        })
        .collect()
}

const HEADER: &str = "\
# Golden result digests: one line per shipped scenario and output table,
# `scenario table rows sha256`, the SHA-256 of the table's canonical
# serialisation (torrentlab_sim::Table::digest). A scenario written
# `path[key=value]` ran with that field reduced (crates/sim/tests/golden.rs,
# REDUCED) to keep the test affordable.
#
# Checked by `cargo test -p torrentlab-sim --test golden`. When results change
# on purpose, rewrite this file with
#     TORRENTLAB_BLESS=1 cargo test -p torrentlab-sim --test golden
# and commit it with a message saying why the results changed.
";

#[test]
fn every_shipped_scenario_gives_the_checked_in_digest_of_each_output_table() {
    let scenarios = shipped_scenarios();
    assert!(scenarios.len() >= 10, "found only {} scenarios: is the scenarios directory there?", scenarios.len());
    for (name, ..) in REDUCED {
        assert!(scenarios.iter().any(|(n, _)| n == name), "REDUCED names {name}, which is not a shipped scenario");
    }

    let t_all = Instant::now();
    let mut lines = Vec::new();
    for (name, path) in &scenarios {
        let (label, sc) = load(name, path);
        let t = Instant::now();
        let tables = run(&sc);
        let secs = t.elapsed().as_secs_f64();
        eprintln!("golden: {label}: {secs:.2} s");
        if secs > SLOW_SECS && label == *name {
            eprintln!("golden: warning: {name} took {secs:.1} s (over {SLOW_SECS} s): consider reducing it in REDUCED");
        }
        assert!(!tables.is_empty(), "{name}: no output tables");
        for (table, t) in &tables {
            lines.push(format!("{label} {table} {} {}", t.rows(), t.digest()));
        }
    }
    lines.sort();
    eprintln!(
        "golden: {} scenarios, {} tables in {:.1} s",
        scenarios.len(),
        lines.len(),
        t_all.elapsed().as_secs_f64()
    );

    let file = digest_file();
    if std::env::var_os(BLESS).is_some_and(|v| v == "1") {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, format!("{HEADER}\n{}\n", lines.join("\n"))).unwrap();
        eprintln!("golden: wrote {}", file.display());
        return;
    }

    let want = entries(&std::fs::read_to_string(&file).unwrap_or_default());
    let got = entries(&lines.join("\n"));
    let mut report = Vec::new();
    for (key, line) in &want {
        match got.get(key) {
            None => report.push(format!("  missing (in the file, not produced): {line}")),
            Some(g) if g != line => report.push(format!("  changed:\n    was: {line}\n    now: {g}")),
            Some(_) => {}
        }
    }
    for (key, line) in &got {
        if !want.contains_key(key) {
            report.push(format!("  extra (produced, not in the file): {line}"));
        }
    }
    assert!(
        report.is_empty(),
        "the results differ from {}:\n{}\n\nIf the change is intended, run\n    {BLESS}=1 cargo test -p \
         torrentlab-sim --test golden\nto rewrite the file, and commit it with a message saying why the results \
         changed.",
        file.display(),
        report.join("\n")
    );
}
