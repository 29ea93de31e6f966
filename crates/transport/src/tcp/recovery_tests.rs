//! The loss-recovery switches of [`super::recovery`] on scripted exchanges:
//! the NewReno timer policy, ssthresh on a timeout inside a loss episode, and
//! limited transmit. Helpers come from `tests.rs`.

use super::tests::{ack, cfg, drain, ms, sack_ack, sack_cfg, sender, seqs, transfer_with, MSS};
use super::*;
use torrentlab_engine::Duration;

use crate::cc::CcConfig;

/// Six holes in a 20-segment window, one repaired per 250 ms RTT: the
/// recovery lasts 1.75 s, longer than the 1 s RTO.
fn six_holes(timer: NewRenoTimer) -> TcpSender {
    let c = TcpConfig { initial_window: 20, newreno_timer: timer, ..cfg() };
    let (s, r, _) = transfer_with(c, CcConfig::NewReno, 60 * MSS, &[2, 5, 8, 11, 14, 17], 125);
    assert_eq!(r.delivered(), 60 * MSS);
    s
}

#[test]
fn slow_but_steady_restarts_the_timer_on_every_partial_ack_so_six_holes_are_repaired_without_a_timeout() {
    let s = six_holes(NewRenoTimer::SlowButSteady).stats();
    assert_eq!(s.timeouts, 0);
    assert_eq!(s.fast_retransmits, 1, "one recovery, five partial ACKs");
    assert_eq!(s.retransmitted_segments, 6, "exactly the six holes, no go-back-N");
    let impatient = six_holes(NewRenoTimer::Impatient).stats();
    assert_eq!(impatient.timeouts, 1, "the RFC 6582 timer fires 1 s after the first partial ACK");
    assert!(impatient.retransmitted_segments > 6, "and goes back to the first hole left");
}

/// A NewReno (or SACK) sender with 10 segments out, segment 0 lost and the
/// other nine acknowledged by duplicates (SACKed with SACK): in fast recovery
/// with ssthresh 5 segments, and new data sent beyond the original flight
/// (NewReno by inflation, SACK by pipe).
fn in_recovery_with_new_data(sack: bool, keep: bool) -> TcpSender {
    let base = if sack { sack_cfg() } else { TcpConfig { initial_window: 10, ..cfg() } };
    let mut s = sender(TcpConfig { rto_keeps_recovery_ssthresh: keep, ..base }, 100 * MSS);
    assert_eq!(drain(&mut s, ms(0)).len(), 10);
    for i in 2..=10 {
        let a = if sack { sack_ack(0, &[(1, i)], ms(50)) } else { ack(0, ms(25), ms(0)) };
        s.handle_ack(ms(50), &a);
        drain(&mut s, ms(50));
    }
    assert!(s.info().in_recovery);
    assert_eq!(s.window().ssthresh, 5 * MSS);
    assert!(s.snd_max() > 12 * MSS, "new data went out during the recovery: {}", s.snd_max() / MSS);
    s
}

#[test]
fn an_rto_inside_recovery_keeps_the_recovery_ssthresh_and_a_second_backed_off_rto_keeps_it_too() {
    for sack in [false, true] {
        let mut s = in_recovery_with_new_data(sack, true);
        let first = s.poll_timeout().unwrap();
        s.handle_timeout(first);
        assert_eq!(s.stats().timeouts, 1);
        assert_eq!((s.window().ssthresh, s.window().cwnd), (5 * MSS, MSS), "sack {sack}: the recovery's ssthresh");
        drain(&mut s, first);
        let second = s.poll_timeout().unwrap();
        assert_eq!(second - first, s.rto(), "backed off");
        s.handle_timeout(second);
        assert_eq!((s.window().ssthresh, s.window().cwnd), (5 * MSS, MSS), "sack {sack}: kept again");
        // Once data is acknowledged after a timeout, another one reduces again
        // (Linux: `icsk_retransmits` is back to 0).
        drain(&mut s, second);
        s.handle_ack(second + Duration::from_millis(50), &ack(MSS, second, second));
        let third = s.poll_timeout().unwrap();
        s.handle_timeout(third);
        let flight = s.snd_max() - MSS;
        assert_eq!(s.window().ssthresh, flight / 2, "sack {sack}: from the flight after progress");
    }
}

#[test]
fn without_the_switch_an_rto_inside_recovery_takes_ssthresh_from_the_inflated_flight() {
    for sack in [false, true] {
        let mut s = in_recovery_with_new_data(sack, false);
        let flight = s.snd_max();
        s.handle_timeout(s.poll_timeout().unwrap());
        assert_eq!(s.window().ssthresh, flight / 2, "sack {sack}: RFC 5681 eq. 4 on every timeout");
        assert!(s.window().ssthresh > 5 * MSS);
    }
}

#[test]
fn limited_transmit_sends_one_new_segment_on_each_of_the_first_two_dupacks() {
    let mut s = sender(TcpConfig { limited_transmit: true, ..cfg() }, 100 * MSS);
    assert_eq!(seqs(&drain(&mut s, ms(0))), vec![0, 1, 2]);
    s.handle_ack(ms(50), &ack(0, ms(25), ms(0)));
    assert_eq!(seqs(&drain(&mut s, ms(50))), vec![3], "first duplicate");
    s.handle_ack(ms(51), &ack(0, ms(26), ms(0)));
    assert_eq!(seqs(&drain(&mut s, ms(51))), vec![4], "second duplicate");
    assert_eq!(s.window().cwnd, 3 * MSS, "cwnd itself is unchanged");
    s.handle_ack(ms(52), &ack(0, ms(27), ms(0)));
    assert_eq!(seqs(&drain(&mut s, ms(52))), vec![0], "the third starts fast retransmit");
    assert_eq!(s.window().ssthresh, 2 * MSS, "from the 3-segment flight, not the 5 limited transmit made");
    let mut off = sender(cfg(), 100 * MSS);
    drain(&mut off, ms(0));
    off.handle_ack(ms(50), &ack(0, ms(25), ms(0)));
    assert!(drain(&mut off, ms(50)).is_empty(), "without limited transmit the window holds it");
}

#[test]
fn limited_transmit_turns_a_window_of_3_with_one_loss_into_a_fast_retransmit_instead_of_an_rto() {
    for base in [cfg(), TcpConfig { initial_window: 3, ..sack_cfg() }] {
        for lt in [false, true] {
            let c = TcpConfig { limited_transmit: lt, ..base.clone() };
            let (s, r, _) = transfer_with(c, CcConfig::NewReno, 20 * MSS, &[0], 20);
            assert_eq!(r.delivered(), 20 * MSS);
            let st = s.stats();
            let want = if lt { (0, 1) } else { (1, 0) };
            assert_eq!((st.timeouts, st.fast_retransmits), want, "sack {}, limited transmit {lt}", base.sack);
        }
    }
}

#[test]
fn limited_transmit_sends_nothing_on_duplicates_for_data_sent_before_a_timeout() {
    let mut s = sender(TcpConfig { initial_window: 10, limited_transmit: true, ..cfg() }, 100 * MSS);
    drain(&mut s, ms(0));
    s.handle_timeout(ms(1000));
    assert_eq!(seqs(&drain(&mut s, ms(1000))), vec![0]);
    s.handle_ack(ms(1010), &ack(0, ms(1005), ms(0)));
    assert!(drain(&mut s, ms(1010)).is_empty(), "inside the timeout's episode");
}

/// 20 segments out with SACK (or NewReno), `lost` of them lost; then one ACK
/// per arriving segment, each SACKing (or duplicating) one more. Returns the
/// segments sent after each ACK from the one that starts recovery on, and
/// the sender.
fn recovery_sends(rate: RecoveryRate, sack: bool, lost: u64) -> (Vec<usize>, TcpSender) {
    let base = if sack { sack_cfg() } else { cfg() };
    let c = TcpConfig { initial_window: 20, recovery_rate: rate, ..base };
    let mut s = sender(c, 100 * MSS);
    assert_eq!(drain(&mut s, ms(0)).len(), 20);
    let mut sends = vec![];
    for i in lost + 1..=20 {
        let a = if sack { sack_ack(0, &[(lost, i)], ms(50)) } else { ack(0, ms(25), ms(0)) };
        s.handle_ack(ms(50), &a);
        let n = drain(&mut s, ms(50)).len();
        if s.info().in_recovery {
            sends.push(n);
            let inflates = rate == RecoveryRate::Rfc && !sack;
            assert!(
                inflates || s.window().cwnd <= 20 * MSS,
                "{rate:?} sack {sack}: the window never grows in recovery"
            );
        }
    }
    (sends, s)
}

#[test]
fn prr_spreads_the_reduction_one_segment_per_two_acks_where_rfc_6675_first_falls_silent() {
    // One loss in 20, ssthresh 10 (RFC 6937 Appendix A's case).
    let (rfc, _) = recovery_sends(RecoveryRate::Rfc, true, 1);
    assert_eq!(rfc[..9], [1, 0, 0, 0, 0, 0, 0, 0, 1], "RFC 6675: silent until the pipe is below 10");
    for rate in [RecoveryRate::Prr, RecoveryRate::RateHalving] {
        let (sends, mut s) = recovery_sends(rate, true, 1);
        assert_eq!(sends[..9], [1, 0, 1, 0, 1, 0, 1, 0, 1], "{rate:?}");
        // The retransmission arrives: a full ACK ends the recovery at ssthresh.
        s.handle_ack(ms(100), &ack(s.snd_max(), ms(75), ms(50)));
        assert!(!s.info().in_recovery);
        assert!(s.window().cwnd <= 10 * MSS && s.window().ssthresh == 10 * MSS, "{rate:?}: {:?}", s.window());
    }
}

#[test]
fn below_ssthresh_prr_ssrb_sends_at_most_one_segment_more_than_each_ack_delivers_where_rfc_6675_bursts() {
    // Ten of the twenty lost: the pipe is below ssthresh (10) from the start.
    let (rfc, _) = recovery_sends(RecoveryRate::Rfc, true, 10);
    assert_eq!(rfc[0], 3, "RFC 6675: up to ssthresh at once");
    let (prr, _) = recovery_sends(RecoveryRate::Prr, true, 10);
    assert_eq!(prr[..4], [2, 2, 1, 1], "PRR-SSRB: delivered + 1 until the pipe reaches ssthresh, then 1 per ACK");
}

#[test]
fn newreno_under_prr_counts_each_duplicate_as_a_delivered_segment_and_never_inflates_the_window() {
    let (rfc, s) = recovery_sends(RecoveryRate::Rfc, false, 1);
    assert_eq!(rfc[..9], [1, 0, 0, 0, 0, 0, 0, 0, 1], "inflation: new data once cwnd passes the flight");
    assert_eq!(s.window().cwnd, 29 * MSS, "RFC 6582: ssthresh + 3 + one per further duplicate");
    for rate in [RecoveryRate::Prr, RecoveryRate::RateHalving] {
        let (sends, s) = recovery_sends(rate, false, 1);
        assert_eq!(sends[..9], [1, 0, 1, 0, 1, 0, 1, 0, 1], "{rate:?}: as with SACK");
        assert!(s.window().cwnd <= 20 * MSS);
    }
}

#[test]
fn every_preset_recovers_every_byte_of_transfers_with_scattered_and_burst_losses() {
    let presets = [TcpConfig::rfc(), TcpConfig::linux(), TcpConfig::linux_2_6_32(), TcpConfig::linux_6()];
    let losses: [&[u64]; 3] =
        [&[5, 6, 40, 41, 42, 200, 299], &[2, 5, 8, 11, 14, 17], &[30, 31, 32, 33, 34, 35, 36, 37]];
    for (p, preset) in presets.iter().enumerate() {
        for sack in [true, false] {
            for (l, lose) in losses.iter().enumerate() {
                for cc in [CcConfig::NewReno, CcConfig::Cubic(Default::default())] {
                    let c = TcpConfig { sack, ..preset.clone() };
                    let (s, r, _) = transfer_with(c, cc, 300 * MSS, lose, 20);
                    assert_eq!(r.delivered(), 300 * MSS, "preset {p}, sack {sack}, losses {l}");
                    assert!(s.stats().retransmitted_segments >= lose.len() as u64);
                }
            }
        }
    }
}

/// `linux-6` with RACK-TLP, ACKs not delayed (the scripts count segments).
fn rack_cfg(tlp: bool) -> TcpConfig {
    TcpConfig { delayed_ack: None, tail_loss_probe: tlp, ..TcpConfig::linux_6() }
}

#[test]
fn under_rack_a_loss_with_two_duplicates_is_repaired_by_fast_recovery_where_rfc6675_waits_for_the_timer() {
    // Four segments, the second lost: two duplicate ACKs and no new data.
    let (s, r, end) = transfer_with(rack_cfg(false), CcConfig::NewReno, 4 * MSS, &[1], 50);
    assert_eq!(r.delivered(), 4 * MSS);
    let st = s.stats();
    assert_eq!((st.timeouts, st.fast_retransmits, st.retransmitted_segments), (0, 1, 1));
    assert!(end < ms(300), "a quarter RTT after the last SACK, not an RTO: {end:?}");
    let rfc = TcpConfig { loss_detection: LossDetection::Rfc6675, ..rack_cfg(false) };
    let (s, _, end) = transfer_with(rfc, CcConfig::NewReno, 4 * MSS, &[1], 50);
    assert_eq!((s.stats().timeouts, s.stats().fast_retransmits), (1, 0));
    assert!(end > ms(300));
}

#[test]
fn the_tail_loss_probe_turns_a_lost_tail_into_a_fast_recovery_without_a_timeout() {
    // Ten segments, the last two lost: no duplicate ACK at all.
    let (s, r, _) = transfer_with(rack_cfg(true), CcConfig::NewReno, 10 * MSS, &[8, 9], 50);
    assert_eq!(r.delivered(), 10 * MSS);
    let st = s.stats();
    assert_eq!((st.timeouts, st.loss_probes, st.fast_retransmits), (0, 1, 1), "{st:?}");
    assert_eq!(st.retransmitted_segments, 2, "the probe (segment 9), then segment 8 by RACK");
    let (s, ..) = transfer_with(rack_cfg(false), CcConfig::NewReno, 10 * MSS, &[8, 9], 50);
    assert_eq!((s.stats().timeouts, s.stats().loss_probes), (1, 0), "without the probe the timer fires");
}

#[test]
fn the_probe_timer_is_two_srtt_after_the_last_ack_and_waits_for_the_delayed_ack_with_one_segment_out() {
    let mut s = sender(rack_cfg(true), 3 * MSS);
    assert_eq!(drain(&mut s, ms(0)).len(), 3);
    s.handle_ack(ms(100), &ack(MSS, ms(100), ms(0)));
    let srtt = s.info().srtt.unwrap();
    assert_eq!(s.poll_timeout(), Some(ms(100) + srtt + srtt + Duration::from_millis(2)));
    s.handle_ack(ms(101), &ack(2 * MSS, ms(101), ms(0)));
    let srtt = s.info().srtt.unwrap();
    let pto = (srtt + srtt + Duration::from_millis(200)).min(s.rto());
    assert_eq!(s.poll_timeout(), Some(ms(101) + pto), "one segment out: the 200 ms allowance, within the RTO");
}

#[test]
fn rack_resends_a_lost_retransmission_an_rtt_later_where_rfc6675_waits_for_the_timer() {
    // Segment 3 is lost, and so is its first retransmission; segments sent
    // after that retransmission are SACKed.
    let (s, r, _) = transfer_with(rack_cfg(false), CcConfig::NewReno, 60 * MSS, &[3, 3], 50);
    assert_eq!(r.delivered(), 60 * MSS);
    let st = s.stats();
    assert_eq!((st.timeouts, st.lost_retransmits, st.retransmitted_segments), (0, 1, 2), "{st:?}");
    let rfc = TcpConfig { loss_detection: LossDetection::Rfc6675, ..rack_cfg(false) };
    let (s, ..) = transfer_with(rfc, CcConfig::NewReno, 60 * MSS, &[3, 3], 50);
    assert_eq!(s.stats().timeouts, 1);
}

/// `linux-2.6.32` (FACK, rate halving), ACKs not delayed.
fn fack_cfg(detection: LossDetection) -> TcpConfig {
    TcpConfig { delayed_ack: None, initial_window: 10, loss_detection: detection, ..TcpConfig::linux_2_6_32() }
}

#[test]
fn under_fack_a_recovery_starts_when_a_segment_three_above_the_hole_is_sacked_whatever_lies_between() {
    // Segments 1, 2 and 3 of ten are lost; the first SACK (segment 4)
    // already puts segment 1 three segments below the highest SACKed byte.
    for (detection, recovers) in [(LossDetection::Fack, true), (LossDetection::Rfc6675, false)] {
        let mut s = sender(fack_cfg(detection), 10 * MSS);
        assert_eq!(drain(&mut s, ms(0)).len(), 10);
        s.handle_ack(ms(100), &ack(MSS, ms(100), ms(0)));
        s.handle_ack(ms(100), &sack_ack(1, &[(4, 5)], ms(100)));
        assert_eq!(s.info().in_recovery, recovers, "{detection:?}");
        if recovers {
            assert_eq!(seqs(&drain(&mut s, ms(100))), [1], "the hole FACK marked lost goes at once");
        }
    }
}

#[test]
fn under_fack_a_lost_retransmission_is_resent_once_data_sent_after_it_is_sacked() {
    let (s, r, _) = transfer_with(fack_cfg(LossDetection::Fack), CcConfig::NewReno, 60 * MSS, &[3, 3], 50);
    assert_eq!(r.delivered(), 60 * MSS);
    let st = s.stats();
    assert_eq!((st.timeouts, st.lost_retransmits, st.retransmitted_segments), (0, 1, 2), "{st:?}");
    let (s, ..) = transfer_with(fack_cfg(LossDetection::Rfc6675), CcConfig::NewReno, 60 * MSS, &[3, 3], 50);
    assert_eq!(s.stats().timeouts, 1);
}

/// Ten segments out and no ACK until the timer has fired (a delay spike):
/// then the ACK of the original first three segments arrives.
fn delay_spike(frto: Frto, preset: TcpConfig) -> TcpSender {
    let c = TcpConfig { delayed_ack: None, tail_loss_probe: false, initial_window: 10, frto, ..preset };
    let mut s = sender(c, 40 * MSS);
    assert_eq!(drain(&mut s, ms(0)).len(), 10);
    let rto = s.poll_timeout().unwrap();
    s.handle_timeout(rto);
    assert_eq!(seqs(&drain(&mut s, rto)), [0], "the first segment again, nothing more");
    s.handle_ack(rto + Duration::from_millis(50), &ack(3 * MSS, rto, ms(0)));
    s
}

#[test]
fn f_rto_finds_a_timeout_spurious_when_data_never_resent_is_acknowledged_and_undoes_it_under_linux_6() {
    let s = delay_spike(Frto::Undo, TcpConfig::linux_6());
    assert_eq!((s.stats().timeouts, s.stats().spurious_timeouts), (1, 1));
    assert!(!s.info().in_recovery, "the loss state ended");
    assert_eq!(s.window().cwnd, 10 * MSS, "cwnd as before the timeout");
    assert_eq!(s.window().ssthresh, u64::MAX, "ssthresh too: still in the first slow start");
    let off = delay_spike(Frto::Off, TcpConfig::linux_6());
    assert_eq!(off.stats().spurious_timeouts, 0);
    assert!(off.window().cwnd <= 2 * MSS && off.info().in_recovery, "without F-RTO: slow start from one segment");
}

#[test]
fn under_linux_2_6_32_a_spurious_timeout_keeps_its_reduced_window() {
    let s = delay_spike(Frto::Reduce, TcpConfig::linux_2_6_32());
    assert_eq!(s.stats().spurious_timeouts, 1);
    assert!(!s.info().in_recovery);
    assert_eq!(s.window().cwnd, s.window().ssthresh, "cwnd = the halved ssthresh (tcp_frto_response = 0)");
    assert_eq!(s.window().ssthresh, 5 * MSS);
}

#[test]
fn f_rto_sends_new_data_after_the_first_ack_and_takes_the_loss_as_real_when_sacks_follow() {
    // The whole first window is lost: the first ACK after the timeout
    // acknowledges only the resent segment; two new segments go out and
    // come back SACKed, so the other nine are resent.
    let c = TcpConfig { delayed_ack: None, tail_loss_probe: false, initial_window: 10, ..TcpConfig::linux_6() };
    let lost: Vec<u64> = (0..10).collect();
    let (s, r, _) = transfer_with(c, CcConfig::NewReno, 30 * MSS, &lost, 50);
    assert_eq!(r.delivered(), 30 * MSS);
    let st = s.stats();
    assert_eq!((st.timeouts, st.spurious_timeouts, st.retransmitted_segments), (1, 0, 10), "{st:?}");
}
