//! Applications that run on the world's hosts (see [`crate::world::App`]).

pub(crate) mod bittorrent;
pub(crate) mod bulk;
#[cfg(test)]
pub(crate) mod cbr;
pub(crate) mod cross;
mod frames;

pub(crate) use frames::ConnFrames;
