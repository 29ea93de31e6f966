//! Columnar result tables: what a run hands to Python and to Parquet.

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

    #[test]
    #[should_panic(expected = "different length")]
    fn columns_of_different_lengths_are_refused() {
        Table::default().f64("a", vec![1.0]).f64("b", vec![]);
    }
}
