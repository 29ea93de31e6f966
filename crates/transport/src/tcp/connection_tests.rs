//! Scripted handshakes, teardowns and resets between two connections.

use torrentlab_engine::{Duration, Time};

use super::*;
use crate::cc::CcConfig;

fn ms(x: u64) -> Time {
    Time(x * 1_000_000)
}

fn cfg() -> TcpConfig {
    TcpConfig { initial_window: 10, ..TcpConfig::rfc() }
}

fn pair() -> (TcpConnection, TcpConnection) {
    (TcpConnection::connect(cfg(), CcConfig::NewReno.build()), TcpConnection::listen(cfg(), CcConfig::NewReno.build()))
}

fn drain(c: &mut TcpConnection, now: Time) -> Vec<Segment> {
    std::iter::from_fn(|| c.poll_transmit(now)).collect()
}

#[test]
fn the_three_way_handshake_has_linux_sized_syns_and_seeds_the_rtt() {
    let (mut a, mut b) = pair();
    let syn = drain(&mut a, ms(0));
    assert_eq!(syn.len(), 1);
    assert!(syn[0].flags.contains(Flags::SYN) && !syn[0].flags.contains(Flags::ACK));
    assert_eq!(syn[0].wire_len(), 60, "IPv4 20 + TCP 20 + MSS, SACK-permitted, timestamps, window scale");
    b.handle(ms(25), &syn[0]);
    assert_eq!(b.state(), TcpState::SynReceived);
    let synack = drain(&mut b, ms(25));
    assert!(synack[0].flags.contains(Flags::SYN | Flags::ACK));
    assert_eq!(synack[0].timestamps.unwrap().ecr, Some(ms(0)), "the SYN's TSval is echoed");
    a.handle(ms(50), &synack[0]);
    assert_eq!(a.state(), TcpState::Established);
    assert_eq!(a.sender().info().srtt, Some(Duration::from_millis(50)));
    let ack = drain(&mut a, ms(50));
    assert_eq!((ack.len(), ack[0].wire_len()), (1, 52));
    b.handle(ms(75), &ack[0]);
    assert_eq!(b.state(), TcpState::Established);
}

#[test]
fn a_lost_syn_is_resent_after_one_second_then_two() {
    let (mut a, _) = pair();
    drain(&mut a, ms(0));
    assert_eq!(a.poll_timeout(), Some(ms(1000)));
    a.handle_timeout(ms(1000));
    assert_eq!(drain(&mut a, ms(1000)).len(), 1);
    assert_eq!(a.poll_timeout(), Some(ms(3000)));
}

#[test]
fn data_piggybacks_acks_and_a_fin_exchange_closes_both_ends() {
    let (mut a, mut b) = pair();
    let mut now = ms(0);
    a.write(5000);
    a.close();
    b.write(3000);
    b.close();
    // Shuttle segments both ways, 10 ms per hop, until both ends are closed.
    for _ in 0..40 {
        now += Duration::from_millis(10);
        for s in drain(&mut a, now) {
            b.handle(now, &s);
        }
        for s in drain(&mut b, now) {
            a.handle(now, &s);
        }
    }
    assert_eq!(b.receiver().delivered(), 5000);
    assert_eq!(a.receiver().delivered(), 3000);
    assert!(a.is_closed() && b.is_closed(), "FINs sent and acknowledged both ways");
}

#[test]
fn a_lost_fin_is_resent_on_its_own_deadline_and_its_ack_leaves_no_timer() {
    // The SYN's and the FIN's retransmission deadlines share one field.
    let (mut a, mut b) = pair();
    b.handle(ms(10), &drain(&mut a, ms(0))[0]);
    a.handle(ms(20), &drain(&mut b, ms(10))[0]);
    b.handle(ms(30), &drain(&mut a, ms(20))[0]);
    assert_eq!((a.state(), b.state()), (TcpState::Established, TcpState::Established));
    assert_eq!(a.poll_timeout(), None, "established and idle: no SYN deadline is left");
    a.close();
    let fin = drain(&mut a, ms(40));
    assert!(fin.len() == 1 && fin[0].flags.contains(Flags::FIN));
    let t = a.poll_timeout().expect("the FIN's retransmission deadline");
    assert!(t > ms(40));
    a.handle_timeout(t); // the FIN was lost
    let again = drain(&mut a, t);
    assert!(again.len() == 1 && again[0].flags.contains(Flags::FIN), "resent: {again:?}");
    assert!(a.poll_timeout().expect("armed again") > t, "backed off");
    let t2 = t + Duration::from_millis(10);
    b.handle(t2, &again[0]);
    assert!(b.peer_finished());
    for s in drain(&mut b, t2) {
        a.handle(t2 + Duration::from_millis(10), &s);
    }
    assert_eq!(a.poll_timeout(), None, "the FIN is acknowledged: nothing to retransmit");
}

#[test]
fn a_reset_ends_the_connection_at_both_ends() {
    let (mut a, mut b) = pair();
    let syn = drain(&mut a, ms(0));
    b.handle(ms(1), &syn[0]);
    b.abort();
    let rst = drain(&mut b, ms(2));
    assert!(rst[0].flags.contains(Flags::RST));
    assert_eq!(rst[0].wire_len(), 40);
    a.handle(ms(3), &rst[0]);
    assert_eq!((a.state(), b.state()), (TcpState::Reset, TcpState::Reset));
    assert!(drain(&mut a, ms(4)).is_empty());
}
#[test]
fn an_endpoint_stays_compact() {
    // A swarm holds thousands of endpoints (it was 792 bytes with
    // `Option<Time>` fields and per-endpoint copies of the RTO bounds, then
    // 592 with a configuration pointer in each half).
    assert!(std::mem::size_of::<TcpConnection>() <= 576, "{}", std::mem::size_of::<TcpConnection>());
}

#[test]
fn whenever_the_inline_check_finds_an_endpoint_quiet_the_full_look_sends_nothing() {
    // Data both ways (delayed ACKs waiting, Nagle holding), a loss and its
    // timeout, then FINs: at every opportunity, a quiet verdict must agree
    // with what the full look finds.
    let (a, b) = pair();
    let mut ends = [a, b];
    let (mut quiet, mut now) = (0, ms(0));
    ends[0].write(40_000);
    ends[1].write(3_000);
    for step in 0..400 {
        now += Duration::from_millis(5);
        if step == 150 {
            ends.iter_mut().for_each(TcpConnection::close);
        }
        for i in 0..2 {
            let [a, b] = &mut ends;
            let (from, to) = if i == 0 { (a, b) } else { (b, a) };
            if from.poll_timeout().is_some_and(|t| t <= now) {
                from.handle_timeout(now);
            }
            loop {
                if from.is_quiet() {
                    quiet += 1;
                    assert!(from.poll_transmit_any(now).is_none(), "quiet at {now:?} yet something to send");
                    break;
                }
                let Some(s) = from.poll_transmit_any(now) else { break };
                // Every 25th step's data segments are lost.
                if !(step % 25 == 0 && s.len > 0) {
                    to.handle(now, &s);
                }
            }
        }
    }
    let [a, b] = &ends;
    assert!(quiet > 100, "the check was exercised ({quiet} quiet verdicts)");
    assert_eq!((b.receiver().delivered(), a.receiver().delivered()), (40_000, 3_000));
    assert!(a.is_closed() && b.is_closed());
}
