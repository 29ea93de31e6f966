//! Scripted uTP exchanges and whole transfers over an ideal pipe.

use std::collections::BTreeMap;

use torrentlab_engine::{Duration, Time};

use super::*;

fn ms(x: u64) -> Time {
    Time(x * 1_000_000)
}

const P: u32 = 1000;

fn cfg() -> UtpConfig {
    UtpConfig { packet_size: P, ..UtpConfig::default() }
}

fn drain(s: &mut UtpSocket, now: Time) -> Vec<UtpPacket> {
    std::iter::from_fn(|| s.poll_transmit(now)).collect()
}

/// Connects a pair at t = 0 over a 10 ms pipe; returns (initiator, acceptor, now).
fn connected() -> (UtpSocket, UtpSocket, Time) {
    let mut a = UtpSocket::connect(cfg(), ms(0), 100, 1, 0);
    let mut b = UtpSocket::accept(cfg(), 100, 5000, 123_456);
    let syn = drain(&mut a, ms(0));
    b.handle(ms(10), &syn[0]);
    let state = drain(&mut b, ms(10));
    a.handle(ms(20), &state[0]);
    (a, b, ms(20))
}

#[test]
fn the_handshake_is_a_syn_answered_by_a_state_with_the_bep29_ids_and_numbers() {
    let mut a = UtpSocket::connect(cfg(), ms(0), 100, 1, 0);
    let mut b = UtpSocket::accept(cfg(), 100, 5000, 0);
    let syn = drain(&mut a, ms(0));
    assert_eq!(syn.len(), 1);
    let h = syn[0].header;
    assert_eq!((h.kind, h.connection_id, h.seq_nr), (PacketType::Syn, 100, 1));
    assert_eq!(syn[0].wire_len(), 20 + 8 + 20);
    b.handle(ms(10), &syn[0]);
    assert_eq!(b.state(), UtpState::Connected);
    let st = drain(&mut b, ms(10));
    assert_eq!(st.len(), 1);
    let h = st[0].header;
    assert_eq!((h.kind, h.connection_id, h.seq_nr, h.ack_nr), (PacketType::State, 100, 5000, 1));
    assert_eq!(h.timestamp_diff_us, 10_000, "the acceptor saw the SYN 10 ms after it left");
    a.handle(ms(20), &st[0]);
    assert_eq!(a.state(), UtpState::Connected);
}

#[test]
fn data_packets_carry_consecutive_sequence_numbers_and_the_initiators_send_id() {
    let (mut a, _, t) = connected();
    a.write(2500);
    let out = drain(&mut a, t);
    let seqs: Vec<_> = out.iter().map(|p| (p.header.kind, p.header.seq_nr, p.payload)).collect();
    // Window: one packet initially (bep29 starts at one packet); one may always fly.
    assert_eq!(seqs, vec![(PacketType::Data, 2, 1000)]);
    assert_eq!(out[0].header.connection_id, 101);
    assert_eq!(out[0].wire_len(), 20 + 8 + 20 + 1000);
}

#[test]
fn the_receiver_acks_in_order_data_and_sacks_what_arrives_past_a_hole() {
    let (mut a, mut b, t) = connected();
    a.write(10 * P as u64);
    let mut sent = drain(&mut a, t);
    // Open the window: ack the first packet, then take what follows.
    b.handle(t + Duration::from_millis(10), &sent[0]);
    let ack = drain(&mut b, t + Duration::from_millis(10));
    a.handle(t + Duration::from_millis(20), &ack[0]);
    sent.extend(drain(&mut a, t + Duration::from_millis(20)));
    assert!(sent.len() >= 3, "sent {}", sent.len());
    // Deliver the third packet but not the second.
    b.handle(ms(50), &sent[2]);
    let st = drain(&mut b, ms(50));
    let h = st[0].header;
    assert_eq!(h.ack_nr, sent[0].header.seq_nr);
    assert!(h.sack.get(0), "ack_nr + 2 arrived");
    assert_eq!(st[0].wire_len(), 20 + 8 + 20 + 2 + 4);
    assert_eq!(b.delivered(), P as u64);
    b.handle(ms(51), &sent[1]);
    assert_eq!(b.delivered(), 3 * P as u64);
}

/// Runs a transfer over a pipe with `delay_ms` each way, losing the first
/// transmission of the data packets numbered (from 0) in `lose`.
fn transfer(c: UtpConfig, bytes: u64, lose: &[u16], delay_ms: u64) -> (UtpSocket, UtpSocket, Time) {
    let mut a = UtpSocket::connect(c.clone(), ms(0), 7, 1, 0);
    let mut b = UtpSocket::accept(c, 7, 900, 77_777);
    a.write(bytes);
    a.close();
    let mut wire: BTreeMap<(Time, u64), (bool, UtpPacket)> = BTreeMap::new();
    let mut order = 0u64;
    let mut lose: Vec<u16> = lose.to_vec();
    let d = Duration::from_millis(delay_ms);
    let mut now = ms(0);
    loop {
        while let Some(p) = a.poll_transmit(now) {
            // The SYN is sequence 1, so data packet n has sequence n + 2.
            let n = p.header.seq_nr.wrapping_sub(2);
            let dropped = p.header.kind == PacketType::Data && lose.contains(&n);
            lose.retain(|x| !(dropped && *x == n));
            if !dropped {
                wire.insert((now + d, order), (true, p));
                order += 1;
            }
        }
        while let Some(p) = b.poll_transmit(now) {
            wire.insert((now + d, order), (false, p));
            order += 1;
        }
        if b.peer_finished() || a.state() == UtpState::Reset {
            return (a, b, now);
        }
        let next_wire = wire.keys().next().map(|k| k.0);
        let next = [next_wire, a.poll_timeout(), b.poll_timeout()].into_iter().flatten().min().expect("stalled");
        now = next;
        if next_wire == Some(now) {
            let (_, (to_b, p)) = wire.pop_first().unwrap();
            if to_b {
                b.handle(now, &p);
            } else {
                a.handle(now, &p);
            }
        } else {
            a.handle_timeout(now);
            b.handle_timeout(now);
        }
        assert!(now < ms(3_600_000), "transfer did not finish");
    }
}

#[test]
fn a_lossless_transfer_delivers_every_byte_and_ends_with_a_fin() {
    let (a, b, _) = transfer(cfg(), 300 * P as u64 + 17, &[], 20);
    assert_eq!(b.delivered(), 300 * P as u64 + 17);
    assert!(b.peer_finished());
    assert_eq!(a.stats().retransmitted_packets, 0);
}

#[test]
fn losses_are_repaired_by_sack_driven_fast_retransmit_without_timeouts() {
    let (a, b, _) = transfer(cfg(), 400 * P as u64, &[20, 21, 60, 150, 151, 152, 300], 20);
    assert_eq!(b.delivered(), 400 * P as u64);
    assert!(a.stats().fast_retransmits >= 1);
    assert_eq!(a.stats().timeouts, 0);
    assert_eq!(a.stats().retransmitted_packets, 7, "exactly the lost packets");
}

#[test]
fn a_lost_tail_is_recovered_by_the_timer() {
    let (a, b, _) = transfer(cfg(), 5 * P as u64, &[4], 20);
    assert_eq!(b.delivered(), 5 * P as u64);
    assert_eq!(a.stats().timeouts, 1);
}

#[test]
fn repeated_timeouts_double_the_timer_and_end_in_a_reset() {
    let mut a = UtpSocket::connect(cfg(), ms(0), 1, 1, 0);
    drain(&mut a, ms(0));
    let mut deadlines = vec![];
    while a.state() != UtpState::Reset {
        let d = a.poll_timeout().expect("timer armed");
        deadlines.push(d.as_nanos() / 1_000_000);
        a.handle_timeout(d);
        drain(&mut a, d);
    }
    assert_eq!(deadlines, vec![3000, 9000, 21_000], "3 s, then doubling; SYN given up after 2 resends");
}

#[test]
fn nagle_keeps_at_most_one_undersized_packet_in_flight() {
    let (mut a, _, t) = connected();
    a.write(100);
    assert_eq!(drain(&mut a, t).len(), 1);
    a.write(100);
    assert!(drain(&mut a, t).is_empty(), "the second small write waits");
}

#[test]
fn clock_offsets_do_not_change_the_measured_queuing_delay() {
    for offset in [0, 1 << 31, u32::MAX - 5] {
        let mut a = UtpSocket::connect(cfg(), ms(0), 7, 1, 0);
        let mut b = UtpSocket::accept(cfg(), 7, 900, offset);
        a.write(50 * P as u64);
        let mut now = ms(0);
        for _ in 0..200 {
            for p in drain(&mut a, now) {
                b.handle(now + Duration::from_millis(30), &p);
            }
            now += Duration::from_millis(30);
            for p in drain(&mut b, now) {
                a.handle(now + Duration::from_millis(30), &p);
            }
            now += Duration::from_millis(30);
        }
        assert_eq!(b.delivered(), 50 * P as u64);
        assert_eq!(a.info().queuing_delay, Some(Duration::ZERO), "offset {offset}");
    }
}

/// A transfer over a path whose MTU drops first transmissions (DF probes) of
/// UDP payloads above `path_mtu` (resends, sent without DF, get fragmented
/// through). Returns the sender and the largest data payload it sent.
fn mtu_transfer(c: UtpConfig, bytes: u64, path_mtu: u32, loss_free_ms: u64) -> (UtpSocket, UtpSocket, u32) {
    let mut a = UtpSocket::connect(c.clone(), ms(0), 9, 1, 0);
    let mut b = UtpSocket::accept(c, 9, 400, 0);
    a.write(bytes);
    a.close();
    let mut wire: BTreeMap<(Time, u64), (bool, UtpPacket)> = BTreeMap::new();
    let (mut order, mut largest) = (0u64, 0u32);
    let mut seen = std::collections::BTreeSet::new();
    let d = Duration::from_millis(loss_free_ms);
    let mut now = ms(0);
    while !b.peer_finished() {
        while let Some(p) = a.poll_transmit(now) {
            let first = seen.insert(p.header.seq_nr);
            largest = largest.max(p.payload);
            if !(first && p.header.byte_len() + p.payload > path_mtu) {
                wire.insert((now + d, order), (true, p));
                order += 1;
            }
        }
        while let Some(p) = b.poll_transmit(now) {
            wire.insert((now + d, order), (false, p));
            order += 1;
        }
        let next_wire = wire.keys().next().map(|k| k.0);
        now = [next_wire, a.poll_timeout(), b.poll_timeout()].into_iter().flatten().min().expect("stalled");
        if next_wire == Some(now) {
            let (_, (to_b, p)) = wire.pop_first().unwrap();
            if to_b {
                b.handle(now, &p)
            } else {
                a.handle(now, &p)
            }
        } else {
            a.handle_timeout(now);
            b.handle_timeout(now);
        }
        assert!(now < ms(600_000), "transfer did not finish");
    }
    (a, b, largest)
}

#[test]
fn mtu_probing_climbs_to_the_ceiling_on_a_path_that_carries_everything() {
    let c = UtpConfig { mtu_probing: true, ..UtpConfig::default() };
    let (a, b, largest) = mtu_transfer(c, 2_000_000, 10_000, 20);
    assert_eq!(b.delivered(), 2_000_000);
    let (floor, ceiling) = a.mtu_range();
    assert!(ceiling - floor <= 16 && floor > 1450, "search ended at [{floor}, {ceiling}]");
    assert_eq!(a.packet_size(), floor - 20);
    assert!(largest > 1400);
}

#[test]
fn lost_probes_lower_the_ceiling_below_the_path_mtu_and_the_transfer_completes() {
    let c = UtpConfig { mtu_probing: true, ..UtpConfig::default() };
    let (a, b, _) = mtu_transfer(c, 2_000_000, 1200, 20);
    assert_eq!(b.delivered(), 2_000_000);
    let (floor, ceiling) = a.mtu_range();
    assert!(floor <= 1200 && (1183..1216).contains(&ceiling), "search ended at [{floor}, {ceiling}]");
    assert!(floor >= 1150, "floor {floor}");
}

#[test]
fn an_abort_sends_one_reset_that_ends_the_peers_socket_too() {
    let (mut a, mut b, t) = connected();
    a.write(5000);
    let _ = drain(&mut a, t);
    a.abort();
    assert_eq!((a.state(), a.poll_timeout(), a.unacked_bytes()), (UtpState::Reset, None, 0));
    let out = drain(&mut a, t);
    assert_eq!(out.len(), 1, "one packet, the reset");
    let h = out[0].header;
    assert_eq!((h.kind, h.connection_id), (PacketType::Reset, 101), "on the id the acceptor receives on");
    b.handle(t + Duration::from_millis(10), &out[0]);
    assert_eq!(b.state(), UtpState::Reset);
    a.abort();
    assert!(drain(&mut a, t).is_empty(), "a second abort sends nothing");
}

#[test]
fn an_acceptor_nobody_dialled_aborts_without_a_packet() {
    let mut b = UtpSocket::accept(cfg(), 100, 5000, 0);
    b.abort();
    assert_eq!(b.state(), UtpState::Reset);
    assert!(drain(&mut b, ms(0)).is_empty());
}

#[test]
fn unacked_bytes_count_what_is_written_until_it_is_acknowledged() {
    let (mut a, mut b, mut t) = connected();
    a.write(3 * P as u64 + 10);
    assert_eq!(a.unacked_bytes(), 3 * P as u64 + 10);
    for _ in 0..50 {
        t += Duration::from_millis(10);
        for p in drain(&mut a, t) {
            b.handle(t, &p);
        }
        for p in drain(&mut b, t) {
            a.handle(t, &p);
        }
    }
    assert_eq!((b.delivered(), a.unacked_bytes()), (3 * P as u64 + 10, 0));
}
