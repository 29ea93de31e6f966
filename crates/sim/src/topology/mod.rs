//! Topologies: how a scenario becomes a world (hosts, links, latency,
//! applications).

pub(crate) mod dumbbell;
pub(crate) mod swarm;
