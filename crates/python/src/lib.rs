//! `torrentlab._core`: the Rust engine seen from Python.
//!
//! Every pyo3 use of the project is here. Runs release the GIL; results come back
//! as columns of little-endian bytes (numeric) or lists (text), which the Python
//! package turns into DataFrames without copying element by element. Errors map
//! onto one exception class per kind; a panic becomes `SimulationError`, never a
//! crash of the interpreter.

use std::cell::RefCell;
use std::ops::ControlFlow;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use torrentlab_sim::capture::CaptureFile;
use torrentlab_sim::watch::SPILL_ROWS;
use torrentlab_sim::{
    run_swarm_watched, run_watched, AnyScenario, ColumnData, Look, Perf, ScenarioError as CoreScenarioError, Spill,
    Table,
};

/// The engine's memory on transparent huge pages where Linux allows (a swarm
/// jumps around tens of megabytes of small objects; see
/// `torrentlab_sim::HugePageHeap`). Only the extension's own allocations go
/// through it.
#[global_allocator]
static ALLOC: torrentlab_sim::HugePageHeap = torrentlab_sim::HugePageHeap;

create_exception!(_core, TorrentlabError, PyException, "Base class of every torrentlab error.");
create_exception!(
    _core,
    ScenarioError,
    TorrentlabError,
    "A scenario that cannot be run. Attributes: file, field, detail."
);
create_exception!(_core, SimulationError, TorrentlabError, "The engine failed while running a valid scenario (a bug).");
create_exception!(
    _core,
    Cancelled,
    TorrentlabError,
    "A run stopped through its CancelToken before the end; it has no results."
);

fn scenario_err(py: Python<'_>, e: CoreScenarioError) -> PyErr {
    let err = ScenarioError::new_err(e.to_string());
    let v = err.value(py);
    let _ = v.setattr("file", e.file);
    let _ = v.setattr("field", e.field);
    let _ = v.setattr("detail", e.message);
    err
}

fn load(py: Python<'_>, source: &str, text: Option<&str>, format: &str) -> PyResult<AnyScenario> {
    let r = match (format, text) {
        ("file", _) => AnyScenario::from_file(Path::new(source)),
        ("toml", Some(t)) => AnyScenario::from_toml_str(t, source),
        ("json", Some(t)) => AnyScenario::from_json_str(t, source),
        _ => return Err(pyo3::exceptions::PyValueError::new_err("format must be file, toml or json (with text)")),
    };
    r.map_err(|e| scenario_err(py, e))
}

/// Validates a scenario and returns a short description of it.
#[pyfunction]
#[pyo3(signature = (source, text=None, format="file"))]
fn validate<'py>(py: Python<'py>, source: &str, text: Option<&str>, format: &str) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let scenario = load(py, source, text, format)?;
    // Estimated peak bytes of the run and the field that drives most of them.
    // Runs from Python spill their growing logs to disk (see `run`).
    let footprint = torrentlab_sim::footprint::estimate(&scenario).spilled(SPILL_ROWS as u64);
    d.set_item("memory_bytes", footprint.bytes)?;
    d.set_item("memory_field", footprint.field)?;
    match scenario {
        AnyScenario::Dumbbell(sc) => {
            d.set_item("kind", "dumbbell")?;
            d.set_item("name", &sc.name)?;
            d.set_item("description", &sc.description)?;
            d.set_item("seed", sc.seed)?;
            d.set_item("duration_s", sc.duration.as_secs_f64())?;
            d.set_item("flows", sc.flows.len())?;
            d.set_item("controllers", sc.flows.iter().map(|f| f.cc.name()).collect::<Vec<_>>())?;
            d.set_item("bottleneck_bps", sc.network.bottleneck.capacity_bps)?;
        }
        AnyScenario::Swarm(sc) => {
            d.set_item("kind", "swarm")?;
            d.set_item("name", &sc.name)?;
            d.set_item("description", &sc.description)?;
            d.set_item("seed", sc.seed)?;
            d.set_item("duration_s", sc.duration.as_secs_f64())?;
            d.set_item("peers", sc.peer_count())?;
            d.set_item("leechers", sc.leecher_count())?;
            d.set_item("file_bytes", sc.torrent.length)?;
            d.set_item("pieces", sc.torrent.pieces())?;
        }
    }
    Ok(d)
}

/// Little-endian bytes of 8-byte values, written straight into a Python
/// `bytes` (no intermediate copy).
fn le_bytes<'py, T: Copy>(py: Python<'py>, v: &[T], le: impl Fn(T) -> [u8; 8]) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, v.len() * 8, |buf| {
        for (out, x) in buf.chunks_exact_mut(8).zip(v) {
            out.copy_from_slice(&le(*x));
        }
        Ok(())
    })
}

/// A table as a list of `(name, kind, data)` columns; each column's Rust
/// memory is freed as soon as it is copied, so a large table is not held twice.
fn table_to_py(py: Python<'_>, t: Table) -> PyResult<Bound<'_, PyList>> {
    let cols = PyList::empty(py);
    for c in t.columns {
        let (kind, data): (&str, PyObject) = match c.data {
            ColumnData::F64(v) => ("f64", le_bytes(py, &v, f64::to_le_bytes)?.into_any().unbind()),
            ColumnData::I64(v) => ("i64", le_bytes(py, &v, i64::to_le_bytes)?.into_any().unbind()),
            ColumnData::Str(v) => ("str", PyList::new(py, v)?.into_any().unbind()),
        };
        cols.append((c.name, kind, data))?;
    }
    Ok(cols)
}

fn output_to_py<'py>(
    py: Python<'py>,
    kind: &str,
    tables: Vec<(&'static str, Table)>,
    p: Perf,
    wall: f64,
    captures: Vec<CaptureFile>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("kind", kind)?;
    // `[capture]`'s files: (name, bytes), each freed as it is copied.
    let files = PyList::empty(py);
    for f in captures {
        files.append((f.name, PyBytes::new(py, &f.bytes)))?;
    }
    d.set_item("captures", files)?;
    let names = PyList::empty(py);
    for (name, t) in tables {
        d.set_item(name, table_to_py(py, t)?)?;
        names.append(name)?;
    }
    d.set_item("tables", names)?;
    let perf = PyDict::new(py);
    perf.set_item("events", p.events)?;
    perf.set_item("data_packets_delivered", p.data_packets_delivered)?;
    perf.set_item("sim_seconds", p.sim_seconds)?;
    perf.set_item("wall_seconds", wall)?;
    d.set_item("perf", perf)?;
    Ok(d)
}

/// A flag that stops the runs it is given to (`run(..., cancel=token)`), from
/// any thread: the engine looks at it every few milliseconds of wall time.
#[pyclass(module = "torrentlab._core", frozen)]
#[derive(Default)]
struct CancelToken {
    flag: Arc<AtomicBool>,
}

#[pymethods]
impl CancelToken {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Stops every run watching this token (those running and those to come).
    fn cancel(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }

    /// Whether `cancel` was called.
    #[getter]
    fn cancelled(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }
}

/// Wall time between two looks at Python from a running engine: pending
/// signals (Ctrl-C) and the progress callback.
const LOOK_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// Runs a scenario. `progress`, if given, is called with the simulated time in
/// seconds and the share of the run's work done (0 to 1, for a swarm: pieces
/// held by its leechers over those they need; `None` for a run that lasts its
/// duration) at most every 50 ms of wall time and once at the end. The GIL is
/// released while running; the engine takes it back every 50 ms to run
/// pending signal handlers (Ctrl-C raises `KeyboardInterrupt` from here, the
/// run stopped), and stops when `cancel` is cancelled (raising `Cancelled`)
/// or when `progress` raises (that exception comes out of `run`).
///
/// `spill`, if given, receives `(table, columns)` chunks of the logs that grow
/// with simulated time whenever one holds `spill_rows` rows; the returned
/// tables then hold only the rows after the last chunk. An exception raised
/// by `spill` stops the run and comes out of `run`.
#[pyfunction]
#[pyo3(signature = (source, text=None, format="file", seed=None, progress=None, cancel=None, spill=None, spill_rows=SPILL_ROWS))]
#[allow(clippy::too_many_arguments)]
fn run<'py>(
    py: Python<'py>,
    source: &str,
    text: Option<&str>,
    format: &str,
    seed: Option<u64>,
    progress: Option<PyObject>,
    cancel: Option<Py<CancelToken>>,
    spill: Option<PyObject>,
    spill_rows: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let mut sc = load(py, source, text, format)?;
    if let Some(s) = seed {
        sc.set_seed(s);
    }
    let flag = cancel.map(|c| c.get().flag.clone());
    let result = py.allow_threads(|| {
        catch_unwind(AssertUnwindSafe(|| {
            // Wall time is measured around the run, never read inside it.
            let t0 = Instant::now();
            // The interpreter's heap on huge pages too (once per process).
            torrentlab_sim::adopt_heap();
            // An exception from Python (a signal handler, progress, spill) stops the run.
            let raised: RefCell<Option<PyErr>> = RefCell::new(None);
            let mut last_look = t0;
            let mut last = Look::at(torrentlab_engine::Time::ZERO);
            let mut watch = |look: Look| {
                last = look;
                if raised.borrow().is_some() || flag.as_ref().is_some_and(|f| f.load(Ordering::Relaxed)) {
                    return ControlFlow::Break(());
                }
                let now = Instant::now();
                if now.duration_since(last_look) < LOOK_EVERY {
                    return ControlFlow::Continue(());
                }
                last_look = now;
                look_in(&progress, look, &raised)
            };
            let mut sink = |name: &'static str, chunk: Table| {
                if raised.borrow().is_some() {
                    return;
                }
                let Some(f) = &spill else { return };
                Python::with_gil(|py| {
                    if let Err(e) = table_to_py(py, chunk).and_then(|cols| f.call1(py, (name, cols))) {
                        *raised.borrow_mut() = Some(e);
                    }
                });
            };
            let mut spilling = Spill { rows: spill_rows.max(1), sink: &mut sink };
            let sp = spill.is_some().then_some(&mut spilling);
            let out = match &sc {
                AnyScenario::Dumbbell(sc) => run_watched(sc, &mut watch, sp).map(|o| {
                    let perf = o.perf;
                    ("dumbbell", o.into_tables(), perf, Vec::new())
                }),
                AnyScenario::Swarm(sc) => {
                    run_swarm_watched(sc, &mut watch, sp).map(|o| ("swarm", o.tables, o.perf, o.captures))
                }
            };
            // The last look, at the end of the run: progress sees the end time.
            let out = match out {
                Ok(o) if raised.borrow().is_none() => match look_in(&progress, last, &raised) {
                    ControlFlow::Continue(()) => Ok(o),
                    ControlFlow::Break(()) => Err(None),
                },
                Ok(_) => Err(None),
                Err(c) => Err(Some(c)),
            };
            let wall = t0.elapsed().as_secs_f64();
            (out.map(|(kind, tables, perf, captures)| (kind, tables, perf, wall, captures)), raised.into_inner())
        }))
    });
    match result {
        Ok((Ok((kind, tables, perf, wall, captures)), _)) => output_to_py(py, kind, tables, perf, wall, captures),
        Ok((Err(stopped), raised)) => Err(raised.unwrap_or_else(|| {
            let at = stopped.map_or(String::new(), |c| format!(" ({c})"));
            Cancelled::new_err(format!("{} was cancelled{at}", sc.name()))
        })),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(SimulationError::new_err(format!("internal error while running {}: {msg}", sc.name())))
        }
    }
}

/// One look at Python from a running engine: runs pending signal handlers and
/// the progress callback. An exception from either stops the run and is kept
/// in `raised`, to come out of `run`.
fn look_in(progress: &Option<PyObject>, look: Look, raised: &RefCell<Option<PyErr>>) -> ControlFlow<()> {
    Python::with_gil(|py| {
        let r = py.check_signals().and_then(|()| match progress {
            Some(p) => p.call1(py, (look.now.as_secs_f64(), look.done)).map(drop),
            None => Ok(()),
        });
        match r {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                *raised.borrow_mut() = Some(e);
                ControlFlow::Break(())
            }
        }
    })
}

/// Parses a size as scenarios write it (`"8 GiB"`, `"500 MB"`) into bytes;
/// `ValueError` with the engine's message otherwise.
#[pyfunction]
fn parse_size(text: &str) -> PyResult<u64> {
    torrentlab_sim::scenario::parse_size(text).map_err(pyo3::exceptions::PyValueError::new_err)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("TorrentlabError", m.py().get_type::<TorrentlabError>())?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("SimulationError", m.py().get_type::<SimulationError>())?;
    m.add("Cancelled", m.py().get_type::<Cancelled>())?;
    m.add_class::<CancelToken>()?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(parse_size, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The commit the extension was built from (build.rs), or "unknown".
    m.add("__git_commit__", env!("TORRENTLAB_GIT_COMMIT"))?;
    Ok(())
}
