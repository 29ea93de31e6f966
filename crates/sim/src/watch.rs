//! Watching a run from outside: progress, cancellation, and the rows of its
//! growing logs handed over as it goes.
//!
//! The event loops call a [`Watch`] with a [`Look`] (the simulated time and
//! the share of the run's work done) at least once per progress interval of
//! simulated time and once per [`WATCH_EVENTS`] events.
//! A watch that returns [`ControlFlow::Break`] stops the run where it is: the
//! caller gets [`Cancelled`] instead of results. Watching reads nothing of the
//! world, so a run that is not stopped gives the same results however it is
//! watched.

use std::fmt;
use std::ops::ControlFlow;

use torrentlab_engine::{Duration, Time};

use crate::table::Table;

/// What a watch is shown of a running world.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Look {
    /// The simulated time.
    pub now: Time,
    /// The share of the run's work done, 0 to 1, for a run that ends when its
    /// work is done, usually long before its duration (a swarm: the pieces
    /// its leechers hold over the pieces they need); `None` for a run that
    /// lasts its whole duration (a dumbbell).
    pub done: Option<f64>,
}

impl Look {
    /// A look at `now` of a run that lasts its duration.
    pub fn at(now: Time) -> Look {
        Look { now, done: None }
    }
}

/// Called by an event loop with a [`Look`]; `Break` stops the run.
pub type Watch<'a> = dyn FnMut(Look) -> ControlFlow<()> + 'a;

/// Events between two calls of the watch, whatever the simulated time does
/// (at a few million events per wall second, about every 10-20 ms of wall time).
pub const WATCH_EVENTS: u32 = 1 << 16;

/// When an event loop calls its watch: once `every` of simulated time has
/// passed since the last call for time, or [`WATCH_EVENTS`] events since the
/// last call, whichever comes first.
pub(crate) struct Pacer {
    every: Duration,
    next: Time,
    countdown: u32,
}

impl Pacer {
    pub fn new(every: Duration) -> Self {
        Pacer { every, next: Time::ZERO + every, countdown: WATCH_EVENTS }
    }

    /// Counts one event at `now`; true when the watch is due.
    #[inline]
    pub fn due(&mut self, now: Time) -> bool {
        self.countdown -= 1;
        if now < self.next && self.countdown > 0 {
            return false;
        }
        self.countdown = WATCH_EVENTS;
        if now >= self.next {
            self.next = now + self.every;
        }
        true
    }
}

/// Runs an event loop (`run`, given the watch to call) under `watch`; a break
/// becomes [`Cancelled`] at the last simulated time watched.
pub(crate) fn watched(
    watch: &mut Watch<'_>,
    run: impl FnOnce(&mut Watch<'_>) -> ControlFlow<()>,
) -> Result<(), Cancelled> {
    let mut last = Time::ZERO;
    match run(&mut |look| {
        last = look.now;
        watch(look)
    }) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(()) => Err(Cancelled { at: last }),
    }
}

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

/// A watch that only reports the simulated time and never stops the run.
pub fn progress_only(progress: &mut dyn FnMut(Time)) -> impl FnMut(Look) -> ControlFlow<()> + '_ {
    move |look| {
        progress(look.now);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pacer_is_due_once_per_interval_of_simulated_time() {
        let mut p = Pacer::new(Duration::from_secs(1));
        let due: Vec<u64> = (0..40).map(|i| i * 100_000_000).filter(|&t| p.due(Time(t))).collect();
        assert_eq!(due, vec![1_000_000_000, 2_000_000_000, 3_000_000_000]);
    }

    #[test]
    fn the_pacer_is_due_every_so_many_events_when_simulated_time_stands_still() {
        let mut p = Pacer::new(Duration::from_secs(1));
        let due = (0..3 * WATCH_EVENTS as u64).filter(|_| p.due(Time(5))).count();
        assert_eq!(due, 3);
    }

    #[test]
    fn a_break_becomes_cancelled_at_the_last_time_watched() {
        let mut seen = Vec::new();
        let r = watched(
            &mut |look| {
                seen.push(look.now);
                if look.now >= Time(30) {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
            |w| {
                for t in [10, 20, 30, 40] {
                    w(Look::at(Time(t)))?;
                }
                ControlFlow::Continue(())
            },
        );
        assert_eq!(r, Err(Cancelled { at: Time(30) }));
        assert_eq!(seen, vec![Time(10), Time(20), Time(30)]);
    }
}
