//! Quantities with units, as scenario files write them: `"25 ms"`,
//! `"10 Mbit/s"`, `"40 packets"`, `"10 MB"`.
//!
//! Each newtype deserialises from a string and parses it on the spot, so a bad
//! value is reported with the path of the field it came from.
//!
//! A number may be written in scientific notation (`"1e3 ms"`, `"2.5e6 bit/s"`).
//! Every kind has a maximum ([`MAX_DURATION`], [`MAX_RATE_BPS`], [`MAX_SIZE`],
//! [`MAX_PACKETS`]); a value beyond it is refused as out of range, never
//! saturated. Units are case-sensitive; a unit that only differs in case from
//! a known one is named with a "did you mean".

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use torrentlab_engine::Duration;

/// The longest duration a scenario may give: one year (365 days) in ns. Time is
/// a u64 count of ns (584 years), so sums of a few such durations, and the
/// products the validators allow, stay far from overflow.
pub const MAX_DURATION: Duration = Duration(365 * 24 * 3600 * 1_000_000_000);
/// The highest rate a scenario may give: 1 Tbit/s, in bit/s.
pub const MAX_RATE_BPS: u64 = 1_000_000_000_000;
/// The largest size a scenario may give: 2^50 bytes (1 PiB = 1048576 GiB).
pub const MAX_SIZE: u64 = 1 << 50;
/// The most packets a buffer may hold: 10^9.
pub const MAX_PACKETS: u64 = 1_000_000_000;

/// Splits `"12.5 ms"` into (12.5, "ms"). The number is decimal, optionally in
/// scientific notation, and must be >= 0; one too large for an f64 (`1e400`)
/// comes back as infinity, which every caller reports as out of range.
fn split(s: &str) -> Result<(f64, &str), String> {
    let t = s.trim();
    let end = number_end(t);
    let (num, unit) = t.split_at(end);
    let v: f64 = num.parse().map_err(|_| format!("'{s}' does not start with a number"))?;
    if v < 0.0 {
        return Err(format!("'{s}' is negative; it must be zero or more"));
    }
    Ok((v, unit.trim()))
}

/// The length of the longest prefix of `t` of the form
/// `[+-] digits [. digits] [(e|E) [+-] digits]`.
fn number_end(t: &str) -> usize {
    let b = t.as_bytes();
    let digits = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    i = digits(i);
    if b.get(i) == Some(&b'.') {
        i = digits(i + 1);
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let k = digits(j);
        if k > j {
            i = k;
        }
    }
    i
}

/// One kind of quantity: its units and factors, and its maximum.
struct Kind {
    /// `"duration"`, `"rate"`, `"size"`.
    name: &'static str,
    /// (unit, factor to the base unit: ns, bit/s or bytes).
    units: &'static [(&'static str, f64)],
    /// The units as a message lists them.
    allowed: &'static str,
    /// The largest value in the base unit.
    max: u64,
    /// The largest value as a message writes it.
    max_text: &'static str,
}

const DURATION: Kind = Kind {
    name: "duration",
    units: &[("ns", 1.0), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9), ("min", 60e9), ("h", 3600e9)],
    allowed: "ns, us, ms, s, min, h (e.g. \"25 ms\")",
    max: MAX_DURATION.0,
    max_text: "8760 h (one year)",
};

const RATE: Kind = Kind {
    name: "rate",
    units: &[
        ("bit/s", 1.0),
        ("bps", 1.0),
        ("kbit/s", 1e3),
        ("kbps", 1e3),
        ("Mbit/s", 1e6),
        ("Mbps", 1e6),
        ("Gbit/s", 1e9),
        ("Gbps", 1e9),
        ("B/s", 8.0),
        ("kB/s", 8e3),
        ("KB/s", 8e3),
        ("MB/s", 8e6),
        ("KiB/s", 8.0 * 1024.0),
        ("MiB/s", 8.0 * 1024.0 * 1024.0),
    ],
    allowed: "bit/s, kbit/s, Mbit/s, Gbit/s, B/s, kB/s, MB/s, KiB/s, MiB/s (k = 1000, Ki = 1024; e.g. \"10 Mbit/s\")",
    max: MAX_RATE_BPS,
    max_text: "1000 Gbit/s (1 Tbit/s)",
};

const SIZE: Kind = Kind {
    name: "size",
    units: &[
        ("B", 1.0),
        ("bytes", 1.0),
        ("byte", 1.0),
        ("kB", 1e3),
        ("KB", 1e3),
        ("MB", 1e6),
        ("GB", 1e9),
        ("KiB", 1024.0),
        ("MiB", 1024.0 * 1024.0),
        ("GiB", 1024.0 * 1024.0 * 1024.0),
    ],
    allowed: "B, kB, MB, GB (powers of 1000) or KiB, MiB, GiB (powers of 1024) (e.g. \"10 MB\")",
    max: MAX_SIZE,
    max_text: "1048576 GiB (1 PiB)",
};

const PACKET_UNITS: &[&str] = &["packets", "packet", "p", "pkts"];
const BUFFER_UNITS: &str = "packets (\"40 packets\"), bytes (\"64 kB\"), or time at capacity (\"1 s\", \"100 ms\")";

impl Kind {
    fn factor(&self, unit: &str) -> Option<f64> {
        self.units.iter().find(|(u, _)| *u == unit).map(|&(_, f)| f)
    }

    /// A known unit equal to `unit` but for case.
    fn case_twin(&self, unit: &str) -> Option<&'static str> {
        self.units.iter().map(|(u, _)| *u).find(|u| u.eq_ignore_ascii_case(unit))
    }

    /// `v` units of factor `f` (a unit of this kind), in the base unit rounded
    /// to a whole number, or an out-of-range message naming the maximum.
    fn scale(&self, s: &str, v: f64, f: f64) -> Result<u64, String> {
        let x = (v * f).round();
        // Every maximum converts to f64 exactly, and `x` is whole, so `as` is exact.
        if x > self.max as f64 {
            return Err(format!("'{s}' is out of range; the largest {} allowed is {}", self.name, self.max_text));
        }
        Ok(x as u64)
    }

    fn parse(&self, s: &str) -> Result<u64, String> {
        let (v, unit) = split(s)?;
        match self.factor(unit) {
            Some(f) => self.scale(s, v, f),
            None => Err(self.unknown_unit(s, unit)),
        }
    }

    fn unknown_unit(&self, s: &str, unit: &str) -> String {
        if unit.is_empty() {
            return format!("'{s}' has no {} unit; use {}", self.name, self.allowed);
        }
        match self.case_twin(unit) {
            Some(twin) => format!(
                "'{s}': \"{unit}\" is not a {} unit (units are case-sensitive; did you mean \"{twin}\"?); use {}",
                self.name, self.allowed
            ),
            None => format!("'{s}': \"{unit}\" is not a {} unit; use {}", self.name, self.allowed),
        }
    }
}

/// Parses a duration such as `"25 ms"`, at most [`MAX_DURATION`].
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    DURATION.parse(s).map(Duration)
}

/// Parses a bit rate such as `"10 Mbit/s"`; returns bit/s, at most [`MAX_RATE_BPS`].
pub fn parse_rate(s: &str) -> Result<u64, String> {
    RATE.parse(s)
}

/// Parses a size such as `"10 MB"`; returns bytes, at most [`MAX_SIZE`].
pub fn parse_size(s: &str) -> Result<u64, String> {
    SIZE.parse(s)
}

/// A queue limit as written in a scenario.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BufferSpec {
    /// At most [`MAX_PACKETS`].
    Packets(u64),
    /// Bytes, at most [`MAX_SIZE`].
    Bytes(u64),
    /// Time at the link's capacity, at most [`MAX_DURATION`]; turned into bytes
    /// once the capacity is known.
    Time(Duration),
}

/// Parses a queue limit: packets (`"40 packets"`), a size (`"64 kB"`) or a time
/// at the link's capacity (`"1 s"`).
pub fn parse_buffer(s: &str) -> Result<BufferSpec, String> {
    let (v, unit) = split(s)?;
    if PACKET_UNITS.contains(&unit) {
        if v > MAX_PACKETS as f64 {
            return Err(format!("'{s}' is out of range; a buffer holds at most {MAX_PACKETS} packets"));
        }
        if v.fract() != 0.0 {
            return Err(format!("'{s}': a packet count must be a whole number"));
        }
        return Ok(BufferSpec::Packets(v as u64));
    }
    if let Some(f) = SIZE.factor(unit) {
        return SIZE.scale(s, v, f).map(BufferSpec::Bytes);
    }
    if let Some(f) = DURATION.factor(unit) {
        return DURATION.scale(s, v, f).map(|ns| BufferSpec::Time(Duration(ns)));
    }
    if unit.is_empty() {
        return Err(format!("'{s}' has no buffer unit; use {BUFFER_UNITS}"));
    }
    let twin = PACKET_UNITS
        .iter()
        .copied()
        .find(|u| u.eq_ignore_ascii_case(unit))
        .or_else(|| SIZE.case_twin(unit))
        .or_else(|| DURATION.case_twin(unit));
    Err(match twin {
        Some(twin) => format!(
            "'{s}': \"{unit}\" is not a buffer unit (units are case-sensitive; did you mean \"{twin}\"?); use {BUFFER_UNITS}"
        ),
        None => format!("'{s}': \"{unit}\" is not a buffer unit; use {BUFFER_UNITS}"),
    })
}

pub(super) fn parse_rate_or_unlimited(s: &str) -> Result<Option<u64>, String> {
    if s.trim() == "unlimited" {
        Ok(None)
    } else if s.trim().eq_ignore_ascii_case("unlimited") {
        Err(format!("'{s}': did you mean \"unlimited\"? (lower case)"))
    } else {
        parse_rate(s).map(Some)
    }
}

macro_rules! quantity {
    ($(#[$doc:meta])* $name:ident, $inner:ty, $parse:ident, $expect:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $name(pub $inner);

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str($expect)
                    }
                    fn visit_str<E: de::Error>(self, s: &str) -> Result<$name, E> {
                        $parse(s).map($name).map_err(E::custom)
                    }
                }
                d.deserialize_str(V)
            }
        }
    };
}

quantity!(
    /// A duration field, e.g. `"25 ms"`.
    DurationStr, Duration, parse_duration, "a duration string with a unit, e.g. \"25 ms\""
);
quantity!(
    /// A size field in bytes, e.g. `"10 MB"`.
    SizeStr, u64, parse_size, "a size string with a unit, e.g. \"10 MB\""
);
quantity!(
    /// A queue limit, e.g. `"40 packets"`, `"64 kB"` or `"1 s"`.
    BufferStr, BufferSpec, parse_buffer, "a buffer string, e.g. \"40 packets\", \"64 kB\" or \"1 s\""
);
quantity!(
    /// A bit rate in bit/s, or `"unlimited"` (None), e.g. `"10 Mbit/s"`.
    RateStr, Option<u64>, parse_rate_or_unlimited, "a rate string with a unit, e.g. \"10 Mbit/s\", or \"unlimited\""
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_accept_every_documented_unit() {
        assert_eq!(parse_duration("25 ms"), Ok(Duration::from_millis(25)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2 min"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("7 us"), Ok(Duration::from_micros(7)));
        assert_eq!(parse_duration("0 s"), Ok(Duration::ZERO));
    }

    #[test]
    fn rates_use_powers_of_1000_and_bytes_count_eight_bits() {
        assert_eq!(parse_rate("10 Mbit/s"), Ok(10_000_000));
        assert_eq!(parse_rate("20 kB/s"), Ok(160_000));
        assert_eq!(parse_rate("1 Gbps"), Ok(1_000_000_000));
    }

    #[test]
    fn sizes_distinguish_decimal_and_binary_prefixes() {
        assert_eq!(parse_size("10 MB"), Ok(10_000_000));
        assert_eq!(parse_size("256 KiB"), Ok(262_144));
    }

    #[test]
    fn buffers_can_be_packets_bytes_or_time() {
        assert_eq!(parse_buffer("40 packets"), Ok(BufferSpec::Packets(40)));
        assert_eq!(parse_buffer("64 kB"), Ok(BufferSpec::Bytes(64_000)));
        assert_eq!(parse_buffer("1 s"), Ok(BufferSpec::Time(Duration::from_secs(1))));
        assert!(parse_buffer("2.5 packets").is_err());
    }

    #[test]
    fn bad_quantities_say_what_is_wrong_and_what_is_allowed() {
        let e = parse_duration("25").unwrap_err();
        assert!(e.contains("no duration unit") && e.contains("ms"), "{e}");
        let e = parse_rate("-3 Mbit/s").unwrap_err();
        assert!(e.contains("negative"), "{e}");
        let e = parse_size("ten MB").unwrap_err();
        assert!(e.contains("does not start with a number"), "{e}");
        assert!(parse_rate("10 furlongs").unwrap_err().contains("Mbit/s"));
    }

    #[test]
    fn a_duration_in_scientific_notation_is_accepted() {
        assert_eq!(parse_duration("1e3 ms"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("2.5E-3 s"), Ok(Duration::from_micros(2500)));
        assert_eq!(parse_duration("1e+1 min"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration(".5 s"), Ok(Duration::from_millis(500)));
    }

    #[test]
    fn rates_sizes_and_buffers_in_scientific_notation_are_accepted() {
        assert_eq!(parse_rate("2.5e6 bit/s"), Ok(2_500_000));
        assert_eq!(parse_size("1.5e3 KiB"), Ok(1_536_000));
        assert_eq!(parse_buffer("4e1 packets"), Ok(BufferSpec::Packets(40)));
        assert_eq!(parse_buffer("1e2 ms"), Ok(BufferSpec::Time(Duration::from_millis(100))));
    }

    #[test]
    fn an_e_that_is_not_an_exponent_is_left_to_the_unit() {
        let e = parse_duration("1e s").unwrap_err();
        assert!(e.contains("\"e s\" is not a duration unit"), "{e}");
    }

    #[test]
    fn a_duration_too_large_for_a_float_is_out_of_range_with_the_maximum() {
        let e = parse_duration("1e400 s").unwrap_err();
        assert_eq!(e, "'1e400 s' is out of range; the largest duration allowed is 8760 h (one year)");
    }

    #[test]
    fn a_duration_past_one_year_is_rejected_and_one_year_is_accepted() {
        assert_eq!(parse_duration("8760 h"), Ok(MAX_DURATION));
        assert_eq!(parse_duration("525600 min"), Ok(MAX_DURATION));
        let e = parse_duration("8760.001 h").unwrap_err();
        assert!(e.contains("out of range") && e.contains("one year"), "{e}");
        // 2^64 ns: once silently saturated.
        let e = parse_duration("18446744073.709553 s").unwrap_err();
        assert!(e.contains("out of range"), "{e}");
    }

    #[test]
    fn a_rate_past_one_terabit_per_second_is_rejected_rather_than_capped() {
        assert_eq!(parse_rate("1000 Gbit/s"), Ok(MAX_RATE_BPS));
        assert!(parse_rate("125 GB/s").unwrap_err().contains("\"GB/s\" is not a rate unit"));
        let e = parse_rate("3e10 Gbit/s").unwrap_err();
        assert_eq!(e, "'3e10 Gbit/s' is out of range; the largest rate allowed is 1000 Gbit/s (1 Tbit/s)");
        assert!(parse_rate("1000.5 Gbit/s").unwrap_err().contains("out of range"));
    }

    #[test]
    fn a_size_past_one_pebibyte_is_rejected() {
        assert_eq!(parse_size("1048576 GiB"), Ok(MAX_SIZE));
        let e = parse_size("1048577 GiB").unwrap_err();
        assert!(e.contains("out of range") && e.contains("1 PiB"), "{e}");
        let e = parse_buffer("2e15 B").unwrap_err();
        assert!(e.contains("out of range") && e.contains("size"), "{e}");
    }

    #[test]
    fn a_buffer_of_more_than_a_billion_packets_is_rejected() {
        assert_eq!(parse_buffer("1e9 packets"), Ok(BufferSpec::Packets(MAX_PACKETS)));
        let e = parse_buffer("1e10 packets").unwrap_err();
        assert!(e.contains("out of range") && e.contains("1000000000 packets"), "{e}");
        assert!(parse_buffer("1e400 packets").unwrap_err().contains("out of range"));
    }

    #[test]
    fn a_wrong_case_unit_is_named_with_the_allowed_units() {
        let e = parse_size("1 mb").unwrap_err();
        assert_eq!(
            e,
            "'1 mb': \"mb\" is not a size unit (units are case-sensitive; did you mean \"MB\"?); \
             use B, kB, MB, GB (powers of 1000) or KiB, MiB, GiB (powers of 1024) (e.g. \"10 MB\")"
        );
        let e = parse_rate("10 mbit/s").unwrap_err();
        assert!(e.contains("\"mbit/s\" is not a rate unit") && e.contains("did you mean \"Mbit/s\"?"), "{e}");
        assert!(e.contains("kbit/s") && e.contains("MiB/s"), "{e}");
        let e = parse_duration("3 MS").unwrap_err();
        assert!(e.contains("did you mean \"ms\"?"), "{e}");
        let e = parse_buffer("40 Packets").unwrap_err();
        assert!(e.contains("did you mean \"packets\"?") && e.contains("time at capacity"), "{e}");
    }

    #[test]
    fn an_unknown_unit_is_named_with_the_allowed_units_and_no_guess() {
        let e = parse_size("1 TB").unwrap_err();
        assert!(e.starts_with("'1 TB': \"TB\" is not a size unit; use B, kB"), "{e}");
        assert!(!e.contains("did you mean"), "{e}");
        let e = parse_buffer("3 furlongs").unwrap_err();
        assert!(e.contains("\"furlongs\" is not a buffer unit") && e.contains("packets"), "{e}");
    }
}
