//! # torrentlab-engine
//!
//! The discrete-event core every other torrentlab crate builds on.
//!
//! * [`Time`] and [`Duration`] are integer nanoseconds: no floating-point clock, so
//!   a run is bit-for-bit reproducible on every machine.
//! * [`EventQueue`] orders events totally: by time, then by insertion sequence.
//!   Two events at the same instant fire in the order they were scheduled, and the
//!   queue refuses to schedule into the past, so simulated time never goes backwards.
//! * [`Lanes`] hold events known to fire in FIFO order (packets on one path),
//!   so only each lane's head needs a place in the queue.
//! * [`EntityRng`] gives every entity (host, flow, link...) its own random stream,
//!   derived from the run seed and the entity's id, so adding an entity never
//!   perturbs the random draws of another.
//!
//! Layers (dependencies point one way):
//! `engine` <- `net` <- `transport` <- `sim` <- `python`.

mod calendar;
mod compact;
pub mod prefetch;
mod queue;
mod rng;
mod time;

pub use compact::{OptDuration, OptTime, OptU64};
pub use queue::{EventQueue, Packed, Sift};
pub use rng::{EntityId, EntityRng};
pub use time::{Duration, Time};

mod lanes;
pub use lanes::{CacheLine, Lanes};
