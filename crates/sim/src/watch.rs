//! Watching a run from outside: progress and cancellation.
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
