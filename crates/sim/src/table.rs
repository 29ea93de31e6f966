//! Columnar result tables: what a run hands to Python and to Parquet.

use sha2::{Digest, Sha256};

/// The values of one column.
#[derive(Clone, Debug, PartialEq)]
pub enum ColumnData {
    F64(Vec<f64>),
    I64(Vec<i64>),
    Str(Vec<String>),
}

impl ColumnData {
    pub fn len(&self) -> usize {
        match self {
            ColumnData::F64(v) => v.len(),
            ColumnData::I64(v) => v.len(),
            ColumnData::Str(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A named column. Names carry their unit as a suffix (`_s`, `_bytes`, `_bps`).
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub name: &'static str,
    pub data: ColumnData,
}

/// A table: equal-length named columns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub columns: Vec<Column>,
}

impl Table {
    pub fn f64(&mut self, name: &'static str, v: Vec<f64>) -> &mut Self {
        self.push(name, ColumnData::F64(v))
    }

    pub fn i64(&mut self, name: &'static str, v: Vec<i64>) -> &mut Self {
        self.push(name, ColumnData::I64(v))
    }

    pub fn str(&mut self, name: &'static str, v: Vec<String>) -> &mut Self {
        self.push(name, ColumnData::Str(v))
    }

    fn push(&mut self, name: &'static str, data: ColumnData) -> &mut Self {
        if let Some(first) = self.columns.first() {
            assert_eq!(first.data.len(), data.len(), "column {name} has a different length");
        }
        self.columns.push(Column { name, data });
        self
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |c| c.data.len())
    }

    pub fn column(&self, name: &str) -> Option<&ColumnData> {
        self.columns.iter().find(|c| c.name == name).map(|c| &c.data)
    }

    /// The named float column (panics if absent: for tests and summaries).
    pub fn f64_column(&self, name: &str) -> &[f64] {
        match self.column(name) {
            Some(ColumnData::F64(v)) => v,
            _ => panic!("no f64 column {name}"),
        }
    }

    pub fn i64_column(&self, name: &str) -> &[i64] {
        match self.column(name) {
            Some(ColumnData::I64(v)) => v,
            _ => panic!("no i64 column {name}"),
        }
    }
}

impl ColumnData {
    /// The type tag written into the canonical serialisation.
    fn type_tag(&self) -> u8 {
        match self {
            ColumnData::F64(_) => 1,
            ColumnData::I64(_) => 2,
            ColumnData::Str(_) => 3,
        }
    }
}

/// Writes a length (or count) as a little-endian `u64`.
fn write_len(h: &mut Sha256, n: usize) {
    h.update((n as u64).to_le_bytes());
}

/// Writes a length-prefixed string.
fn write_str(h: &mut Sha256, s: &str) {
    write_len(h, s.len());
    h.update(s.as_bytes());
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(2 * bytes.len()), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

impl Table {
    /// SHA-256 of the table's canonical serialisation, in lower-case hex.
    ///
    /// The serialisation is: the number of columns, then for each column in
    /// order its name (length-prefixed UTF-8), a type tag (`1` f64, `2` i64,
    /// `3` string), the row count, and every value: floats as the
    /// little-endian bytes of `f64::to_bits` (so `-0.0` differs from `0.0`
    /// and each NaN payload is kept), integers little-endian, strings
    /// length-prefixed. Every length and count is a little-endian `u64`. No
    /// column type has nulls (a missing float is a NaN, written as its bits).
    ///
    /// It depends on nothing but the values (not on `Debug` formatting, the
    /// platform's hasher or the Rust version), so a digest can be checked in
    /// and compared across builds and machines.
    pub fn digest(&self) -> String {
        let mut h = Sha256::new();
        self.write_canonical(&mut h);
        hex(&h.finalize())
    }

    fn write_canonical(&self, h: &mut Sha256) {
        write_len(h, self.columns.len());
        for c in &self.columns {
            write_str(h, c.name);
            h.update([c.data.type_tag()]);
            write_len(h, c.data.len());
            match &c.data {
                ColumnData::F64(v) => v.iter().for_each(|x| h.update(x.to_bits().to_le_bytes())),
                ColumnData::I64(v) => v.iter().for_each(|x| h.update(x.to_le_bytes())),
                ColumnData::Str(v) => v.iter().for_each(|x| write_str(h, x)),
            }
        }
    }
}

/// SHA-256 (lower-case hex) over several named tables: their number, then for
/// each in order its name (length-prefixed) and its canonical serialisation
/// (as in [`Table::digest`]). A change of any table, any name, or of the
/// tables' order changes it.
pub fn digest_tables<'a>(tables: impl IntoIterator<Item = (&'a str, &'a Table)>) -> String {
    let tables: Vec<_> = tables.into_iter().collect();
    let mut h = Sha256::new();
    write_len(&mut h, tables.len());
    for (name, t) in tables {
        write_str(&mut h, name);
        t.write_canonical(&mut h);
    }
    hex(&h.finalize())
}

/// Jain's fairness index `(sum x)^2 / (n * sum x^2)` (Jain, Chiu, Hawe 1984):
/// 1 when all rates are equal, 1/n when one flow takes everything. NaN when
/// there are no rates or all are zero.
pub fn jain_index(rates: &[f64]) -> f64 {
    let n = rates.len() as f64;
    let sum: f64 = rates.iter().sum();
    let sq: f64 = rates.iter().map(|x| x * x).sum();
    if rates.is_empty() || sq == 0.0 {
        f64::NAN
    } else {
        sum * sum / (n * sq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jains_index_of_equal_rates_is_one() {
        assert!((jain_index(&[3.0, 3.0, 3.0, 3.0]) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn jains_index_is_one_over_n_when_one_flow_takes_everything() {
        assert!((jain_index(&[5.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        assert!(jain_index(&[]).is_nan());
        assert!(jain_index(&[0.0, 0.0]).is_nan());
    }

    #[test]
    fn jains_index_of_two_rates_matches_the_formula() {
        // (1+3)^2 / (2 * (1+9)) = 16/20
        assert!((jain_index(&[1.0, 3.0]) - 0.8).abs() < 1e-12);
    }

    fn sample() -> Table {
        let mut t = Table::default();
        t.i64("flow", vec![0, 1]).f64("rate_bps", vec![1.5e6, 0.0]).str("cc", vec!["newreno".into(), "ledbat".into()]);
        t
    }

    #[test]
    fn the_same_table_gives_the_same_digest_every_time() {
        assert_eq!(sample().digest(), sample().digest());
        assert_eq!(sample().digest(), sample().clone().digest());
        assert_eq!(sample().digest().len(), 64);
    }

    #[test]
    fn changing_one_value_changes_the_digest() {
        let base = sample().digest();
        let mut t = sample();
        t.columns[1].data = ColumnData::F64(vec![1.5e6, 1e-300]);
        assert_ne!(t.digest(), base);
        let mut t = sample();
        t.columns[0].data = ColumnData::I64(vec![0, 2]);
        assert_ne!(t.digest(), base);
        let mut t = sample();
        t.columns[2].data = ColumnData::Str(vec!["newreno".into(), "ledbaT".into()]);
        assert_ne!(t.digest(), base);
    }

    #[test]
    fn changing_one_column_name_changes_the_digest() {
        let mut t = sample();
        t.columns[1].name = "rate_Bps";
        assert_ne!(t.digest(), sample().digest());
    }

    #[test]
    fn swapping_the_order_of_two_columns_changes_the_digest() {
        let mut t = sample();
        t.columns.swap(0, 2);
        assert_ne!(t.digest(), sample().digest());
    }

    #[test]
    fn a_float_of_negative_zero_gives_a_different_digest_than_positive_zero() {
        let mut t = sample();
        t.columns[1].data = ColumnData::F64(vec![1.5e6, -0.0]);
        assert_ne!(t.digest(), sample().digest());
    }

    #[test]
    fn two_nans_with_different_payloads_give_different_digests() {
        let one = Table { columns: vec![Column { name: "x", data: ColumnData::F64(vec![f64::NAN]) }] };
        let other = Table {
            columns: vec![Column { name: "x", data: ColumnData::F64(vec![f64::from_bits(0x7ff8_0000_0000_0001)]) }],
        };
        assert_ne!(one.digest(), other.digest());
    }

    #[test]
    fn the_same_values_under_another_column_type_give_a_different_digest() {
        let ints = Table { columns: vec![Column { name: "x", data: ColumnData::I64(vec![0]) }] };
        let floats = Table { columns: vec![Column { name: "x", data: ColumnData::F64(vec![0.0]) }] };
        assert_ne!(ints.digest(), floats.digest());
    }

    #[test]
    fn moving_bytes_between_two_adjacent_strings_changes_the_digest() {
        let a = Table { columns: vec![Column { name: "s", data: ColumnData::Str(vec!["ab".into(), "c".into()]) }] };
        let b = Table { columns: vec![Column { name: "s", data: ColumnData::Str(vec!["a".into(), "bc".into()]) }] };
        assert_ne!(a.digest(), b.digest());
    }

    #[test]
    fn a_known_small_table_has_a_fixed_digest() {
        // Computed once (and checked against a few lines of Python hashlib over
        // the same bytes); if this changes, every checked-in golden digest
        // changes with it.
        assert_eq!(sample().digest(), "42b18e2856622ea789138f4b36158e6cab51ca338b9a3d10a97bcce46a8b0898");
    }

    #[test]
    fn the_digest_of_several_tables_depends_on_their_names_and_order() {
        let (a, b) = (sample(), Table::default());
        let base = digest_tables([("flows", &a), ("queue", &b)]);
        assert_eq!(base, digest_tables([("flows", &a), ("queue", &b)]));
        assert_ne!(base, digest_tables([("queue", &b), ("flows", &a)]));
        assert_ne!(base, digest_tables([("flow", &a), ("queue", &b)]));
        assert_ne!(base, digest_tables([("flows", &a)]));
    }

    #[test]
    #[should_panic(expected = "different length")]
    fn columns_of_different_lengths_are_refused() {
        Table::default().f64("a", vec![1.0]).f64("b", vec![]);
    }
}
