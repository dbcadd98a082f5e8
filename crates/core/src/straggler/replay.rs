//! Trace replay: measured completion times from a CSV file.
//!
//! The file has one row per round and one column per worker, comma
//! separated, optionally a header row first (a first row none of whose cells
//! is a number, e.g. `w0,w1,...`); blank lines are skipped, cells may be
//! quoted and lines end in `\n` or `\r\n` (read by [`CsvRows`]). Every row
//! has as many cells as the first; every value is a finite number >= 0.
//! Errors name `file:line`.
//!
//! A value is the model time of ONE partition computation of that worker in
//! that round (the `u` of [`RoundSample`]): a worker with load r finishes at
//! r · value, so schemes with a larger load pay for it, as in the
//! shifted-exponential model. The AWS Lambda traces give seconds, so one model
//! time unit is one traced second, and `straggler.time_unit_ms = 1000`
//! replays them in real time in the MPI runtime.
//!
//! Workers 1..K replay the columns `straggler.trace_columns` (1-based data
//! columns) or the first K. A model starts at the row it is given (trial k
//! of a simulation at row k · `simulate.iterations`, see
//! `DelaySpec::model`) and the rows wrap around. A worker straggles in a round when its value exceeds
//! `straggler.trace_threshold` times the median of the K replayed values.

use std::path::Path;
use std::sync::Arc;

use super::{DelayModel, RoundSample};
use crate::csvfile::CsvRows;
use crate::error::InputError;

/// The most values (rows × columns) a trace file may hold: 2^22, 32 MiB in
/// memory, thousands of times the largest AWS Lambda trace (256 workers × a few
/// hundred rounds). A larger file is refused at the line that passes it.
pub const MAX_TRACE_VALUES: usize = 1 << 22;

/// A validated trace: `rows` × `columns` completion times, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceTable {
    /// The file as named in errors.
    origin: String,
    columns: usize,
    values: Vec<f64>,
    /// Column names from the header, when there is one.
    header: Option<Vec<String>>,
    /// 1-based line of the first row (for errors about the shape).
    first_line: usize,
}

impl TraceTable {
    /// Read and validate a trace file, row by row (at most
    /// [`MAX_LINE_BYTES`](crate::csvfile::MAX_LINE_BYTES) per row and
    /// `MAX_TRACE_VALUES` values in all).
    pub fn load(path: &Path) -> Result<Self, InputError> {
        let origin = path.display().to_string();
        let file = crate::files::open_input(path).map_err(|e| {
            InputError::new("straggler.trace_file", format!("cannot read {origin}: {e}"))
        })?;
        Self::read(file, &origin, MAX_TRACE_VALUES)
    }

    /// Parse and validate trace text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self, InputError> {
        Self::read(text.as_bytes(), origin, MAX_TRACE_VALUES)
    }

    /// Parse and validate the rows of `reader`, refusing more than `max_values` values.
    fn read(
        reader: impl std::io::Read,
        origin: &str,
        max_values: usize,
    ) -> Result<Self, InputError> {
        let at = |line: usize| format!("{origin}:{line}");
        let mut rows = CsvRows::new(reader, origin);
        let Some((first_line, first)) = rows.next_row()? else {
            return Err(InputError::new(origin, "has no rows"));
        };
        let columns = first.len();
        if columns > max_values {
            return Err(InputError::new(
                at(first_line),
                format!(
                    "has {columns} cells, more than the {max_values} values a trace file may hold"
                ),
            ));
        }
        let header = first
            .iter()
            .all(|c| c.parse::<f64>().is_err())
            .then(|| first.to_vec());
        // Without a header the first row is data.
        let first_data = header.is_none().then(|| first.to_vec());
        let mut values = Vec::new();
        let mut data_first_line = None;
        let mut add_row = |line: usize, row: &[&str]| {
            if row.len() != columns {
                return Err(InputError::new(
                    at(line),
                    format!(
                        "has {} cells, but line {first_line} has {columns}; every row needs one cell per column",
                        row.len()
                    ),
                ));
            }
            if values.len() + row.len() > max_values {
                return Err(InputError::new(
                    at(line),
                    format!(
                        "takes the trace past {max_values} values, the most a trace file may hold"
                    ),
                ));
            }
            for (c, &cell) in row.iter().enumerate() {
                let name = match &header {
                    Some(h) => format!("column {} ({})", c + 1, h[c]),
                    None => format!("column {}", c + 1),
                };
                values.push(
                    completion_time(cell)
                        .map_err(|rule| InputError::new(at(line), format!("{name} {rule}")))?,
                );
            }
            data_first_line.get_or_insert(line);
            Ok(())
        };
        if let Some(row) = first_data {
            add_row(
                first_line,
                &row.iter().map(String::as_str).collect::<Vec<_>>(),
            )?;
        }
        while let Some((line, row)) = rows.next_row()? {
            add_row(line, &row.iter().collect::<Vec<_>>())?;
        }
        if values.is_empty() {
            return Err(InputError::new(
                at(first_line),
                "is a header with no data rows after it",
            ));
        }
        Ok(Self {
            origin: origin.to_string(),
            columns,
            values,
            header,
            first_line: data_first_line.unwrap_or(first_line),
        })
    }

    /// Rounds (data rows).
    pub fn rows(&self) -> usize {
        self.values.len() / self.columns
    }

    /// Columns per row.
    pub fn columns(&self) -> usize {
        self.columns
    }

    /// The value of `row`, `column` (0-based).
    pub fn value(&self, row: usize, column: usize) -> f64 {
        self.values[row * self.columns + column]
    }

    /// Column names, when the file has a header.
    pub fn header(&self) -> Option<&[String]> {
        self.header.as_deref()
    }

    /// 0-based columns replayed by workers 0..K: `chosen` (1-based, from
    /// `straggler.trace_columns`) or the first `workers`.
    pub fn select_columns(
        &self,
        chosen: Option<&[usize]>,
        workers: usize,
    ) -> Result<Vec<usize>, InputError> {
        match chosen {
            Some(list) => {
                if list.len() != workers {
                    return Err(InputError::value(
                        "straggler.trace_columns",
                        format!("{list:?}"),
                        format!("lists {} columns, not workers = {workers}", list.len()),
                    ));
                }
                list.iter()
                    .map(|&c| {
                        if c == 0 || c > self.columns {
                            Err(InputError::value(
                                "straggler.trace_columns",
                                format!("{list:?}"),
                                format!(
                                    "names column {c}, but {} has columns 1..={}",
                                    self.origin, self.columns
                                ),
                            ))
                        } else {
                            Ok(c - 1)
                        }
                    })
                    .collect()
            }
            None => {
                if self.columns < workers {
                    return Err(InputError::new(
                        format!("{}:{}", self.origin, self.first_line),
                        format!(
                            "has {} columns, fewer than workers = {workers} (one column per worker)",
                            self.columns
                        ),
                    ));
                }
                Ok((0..workers).collect())
            }
        }
    }
}

/// What `check` reports about the replayed columns of a trace file.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TraceSummary {
    pub file: String,
    /// Data rows (rounds).
    pub rows: usize,
    /// Columns in the file.
    pub columns: usize,
    /// The replayed columns, 1-based, in worker order.
    pub replayed: Vec<usize>,
    /// Median, smallest and largest of every replayed value.
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Replayed columns (1-based) that look like clock readings rather than
    /// durations (see [`looks_like_clock_readings`]).
    pub clock_like: Vec<usize>,
}

/// Rows a column needs before [`looks_like_clock_readings`] judges it.
pub const CLOCK_CHECK_MIN_ROWS: usize = 8;

/// Whether a column of a trace looks like readings of a clock (a time stamp
/// per round) rather than the durations the replay expects. Two signs, each
/// judged only with at least `CLOCK_CHECK_MIN_ROWS` rows:
/// - the values never decrease from one row to the next and rise in at least
///   half of the steps: time stamps do, while the durations of independent
///   rounds fall somewhere with near certainty (all of 8 independent
///   continuous values in rising order has probability 1/8! = 2.5e-5);
/// - the values vary, but by less than 1e-3 of their median: durations
///   measured against a large common offset (seconds since boot or an
///   epoch) do, while round durations vary by far more than 0.1%.
pub fn looks_like_clock_readings(column: &[f64]) -> bool {
    if column.len() < CLOCK_CHECK_MIN_ROWS {
        return false;
    }
    let steps = column.windows(2);
    let never_falls = steps.clone().all(|w| w[1] >= w[0]);
    let rises = steps.filter(|w| w[1] > w[0]).count();
    if never_falls && 2 * rises >= column.len() - 1 {
        return true;
    }
    let (min, max) = column
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    let mut sorted = column.to_vec();
    let median = median(&mut sorted);
    max > min && median > 0.0 && max - min < 1e-3 * median
}

impl TraceTable {
    /// Rows, median and range of the replayed `columns` (0-based), and the
    /// ones that look like clock readings.
    pub fn summary(&self, columns: &[usize]) -> TraceSummary {
        let mut all = Vec::with_capacity(columns.len() * self.rows());
        let mut column = Vec::with_capacity(self.rows());
        let mut clock_like = Vec::new();
        for &c in columns {
            column.clear();
            column.extend((0..self.rows()).map(|row| self.value(row, c)));
            if looks_like_clock_readings(&column) {
                clock_like.push(c + 1);
            }
            all.extend_from_slice(&column);
        }
        let (min, max) = all
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            });
        TraceSummary {
            file: self.origin.clone(),
            rows: self.rows(),
            columns: self.columns,
            replayed: columns.iter().map(|c| c + 1).collect(),
            median: median(&mut all),
            min,
            max,
            clock_like,
        }
    }
}

/// The completion time in `cell`, or why it is none (the rule, after the
/// cell's name).
fn completion_time(cell: &str) -> Result<f64, String> {
    let value: f64 = cell.parse().map_err(|_| {
        let shown = if cell.is_empty() {
            "empty".to_string()
        } else {
            format!("`{cell}`")
        };
        format!("is {shown}, not a number (completion times are numbers >= 0)")
    })?;
    if value.is_nan() {
        Err("is NaN; completion times are numbers >= 0".to_string())
    } else if value < 0.0 {
        Err(format!(
            "is {value}, negative; completion times are numbers >= 0"
        ))
    } else if value.is_infinite() {
        Err("is infinite; completion times are finite".to_string())
    } else {
        Ok(value)
    }
}

/// `trace`: replays the rows of a [`TraceTable`] in order, wrapping around.
/// A value v splits into a per-partition computation `compute_share · v`
/// (the unit time) and a fixed cost `(1 − compute_share) · v` per message
/// (the extra time), so that a message after c computations arrives at
/// c·share·v + (1 − share)·v; straggling compares whole values.
pub(super) struct TraceReplay {
    table: Arc<TraceTable>,
    columns: Vec<usize>,
    row: usize,
    threshold: f64,
    compute_share: f64,
    /// This round's values, and a copy the median reorders.
    values: Vec<f64>,
    scratch: Vec<f64>,
}

impl TraceReplay {
    /// Replay from row `first_row` (mod the rows) on.
    pub fn new(
        table: Arc<TraceTable>,
        columns: Vec<usize>,
        first_row: u64,
        threshold: f64,
        compute_share: f64,
    ) -> Self {
        let row = (first_row % table.rows() as u64) as usize;
        let (values, scratch) = (
            Vec::with_capacity(columns.len()),
            Vec::with_capacity(columns.len()),
        );
        Self {
            table,
            columns,
            row,
            threshold,
            compute_share,
            values,
            scratch,
        }
    }
}

impl DelayModel for TraceReplay {
    fn workers(&self) -> usize {
        self.columns.len()
    }

    fn sample(&mut self, out: &mut RoundSample) {
        self.values.clear();
        self.values
            .extend(self.columns.iter().map(|&c| self.table.value(self.row, c)));
        for (w, &v) in self.values.iter().enumerate() {
            out.unit_time[w] = self.compute_share * v;
            out.extra_time[w] = (1.0 - self.compute_share) * v;
        }
        self.scratch.clone_from(&self.values);
        let median = median(&mut self.scratch);
        for (w, &v) in self.values.iter().enumerate() {
            out.straggling[w] = v > self.threshold * median;
        }
        out.rate.fill(f64::NAN);
        self.row = (self.row + 1) % self.table.rows();
    }
}

/// The median (mean of the two middle values for an even count); reorders `values`.
fn median(values: &mut [f64]) -> f64 {
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    let (_, &mut upper, _) = values.select_nth_unstable_by(n / 2, f64::total_cmp);
    if n % 2 == 1 {
        upper
    } else {
        let lower = values[..n / 2]
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        0.5 * (lower + upper)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_detected_and_values_read_row_major() {
        let t = TraceTable::parse("w0,w1,w2\n1,2,3\n\n4,5,6.5\n", "t.csv").unwrap();
        assert_eq!(t.rows(), 2);
        assert_eq!(t.columns(), 3);
        assert_eq!(t.value(1, 2), 6.5);
        assert_eq!(t.header().unwrap()[1], "w1");
        let t = TraceTable::parse("1,2\n3,4\n", "t.csv").unwrap();
        assert_eq!(t.rows(), 2);
        assert!(t.header().is_none());
    }

    #[test]
    fn a_header_wider_than_the_value_limit_is_refused() {
        let header = vec!["w"; 100].join(",");
        let e = TraceTable::read(format!("{header}\n1\n").as_bytes(), "t.csv", 64).unwrap_err();
        assert_eq!(e.field, "t.csv:1");
        assert!(
            e.to_string()
                .contains("has 100 cells, more than the 64 values"),
            "{e}"
        );
    }

    #[test]
    fn a_trace_past_the_value_limit_is_refused_at_that_line() {
        let text = "a,b\n1,2\n3,4\n5,6\n";
        assert_eq!(
            TraceTable::read(text.as_bytes(), "t.csv", 6)
                .unwrap()
                .rows(),
            3
        );
        let e = TraceTable::read(text.as_bytes(), "t.csv", 5).unwrap_err();
        assert_eq!(e.field, "t.csv:4");
        assert!(e.to_string().contains("past 5 values"), "{e}");
    }

    #[test]
    fn a_trace_that_ends_mid_row_or_mid_number_is_refused_at_that_line() {
        let e = TraceTable::parse("1,2\n3,", "t.csv").unwrap_err();
        assert_eq!(e.field, "t.csv:2");
        assert!(e.to_string().contains("column 2 is empty"), "{e}");
        let e = TraceTable::parse("1,2\n3", "t.csv").unwrap_err();
        assert!(e.to_string().contains("t.csv:2: has 1 cells"), "{e}");
        let e = TraceTable::parse("1,2\n3,4e", "t.csv").unwrap_err();
        assert!(e.to_string().contains("t.csv:2: column 2 is `4e`"), "{e}");
        // A last row without a newline is a row.
        assert_eq!(
            TraceTable::parse("1,2\n3,4.5", "t.csv")
                .unwrap()
                .value(1, 1),
            4.5
        );
    }

    #[test]
    fn quoted_cells_and_crlf_lines_read_like_plain_ones() {
        let plain = TraceTable::parse("w1,w2\n1.5,2\n3,4\n", "t.csv").unwrap();
        let quoted = TraceTable::parse(
            "\"w1\",\"w2\"\r\n\"1.5\",\"2\" \r\n\r\n3,\"4\"\r\n",
            "t.csv",
        )
        .unwrap();
        assert_eq!(quoted.values, plain.values);
        assert_eq!(quoted.header(), plain.header());
        // A header name may hold a comma when quoted.
        let t = TraceTable::parse("\"worker, 1\",\"worker, 2\"\n1,2\n", "t.csv").unwrap();
        assert_eq!((t.columns(), t.rows()), (2, 1));
        assert_eq!(t.header().unwrap()[0], "worker, 1");
    }

    #[test]
    fn a_malformed_row_is_named_by_its_line() {
        // CRLF lines, a blank line and a header whose quoted name spans two
        // lines: the bad row is line 5 of the file.
        let text = "\"w\n1\",w2\r\n1,2\r\n\r\n3,x\r\n5,6\r\n";
        let e = TraceTable::parse(text, "t.csv").unwrap_err();
        assert_eq!(e.field, "t.csv:5");
        assert!(
            e.to_string()
                .contains("t.csv:5: column 2 (w2) is `x`, not a number"),
            "{e}"
        );
        let e = TraceTable::parse("1,2\r\n3,4\r\n5,6,7\r\n", "t.csv").unwrap_err();
        assert!(
            e.to_string()
                .contains("t.csv:3: has 3 cells, but line 1 has 2"),
            "{e}"
        );
        let e = TraceTable::parse("1,2\n3,-4\n", "t.csv").unwrap_err();
        assert!(
            e.to_string().contains("t.csv:2: column 2 is -4, negative"),
            "{e}"
        );
    }

    #[test]
    fn a_binary_trace_file_is_refused_as_not_text() {
        let e = TraceTable::read(&b"1,2\n\xff\xfe,1\n"[..], "t.bin", 64).unwrap_err();
        assert_eq!(e.field, "t.bin:2");
        assert!(e.to_string().contains("not UTF-8"), "{e}");
    }

    #[test]
    fn clock_readings_are_told_from_durations() {
        // Durations of independent rounds: heavy-tailed, no order.
        let durations = [1.2, 0.9, 3.5, 1.1, 1.0, 0.95, 7.2, 1.3, 1.05, 0.99];
        assert!(!looks_like_clock_readings(&durations));
        // The same rounds as time stamps: the running sum.
        let stamps: Vec<f64> = durations
            .iter()
            .scan(0.0, |t, d| {
                *t += d;
                Some(*t)
            })
            .collect();
        assert!(looks_like_clock_readings(&stamps));
        // Durations on top of seconds since boot.
        let offset: Vec<f64> = durations.iter().map(|d| 6e5 + d).collect();
        assert!(looks_like_clock_readings(&offset));
        // Constant durations and short columns are not judged.
        assert!(!looks_like_clock_readings(&[2.0; 10]));
        assert!(!looks_like_clock_readings(
            &stamps[..CLOCK_CHECK_MIN_ROWS - 1]
        ));
    }

    #[test]
    fn a_summary_covers_the_replayed_columns_only() {
        let mut text = String::from("a,b,c\n");
        for row in 0..10 {
            let clock = 6e5 + row as f64;
            let shuffled = [3.0, 1.0, 4.0, 1.5, 5.0, 9.0, 2.0, 6.0, 5.5, 3.5][row];
            text.push_str(&format!("{shuffled},{clock},1000\n"));
        }
        let t = TraceTable::parse(&text, "t.csv").unwrap();
        let s = t.summary(&[0, 1]);
        assert_eq!((s.rows, s.columns), (10, 3));
        assert_eq!(s.replayed, [1, 2]);
        assert_eq!(s.clock_like, [2]);
        assert_eq!((s.min, s.max), (1.0, 6e5 + 9.0));
        // 20 values: the middle two are the largest duration and the first clock reading.
        assert_eq!(s.median, 0.5 * (9.0 + 6e5));
        assert!(t.summary(&[0]).clock_like.is_empty());
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn replay_wraps_and_starts_at_the_given_row() {
        let t = Arc::new(TraceTable::parse("a,b\n1,10\n2,20\n3,30\n", "t.csv").unwrap());
        let mut m = TraceReplay::new(t, vec![1, 0], 2, 2.0, 1.0);
        let mut s = RoundSample::new(2);
        let mut seen = Vec::new();
        for _ in 0..4 {
            m.sample(&mut s);
            seen.push((s.unit_time[0], s.unit_time[1]));
        }
        assert_eq!(seen, [(30.0, 3.0), (10.0, 1.0), (20.0, 2.0), (30.0, 3.0)]);
    }
}
