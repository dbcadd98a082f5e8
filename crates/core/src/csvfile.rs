//! Reading the rows of a CSV file (CSV data, straggler trace CSVs) with the
//! `csv` crate, in bounded memory.
//!
//! Cells are separated by commas and may be quoted with `"` (a quoted cell
//! may hold commas, line ends and `""` for a quote); lines end in `\n` or
//! `\r\n`; cells are trimmed of surrounding whitespace; blank lines are
//! skipped. Rows may differ in length: each reader checks the width it needs.
//!
//! A row is one line, or more when a quoted cell holds a line end. The
//! parser holds the row it reads, so [`CsvRows`] lets it read at most
//! [`MAX_LINE_BYTES`] bytes of one row (its line end included) and then
//! stops with an error naming `file:line` (the line where the row passed
//! the limit), whatever the file is: a binary file named by mistake, an
//! endless line, a quote that is never closed.

use std::cell::Cell;
use std::io::{self, Read};

use crate::error::InputError;
pub use crate::textfile::MAX_LINE_BYTES;

/// The rows of a CSV `reader` that are not blank, each with its 1-based line;
/// an error (a row too long, not UTF-8, unreadable) names `origin:line` and
/// ends the rows.
pub struct CsvRows<R: Read> {
    reader: csv::Reader<Bounded<R>>,
    /// The row as read, then as returned (UTF-8).
    raw: csv::ByteRecord,
    record: csv::StringRecord,
    origin: String,
    done: bool,
}

impl<R: Read> CsvRows<R> {
    /// Rows of at most [`MAX_LINE_BYTES`] bytes.
    pub fn new(reader: R, origin: &str) -> Self {
        Self::with_limit(reader, origin, MAX_LINE_BYTES)
    }

    /// Rows of at most `limit` bytes (tests use a small limit).
    pub fn with_limit(reader: R, origin: &str, limit: usize) -> Self {
        let bounded = Bounded {
            inner: reader,
            limit: limit as u64,
            read: 0,
            newlines: 0,
            at_end: false,
            row_start: Cell::new(0),
            too_long: false,
        };
        let reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            // `\n` alone ends a line (a `\r` before it is trimmed with the
            // cell): the crate's default also ends a row at a lone `\r` and
            // then numbers the lines of a `\r\n` file wrongly.
            .terminator(csv::Terminator::Any(b'\n'))
            .from_reader(bounded);
        Self {
            reader,
            raw: csv::ByteRecord::new(),
            record: csv::StringRecord::new(),
            origin: origin.to_string(),
            done: false,
        }
    }

    /// The next row that is not blank (one cell, empty after trimming): its
    /// 1-based line and its cells; `None` after the last row or an error.
    pub fn next_row(&mut self) -> Result<Option<(usize, Row<'_>)>, InputError> {
        // Reuse the buffers of the row returned last.
        self.raw = std::mem::take(&mut self.record).into_byte_record();
        while !self.done {
            match self.reader.read_byte_record(&mut self.raw) {
                Ok(true) => {
                    let end = self.reader.position();
                    let source = self.reader.get_ref();
                    // The bytes of the next row count from here.
                    source.row_start.set(end.byte());
                    // The crate numbers a row by where it began to read it,
                    // before the empty lines it skips: count back from the
                    // line after the row's line end instead (the end of the
                    // file ends a row on its last line), less the line ends
                    // inside its quoted cells.
                    let inner = self.raw.as_slice().iter().filter(|&&b| b == b'\n').count();
                    let line = (end.line() as usize)
                        .saturating_sub(usize::from(!source.at_end) + inner)
                        .max(1);
                    let raw = std::mem::take(&mut self.raw);
                    match csv::StringRecord::from_byte_record(raw) {
                        Ok(record) => {
                            if record.len() == 1 && record[0].trim().is_empty() {
                                self.raw = record.into_byte_record();
                                continue;
                            }
                            self.record = record;
                            return Ok(Some((line, Row(&self.record))));
                        }
                        Err(e) => {
                            self.done = true;
                            let e = e.utf8_error();
                            return Err(InputError::new(
                                format!("{}:{line}", self.origin),
                                format!(
                                    "cell {} is not UTF-8 text (invalid byte at byte {} of the cell)",
                                    e.field() + 1,
                                    e.valid_up_to() + 1
                                ),
                            ));
                        }
                    }
                }
                Ok(false) => self.done = true,
                Err(e) => {
                    self.done = true;
                    return Err(self.error(e));
                }
            }
        }
        Ok(None)
    }

    /// A read error (the row passed the limit, or the file cannot be read),
    /// at the line being read.
    fn error(&self, e: csv::Error) -> InputError {
        let source = self.reader.get_ref();
        let at = format!("{}:{}", self.origin, source.newlines + 1);
        if source.too_long {
            InputError::new(
                at,
                format!(
                    "is longer than {} bytes, the longest row a data or trace file may have (a row ends at a line end outside quotes)",
                    source.limit
                ),
            )
        } else {
            InputError::new(at, format!("cannot read: {e}"))
        }
    }
}

/// The cells of a row, each trimmed of surrounding whitespace (a `\r`
/// before the line end included).
#[derive(Debug, Clone, Copy)]
pub struct Row<'a>(&'a csv::StringRecord);

impl<'a> Row<'a> {
    /// Cells in the row.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the row has no cell (never for a row [`CsvRows`] returns).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The cells, trimmed.
    pub fn iter(&self) -> impl Iterator<Item = &'a str> + use<'a> {
        self.0.iter().map(str::trim)
    }

    /// The cells, trimmed, as owned strings.
    pub fn to_vec(&self) -> Vec<String> {
        self.iter().map(str::to_string).collect()
    }
}

/// The file under the parser: hands it at most `limit` bytes past the start
/// of the row being read. The parser asks for more only once it has used
/// every byte it was given, so the bytes since `row_start` (set after each
/// row) are those of the row it is reading.
struct Bounded<R> {
    inner: R,
    limit: u64,
    /// Bytes handed to the parser.
    read: u64,
    /// `\n` bytes among them.
    newlines: u64,
    /// Whether the file has ended.
    at_end: bool,
    row_start: Cell<u64>,
    too_long: bool,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let held = self.read - self.row_start.get();
        let room = self.limit.saturating_sub(held);
        if room == 0 {
            // At the limit: the row may only end here, at the end of the file.
            let mut probe = [0u8; 1];
            if self.inner.read(&mut probe)? == 0 {
                self.at_end = true;
                return Ok(0);
            }
            self.too_long = true;
            return Err(io::Error::other("row too long"));
        }
        let take = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..take])?;
        self.at_end = n == 0 && take > 0;
        self.read += n as u64;
        self.newlines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row of `text` (line and cells) up to the first error, and the error.
    fn rows(text: &[u8], limit: usize) -> (Vec<(usize, Vec<String>)>, Option<InputError>) {
        let mut csv = CsvRows::with_limit(text, "f.csv", limit);
        let mut out = Vec::new();
        loop {
            match csv.next_row() {
                Ok(Some((line, cells))) => {
                    out.push((line, cells.iter().map(str::to_string).collect()))
                }
                Ok(None) => return (out, None),
                Err(e) => {
                    assert!(csv.next_row().unwrap().is_none(), "an error ends the rows");
                    return (out, Some(e));
                }
            }
        }
    }

    fn row(line: usize, cells: &[&str]) -> (usize, Vec<String>) {
        (line, cells.iter().map(|c| c.to_string()).collect())
    }

    #[test]
    fn quoted_cells_hold_commas_quotes_and_line_ends() {
        let (out, e) = rows(
            b"\"w 1\",\"w,2\"\n\"1.5\",\" 2 \"\n\"say \"\"x\"\"\",\"a\nb\"\n7,8\n",
            64,
        );
        assert!(e.is_none(), "{e:?}");
        assert_eq!(
            out,
            [
                row(1, &["w 1", "w,2"]),
                row(2, &["1.5", "2"]),
                row(3, &["say \"x\"", "a\nb"]),
                // The quoted line end made row 3 two lines long.
                row(5, &["7", "8"]),
            ]
        );
    }

    #[test]
    fn crlf_lines_are_numbered_like_lf_lines_and_blank_lines_skipped() {
        let crlf = rows(b"a,b\r\n\r\n1,\"2\"\r\n  \r\n3,4\r\n", 64);
        let lf = rows(b"a,b\n\n1,\"2\"\n  \n3,4\n", 64);
        assert_eq!(crlf.0, lf.0);
        assert_eq!(
            lf.0,
            [
                row(1, &["a", "b"]),
                row(3, &["1", "2"]),
                row(5, &["3", "4"])
            ]
        );
        // A row of empty cells is not blank.
        assert_eq!(rows(b"1\n,\n", 64).0, [row(1, &["1"]), row(2, &["", ""])]);
        // A last row without a line end is a row.
        assert_eq!(rows(b"1,2\n3,4", 64).0[1], row(2, &["3", "4"]));
    }

    #[test]
    fn a_row_of_exactly_the_limit_passes_one_byte_more_fails() {
        // 4 bytes with the line end.
        let (out, e) = rows(b"123\n456\n78", 4);
        assert!(e.is_none(), "{e:?}");
        assert_eq!(out.len(), 3);
        let (out, e) = rows(b"123\n4567\nlater\n", 4);
        assert_eq!(out, [row(1, &["123"])]);
        let e = e.unwrap();
        assert_eq!(e.field, "f.csv:2");
        assert!(e.to_string().contains("longer than 4 bytes"), "{e}");
        // A last row of the limit without a line end passes.
        assert!(rows(b"1\n1234", 4).1.is_none());
    }

    #[test]
    fn an_unclosed_quote_stops_at_the_limit_naming_the_line() {
        let mut text = b"1,2\n3,\"4\n".to_vec();
        text.extend(b"5,6\n".repeat(100));
        let (out, e) = rows(&text, 64);
        assert_eq!(out, [row(1, &["1", "2"])]);
        let e = e.unwrap();
        // The row began on line 2 (5 bytes), lines 3.. add 4 bytes each: its
        // 65th byte is on line 17.
        assert_eq!(e.field, "f.csv:17");
        assert!(e.to_string().contains("line end outside quotes"), "{e}");
    }

    #[test]
    fn an_endless_line_is_refused_after_the_limit_without_reading_on() {
        let endless = std::io::repeat(b'7');
        let mut csv = CsvRows::with_limit(endless, "/dev/sevens", 1 << 16);
        let e = csv.next_row().unwrap_err();
        assert_eq!(e.field, "/dev/sevens:1");
        assert!(csv.next_row().unwrap().is_none());
        assert!(csv.reader.get_ref().read <= 1 << 16);
        let e = CsvRows::new(std::io::repeat(b'1'), "big")
            .next_row()
            .unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("longer than {MAX_LINE_BYTES} bytes")),
            "{e}"
        );
    }

    #[test]
    fn invalid_utf8_names_the_line_and_cell() {
        let (out, e) = rows(b"ok,1\nab,c\xffd\n", 64);
        assert_eq!(out.len(), 1);
        let e = e.unwrap();
        assert_eq!(e.field, "f.csv:2");
        assert!(e.to_string().contains("cell 2 is not UTF-8"), "{e}");
        assert!(e.to_string().contains("byte 2 of the cell"), "{e}");
    }
}
