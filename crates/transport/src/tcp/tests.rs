//! Scripted, packet-exact exchanges between a sender and a receiver, read like
//! a protocol trace: who sends what, when, and what comes back.

use torrentlab_engine::{Duration, Time};

use super::SackBlocks;
use super::*;
use crate::cc::{CcConfig, LedbatConfig};

pub(super) const MSS: u64 = 1448;

pub(super) fn ms(x: u64) -> Time {
    Time(x * 1_000_000)
}

/// NewReno recovery (no SACK), initial window 3: the classic scripted cases.
pub(super) fn cfg() -> TcpConfig {
    TcpConfig { initial_window: 3, sack: false, ..TcpConfig::rfc() }
}

pub(super) fn sender(cfg: TcpConfig, bytes: u64) -> TcpSender {
    let mut s = TcpSender::new(cfg, CcConfig::NewReno.build());
    s.write(bytes);
    s
}

/// Everything the sender will send at `now`.
pub(super) fn drain(s: &mut TcpSender, now: Time) -> Vec<Segment> {
    std::iter::from_fn(|| s.poll_transmit(now)).collect()
}

pub(super) fn seqs(segs: &[Segment]) -> Vec<u64> {
    segs.iter().map(|s| s.seq / MSS).collect()
}

/// An ACK as the receiver would send it, echoing `ecr`.
pub(super) fn ack(n: u64, val: Time, ecr: Time) -> Segment {
    Segment {
        seq: 0,
        ack: n,
        len: 0,
        flags: Flags::ACK,
        window: 16 << 20,
        timestamps: Some(Timestamps { val, ecr: Some(ecr), delay: None }),
        sack: SackBlocks::NONE,
    }
}

/// An ACK with SACK blocks given in segment numbers `[from, to)`.
pub(super) fn sack_ack(n: u64, blocks: &[(u64, u64)], t: Time) -> Segment {
    Segment { sack: SackBlocks::new(n, blocks.iter().map(|&(a, b)| (a * MSS, b * MSS))), ..ack(n, t, ms(0)) }
}

#[test]
fn the_sender_opens_with_exactly_its_initial_window() {
    let mut s = sender(cfg(), 100 * MSS);
    let first = drain(&mut s, ms(0));
    assert_eq!(seqs(&first), vec![0, 1, 2]);
    assert!(first.iter().all(|seg| seg.len as u64 == MSS && seg.wire_len() == 1500));
    assert_eq!(s.poll_timeout(), Some(ms(1000)), "RTO armed at the initial 1 s");
}

#[test]
fn each_ack_in_slow_start_releases_two_segments() {
    let mut s = sender(cfg(), 100 * MSS);
    drain(&mut s, ms(0));
    s.handle_ack(ms(50), &ack(MSS, ms(25), ms(0)));
    assert_eq!(seqs(&drain(&mut s, ms(50))), vec![3, 4]);
    assert_eq!(s.info().srtt, Some(Duration::from_millis(50)));
}

#[test]
fn three_duplicate_acks_trigger_fast_retransmit_and_halve_the_window() {
    let mut s = sender(TcpConfig { initial_window: 10, ..cfg() }, 100 * MSS);
    assert_eq!(drain(&mut s, ms(0)).len(), 10);
    // Segment 0 is lost; segments 1, 2, 3 each produce a duplicate ACK for 0.
    for i in 1..=2 {
        s.handle_ack(ms(50), &ack(0, ms(25), ms(0)));
        assert!(drain(&mut s, ms(50)).is_empty(), "no send on duplicate ACK {i}");
    }
    s.handle_ack(ms(50), &ack(0, ms(25), ms(0)));
    let out = drain(&mut s, ms(50));
    assert_eq!(seqs(&out), vec![0], "fast retransmit of the first unacknowledged segment");
    let w = s.window();
    assert_eq!(w.ssthresh, 5 * MSS, "ssthresh = FlightSize / 2");
    assert_eq!(w.cwnd, 8 * MSS, "cwnd = ssthresh + 3 SMSS");
    assert_eq!(s.stats().fast_retransmits, 1);
    assert_eq!(s.stats().retransmitted_segments, 1);
}

#[test]
fn further_duplicates_inflate_the_window_and_release_new_data() {
    let mut s = sender(TcpConfig { initial_window: 10, ..cfg() }, 100 * MSS);
    drain(&mut s, ms(0));
    for _ in 0..3 {
        s.handle_ack(ms(50), &ack(0, ms(25), ms(0)));
    }
    drain(&mut s, ms(50));
    // cwnd 8 MSS with 10 in flight: two more duplicates make 10, a third sends one.
    for _ in 0..2 {
        s.handle_ack(ms(51), &ack(0, ms(26), ms(0)));
        assert!(drain(&mut s, ms(51)).is_empty());
    }
    s.handle_ack(ms(52), &ack(0, ms(27), ms(0)));
    assert_eq!(seqs(&drain(&mut s, ms(52))), vec![10]);
}

#[test]
fn a_partial_ack_retransmits_the_next_hole_and_a_full_ack_ends_recovery() {
    let mut s = sender(TcpConfig { initial_window: 10, ..cfg() }, 100 * MSS);
    drain(&mut s, ms(0));
    // Segments 0 and 5 lost.
    for _ in 0..3 {
        s.handle_ack(ms(50), &ack(0, ms(25), ms(0)));
    }
    assert_eq!(seqs(&drain(&mut s, ms(50))), vec![0]);
    // The retransmitted 0 arrives: cumulative ACK up to the hole at 5.
    s.handle_ack(ms(100), &ack(5 * MSS, ms(75), ms(50)));
    let out = drain(&mut s, ms(100));
    assert_eq!(seqs(&out)[0], 5, "partial ACK retransmits the next hole at once");
    assert!(s.info().in_recovery);
    // Everything sent so far is acknowledged: recovery ends at ssthresh.
    let max = s.snd_max();
    s.handle_ack(ms(150), &ack(max, ms(125), ms(100)));
    assert!(!s.info().in_recovery);
    assert_eq!(s.window().cwnd, s.window().ssthresh);
}

#[test]
fn only_the_first_partial_ack_restarts_the_timer_so_many_holes_end_in_a_timeout() {
    let mut s = sender(TcpConfig { initial_window: 10, ..cfg() }, 100 * MSS);
    drain(&mut s, ms(0));
    // Segments 0, 2, 4, 6 lost: three duplicates, then partial ACKs one hole at a time.
    for _ in 0..3 {
        s.handle_ack(ms(50), &ack(0, ms(25), ms(0)));
    }
    drain(&mut s, ms(50));
    s.handle_ack(ms(100), &ack(2 * MSS, ms(75), ms(50)));
    drain(&mut s, ms(100));
    let after_first = s.poll_timeout().unwrap();
    assert_eq!(after_first, ms(100) + s.info().rto, "the first partial ACK restarts the timer");
    s.handle_ack(ms(150), &ack(4 * MSS, ms(125), ms(100)));
    drain(&mut s, ms(150));
    assert_eq!(s.poll_timeout(), Some(after_first), "a second partial ACK does not");
    s.handle_timeout(after_first);
    assert_eq!(s.stats().timeouts, 1);
    assert!(!s.info().in_recovery);
    assert_eq!(seqs(&drain(&mut s, after_first)), vec![4], "go back to the first unacknowledged segment");
}

#[test]
fn the_retransmission_timer_fires_resends_the_first_segment_and_backs_off() {
    let mut s = sender(cfg(), 100 * MSS);
    drain(&mut s, ms(0));
    s.handle_timeout(ms(999));
    assert!(drain(&mut s, ms(999)).is_empty(), "a spurious early timeout does nothing");
    s.handle_timeout(ms(1000));
    assert_eq!(seqs(&drain(&mut s, ms(1000))), vec![0], "loss window: one segment");
    assert_eq!(s.window().cwnd, MSS);
    assert_eq!(s.poll_timeout(), Some(ms(3000)), "RTO doubled to 2 s");
    s.handle_timeout(ms(3000));
    assert_eq!(seqs(&drain(&mut s, ms(3000))), vec![0]);
    assert_eq!(s.poll_timeout(), Some(ms(7000)), "and again to 4 s");
    assert_eq!(s.stats().timeouts, 2);
}

#[test]
fn after_a_timeout_duplicate_acks_for_old_data_do_not_retransmit_again() {
    let mut s = sender(TcpConfig { initial_window: 10, ..cfg() }, 100 * MSS);
    drain(&mut s, ms(0));
    s.handle_timeout(ms(1000));
    drain(&mut s, ms(1000));
    for _ in 0..3 {
        s.handle_ack(ms(1010), &ack(0, ms(1005), ms(0)));
    }
    assert!(!s.info().in_recovery, "RFC 6582: recover covers the old flight");
}

#[test]
fn with_slow_start_disabled_the_window_grows_one_segment_per_rtt_from_the_start() {
    let mut s = sender(TcpConfig { initial_window: 2, slow_start: false, ..cfg() }, 100 * MSS);
    assert_eq!(drain(&mut s, ms(0)).len(), 2);
    s.handle_ack(ms(50), &ack(MSS, ms(25), ms(0)));
    s.handle_ack(ms(50), &ack(2 * MSS, ms(25), ms(0)));
    assert_eq!(s.window().cwnd, 3 * MSS, "+1 MSS after a whole window, not +2");
}

#[test]
fn the_receiver_acks_out_of_order_data_at_once_with_the_last_in_order_timestamp() {
    let mut r = TcpReceiver::new(TcpConfig { delayed_ack: Some(Duration::from_millis(40)), quickacks: 0, ..cfg() });
    let mut s = sender(cfg(), 100 * MSS);
    let segs = drain(&mut s, ms(0));
    r.handle_segment(ms(25), &segs[0]);
    assert!(r.poll_transmit(ms(25)).is_none(), "first segment: ACK delayed");
    r.handle_segment(ms(26), &segs[2]); // segment 1 lost
    let dup = r.poll_transmit(ms(26)).expect("immediate duplicate ACK");
    assert_eq!(dup.ack, MSS);
    assert_eq!(dup.timestamps.unwrap().ecr, Some(ms(0)), "TS.Recent is not updated out of order");
    r.handle_segment(ms(30), &segs[1]); // fills the hole
    let cum = r.poll_transmit(ms(30)).expect("immediate ACK on filling a hole");
    assert_eq!(cum.ack, 3 * MSS);
    assert_eq!(r.delivered(), 3 * MSS);
}

#[test]
fn each_ack_carries_the_one_way_delay_of_the_segment_that_caused_it_once_even_out_of_order() {
    let mut r = TcpReceiver::new(TcpConfig { delayed_ack: Some(Duration::from_millis(40)), quickacks: 0, ..cfg() });
    let mut s = sender(cfg(), 100 * MSS);
    let segs = drain(&mut s, ms(0)); // three segments, TSval 0
    let delay = |a: &Segment| a.timestamps.unwrap().delay;
    r.handle_segment(ms(25), &segs[0]);
    r.handle_segment(ms(27), &segs[2]); // segment 1 lost
    let dup = r.poll_transmit(ms(27)).unwrap();
    assert_eq!(dup.timestamps.unwrap().ecr, Some(ms(0)), "RFC 7323: the echo stays the in-order segment's");
    assert_eq!(delay(&dup), Some(Duration::from_millis(27)), "the delay is the out-of-order segment's");
    // A retransmission sent at 200 ms fills the hole 30 ms later: its own
    // delay, not 230 ms since the echoed TSval.
    let mut again = segs[1];
    again.timestamps = Some(Timestamps { val: ms(200), ecr: None, delay: None });
    r.handle_segment(ms(230), &again);
    let cum = r.poll_transmit(ms(230)).unwrap();
    assert_eq!((cum.ack, delay(&cum)), (3 * MSS, Some(Duration::from_millis(30))));
    assert_eq!(delay(&r.ack_segment(ms(240))), None, "a sample goes out once");
    // The sender hands exactly that sample to its controller.
    s.handle_ack(ms(231), &cum);
    assert_eq!(s.stats().max_owd_sample_ns, Duration::from_millis(30).0);
}

#[test]
fn a_delayed_ack_carries_the_delay_of_the_later_segment_without_the_hold() {
    let mut r = TcpReceiver::new(TcpConfig { delayed_ack: Some(Duration::from_millis(40)), quickacks: 0, ..cfg() });
    let mut s = sender(cfg(), 100 * MSS);
    let segs = drain(&mut s, ms(0));
    r.handle_segment(ms(10), &segs[0]);
    r.handle_segment(ms(12), &segs[1]);
    let a = r.poll_transmit(ms(12)).unwrap();
    assert_eq!(a.timestamps.unwrap().delay, Some(Duration::from_millis(12)));
    r.handle_segment(ms(13), &segs[2]);
    r.handle_timeout(ms(53));
    let late = r.poll_transmit(ms(53)).unwrap();
    assert_eq!(late.timestamps.unwrap().delay, Some(Duration::from_millis(13)), "the 40 ms hold is not delay");
}

#[test]
fn delayed_acks_go_out_every_second_segment_or_when_the_timer_fires() {
    let mut r = TcpReceiver::new(TcpConfig { delayed_ack: Some(Duration::from_millis(40)), quickacks: 0, ..cfg() });
    let mut s = sender(cfg(), 100 * MSS);
    let segs = drain(&mut s, ms(0));
    r.handle_segment(ms(10), &segs[0]);
    r.handle_segment(ms(11), &segs[1]);
    assert_eq!(r.poll_transmit(ms(11)).map(|a| a.ack), Some(2 * MSS));
    r.handle_segment(ms(12), &segs[2]);
    assert!(r.poll_transmit(ms(12)).is_none());
    assert_eq!(r.poll_timeout(), Some(ms(52)));
    r.handle_timeout(ms(52));
    assert_eq!(r.poll_transmit(ms(52)).map(|a| a.ack), Some(3 * MSS));
}

#[test]
fn duplicate_data_is_counted_and_acked_immediately() {
    let mut r = TcpReceiver::new(cfg());
    let mut s = sender(cfg(), 100 * MSS);
    let segs = drain(&mut s, ms(0));
    r.handle_segment(ms(1), &segs[0]);
    r.poll_transmit(ms(1));
    r.handle_segment(ms(2), &segs[0]);
    assert_eq!(r.poll_transmit(ms(2)).map(|a| a.ack), Some(MSS));
    assert_eq!(r.stats().duplicate_bytes, MSS);
}

/// Runs a whole transfer over an ideal pipe with a fixed one-way delay, losing
/// the data segments whose index is in `lose` (first transmission only).
fn transfer(cc: CcConfig, bytes: u64, lose: &[u64], delay_ms: u64) -> (TcpSender, TcpReceiver, Time) {
    transfer_with(cfg(), cc, bytes, lose, delay_ms)
}

pub(super) fn transfer_with(
    cfg: TcpConfig,
    cc: CcConfig,
    bytes: u64,
    lose: &[u64],
    delay_ms: u64,
) -> (TcpSender, TcpReceiver, Time) {
    use std::collections::BTreeMap;
    let mut s = TcpSender::new(cfg.clone(), cc.build());
    s.write(bytes);
    let mut r = TcpReceiver::new(cfg);
    // (time, order) -> (to_receiver, segment)
    let mut wire: BTreeMap<(Time, u64), (bool, Segment)> = BTreeMap::new();
    let mut order = 0;
    let mut lost: Vec<u64> = lose.to_vec();
    let d = Duration::from_millis(delay_ms);
    let mut now = Time::ZERO;
    loop {
        while let Some(seg) = s.poll_transmit(now) {
            let idx = seg.seq / MSS;
            if let Some(p) = lost.iter().position(|&l| l == idx) {
                lost.remove(p);
            } else {
                wire.insert((now + d, order), (true, seg));
                order += 1;
            }
        }
        while let Some(a) = r.poll_transmit(now) {
            wire.insert((now + d, order), (false, a));
            order += 1;
        }
        if s.bytes_acked() == bytes {
            return (s, r, now);
        }
        let next_wire = wire.keys().next().map(|k| k.0);
        let next = [next_wire, s.poll_timeout()].into_iter().flatten().min().expect("stalled");
        now = next;
        if next_wire == Some(now) {
            let (_, (to_r, seg)) = wire.pop_first().unwrap();
            if to_r {
                r.handle_segment(now, &seg);
            } else {
                s.handle_ack(now, &seg);
            }
        } else {
            s.handle_timeout(now);
        }
        assert!(now < ms(600_000), "transfer did not finish");
    }
}

#[test]
fn a_lossless_transfer_delivers_every_byte_without_retransmission() {
    let (s, r, _) = transfer(CcConfig::NewReno, 500 * MSS + 17, &[], 10);
    assert_eq!(r.delivered(), 500 * MSS + 17);
    assert_eq!(s.stats().retransmitted_segments, 0);
    assert_eq!(r.stats().duplicate_bytes, 0);
}

#[test]
fn a_transfer_with_scattered_losses_recovers_every_byte() {
    let (s, r, _) = transfer(CcConfig::NewReno, 300 * MSS, &[5, 6, 40, 41, 42, 200, 299], 20);
    assert_eq!(r.delivered(), 300 * MSS);
    assert!(s.stats().retransmitted_segments >= 7);
}

#[test]
fn losing_the_whole_first_window_is_recovered_by_the_timer() {
    let (s, r, end) = transfer(CcConfig::NewReno, 50 * MSS, &[0, 1, 2], 5);
    assert_eq!(r.delivered(), 50 * MSS);
    assert_eq!(s.stats().timeouts, 1);
    assert!(end >= ms(1000));
}

#[test]
fn ledbat_acks_carry_the_data_one_way_delay() {
    let (s, _, _) = transfer(CcConfig::Ledbat(LedbatConfig::default()), 100 * MSS, &[], 25);
    // An ideal pipe never queues: LEDBAT's queuing delay estimate is zero.
    assert_eq!(s.info().queuing_delay, Some(Duration::ZERO));
}

#[test]
fn a_window_below_one_segment_sends_one_segment_every_one_over_w_rtts() {
    use crate::cc::{AckSample, CongestionControl, Window};
    /// A controller that pins the window at a quarter of a segment.
    struct Quarter;
    impl CongestionControl for Quarter {
        fn name(&self) -> &'static str {
            "quarter"
        }
        fn on_ack(&mut self, w: &mut Window, _: &AckSample) {
            w.cwnd = w.mss as u64 / 4;
        }
    }
    let mut s =
        TcpSender::new(TcpConfig { initial_window: 1, ..cfg() }, crate::cc::Controller::Other(Box::new(Quarter)));
    s.write(100 * MSS);
    assert_eq!(seqs(&drain(&mut s, ms(0))), vec![0]);
    s.handle_ack(ms(100), &ack(MSS, ms(50), ms(0))); // RTT 100 ms; window now 1/4 segment
    assert_eq!(seqs(&drain(&mut s, ms(100))), vec![1], "nothing in flight: one segment may go");
    s.handle_ack(ms(200), &ack(2 * MSS, ms(150), ms(100)));
    assert!(drain(&mut s, ms(200)).is_empty(), "the next one waits 4 RTTs after the last");
    assert_eq!(s.poll_timeout(), Some(ms(500)));
    s.handle_timeout(ms(500));
    assert_eq!(seqs(&drain(&mut s, ms(500))), vec![2]);
}

pub(super) fn sack_cfg() -> TcpConfig {
    TcpConfig { initial_window: 10, ..TcpConfig::rfc() }
}

#[test]
fn the_receiver_reports_the_most_recent_block_first_and_at_most_three_with_timestamps() {
    let mut r = TcpReceiver::new(sack_cfg());
    let mut s = sender(sack_cfg(), 100 * MSS);
    let segs = drain(&mut s, ms(0));
    for i in [1, 3, 5, 7] {
        r.handle_segment(ms(10 + i), &segs[i as usize]);
    }
    let a = r.poll_transmit(ms(20)).unwrap();
    let blocks: Vec<_> = a.sack.ranges(a.ack).map(|(x, y)| (x / MSS, y / MSS)).collect();
    assert_eq!(a.ack, 0);
    assert_eq!(blocks, vec![(7, 8), (5, 6), (3, 4)]);
    assert_eq!(a.wire_len(), 20 + 32 + 4 + 24);
}

#[test]
fn with_sack_three_lost_segments_are_repaired_in_one_round_trip() {
    let mut s = sender(sack_cfg(), 100 * MSS);
    drain(&mut s, ms(0));
    // 1, 4 and 7 lost; the receiver SACKs what it has.
    let t = ms(50);
    s.handle_ack(t, &sack_ack(MSS, &[], t));
    s.handle_ack(t, &sack_ack(MSS, &[(2, 3)], t));
    s.handle_ack(t, &sack_ack(MSS, &[(2, 4)], t));
    assert!(!s.info().in_recovery, "two segments SACKed above the hole: not yet lost");
    s.handle_ack(t, &sack_ack(MSS, &[(5, 6), (2, 4)], t));
    assert!(s.info().in_recovery, "three duplicates and three segments SACKed above segment 1");
    assert_eq!(s.window().cwnd, s.window().ssthresh, "RFC 6675: cwnd = ssthresh, no inflation");
    let first = drain(&mut s, t);
    assert_eq!(seqs(&first)[0], 1, "the first hole goes out at once");
    for a in [sack_ack(MSS, &[(5, 7), (2, 4)], t), sack_ack(MSS, &[(8, 9), (5, 7), (2, 4)], t)] {
        s.handle_ack(t, &a);
    }
    let out = drain(&mut s, t);
    assert!(seqs(&out).contains(&4), "segment 4 is lost too: retransmitted {:?}", seqs(&out));
    assert_eq!(s.stats().fast_retransmits, 1, "one recovery for the whole window");
}

#[test]
fn sack_recovery_never_resends_what_the_receiver_reported() {
    let (s, r, _) = transfer_with(sack_cfg(), CcConfig::NewReno, 400 * MSS, &[3, 4, 9, 30, 31, 32, 33, 120], 20);
    assert_eq!(r.delivered(), 400 * MSS);
    assert_eq!(s.stats().retransmitted_segments, 8, "exactly the lost segments");
    assert_eq!(r.stats().duplicate_bytes, 0);
    assert_eq!(s.stats().timeouts, 0);
}

#[test]
fn after_a_timeout_sack_resends_only_unsacked_segments() {
    // The whole first flight but one is lost, so no three duplicates arrive.
    let lose: Vec<u64> = (0..10).filter(|i| *i != 5).collect();
    let (s, r, _) = transfer_with(sack_cfg(), CcConfig::NewReno, 60 * MSS, &lose, 10);
    assert_eq!(r.delivered(), 60 * MSS);
    assert_eq!(s.stats().timeouts, 1);
    assert_eq!(s.stats().retransmitted_segments, 9, "segment 5 was SACKed and not resent");
}

#[test]
fn quick_ack_mode_acks_the_first_segments_and_those_after_a_long_gap_at_once() {
    let mut r = TcpReceiver::new(TcpConfig { delayed_ack: Some(Duration::from_millis(40)), quickacks: 2, ..cfg() });
    let mut s = sender(TcpConfig { initial_window: 10, ..cfg() }, 100 * MSS);
    let segs = drain(&mut s, ms(0));
    r.handle_segment(ms(1), &segs[0]);
    assert!(r.poll_transmit(ms(1)).is_some(), "quick ACK 1 of 2");
    r.handle_segment(ms(2), &segs[1]);
    assert!(r.poll_transmit(ms(2)).is_some(), "quick ACK 2 of 2");
    r.handle_segment(ms(3), &segs[2]);
    assert!(r.poll_transmit(ms(3)).is_none(), "then delayed");
    r.handle_timeout(ms(43));
    r.poll_transmit(ms(43));
    r.handle_segment(ms(2000), &segs[3]); // a gap longer than the 1 s RTO
    assert!(r.poll_transmit(ms(2000)).is_some(), "quick ACK again after the gap");
}

#[test]
fn with_delayed_acks_the_echoed_timestamp_is_the_earliest_unacknowledged_segments() {
    let mut r = TcpReceiver::new(TcpConfig { delayed_ack: Some(Duration::from_millis(40)), quickacks: 0, ..cfg() });
    let mut s = sender(TcpConfig { initial_window: 10, ..cfg() }, 100 * MSS);
    let mut segs = drain(&mut s, ms(0));
    // Give the segments distinct send times.
    for (i, seg) in segs.iter_mut().enumerate() {
        seg.timestamps = Some(Timestamps { val: ms(i as u64), ecr: None, delay: None });
    }
    r.handle_segment(ms(20), &segs[0]);
    r.handle_segment(ms(21), &segs[1]);
    let a = r.poll_transmit(ms(21)).unwrap();
    assert_eq!(a.timestamps.unwrap().ecr, Some(ms(0)), "TSval of segment 0, not 1");
    r.handle_segment(ms(22), &segs[2]);
    r.handle_segment(ms(23), &segs[3]);
    let a = r.poll_transmit(ms(23)).unwrap();
    assert_eq!(a.timestamps.unwrap().ecr, Some(ms(2)));
}

#[test]
fn with_tso_new_data_leaves_as_one_segment_as_large_as_the_window_allows() {
    let tso = TcpConfig { initial_window: 10, tso_max: Some(65_160), ..cfg() };
    let mut s = sender(tso.clone(), 100 * MSS);
    let out = drain(&mut s, ms(0));
    assert_eq!(out.len(), 1, "the whole initial window in one segment");
    assert_eq!(out[0].len as u64, 10 * MSS);
    assert_eq!(out[0].wire_len(), 20 + 32 + 10 * MSS as u32);
    let mut r = TcpReceiver::new(TcpConfig { delayed_ack: Some(Duration::from_millis(40)), quickacks: 0, ..tso });
    r.handle_segment(ms(10), &out[0]);
    assert_eq!(r.poll_transmit(ms(10)).map(|a| a.ack), Some(10 * MSS), "two or more MSS: ACK at once");
}

#[test]
fn a_tso_transfer_with_losses_still_delivers_every_byte() {
    let tso = TcpConfig { initial_window: 10, tso_max: Some(65_160), ..sack_cfg() };
    let (s, r, _) = transfer_with(tso, CcConfig::NewReno, 500 * MSS, &[0, 20, 130], 20);
    assert_eq!(r.delivered(), 500 * MSS);
    assert!(s.stats().segments_sent < 500, "segments carry several MSS: {}", s.stats().segments_sent);
}

#[test]
fn the_advertised_window_shrinks_by_the_out_of_order_bytes_held() {
    let mut r = TcpReceiver::new(TcpConfig { receive_window: 10 * MSS, ..cfg() });
    let mut s = sender(cfg(), 100 * MSS);
    let segs = drain(&mut s, ms(0));
    r.handle_segment(ms(1), &segs[1]);
    r.handle_segment(ms(1), &segs[2]);
    assert_eq!(r.poll_transmit(ms(1)).unwrap().window, 8 * MSS);
    r.handle_segment(ms(2), &segs[0]);
    assert_eq!(r.poll_transmit(ms(2)).unwrap().window, 10 * MSS, "all delivered: the whole buffer again");
}

#[test]
fn the_sender_never_has_more_in_flight_than_the_peer_advertises() {
    let mut s = sender(TcpConfig { initial_window: 10, ..cfg() }, 100 * MSS);
    drain(&mut s, ms(0));
    let mut a = ack(MSS, ms(25), ms(0));
    a.window = 2 * MSS;
    s.handle_ack(ms(50), &a);
    assert!(drain(&mut s, ms(50)).is_empty(), "9 segments in flight > a 2-segment window");
}

#[test]
fn nagle_holds_a_short_write_while_an_earlier_short_segment_is_unacknowledged() {
    let mut s = sender(TcpConfig { nagle: true, initial_window: 10, ..cfg() }, 1380);
    let first = drain(&mut s, ms(0));
    assert_eq!(first.iter().map(|x| x.len).collect::<Vec<_>>(), vec![1380], "nothing in flight: it goes");
    s.write(1380);
    assert!(drain(&mut s, ms(10)).is_empty(), "the first short segment is unacknowledged: hold");
    s.write(1380);
    let full = drain(&mut s, ms(20));
    assert_eq!(full.iter().map(|x| x.len).collect::<Vec<_>>(), vec![1448], "a full segment always goes");
    s.handle_ack(ms(50), &ack(1380, ms(25), ms(0)));
    let rest = drain(&mut s, ms(50));
    assert_eq!(rest.iter().map(|x| x.len).collect::<Vec<_>>(), vec![1312], "the short one is acked: the rest goes");
}

#[test]
fn without_nagle_every_short_write_leaves_at_once() {
    let mut s = sender(TcpConfig { initial_window: 10, ..cfg() }, 1380);
    drain(&mut s, ms(0));
    s.write(1380);
    assert_eq!(drain(&mut s, ms(10)).iter().map(|x| x.len).collect::<Vec<_>>(), vec![1380]);
}

/// The Linux preset's window rules with NewReno and no delayed ACKs.
fn validating_sender() -> TcpSender {
    assert!(TcpConfig::linux().cwnd_validation, "the Linux preset validates the window");
    linux_sender(true)
}

fn linux_sender(cwnd_validation: bool) -> TcpSender {
    let cfg = TcpConfig { delayed_ack: None, cwnd_validation, ..TcpConfig::linux() };
    TcpSender::new(cfg, CcConfig::NewReno.build())
}

#[test]
fn an_application_limited_sender_keeps_its_window_and_an_unvalidated_one_grows_it() {
    for validate in [true, false] {
        let mut s = linux_sender(validate);
        // One segment per 100 ms RTT: the flight never comes near the window.
        for i in 0..20 {
            s.write(MSS);
            assert_eq!(drain(&mut s, ms(100 * i)).len(), 1);
            s.handle_ack(ms(100 * i + 50), &ack((i + 1) * MSS, ms(100 * i + 25), ms(100 * i)));
        }
        let cwnd = s.window().cwnd / MSS;
        if validate {
            assert_eq!(cwnd, 10, "Linux leaves the initial window alone");
        } else {
            assert_eq!(cwnd, 30, "one segment more per ACK in slow start");
        }
    }
}

/// Writes `segments` full segments at once, acknowledges each one that left,
/// and returns how many left and the window after, in segments.
fn one_round(s: &mut TcpSender, segments: u64) -> (usize, u64) {
    s.write(segments * MSS);
    let sent = drain(s, ms(0)).len();
    for i in 1..=sent as u64 {
        s.handle_ack(ms(100), &ack(i * MSS, ms(50), ms(0)));
    }
    (sent, s.window().cwnd / MSS)
}

#[test]
fn in_slow_start_an_unfilled_window_grows_to_twice_the_largest_flight() {
    let (sent, cwnd) = one_round(&mut validating_sender(), 8);
    assert_eq!(sent, 8, "8 of the 10 segments the window allows");
    assert_eq!(cwnd, 16, "grows while cwnd < 2 x 8 segments, then stops");
}

#[test]
fn a_sender_that_fills_its_window_grows_it_on_every_ack_in_slow_start() {
    assert_eq!(
        one_round(&mut validating_sender(), 100),
        (10, 20),
        "the whole initial window, then slow start as usual"
    );
    // A window held back by the receiver, not by cwnd, is not in use either.
    let mut r = validating_sender();
    r.write(100 * MSS);
    let mut small = ack(0, ms(0), ms(0));
    small.window = 4 * MSS;
    r.handle_ack(ms(0), &small);
    assert_eq!(drain(&mut r, ms(0)).len(), 4);
    for i in 1..=4 {
        let mut a = ack(i * MSS, ms(50), ms(0));
        a.window = 4 * MSS;
        r.handle_ack(ms(100), &a);
    }
    assert_eq!(r.window().cwnd / MSS, 10, "10 is not below twice the 4-segment flight");
}

/// Runs `writes` (bytes, then milliseconds until the next write) through a
/// sender whose every segment is acknowledged `rtt_ms` later, and returns the
/// largest window seen after an ACK.
fn largest_window(writes: &[(u64, u64)], rtt_ms: u64, cc: CcConfig, validation: bool) -> u64 {
    let cfg = TcpConfig { delayed_ack: None, cwnd_validation: validation, ..TcpConfig::linux() };
    let mut s = TcpSender::new(cfg, cc.build());
    let mut acks: std::collections::VecDeque<(Time, u64, Time)> = Default::default();
    let (mut now, mut largest) = (ms(0), s.window().cwnd);
    let send = |s: &mut TcpSender, at: Time, acks: &mut std::collections::VecDeque<_>| {
        while let Some(seg) = s.poll_transmit(at) {
            acks.push_back((at + Duration::from_millis(rtt_ms), seg.seq + seg.len as u64, at));
        }
    };
    for &(bytes, gap_ms) in writes {
        s.write(bytes);
        send(&mut s, now, &mut acks);
        let until = now + Duration::from_millis(gap_ms);
        while acks.front().is_some_and(|a| a.0 <= until) {
            let (at, n, sent) = acks.pop_front().unwrap();
            s.handle_ack(at, &ack(n, at, sent));
            largest = largest.max(s.window().cwnd);
            send(&mut s, at, &mut acks);
        }
        now = until;
    }
    largest
}

proptest::proptest! {
    /// Writes of up to half the initial window, each acknowledged before the
    /// next: the flight never comes near the window, so it never grows.
    #[test]
    fn with_validation_a_sender_that_never_fills_half_its_window_never_grows_it(
        writes in proptest::collection::vec((1u64..=5 * MSS, 0u64..300), 1..60),
        rtt_ms in 1u64..300,
        cubic in proptest::bool::ANY,
    ) {
        let cc = if cubic { CcConfig::Cubic(Default::default()) } else { CcConfig::NewReno };
        let spaced: Vec<(u64, u64)> = writes.iter().map(|&(b, extra)| (b, rtt_ms + 1 + extra)).collect();
        proptest::prop_assert_eq!(largest_window(&spaced, rtt_ms, cc, true), 10 * MSS);
    }
}

#[test]
fn without_validation_a_trickle_grows_the_window_on_every_ack() {
    let trickle = vec![(1380, 100); 40];
    assert_eq!(largest_window(&trickle, 50, CcConfig::NewReno, true), 10 * MSS);
    assert_eq!(largest_window(&trickle, 50, CcConfig::NewReno, false), 10 * MSS + 40 * 1380, "the property can fail");
}

/// `rounds` rounds of a sender with more to send than its window: each
/// round, every 100 ms, sends what the window allows, and each segment is
/// acknowledged 50 ms later.
fn fill_rounds(s: &mut TcpSender, rounds: u64) {
    let mut acked = s.bytes_acked();
    for round in 0..rounds {
        let sent = drain(s, ms(100 * round)).len() as u64;
        for _ in 0..sent {
            acked += MSS;
            s.handle_ack(ms(100 * round + 50), &ack(acked, ms(0), ms(100 * round)));
        }
    }
}

/// A Linux sender that has grown its window to 40 segments by filling it,
/// with everything acknowledged at 500 ms (RTO then 200 ms + 4 x RTTVAR).
fn grown_linux_sender() -> TcpSender {
    let mut s = linux_sender(true);
    s.write(1000 * MSS);
    fill_rounds(&mut s, 2);
    assert_eq!(s.window().cwnd / MSS, 40, "two rounds of slow start from 10");
    s.stop_writing();
    drain(&mut s, ms(150)); // the stream ends at what was sent: all is acknowledged
    s
}

#[test]
fn after_an_idle_rto_new_data_restarts_from_the_initial_window_halving_per_further_rto() {
    for (idle_ms, want) in [(100, 40), (300, 20), (600, 10), (5_000, 10)] {
        let mut s = grown_linux_sender();
        let rto = s.rto();
        assert_eq!(rto, Duration::from_millis(250), "SRTT 50 ms + 200 ms");
        s.write(1000 * MSS);
        // The last new data left at 100 ms.
        let sent = drain(&mut s, ms(100 + idle_ms)).len() as u64;
        assert_eq!(sent, want, "idle {idle_ms} ms against an RTO of 250 ms");
    }
}

#[test]
fn without_slow_start_after_idle_a_window_survives_any_pause() {
    let mut s = TcpSender::new(
        TcpConfig { delayed_ack: None, slow_start_after_idle: false, ..TcpConfig::linux() },
        CcConfig::NewReno.build(),
    );
    s.write(10 * MSS);
    assert_eq!(drain(&mut s, ms(0)).len(), 10);
    for i in 1..=10 {
        s.handle_ack(ms(50), &ack(i * MSS, ms(0), ms(0)));
    }
    s.write(100 * MSS);
    assert_eq!(drain(&mut s, ms(60_000)).len(), 20, "a minute later, the whole grown window at once");
}

#[test]
fn with_slow_start_off_a_restart_after_idle_leaves_the_window_in_congestion_avoidance() {
    let cfg = TcpConfig { delayed_ack: None, slow_start: false, initial_window: 2, ..TcpConfig::linux() };
    let mut s = TcpSender::new(cfg, CcConfig::NewReno.build());
    s.write(10_000 * MSS);
    fill_rounds(&mut s, 30);
    let grown = s.window().cwnd;
    assert!(grown > 8 * MSS, "grew in congestion avoidance: {grown}");
    s.stop_writing(); // the stream ends at what was sent, and all of it is acknowledged
    s.write(100 * MSS);
    drain(&mut s, ms(60_000));
    let w = s.window();
    assert!(w.cwnd < grown, "restarted after a minute idle");
    assert!(w.ssthresh <= w.cwnd, "no slow start, before or after the restart");
}
