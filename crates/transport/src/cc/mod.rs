//! Congestion control as a plug-in (the split of ns-3's `TcpCongestionOps` and
//! quinn's `Controller`): loss detection and recovery live in the transport; a
//! controller only decides how the window moves.
//!
//! Each controller is a triple: the algorithm, its config (whose `Default` is the
//! published constants), and [`CcConfig::build`].

use serde::{Deserialize, Serialize};
mod controller;
mod cubic;
mod ledbat;
mod lp;
mod newreno;
mod nice;
mod vegas;

pub use controller::Controller;
pub use cubic::{Cubic, CubicConfig};
pub use ledbat::{Ledbat, LedbatConfig};
pub use lp::{Lp, LpConfig};
pub use newreno::NewReno;
pub use nice::{Nice, NiceConfig};
pub use vegas::{Vegas, VegasConfig};

use torrentlab_engine::{Duration, Time};

/// The window state a controller acts on. All sizes are bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Congestion window.
    pub cwnd: u64,
    /// Slow-start threshold.
    pub ssthresh: u64,
    /// Sender maximum segment size (payload bytes).
    pub mss: u32,
}

impl Window {
    /// True while the window is below ssthresh (RFC 5681 §3.1).
    #[inline]
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
}

/// What one acknowledgement tells the controller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckSample {
    pub now: Time,
    /// The cumulative acknowledgement number (next byte the receiver expects).
    pub ack: u64,
    /// The sender's next new byte to send (marks the end of the current round:
    /// Vegas and Nice act once per RTT, when an ACK passes it).
    pub snd_nxt: u64,
    /// Bytes newly acknowledged cumulatively by this ACK (0 for a duplicate).
    pub bytes_acked: u64,
    /// Round-trip time measured from the echoed timestamp (RFC 7323), only on
    /// ACKs that advance the left edge of the window.
    pub rtt: Option<Duration>,
    /// One-way delay: the receiver's clock when it sent the ACK minus the sender's
    /// clock when the echoed segment left. Includes any clock offset between the
    /// hosts, which a base-delay estimate cancels.
    pub one_way_delay: Option<Duration>,
    /// Bytes in flight before this ACK.
    pub bytes_in_flight: u64,
    /// The sender is not using its window (the application or the
    /// receiver's window holds it back: Linux `!tcp_is_cwnd_limited`, see
    /// `TcpConfig::cwnd_validation`). Controllers built on Linux's
    /// `tcp_reno_cong_avoid` or CUBIC's then leave the window as it is.
    pub app_limited: bool,
}

/// The hooks a congestion controller implements.
pub trait CongestionControl: Send {
    /// Short name for reports ("newreno", "ledbat").
    fn name(&self) -> &'static str;

    /// Every ACK, before any other hook: delay-based controllers update their
    /// delay estimates here (duplicate ACKs included).
    fn on_sample(&mut self, _sample: &AckSample) {}

    /// A cumulative ACK of new data outside loss recovery: move the window.
    fn on_ack(&mut self, w: &mut Window, sample: &AckSample);

    /// Loss inferred from duplicate ACKs: the new ssthresh in bytes.
    /// `flight` is the data outstanding when the loss was detected.
    fn ssthresh_after_loss(&mut self, w: &Window, flight: u64) -> u64 {
        (flight / 2).max(2 * w.mss as u64)
    }

    /// The retransmission timer fired (RFC 5681 eq. 4: ssthresh = max(FlightSize/2,
    /// 2 SMSS), cwnd = 1 SMSS, the loss window).
    fn on_timeout(&mut self, w: &mut Window, flight: u64) {
        w.ssthresh = (flight / 2).max(2 * w.mss as u64);
        w.cwnd = w.mss as u64;
    }

    /// The window after a timeout that leaves ssthresh as it was (a repeated
    /// timeout, or one inside a fast recovery: see
    /// `TcpConfig::rto_keeps_recovery_ssthresh`): the loss window of
    /// [`CongestionControl::on_timeout`] without its reduction.
    fn loss_window(&self, w: &Window) -> u64 {
        w.mss as u64
    }

    /// New data leaves with nothing in flight, `idle` after the previous new
    /// data left (Linux `CA_EVENT_TX_START`). Not called while the window is
    /// in its first slow start (ssthresh not yet set), when no controller
    /// here has anything to move.
    fn on_tx_start(&mut self, _now: Time, _idle: Duration) {}

    /// The controller's current estimate of queueing delay, for metrics.
    fn queuing_delay(&self) -> Option<Duration> {
        None
    }
}

/// Adds `delta` bytes (possibly fractional, possibly negative) to the window,
/// carrying the sub-byte remainder in `frac` so many small steps add up exactly,
/// and never going below `floor` bytes.
#[inline]
pub(crate) fn grow(w: &mut Window, delta: f64, frac: &mut f64, floor: u64) {
    let next = w.cwnd as f64 + delta + *frac;
    if next <= floor as f64 {
        w.cwnd = floor;
        *frac = 0.0;
    } else {
        let whole = next.floor();
        *frac = next - whole;
        w.cwnd = whole as u64;
    }
}

/// Which controller a flow uses, with its parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum CcConfig {
    NewReno,
    Cubic(CubicConfig),
    Vegas(VegasConfig),
    Lp(LpConfig),
    Nice(NiceConfig),
    Ledbat(LedbatConfig),
}

impl CcConfig {
    pub fn build(&self) -> Controller {
        match self {
            CcConfig::NewReno => Controller::NewReno(NewReno::default()),
            CcConfig::Cubic(c) => Controller::Cubic(Cubic::new(c.clone())),
            CcConfig::Vegas(c) => Controller::Vegas(Vegas::new(c.clone())),
            CcConfig::Lp(c) => Controller::Lp(Lp::new(c.clone())),
            CcConfig::Nice(c) => Controller::Nice(Box::new(Nice::new(c.clone()))),
            CcConfig::Ledbat(c) => Controller::Ledbat(Box::new(Ledbat::new(c.clone()))),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            CcConfig::NewReno => "newreno",
            CcConfig::Cubic(_) => "cubic",
            CcConfig::Vegas(_) => "vegas",
            CcConfig::Lp(_) => "lp",
            CcConfig::Nice(_) => "nice",
            CcConfig::Ledbat(_) => "ledbat",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::TcpConfig;
    use crate::utp::{UtpCcConfig, UtpConfig};

    #[test]
    fn every_config_round_trips_through_serde_with_its_published_defaults() {
        let ccs = [
            CcConfig::NewReno,
            CcConfig::Cubic(CubicConfig::default()),
            CcConfig::Vegas(VegasConfig::default()),
            CcConfig::Lp(LpConfig::default()),
            CcConfig::Nice(NiceConfig::default()),
            CcConfig::Ledbat(LedbatConfig::default()),
        ];
        for cc in ccs {
            let json = serde_json::to_string(&cc).unwrap();
            assert_eq!(serde_json::from_str::<CcConfig>(&json).unwrap(), cc, "{json}");
        }
        let cubic = serde_json::to_value(CubicConfig::default()).unwrap();
        assert_eq!((cubic["c"].as_f64(), cubic["beta"].as_f64()), (Some(0.4), Some(0.7)));
        for tcp in [TcpConfig::rfc(), TcpConfig::linux()] {
            let json = serde_json::to_string(&tcp).unwrap();
            assert_eq!(serde_json::from_str::<TcpConfig>(&json).unwrap(), tcp);
        }
        let utp = UtpConfig { cc: UtpCcConfig::rfc6817(), ..UtpConfig::default() };
        let json = serde_json::to_string(&utp).unwrap();
        assert_eq!(serde_json::from_str::<UtpConfig>(&json).unwrap(), utp);
    }
}
