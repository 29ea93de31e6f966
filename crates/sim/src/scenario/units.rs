//! Quantities with units, as scenario files write them: `"25 ms"`,
//! `"10 Mbit/s"`, `"40 packets"`, `"10 MB"`.
//!
//! Each newtype deserialises from a string and parses it on the spot, so a bad
//! value is reported with the path of the field it came from.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use torrentlab_engine::Duration;

/// Splits `"12.5 ms"` into (12.5, "ms"). The number must be finite and >= 0.
fn split(s: &str) -> Result<(f64, &str), String> {
    let t = s.trim();
    let end = t
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+')))
        .map_or(t.len(), |(i, _)| i);
    let (num, unit) = t.split_at(end);
    let v: f64 = num.trim().parse().map_err(|_| format!("'{s}' does not start with a number"))?;
    if !v.is_finite() {
        return Err(format!("'{s}' is not a finite number"));
    }
    if v < 0.0 {
        return Err(format!("'{s}' is negative; it must be zero or more"));
    }
    Ok((v, unit.trim()))
}

const DURATION_UNITS: &str = "ns, us, ms, s, min, h (e.g. \"25 ms\")";
const RATE_UNITS: &str =
    "bit/s, kbit/s, Mbit/s, Gbit/s, B/s, kB/s, MB/s, KiB/s, MiB/s (k = 1000, Ki = 1024; e.g. \"10 Mbit/s\")";
const SIZE_UNITS: &str = "B, kB, MB, GB (powers of 1000) or KiB, MiB, GiB (powers of 1024) (e.g. \"10 MB\")";
const BUFFER_UNITS: &str = "packets (\"40 packets\"), bytes (\"64 kB\"), or time at capacity (\"1 s\", \"100 ms\")";

fn duration_factor(unit: &str) -> Option<f64> {
    Some(match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "min" => 60e9,
        "h" => 3600e9,
        _ => return None,
    })
}

fn size_factor(unit: &str) -> Option<f64> {
    Some(match unit {
        "B" | "bytes" | "byte" => 1.0,
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    })
}

/// Parses a duration such as `"25 ms"`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (v, unit) = split(s)?;
    let f = duration_factor(unit).ok_or_else(|| format!("'{s}' has no duration unit; use {DURATION_UNITS}"))?;
    Ok(Duration((v * f).round() as u64))
}

/// Parses a bit rate; returns bit/s.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let (v, unit) = split(s)?;
    let f = match unit {
        "bit/s" | "bps" => 1.0,
        "kbit/s" | "kbps" => 1e3,
        "Mbit/s" | "Mbps" => 1e6,
        "Gbit/s" | "Gbps" => 1e9,
        "B/s" => 8.0,
        "kB/s" | "KB/s" => 8e3,
        "MB/s" => 8e6,
        "KiB/s" => 8.0 * 1024.0,
        "MiB/s" => 8.0 * 1024.0 * 1024.0,
        _ => return Err(format!("'{s}' has no rate unit; use {RATE_UNITS}")),
    };
    Ok((v * f).round() as u64)
}

/// Parses a size in bytes such as `"10 MB"`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let (v, unit) = split(s)?;
    let f = size_factor(unit).ok_or_else(|| format!("'{s}' has no size unit; use {SIZE_UNITS}"))?;
    Ok((v * f).round() as u64)
}

/// A queue limit as written in a scenario.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BufferSpec {
    Packets(u64),
    Bytes(u64),
    /// Time at the link's capacity; turned into bytes once the capacity is known.
    Time(Duration),
}

pub fn parse_buffer(s: &str) -> Result<BufferSpec, String> {
    let (v, unit) = split(s)?;
    match unit {
        "packets" | "packet" | "p" | "pkts" => {
            if v.fract() != 0.0 {
                return Err(format!("'{s}': a packet count must be a whole number"));
            }
            Ok(BufferSpec::Packets(v as u64))
        }
        u => {
            if let Some(f) = size_factor(u) {
                Ok(BufferSpec::Bytes((v * f).round() as u64))
            } else if let Some(f) = duration_factor(u) {
                Ok(BufferSpec::Time(Duration((v * f).round() as u64)))
            } else {
                Err(format!("'{s}' has no buffer unit; use {BUFFER_UNITS}"))
            }
        }
    }
}

fn parse_rate_or_unlimited(s: &str) -> Result<Option<u64>, String> {
    if s.trim() == "unlimited" {
        Ok(None)
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
}
