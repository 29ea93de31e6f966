//! Bencode (BEP 3): integers `i42e`, byte strings `4:spam`, lists `l...e` and
//! dictionaries `d...e` with keys sorted. The parser is strict (it refuses
//! leading zeros, `-0`, unsorted or duplicate keys, trailing bytes) and says
//! where and why, and [`TorrentMeta::from_bytes`] reads what a simulation needs
//! from a `.torrent` file.

use std::fmt;

/// A bencoded value. Byte strings stay bytes (names need not be UTF-8).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Int(i64),
    Bytes(Vec<u8>),
    List(Vec<Value>),
    /// Keys in the (sorted) order they were written.
    Dict(Vec<(Vec<u8>, Value)>),
}

impl Value {
    /// The value of `key` in a dictionary.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Dict(d) => d.iter().find(|(k, _)| k == key.as_bytes()).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// Malformed bencode: what is wrong, at which byte.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BencodeError {
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for BencodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bencode error at byte {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for BencodeError {}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    depth: usize,
}

const MAX_DEPTH: usize = 64;

impl Parser<'_> {
    fn err<T>(&self, message: impl Into<String>) -> Result<T, BencodeError> {
        Err(BencodeError { offset: self.i, message: message.into() })
    }

    fn peek(&self) -> Result<u8, BencodeError> {
        match self.b.get(self.i) {
            Some(c) => Ok(*c),
            None => self.err("unexpected end of input"),
        }
    }

    /// Digits up to `end`, as a non-negative integer without leading zeros.
    fn digits(&mut self, end: u8) -> Result<u64, BencodeError> {
        let start = self.i;
        while self.peek()? != end {
            if !self.peek()?.is_ascii_digit() {
                return self.err(format!("expected a digit or '{}'", end as char));
            }
            self.i += 1;
        }
        let s = &self.b[start..self.i];
        if s.is_empty() {
            return self.err("expected a number");
        }
        if s.len() > 1 && s[0] == b'0' {
            return Err(BencodeError { offset: start, message: "leading zero".into() });
        }
        self.i += 1; // the terminator
        std::str::from_utf8(s)
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or(BencodeError { offset: start, message: "number too large".into() })
    }

    fn value(&mut self) -> Result<Value, BencodeError> {
        match self.peek()? {
            b'i' => {
                self.i += 1;
                let negative = self.peek()? == b'-';
                if negative {
                    self.i += 1;
                }
                let at = self.i;
                let n = self.digits(b'e')?;
                if negative && n == 0 {
                    return Err(BencodeError { offset: at, message: "negative zero".into() });
                }
                let n =
                    i64::try_from(n).map_err(|_| BencodeError { offset: at, message: "integer too large".into() })?;
                Ok(Value::Int(if negative { -n } else { n }))
            }
            b'0'..=b'9' => {
                let len = self.digits(b':')? as usize;
                if self.b.len() - self.i < len {
                    return self.err(format!("a {len}-byte string runs past the end"));
                }
                let s = self.b[self.i..self.i + len].to_vec();
                self.i += len;
                Ok(Value::Bytes(s))
            }
            b'l' | b'd' => {
                let dict = self.peek()? == b'd';
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    return self.err("nested too deeply");
                }
                self.i += 1;
                let (mut list, mut entries) = (Vec::new(), Vec::<(Vec<u8>, Value)>::new());
                while self.peek()? != b'e' {
                    if dict {
                        let at = self.i;
                        let Value::Bytes(k) = self.value()? else {
                            return Err(BencodeError {
                                offset: at,
                                message: "a dictionary key must be a string".into(),
                            });
                        };
                        if entries.last().is_some_and(|(prev, _)| prev >= &k) {
                            return Err(BencodeError { offset: at, message: "keys not sorted or repeated".into() });
                        }
                        let v = self.value()?;
                        entries.push((k, v));
                    } else {
                        list.push(self.value()?);
                    }
                }
                self.i += 1;
                self.depth -= 1;
                Ok(if dict { Value::Dict(entries) } else { Value::List(list) })
            }
            c => self.err(format!("unexpected byte 0x{c:02x}; expected i, l, d or a digit")),
        }
    }
}

/// Parses exactly one bencoded value from `bytes`.
pub fn parse(bytes: &[u8]) -> Result<Value, BencodeError> {
    let mut p = Parser { b: bytes, i: 0, depth: 0 };
    let v = p.value()?;
    if p.i != bytes.len() {
        return p.err("trailing bytes after the value");
    }
    Ok(v)
}

/// What a simulation takes from a `.torrent` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TorrentMeta {
    /// `info.name`, lossily decoded.
    pub name: String,
    /// Total length: `info.length`, or the sum of `info.files[].length`.
    pub length: u64,
    pub piece_length: u32,
    pub pieces: u32,
}

impl TorrentMeta {
    /// Reads and checks a `.torrent` file's info dictionary. Errors say which
    /// key is missing or wrong.
    pub fn from_bytes(bytes: &[u8]) -> Result<TorrentMeta, String> {
        let root = parse(bytes).map_err(|e| e.to_string())?;
        let info = root.get("info").ok_or("no `info` dictionary")?;
        let int = |v: Option<&Value>, key: &str| match v {
            Some(Value::Int(n)) if *n > 0 => Ok(*n as u64),
            Some(_) => Err(format!("`{key}` must be a positive integer")),
            None => Err(format!("no `{key}`")),
        };
        let name = match info.get("name") {
            Some(Value::Bytes(b)) => String::from_utf8_lossy(b).into_owned(),
            _ => return Err("no `info.name` string".into()),
        };
        let piece_length = int(info.get("piece length"), "info.piece length")?;
        let piece_length = u32::try_from(piece_length).map_err(|_| "`info.piece length` is too large".to_string())?;
        let length = match (info.get("length"), info.get("files")) {
            (Some(l), None) => int(Some(l), "info.length")?,
            (None, Some(Value::List(files))) if !files.is_empty() => {
                let mut total = 0u64;
                for (k, f) in files.iter().enumerate() {
                    let n = int(f.get("length"), &format!("info.files[{k}].length"))?;
                    // Each length fits in i64, but three of them can overflow u64.
                    total = total.checked_add(n).ok_or("the `info.files` lengths add up to more than 2^64 bytes")?;
                }
                total
            }
            _ => return Err("`info` needs either `length` or a non-empty `files` list".into()),
        };
        let pieces = match info.get("pieces") {
            Some(Value::Bytes(p)) if p.len() % 20 == 0 => (p.len() / 20) as u32,
            Some(_) => return Err("`info.pieces` must be a string of 20-byte SHA-1 hashes".into()),
            None => return Err("no `info.pieces`".into()),
        };
        let expected = length.div_ceil(piece_length as u64);
        if pieces as u64 != expected {
            return Err(format!(
                "{pieces} piece hashes for {length} bytes in {piece_length}-byte pieces (expected {expected})"
            ));
        }
        Ok(TorrentMeta { name, length, piece_length, pieces })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_four_kinds_parse() {
        assert_eq!(parse(b"i-42e"), Ok(Value::Int(-42)));
        assert_eq!(parse(b"4:spam"), Ok(Value::Bytes(b"spam".to_vec())));
        assert_eq!(parse(b"l4:spami7ee"), Ok(Value::List(vec![Value::Bytes(b"spam".to_vec()), Value::Int(7)])));
        let d = parse(b"d3:cow3:moo4:spam4:eggse").unwrap();
        assert_eq!(d.get("spam"), Some(&Value::Bytes(b"eggs".to_vec())));
    }

    #[test]
    fn malformed_input_is_refused_with_the_offset_and_the_reason() {
        let cases: [(&[u8], usize, &str); 9] = [
            (b"i03e", 1, "leading zero"),
            (b"i-0e", 2, "negative zero"),
            (b"5:spam", 2, "runs past the end"),
            (b"d4:spam1:a3:cow1:be", 10, "not sorted"),
            (b"d1:a1:b1:a1:ce", 7, "not sorted or repeated"),
            (b"i1ei2e", 3, "trailing bytes"),
            (b"l4:spam", 7, "unexpected end"),
            (b"x", 0, "unexpected byte 0x78"),
            (b"di1e1:ae", 1, "key must be a string"),
        ];
        for (input, offset, words) in cases {
            let e = parse(input).unwrap_err();
            assert_eq!(e.offset, offset, "{}: {e}", String::from_utf8_lossy(input));
            assert!(e.message.contains(words), "{e}");
        }
    }

    fn torrent(info: &str) -> Vec<u8> {
        format!("d8:announce9:http://t/4:info{info}e").into_bytes()
    }

    #[test]
    fn a_single_and_a_multi_file_torrent_give_their_geometry() {
        let pieces = "x".repeat(40);
        let single = torrent(&format!("d6:lengthi40000e4:name1:f12:piece lengthi32768e6:pieces40:{pieces}e"));
        let m = TorrentMeta::from_bytes(&single).unwrap();
        assert_eq!((m.name.as_str(), m.length, m.piece_length, m.pieces), ("f", 40000, 32768, 2));
        let multi = torrent(&format!(
            "d5:filesld6:lengthi30000e4:pathl1:aeed6:lengthi10000e4:pathl1:beee4:name1:d12:piece lengthi32768e6:pieces40:{pieces}e"
        ));
        assert_eq!(TorrentMeta::from_bytes(&multi).unwrap().length, 40000);
    }

    #[test]
    fn an_inconsistent_torrent_names_the_problem() {
        let wrong = torrent(&format!("d6:lengthi99999e4:name1:f12:piece lengthi32768e6:pieces40:{}e", "x".repeat(40)));
        assert!(TorrentMeta::from_bytes(&wrong).unwrap_err().contains("expected 4"));
        let odd = torrent("d6:lengthi1e4:name1:f12:piece lengthi32768e6:pieces3:abce");
        assert!(TorrentMeta::from_bytes(&odd).unwrap_err().contains("20-byte"));
        assert!(TorrentMeta::from_bytes(b"d4:infoi1ee").unwrap_err().contains("info.name"));
        assert!(TorrentMeta::from_bytes(b"garbage").unwrap_err().contains("bencode error at byte 0"));
    }

    #[test]
    fn file_lengths_that_add_up_past_u64_are_refused_not_overflowed() {
        // An overflow panic, spotted while writing the bencode_torrent fuzz
        // target (fuzz/) and reproduced with it; the seed is in its corpus.
        let file = format!("d6:lengthi{}e4:pathl1:aee", i64::MAX);
        let files = file.repeat(3);
        let t = torrent(&format!("d5:filesl{files}e4:name1:d12:piece lengthi16384e6:pieces20:{}e", "x".repeat(20)));
        assert!(TorrentMeta::from_bytes(&t).unwrap_err().contains("more than 2^64 bytes"));
    }
}
