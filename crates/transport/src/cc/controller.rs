//! [`Controller`]: any of the built-in congestion controllers, stored inline.
//!
//! A TCP sender touches its controller on every ACK. Held in an enum next to
//! the sender's own state (rather than behind a `Box<dyn _>` elsewhere on the
//! heap), it needs no allocation and its calls can be inlined.
//! The enum is as large as its largest variant, and every endpoint of a swarm
//! pays for it whichever controller it runs, so the two largest (Nice, which
//! carries a whole Vegas, and LEDBAT with its delay histories) are boxed.
//! Controllers from outside this crate still fit, boxed, as [`Controller::Other`].

use torrentlab_engine::{Duration, Time};

use super::{AckSample, CongestionControl, Cubic, Ledbat, Lp, NewReno, Nice, Vegas, Window};

/// One of the built-in controllers, or any other behind a box.
pub enum Controller {
    NewReno(NewReno),
    Cubic(Cubic),
    Vegas(Vegas),
    Lp(Lp),
    Nice(Box<Nice>),
    Ledbat(Box<Ledbat>),
    Other(Box<dyn CongestionControl>),
}

/// Calls `$call` on whichever controller `$self` holds.
macro_rules! each {
    ($self:expr, $c:ident => $call:expr) => {
        match $self {
            Controller::NewReno($c) => $call,
            Controller::Cubic($c) => $call,
            Controller::Vegas($c) => $call,
            Controller::Lp($c) => $call,
            Controller::Nice($c) => $call,
            Controller::Ledbat($c) => $call,
            Controller::Other($c) => $call,
        }
    };
}

impl CongestionControl for Controller {
    fn name(&self) -> &'static str {
        each!(self, c => c.name())
    }

    #[inline]
    fn on_sample(&mut self, sample: &AckSample) {
        each!(self, c => c.on_sample(sample))
    }

    #[inline]
    fn on_ack(&mut self, w: &mut Window, sample: &AckSample) {
        each!(self, c => c.on_ack(w, sample))
    }

    fn ssthresh_after_loss(&mut self, w: &Window, flight: u64) -> u64 {
        each!(self, c => c.ssthresh_after_loss(w, flight))
    }

    fn on_timeout(&mut self, w: &mut Window, flight: u64) {
        each!(self, c => c.on_timeout(w, flight))
    }

    fn loss_window(&self, w: &Window) -> u64 {
        each!(self, c => c.loss_window(w))
    }

    #[inline]
    fn on_tx_start(&mut self, now: Time, idle: Duration) {
        each!(self, c => c.on_tx_start(now, idle))
    }

    fn queuing_delay(&self) -> Option<Duration> {
        each!(self, c => c.queuing_delay())
    }
}

impl From<Box<dyn CongestionControl>> for Controller {
    fn from(c: Box<dyn CongestionControl>) -> Self {
        Controller::Other(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::CcConfig;

    #[test]
    fn the_controller_enum_is_no_larger_than_cubic_needs() {
        assert!(std::mem::size_of::<Controller>() <= std::mem::size_of::<Cubic>() + 8);
    }

    #[test]
    fn every_config_builds_the_controller_it_names() {
        for cfg in [CcConfig::NewReno, CcConfig::Cubic(Default::default()), CcConfig::Ledbat(Default::default())] {
            assert_eq!(cfg.build().name(), cfg.name());
        }
        let boxed: Controller = (Box::new(NewReno::default()) as Box<dyn CongestionControl>).into();
        assert_eq!(boxed.name(), "newreno");
    }
}
