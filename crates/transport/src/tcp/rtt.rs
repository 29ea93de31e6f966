//! Round-trip time estimation and the retransmission timer (RFC 6298).

use torrentlab_engine::{Duration, OptDuration};

use super::config::{RtoFormula, TcpConfig};

/// SRTT/RTTVAR estimator with exponential backoff.
///
/// The timer's bounds and formula are the connection's [`TcpConfig`], passed
/// in where the timeout is computed rather than copied into every endpoint.
#[derive(Clone, Debug, Default)]
pub struct RttEstimator {
    srtt: OptDuration,
    rttvar: Duration,
    latest: OptDuration,
    min_rtt: OptDuration,
    backoff_exp: u32,
}

impl RttEstimator {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one RTT measurement R (RFC 6298 §2.2-2.3, alpha = 1/8, beta = 1/4).
    pub fn on_sample(&mut self, r: Duration) {
        self.latest = OptDuration::some(r);
        self.min_rtt = OptDuration::some(self.min_rtt.get().map_or(r, |m| m.min(r)));
        match self.srtt.get() {
            None => {
                self.srtt = OptDuration::some(r);
                self.rttvar = Duration(r.0 / 2);
            }
            Some(srtt) => {
                let err = srtt.0.abs_diff(r.0);
                self.rttvar = Duration((3 * self.rttvar.0 + err) / 4);
                self.srtt = OptDuration::some(Duration((7 * srtt.0 + r.0) / 8));
            }
        }
    }

    /// Doubles the timeout (RFC 6298 (5.5)).
    pub fn on_timeout(&mut self) {
        self.backoff_exp = (self.backoff_exp + 1).min(30);
    }

    /// Clears the backoff once new data is acknowledged with a valid sample.
    pub fn reset_backoff(&mut self) {
        self.backoff_exp = 0;
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.srtt.get()
    }

    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    pub fn latest(&self) -> Option<Duration> {
        self.latest.get()
    }

    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt.get()
    }

    /// Times the timer has backed off since the last reset.
    pub fn backoff_count(&self) -> u32 {
        self.backoff_exp
    }

    /// The timeout without backoff, under `cfg`'s bounds and formula.
    pub fn base_rto(&self, cfg: &TcpConfig) -> Duration {
        let Some(srtt) = self.srtt.get() else { return cfg.initial_rto.max(cfg.min_rto) };
        let var4 = self.rttvar.saturating_mul(4);
        match cfg.rto_formula {
            RtoFormula::Rfc6298 => (srtt + var4.max(cfg.clock_granularity)).max(cfg.min_rto),
            RtoFormula::Linux => srtt + var4.max(cfg.min_rto),
        }
    }

    /// The current timeout: base RTO x 2^backoff, at most `cfg.max_rto`.
    pub fn rto(&self, cfg: &TcpConfig) -> Duration {
        let base = self.base_rto(cfg).min(cfg.max_rto);
        Duration(base.0.saturating_mul(1u64 << self.backoff_exp)).min(cfg.max_rto)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn before_any_sample_the_rto_is_the_initial_one_second() {
        assert_eq!(RttEstimator::new().rto(&TcpConfig::rfc()), ms(1000));
    }

    #[test]
    fn the_first_sample_sets_srtt_to_r_and_rttvar_to_half_r() {
        let (mut e, c) = (RttEstimator::new(), TcpConfig { min_rto: ms(1), ..TcpConfig::rfc() });
        e.on_sample(ms(100));
        assert_eq!(e.srtt(), Some(ms(100)));
        assert_eq!(e.rttvar(), ms(50));
        assert_eq!(e.rto(&c), ms(300));
    }

    #[test]
    fn later_samples_follow_the_rfc6298_ewma() {
        let (mut e, c) = (RttEstimator::new(), TcpConfig { min_rto: ms(1), ..TcpConfig::rfc() });
        e.on_sample(ms(100));
        e.on_sample(ms(200));
        // RTTVAR = 3/4*50 + 1/4*100 = 62.5; SRTT = 7/8*100 + 1/8*200 = 112.5
        assert_eq!(e.rttvar(), Duration(62_500_000));
        assert_eq!(e.srtt(), Some(Duration(112_500_000)));
        assert_eq!(e.rto(&c), Duration(362_500_000), "SRTT + 4 RTTVAR");
    }

    #[test]
    fn the_rto_doubles_on_each_timeout_up_to_the_maximum() {
        let (mut e, c) = (RttEstimator::new(), TcpConfig::rfc());
        e.on_sample(ms(100)); // RTO = max(1 s, 300 ms) = 1 s
        let mut seen = vec![e.rto(&c)];
        for _ in 0..8 {
            e.on_timeout();
            seen.push(e.rto(&c));
        }
        assert_eq!(seen[..4], [ms(1000), ms(2000), ms(4000), ms(8000)]);
        assert_eq!(*seen.last().unwrap(), ms(60_000));
        e.reset_backoff();
        assert_eq!(e.rto(&c), ms(1000));
    }

    #[test]
    fn the_linux_formula_keeps_the_rto_at_least_srtt_plus_200_ms() {
        let (mut e, c) = (RttEstimator::new(), TcpConfig::linux());
        for _ in 0..50 {
            e.on_sample(ms(50)); // RTTVAR decays towards 0
        }
        assert_eq!(e.rto(&c), ms(250));
        let (mut r, rc) = (RttEstimator::new(), TcpConfig { min_rto: ms(200), ..TcpConfig::rfc() });
        for _ in 0..50 {
            r.on_sample(ms(50));
        }
        assert_eq!(r.rto(&rc), ms(200), "RFC 6298 clamps the whole RTO at the minimum");
    }
}
