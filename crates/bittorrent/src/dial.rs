//! Which transports a client dials and answers, and which of two
//! connections to one remote it keeps: the connection management of the
//! three client profiles.
//!
//! * mainline 4.0.x speaks TCP only ([`Transports::mainline`]). The
//!   simulator also lets a mainline class dial over uTP, answering both
//!   transports: mainline's algorithms over uTP, a construct of ours.
//! * uTorrent's `bt.transp_disposition` bitmask ([`Transports::disposition`]):
//!   1 attempt outgoing TCP, 2 attempt outgoing uTP, 4 accept incoming TCP,
//!   8 accept incoming uTP, 16 the new (version 1) uTP header. A client
//!   allowed both attempts dials both at once ([`Dial::Parallel`]) and
//!   keeps the uTP connection when it is up. uTorrent is closed source:
//!   the parallel attempts and the uTP preference are from its manual and
//!   from Testa et al. (TMA 2012), who watched it on a testbed; the rest is
//!   inferred (see `docs/clients.md`).
//! * libtorrent ([`Transports::libtorrent`]): uTP first, and TCP at once if
//!   the uTP connect fails (`torrent::connect_to_peer`,
//!   `peer_connection::connect_failed`); both accepted; duplicates resolved
//!   without regard to the transport.

/// The transport under a peer-wire connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    Tcp,
    Utp,
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Utp => "utp",
        }
    }
}

/// How a client dials a peer it has learnt of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dial {
    /// It never dials; it only answers.
    Never,
    /// Over this transport only.
    Only(Transport),
    /// uTorrent with both attempt bits: TCP and uTP at once. The uTP
    /// connection, once up, replaces the TCP one.
    Parallel,
    /// libtorrent: uTP, then TCP at once if the uTP connect fails.
    UtpThenTcp,
}

/// Why a connection was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The client does not answer this transport. A refused uTP SYN is
    /// dropped without an answer (libutp's firewall callback, libtorrent's
    /// `enable_incoming_utp`); a refused TCP SYN is reset (no listener).
    Transport,
    /// At its connection limit, or gone.
    Full,
    /// Already connected to that peer.
    Duplicate,
}

/// uTorrent's `bt.transp_disposition` bits.
pub mod disposition {
    pub const OUT_TCP: u32 = 1;
    pub const OUT_UTP: u32 = 2;
    pub const IN_TCP: u32 = 4;
    pub const IN_UTP: u32 = 8;
    /// The version 1 uTP header (BEP 29). Recorded; the simulation always
    /// uses it (the version 0 header was 3 bytes longer).
    pub const NEW_HEADER: u32 = 16;
    /// uTorrent's default: everything.
    pub const DEFAULT: u32 = 31;
}

/// A client's transports: how it dials, what it answers, which connection
/// to a peer it keeps when it has two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transports {
    pub dial: Dial,
    pub accept_tcp: bool,
    pub accept_utp: bool,
    /// A uTP connection to a peer, once up, replaces a TCP one to the same
    /// peer (uTorrent's hard-coded preference). Without it two connections
    /// to one peer are resolved by who dialled, whatever their transports.
    pub prefer_utp: bool,
}

impl Transports {
    /// Mainline dialling over `t`, without preference. Over TCP, mainline
    /// 4.0.x as released: it neither dials nor answers uTP. Over uTP (not a
    /// real client: mainline's algorithms over uTP), it answers both.
    pub fn mainline(t: Transport) -> Self {
        Transports { dial: Dial::Only(t), accept_tcp: true, accept_utp: t == Transport::Utp, prefer_utp: false }
    }

    /// uTorrent's behaviour for a `bt.transp_disposition` value. Bits above
    /// 16 are ignored (uTorrent's manual: 255 enables everything).
    pub fn disposition(bits: u32) -> Self {
        use disposition::*;
        let dial = match (bits & OUT_TCP != 0, bits & OUT_UTP != 0) {
            (true, true) => Dial::Parallel,
            (true, false) => Dial::Only(Transport::Tcp),
            (false, true) => Dial::Only(Transport::Utp),
            (false, false) => Dial::Never,
        };
        Transports { dial, accept_tcp: bits & IN_TCP != 0, accept_utp: bits & IN_UTP != 0, prefer_utp: true }
    }

    /// libtorrent's defaults (every `enable_{incoming,outgoing}_{tcp,utp}` on).
    pub fn libtorrent() -> Self {
        Transports { dial: Dial::UtpThenTcp, accept_tcp: true, accept_utp: true, prefer_utp: false }
    }

    /// Whether an incoming connection over `t` is answered.
    pub fn accepts(&self, t: Transport) -> bool {
        match t {
            Transport::Tcp => self.accept_tcp,
            Transport::Utp => self.accept_utp,
        }
    }

    /// The connections to open to a new peer, in the order they are dialled.
    pub fn first_dials(&self) -> &'static [Transport] {
        match self.dial {
            Dial::Never => &[],
            Dial::Only(Transport::Tcp) => &[Transport::Tcp],
            Dial::Only(Transport::Utp) | Dial::UtpThenTcp => &[Transport::Utp],
            // uTP first: its SYN leaves just ahead of the TCP one.
            Dial::Parallel => &[Transport::Utp, Transport::Tcp],
        }
    }

    /// Whether a failed uTP dial is followed by a TCP one.
    pub fn falls_back(&self) -> bool {
        self.dial == Dial::UtpThenTcp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disposition_31_dials_both_transports_answers_both_and_prefers_utp() {
        let t = Transports::disposition(31);
        assert_eq!(t.dial, Dial::Parallel);
        assert_eq!(t.first_dials(), &[Transport::Utp, Transport::Tcp]);
        assert!(t.accepts(Transport::Tcp) && t.accepts(Transport::Utp) && t.prefer_utp);
    }

    #[test]
    fn the_legacy_disposition_5_dials_and_answers_tcp_only() {
        let t = Transports::disposition(5);
        assert_eq!(t.first_dials(), &[Transport::Tcp]);
        assert!(t.accepts(Transport::Tcp) && !t.accepts(Transport::Utp));
    }

    #[test]
    fn dispositions_13_and_14_differ_only_in_the_transport_they_dial() {
        let (a, b) = (Transports::disposition(13), Transports::disposition(14));
        assert_eq!(a.first_dials(), &[Transport::Tcp]);
        assert_eq!(b.first_dials(), &[Transport::Utp]);
        assert_eq!((a.accept_tcp, a.accept_utp), (b.accept_tcp, b.accept_utp));
        assert!(a.accept_tcp && a.accept_utp);
    }

    #[test]
    fn disposition_10_speaks_utp_only_and_12_never_dials() {
        let t = Transports::disposition(10);
        assert_eq!(t.first_dials(), &[Transport::Utp]);
        assert!(!t.accepts(Transport::Tcp) && t.accepts(Transport::Utp));
        assert_eq!(Transports::disposition(12).first_dials(), &[] as &[Transport]);
        assert_eq!(Transports::disposition(255), Transports::disposition(31), "bits above 16 are ignored");
    }

    #[test]
    fn mainline_over_tcp_answers_tcp_only_and_over_utp_answers_both() {
        let tcp = Transports::mainline(Transport::Tcp);
        assert!(tcp.accepts(Transport::Tcp) && !tcp.accepts(Transport::Utp));
        let utp = Transports::mainline(Transport::Utp);
        assert!(utp.accepts(Transport::Tcp) && utp.accepts(Transport::Utp) && !utp.prefer_utp);
    }

    #[test]
    fn libtorrent_dials_utp_first_and_falls_back_to_tcp_without_preferring_either() {
        let t = Transports::libtorrent();
        assert_eq!(t.first_dials(), &[Transport::Utp]);
        assert!(t.falls_back() && !t.prefer_utp);
        assert!(!Transports::disposition(31).falls_back());
    }
}
