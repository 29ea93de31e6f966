//! TCP parameters and the presets: RFC, and Linux by era.

use serde::{Deserialize, Serialize};
use torrentlab_engine::Duration;

pub use super::recovery::{Frto, LossDetection, NewRenoTimer, RecoveryRate};

/// How the retransmission timeout is derived from the RTT estimate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RtoFormula {
    /// RFC 6298 §2: `RTO = max(min_rto, SRTT + max(G, 4 * RTTVAR))`.
    Rfc6298,
    /// Linux `tcp_set_rto`: `RTO = SRTT + max(4 * RTTVAR, min_rto)`, i.e. at
    /// least `SRTT + min_rto` (include/net/tcp.h, tcp_input.c).
    Linux,
}

/// Parameters of one TCP connection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TcpConfig {
    /// Maximum segment size: payload bytes per segment. 1448 with timestamps
    /// makes 1500-byte IP packets.
    pub mss: u32,
    /// Initial congestion window, in segments.
    pub initial_window: u32,
    /// When false the sender never uses slow start: ssthresh is kept at or below
    /// cwnd, so the window only grows by congestion avoidance (as E4 needs).
    pub slow_start: bool,
    /// Lower bound of the retransmission timeout.
    pub min_rto: Duration,
    /// Upper bound of the retransmission timeout (after backoff).
    pub max_rto: Duration,
    /// RTO before any RTT sample (RFC 6298 (2.1): 1 s).
    pub initial_rto: Duration,
    /// Clock granularity G of RFC 6298.
    pub clock_granularity: Duration,
    pub rto_formula: RtoFormula,
    /// `None`: ACK every segment. `Some(t)`: RFC 5681 §4.2 delayed ACKs: ACK
    /// every second full segment, or `t` after an unacknowledged one.
    pub delayed_ack: Option<Duration>,
    /// With delayed ACKs: segments ACKed at once after the first data and after
    /// a receive gap longer than `initial_rto` (Linux quick-ACK mode,
    /// `TCP_MAX_QUICKACKS` = 16, `tcp_event_data_recv`).
    pub quickacks: u32,
    /// Send RFC 7323 timestamps (12 option bytes per segment).
    pub timestamps: bool,
    /// Receive window the receiver advertises, in bytes.
    pub receive_window: u64,
    /// Duplicate ACKs that trigger fast retransmit (RFC 5681: 3).
    pub dupack_threshold: u32,
    /// Selective acknowledgements (RFC 2018) with SACK-based loss recovery
    /// (RFC 6675), on by default as in Linux; off: NewReno recovery.
    pub sack: bool,
    /// TCP segmentation offload: new data may leave as one segment of up to
    /// this many payload bytes (a multiple of the MSS) that travels as one
    /// unit. `None`: segments never exceed the MSS.
    pub tso_max: Option<u32>,
    /// Model connection setup and teardown: a three-way handshake before the
    /// data, FINs after it (see `TcpConnection`). Off: data flows from the start.
    pub handshake: bool,
    /// Nagle's algorithm as Linux does it (RFC 896 with Minshall's change,
    /// `tcp_nagle_check`): a segment shorter than the MSS waits while an
    /// earlier short segment is unacknowledged. Off: `TCP_NODELAY`.
    pub nagle: bool,
    /// Congestion window validation as Linux does it (`tcp_cwnd_validate`,
    /// `tcp_is_cwnd_limited`; RFC 7661's rule, RFC 9438 §5.8 for CUBIC): an
    /// ACK grows the window only while the sender is using it, i.e. the
    /// flight reached the window in the current round, or, in slow start, the
    /// window is below twice the round's largest flight. Off: every ACK of
    /// new data grows the window however little of it the application fills
    /// (RFC 5681 as written, and ns-3).
    pub cwnd_validation: bool,
    /// After an idle time longer than the RTO, new data restarts from the
    /// smaller of the initial window and cwnd, halving cwnd once for each
    /// further RTO of idleness down to that (Linux `tcp_cwnd_restart` under
    /// `tcp_slow_start_after_idle = 1`; RFC 2861 §3 and RFC 5681 §4.1's
    /// restart window). Off: a window survives any pause.
    pub slow_start_after_idle: bool,
    /// NewReno fast recovery (`sack = false`): whether only the first partial
    /// ACK restarts the retransmission timer (RFC 6582 §4 "Impatient") or
    /// every one does ("Slow-but-Steady", as Linux).
    pub newreno_timer: NewRenoTimer,
    /// A timeout inside a loss episode keeps the episode's ssthresh instead of
    /// recomputing it from the flight at the time (Linux `tcp_enter_loss`; see
    /// [`super::recovery::rto_reduces_ssthresh`]). Off: every timeout sets
    /// ssthresh from the flight (RFC 5681 eq. 4 as written).
    pub rto_keeps_recovery_ssthresh: bool,
    /// Limited transmit (RFC 3042 §2): one new segment on each of the first
    /// two duplicate ACKs, beyond cwnd.
    pub limited_transmit: bool,
    /// How fast a fast recovery sends: as RFC 6675 / RFC 6582 write it (with
    /// NewReno's window inflation), Linux 2.6's rate halving, or PRR (RFC
    /// 6937, Linux 3.2+). The last two never inflate the window: without SACK
    /// each duplicate ACK counts as a segment delivered, as in Linux.
    pub recovery_rate: RecoveryRate,
    /// With SACK: how a segment is found lost, by RFC 6675's duplicate-ACK
    /// rules or by RACK's send times (RFC 8985 §6, Linux 4.18+). Without SACK
    /// it is NewReno's either way, as in Linux.
    pub loss_detection: LossDetection,
    /// With SACK: the tail loss probe (RFC 8985 §7, Linux 3.10+): with data
    /// in flight and no loss known, one segment goes out two SRTTs after the
    /// last ACK so that a lost tail brings SACKs instead of a timeout.
    pub tail_loss_probe: bool,
    /// With SACK and RACK or FACK: F-RTO's spurious-timeout detection (RFC
    /// 5682) and the response to a spurious timeout.
    pub frto: Frto,
}

/// The largest TSO segment: 64 KiB of IP packet (Linux `GSO_MAX_SIZE`).
pub const TSO_MAX_PACKET: u32 = 65_536;

impl TcpConfig {
    /// RFC behaviour: RFC 5681/3390 initial window for the MSS, RFC 6298 RTO with a
    /// 1 s minimum, no delayed ACKs, timestamps and SACK on.
    pub fn rfc() -> Self {
        let mss = 1448;
        TcpConfig {
            mss,
            initial_window: Self::rfc5681_initial_window(mss),
            slow_start: true,
            min_rto: Duration::from_secs(1),
            max_rto: Duration::from_secs(60),
            initial_rto: Duration::from_secs(1),
            clock_granularity: Duration::from_millis(1),
            rto_formula: RtoFormula::Rfc6298,
            delayed_ack: None,
            quickacks: 16,
            timestamps: true,
            receive_window: 16 << 20,
            dupack_threshold: 3,
            sack: true,
            tso_max: None,
            handshake: false,
            nagle: false,
            cwnd_validation: false,
            slow_start_after_idle: false,
            newreno_timer: NewRenoTimer::Impatient,
            rto_keeps_recovery_ssthresh: false,
            limited_transmit: false,
            recovery_rate: RecoveryRate::Rfc,
            loss_detection: LossDetection::Rfc6675,
            tail_loss_probe: false,
            frto: Frto::Off,
        }
    }

    /// Linux >= 3.1 parameters with the RFC's loss recovery (the `linux`
    /// preset, kept as it was before the era presets): initial window 10 (RFC
    /// 6928), RTO >= SRTT + 200 ms, maximum RTO 120 s, delayed ACK 40 ms
    /// (`TCP_DELACK_MIN`), timestamps and SACK on, the window grows only while
    /// it is used ([`TcpConfig::cwnd_validation`]) and restarts after an idle
    /// RTO ([`TcpConfig::slow_start_after_idle`]). Its recovery is RFC 6675 /
    /// RFC 6582 as written, which no kernel does: see [`TcpConfig::linux_6`].
    pub fn linux() -> Self {
        TcpConfig {
            initial_window: 10,
            min_rto: Duration::from_millis(200),
            max_rto: Duration::from_secs(120),
            rto_formula: RtoFormula::Linux,
            delayed_ack: Some(Duration::from_millis(40)),
            cwnd_validation: true,
            slow_start_after_idle: true,
            ..Self::rfc()
        }
    }

    /// Linux 6.x: [`TcpConfig::linux`]'s parameters (initial window 10 since
    /// 2.6.39, initial RTO 1 s since 3.1) with the loss-recovery rules the
    /// model has of what 6.x does: the retransmission timer restarts on every
    /// ACK of data, a timeout inside a loss episode keeps its ssthresh,
    /// limited transmit, PRR without NewReno's window inflation, and with
    /// SACK RACK-TLP (RFC 8985) and F-RTO with undo (RFC 5682). (6.x's
    /// other undos, by timestamps and DSACKs, are not modelled.)
    pub fn linux_6() -> Self {
        TcpConfig {
            newreno_timer: NewRenoTimer::SlowButSteady,
            rto_keeps_recovery_ssthresh: true,
            limited_transmit: true,
            recovery_rate: RecoveryRate::Prr,
            loss_detection: LossDetection::Rack,
            tail_loss_probe: true,
            frto: Frto::Undo,
            ..Self::linux()
        }
    }

    /// Linux 2.6.32, the kernel of the 2010-13 BitTorrent studies:
    /// [`TcpConfig::linux_6`]'s timer, ssthresh and limited-transmit rules
    /// (2.6.32 had them too), rate halving where 6.x has PRR, FACK where 6.x
    /// has RACK-TLP (with SACK), and 2.6.32's
    /// parameters: the RFC 3390 initial window (3 segments at an MSS of
    /// 1448, [`TcpConfig::linux_2_6_32_initial_window`]) and an initial RTO of
    /// 3 s (RFC 1122; 1 s came with 3.1). The RTO formula, its 200 ms floor,
    /// the 40 ms delayed ACK, window validation and the restart after idle
    /// are as in [`TcpConfig::linux`]. With SACK, F-RTO answers a spurious
    /// timeout as 2.6's default did (cwnd = ssthresh). (2.6.32's undo by
    /// timestamps and DSACKs is not modelled.)
    pub fn linux_2_6_32() -> Self {
        let mss = 1448;
        TcpConfig {
            mss,
            initial_window: Self::linux_2_6_32_initial_window(mss),
            initial_rto: Duration::from_secs(3),
            recovery_rate: RecoveryRate::RateHalving,
            loss_detection: LossDetection::Fack,
            tail_loss_probe: false,
            frto: Frto::Reduce,
            ..Self::linux_6()
        }
    }

    /// Linux 2.6's `tcp_init_cwnd` (RFC 3390 with a 1460-byte threshold):
    /// 2 segments above an MSS of 1460 bytes, 3 above 1095, else 4.
    pub fn linux_2_6_32_initial_window(mss: u32) -> u32 {
        if mss > 1460 {
            2
        } else if mss > 1095 {
            3
        } else {
            4
        }
    }

    /// RFC 5681 §3.1 initial window in segments for a given SMSS:
    /// 2 above 2190 bytes, 3 above 1095, else 4.
    pub fn rfc5681_initial_window(mss: u32) -> u32 {
        if mss > 2190 {
            2
        } else if mss > 1095 {
            3
        } else {
            4
        }
    }
}

impl Default for TcpConfig {
    fn default() -> Self {
        Self::rfc()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rfc5681_initial_window_follows_the_smss_thresholds() {
        assert_eq!(TcpConfig::rfc5681_initial_window(536), 4);
        assert_eq!(TcpConfig::rfc5681_initial_window(1448), 3);
        assert_eq!(TcpConfig::rfc5681_initial_window(4000), 2);
    }

    #[test]
    fn the_linux_preset_has_a_200_ms_minimum_rto_and_initial_window_10() {
        let l = TcpConfig::linux();
        assert_eq!(l.min_rto, Duration::from_millis(200));
        assert_eq!(l.initial_window, 10);
        assert_eq!(TcpConfig::rfc().min_rto, Duration::from_secs(1));
    }

    #[test]
    fn linux_2_6_32_has_initial_window_3_and_an_initial_rto_of_3_s() {
        let old = TcpConfig::linux_2_6_32();
        assert_eq!(old.initial_window, 3);
        assert_eq!(old.initial_rto, Duration::from_secs(3));
        assert_eq!((old.min_rto, old.rto_formula), (Duration::from_millis(200), RtoFormula::Linux));
        assert_eq!(old.delayed_ack, Some(Duration::from_millis(40)));
        assert_eq!(old.newreno_timer, NewRenoTimer::SlowButSteady);
        assert!(old.rto_keeps_recovery_ssthresh && old.limited_transmit);
        assert_eq!(old.recovery_rate, RecoveryRate::RateHalving);
        assert_eq!((old.loss_detection, old.tail_loss_probe, old.frto), (LossDetection::Fack, false, Frto::Reduce));
        assert_eq!(TcpConfig::linux_2_6_32_initial_window(1460), 3);
        assert_eq!(TcpConfig::linux_2_6_32_initial_window(1461), 2, "2.6's threshold, not RFC 5681's 2190");
        assert_eq!(TcpConfig::linux_2_6_32_initial_window(1095), 4);
    }

    #[test]
    fn linux_6_has_initial_window_10_an_initial_rto_of_1_s_and_the_kernels_recovery_rules() {
        let new = TcpConfig::linux_6();
        assert_eq!((new.initial_window, new.initial_rto), (10, Duration::from_secs(1)));
        assert_eq!(new.newreno_timer, NewRenoTimer::SlowButSteady);
        assert!(new.rto_keeps_recovery_ssthresh && new.limited_transmit);
        assert_eq!(new.recovery_rate, RecoveryRate::Prr);
        assert_eq!((new.loss_detection, new.tail_loss_probe, new.frto), (LossDetection::Rack, true, Frto::Undo));
        let same_params = TcpConfig {
            newreno_timer: NewRenoTimer::Impatient,
            rto_keeps_recovery_ssthresh: false,
            limited_transmit: false,
            recovery_rate: RecoveryRate::Rfc,
            loss_detection: LossDetection::Rfc6675,
            tail_loss_probe: false,
            frto: Frto::Off,
            ..new
        };
        assert_eq!(same_params, TcpConfig::linux(), "linux-6 is the linux preset plus the recovery rules");
    }

    #[test]
    fn the_rfc_and_linux_presets_keep_the_rfc_recovery_rules() {
        for c in [TcpConfig::rfc(), TcpConfig::linux()] {
            assert_eq!(c.newreno_timer, NewRenoTimer::Impatient);
            assert!(!c.rto_keeps_recovery_ssthresh && !c.limited_transmit);
            assert_eq!(c.recovery_rate, RecoveryRate::Rfc);
            assert_eq!((c.loss_detection, c.tail_loss_probe, c.frto), (LossDetection::Rfc6675, false, Frto::Off));
        }
    }
}
