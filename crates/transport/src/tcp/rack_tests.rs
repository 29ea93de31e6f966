//! RACK's segment log and loss marking, segment by segment (RFC 8985 §6).

use super::*;

const L: u32 = 1000;

fn ms(x: u64) -> Time {
    Time(x * 1_000_000)
}

/// `n` segments of `L` bytes, segment `i` sent at `i` ms.
fn sent(n: u64) -> Rack {
    let mut r = Rack::default();
    for i in 0..n {
        r.on_send(ms(i), i * L as u64, L);
    }
    r
}

/// SACK of segments `[a, b)` with the cumulative ACK at segment `una`.
fn sack(r: &mut Rack, now: Time, una: u64, a: u64, b: u64) {
    r.on_ack(now, una * L as u64, [(a * L as u64, b * L as u64)].into_iter());
}

fn recount(r: &Rack) -> (u64, u64, u64) {
    let sum = |f: u8| r.log.iter().filter(|s| s.has(f)).map(|s| s.len as u64).sum::<u64>();
    (sum(SACKED), sum(LOST), sum(RETRANS))
}

#[test]
fn a_segment_sent_before_a_delivered_one_is_lost_once_a_quarter_min_rtt_has_passed() {
    let mut r = sent(5);
    sack(&mut r, ms(100), 0, 4, 5); // segment 4, sent at 4 ms: RTT 96 ms
    let reo = r.reo_wnd(false, 3 * L as u64, Some(ms(96) - ms(0)));
    assert_eq!(reo, Duration::from_millis(24), "min RTT / 4 with one segment SACKed");
    assert_eq!(r.detect_loss(ms(100), reo), 0, "nothing yet: 0 + 96 + 24 > 100");
    assert_eq!(r.reo_deadline.get(), Some(ms(123)), "the timer waits for the last of segments 0-3");
    assert_eq!(r.detect_loss(ms(121), reo), 2 * L as u64, "segments 0 and 1 (due at 120 and 121)");
    assert_eq!(r.detect_loss(ms(123), reo), 2 * L as u64, "then 2 and 3");
    assert_eq!((r.lost, r.sacked, r.pipe(5 * L as u64)), (4 * L as u64, L as u64, 0));
    assert_eq!(r.next_lost(L), Some((0, L)));
}

#[test]
fn with_dupthresh_segments_sacked_the_window_is_zero_and_older_holes_are_lost_at_once() {
    let mut r = sent(6);
    sack(&mut r, ms(100), 0, 1, 2);
    sack(&mut r, ms(101), 0, 1, 4);
    let reo = r.reo_wnd(false, 3 * L as u64, None);
    assert_eq!(reo, Duration::ZERO, "three segments SACKed and no reordering seen");
    assert_eq!(r.detect_loss(ms(101), reo), L as u64, "segment 0 only: 4 and 5 were sent after segment 3");
    assert_eq!(r.reo_wnd(true, 30 * L as u64, None), Duration::ZERO, "in recovery too");
}

#[test]
fn reordering_seen_keeps_the_window_open_even_with_dupthresh_segments_sacked() {
    let mut r = sent(6);
    sack(&mut r, ms(100), 0, 4, 6);
    sack(&mut r, ms(101), 0, 1, 2); // delivered below the highest delivered, never resent
    assert_eq!(recount(&r).0, 3 * L as u64);
    let reo = r.reo_wnd(true, 3 * L as u64, None);
    assert_eq!(reo, Duration::from_micros(23_750), "a quarter of the 95 ms minimum RTT (segment 5's)");
}

#[test]
fn a_lost_retransmission_is_found_when_a_segment_sent_after_it_is_delivered() {
    let mut r = sent(10);
    sack(&mut r, ms(100), 0, 1, 4);
    assert_eq!(r.detect_loss(ms(100), Duration::ZERO), L as u64);
    r.on_send(ms(100), 0, L); // the retransmission
    assert_eq!((r.lost, r.retrans, r.next_lost(L)), (L as u64, L as u64, None));
    r.on_send(ms(101), 10 * L as u64, L); // new data after it
    assert_eq!(r.pipe(11 * L as u64), 8 * L as u64, "segments 0 (once), 4-9 and 10 out; 1-3 SACKed");
    assert_eq!(
        r.detect_loss(ms(150), Duration::ZERO),
        0,
        "segments 4-9 and the retransmission: nothing delivered after them"
    );
    sack(&mut r, ms(201), 0, 1, 11); // segment 10, sent after the retransmission, arrives; the retransmission does not
    assert_eq!(r.detect_loss(ms(201), Duration::ZERO), L as u64, "the retransmission is lost");
    assert_eq!((r.lost_retransmits, r.retrans, r.lost), (1, 0, L as u64));
    assert_eq!(r.next_lost(L), Some((0, L)), "and goes again");
}

#[test]
fn a_retransmission_acked_sooner_than_the_minimum_rtt_is_the_originals_delivery_and_moves_nothing() {
    let mut r = sent(4);
    sack(&mut r, ms(100), 0, 1, 2); // min RTT 99 ms
    r.on_send(ms(150), 0, L); // a spurious retransmission
    r.on_ack(ms(160), L as u64, std::iter::empty()); // 10 ms later: the original's ACK
    assert_eq!((r.xmit_ts, r.end_seq), (ms(1), 2 * L as u64), "RACK still points at segment 1");
    assert!(r.log.iter().all(|s| s.seq >= L as u64), "but segment 0 left the log");
}

#[test]
fn a_timeout_marks_the_head_and_every_segment_out_longer_than_rack_rtt_lost() {
    let mut r = sent(4);
    sack(&mut r, ms(100), 0, 1, 2); // RACK.rtt 99 ms
    r.on_send(ms(900), 4 * L as u64, L); // recently sent
    r.mark_lost_on_timeout(ms(950), true);
    let lost: Vec<u64> = r.log.iter().filter(|s| s.has(LOST)).map(|s| s.seq / L as u64).collect();
    assert_eq!(lost, [0, 2, 3], "not SACKed segment 1, not segment 4 sent 50 ms ago");
    assert_eq!(recount(&r), (r.sacked, r.lost, r.retrans));
}

#[test]
fn a_partial_retransmission_splits_its_entry_and_a_partial_ack_trims_it() {
    let mut r = Rack::default();
    r.on_send(ms(0), 0, 4 * L); // one TSO unit
    r.on_send(ms(1), 4 * L as u64, 4 * L);
    r.mark_lost_on_timeout(ms(500), true);
    assert_eq!(r.lost, 8 * L as u64);
    r.on_send(ms(500), L as u64, L);
    assert_eq!(
        r.log.iter().map(|s| (s.seq / L as u64, s.len / L)).collect::<Vec<_>>(),
        [(0, 1), (1, 1), (2, 2), (4, 4)]
    );
    assert_eq!((r.lost, r.retrans), (8 * L as u64, L as u64));
    r.on_ack(ms(600), 3 * L as u64, std::iter::empty());
    assert_eq!(r.log.front().map(|s| (s.seq, s.len)), Some((3 * L as u64, L)));
    assert_eq!((r.lost, r.retrans), (5 * L as u64, 0), "the acknowledged part leaves the counters");
}

#[test]
fn the_probe_timeout_is_two_srtt_plus_the_delayed_ack_allowance_for_a_single_segment() {
    let srtt = Some(Duration::from_millis(50));
    let (min_rto, init) = (Duration::from_millis(200), Duration::from_secs(1));
    assert_eq!(probe_timeout(srtt, 1, min_rto, init), Duration::from_millis(300));
    assert_eq!(probe_timeout(srtt, 5, min_rto, init), Duration::from_millis(102));
    assert_eq!(probe_timeout(None, 5, min_rto, init), init);
}

proptest::proptest! {
    /// Whatever the order of sends, retransmissions, ACKs, SACKs, loss
    /// marking and timeouts, the byte counters equal what the log's flags
    /// say, the log stays in sequence order, and the pipe never exceeds
    /// the flight plus the retransmissions in it.
    #[test]
    fn the_counters_always_match_the_logs_flags(ops in proptest::collection::vec((0u8..7, 0u64..40, 1u64..6), 1..120)) {
        let mut r = Rack::default();
        let (mut una, mut max, mut now) = (0u64, 0u64, 0u64);
        for (op, a, b) in ops {
            now += 1;
            match op {
                0 => { r.on_send(ms(now), max * L as u64, L); max += 1; }
                1 if max > una => { let s = una + a % (max - una); r.on_send(ms(now), s * L as u64, L); }
                2 if max > una => { una += a % (max - una + 1); r.on_ack(ms(now), una * L as u64, std::iter::empty()); }
                3 if max > una => { let s = una + a % (max - una); let e = (s + b).min(max); sack(&mut r, ms(now), una, s, e); }
                4 => { r.detect_loss(ms(now), Duration::from_millis(b)); }
                5 => r.mark_lost_on_timeout(ms(now), a % 2 == 0),
                _ => { r.fack_detect(ms(now), una * L as u64, 3 * L as u64, Duration::from_millis(b * 10), a % 2 == 0); }
            }
            proptest::prop_assert_eq!(recount(&r), (r.sacked, r.lost, r.retrans));
            proptest::prop_assert!(r.log.iter().zip(r.log.iter().skip(1)).all(|(x, y)| x.end() <= y.seq));
            let flight = (max - una) * L as u64;
            proptest::prop_assert!(r.pipe(flight) <= flight + r.retrans);
            proptest::prop_assert!(r.log.iter().all(|s| !(s.has(SACKED) && s.has(LOST | RETRANS))));
        }
    }
}
