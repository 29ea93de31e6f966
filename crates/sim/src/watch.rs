//! Watching a run from outside: progress, cancellation, and the rows of its
//! growing logs handed over as it goes.
//!
//! The event loops call a [`Watch`] with the simulated time at least once per
//! progress interval of simulated time and once per [`WATCH_EVENTS`] events.
//! A watch that returns [`ControlFlow::Break`] stops the run where it is: the
//! caller gets [`Cancelled`] instead of results. Watching reads nothing of the
//! world, so a run that is not stopped gives the same results however it is
//! watched.

use std::fmt;
use std::ops::ControlFlow;

use torrentlab_engine::Time;

use crate::table::Table;

/// Called by an event loop with the simulated time; `Break` stops the run.
pub type Watch<'a> = dyn FnMut(Time) -> ControlFlow<()> + 'a;

/// Events between two calls of the watch, whatever the simulated time does
/// (at a few million events per wall second, about every 10-20 ms of wall time).
pub const WATCH_EVENTS: u32 = 1 << 16;

/// A run stopped by its watch before the end; it has no results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled {
    /// The simulated time at which the run stopped.
    pub at: Time,
}

impl fmt::Display for Cancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the run was stopped at {:.3} simulated s", self.at.as_secs_f64())
    }
}

impl std::error::Error for Cancelled {}

/// A watch that only reports progress and never stops the run.
pub fn progress_only(progress: &mut dyn FnMut(Time)) -> impl FnMut(Time) -> ControlFlow<()> + '_ {
    move |t| {
        progress(t);
        ControlFlow::Continue(())
    }
}

/// Rows a log holds in memory before the Python front hands them to disk
/// (see [`Spill`]): 2^20 rows, 8 to 100 MB depending on the table.
pub const SPILL_ROWS: usize = 1 << 20;

/// Where a run hands over the rows of its logs that grow with simulated time
/// (the dumbbell's `queue` and `timeseries`, a swarm's `haves`, `chokes` and
/// `sends`), so they need not grow in memory. At each call of the watch, a
/// log holding `rows` or more rows is handed to `sink` as a chunk and emptied;
/// the run's final tables hold only the rows after the last chunk. The chunks
/// of a table, in order, followed by its final rows, are exactly the rows a
/// run without spilling gives.
pub struct Spill<'a> {
    /// Rows a log may hold before it is handed over.
    pub rows: usize,
    /// Receives a table's name and a chunk of its rows.
    pub sink: &'a mut dyn FnMut(&'static str, Table),
}
