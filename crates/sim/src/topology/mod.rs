//! Topologies: how a scenario becomes a world (hosts, links, latency,
//! applications).

pub(crate) mod dumbbell;
pub(crate) mod household;
pub(crate) mod swarm;
