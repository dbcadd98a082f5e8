//! Reading the lines of a text input file (LIBSVM data) in bounded memory.
//! CSV files (data, straggler traces) are read row by row by
//! [`CsvRows`](crate::csvfile::CsvRows), under the same limit.
//!
//! `BufRead::lines` keeps reading until it finds a newline, so a file with one
//! enormous line (a binary file named by mistake, `/dev/zero`, a LIBSVM line
//! with millions of features) would be read into memory whole. [`Lines`]
//! reads at most [`MAX_LINE_BYTES`] (+1) bytes of a line and then stops with
//! an error naming `file:line`, so what a loader holds at once is bounded by
//! the limit, whatever the file is.

use std::io::{BufRead, Read};

use crate::error::InputError;

/// The longest line a data or trace file may have, in bytes without the line
/// end: 64 MiB, room for a dense CSV row of several million features or a
/// LIBSVM row of a few million `index:value` pairs. A longer line is refused
/// as `file:line: is longer than ...`.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// The lines of `reader` with their 1-based line numbers, without the line
/// end (`\n` or `\r\n`); an error (too long, not UTF-8, unreadable) names
/// `origin:line` and ends the iteration.
pub struct Lines<R> {
    reader: R,
    origin: String,
    limit: usize,
    line_no: usize,
    buf: Vec<u8>,
    done: bool,
}

impl<R: BufRead> Lines<R> {
    /// Lines of at most [`MAX_LINE_BYTES`] bytes.
    pub fn new(reader: R, origin: &str) -> Self {
        Self::with_limit(reader, origin, MAX_LINE_BYTES)
    }

    /// Lines of at most `limit` bytes (tests use a small limit).
    pub fn with_limit(reader: R, origin: &str, limit: usize) -> Self {
        Self {
            reader,
            origin: origin.to_string(),
            limit,
            line_no: 0,
            buf: Vec::new(),
            done: false,
        }
    }

    fn fail(&mut self, rule: String) -> Option<Result<(usize, String), InputError>> {
        self.done = true;
        Some(Err(InputError::new(
            format!("{}:{}", self.origin, self.line_no),
            rule,
        )))
    }
}

impl<R: BufRead> Iterator for Lines<R> {
    type Item = Result<(usize, String), InputError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        self.buf.clear();
        self.line_no += 1;
        // One byte more than the limit: a line of exactly `limit` bytes plus its `\n` fits.
        let cap = self.limit as u64 + 1;
        let read = match (&mut self.reader)
            .take(cap)
            .read_until(b'\n', &mut self.buf)
        {
            Ok(n) => n,
            Err(e) => return self.fail(format!("cannot read: {e}")),
        };
        if read == 0 {
            self.done = true;
            return None;
        }
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
        } else if self.buf.len() > self.limit {
            let limit = self.limit;
            return self.fail(format!(
                "is longer than {limit} bytes, the longest line a data or trace file may have"
            ));
        }
        match std::str::from_utf8(&self.buf) {
            Ok(text) => Some(Ok((self.line_no, text.to_string()))),
            Err(e) => {
                let at = e.valid_up_to();
                self.fail(format!(
                    "is not UTF-8 text (invalid byte at column {})",
                    at + 1
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(text: &[u8], limit: usize) -> Vec<Result<(usize, String), InputError>> {
        Lines::with_limit(text, "f.txt", limit).collect()
    }

    #[test]
    fn lines_are_numbered_and_stripped_of_line_ends() {
        let lines: Vec<(usize, String)> = collect(b"a\r\nbc\n\nd", 8)
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            lines,
            [
                (1, "a".to_string()),
                (2, "bc".to_string()),
                (3, String::new()),
                (4, "d".to_string())
            ]
        );
    }

    #[test]
    fn a_line_of_exactly_the_limit_passes_one_byte_more_fails() {
        let ok = collect(b"1234\n5678", 4);
        assert!(ok.iter().all(Result::is_ok), "{ok:?}");
        let out = collect(b"1234\n12345\nlater", 4);
        assert_eq!(out.len(), 2, "the error ends the lines: {out:?}");
        let e = out[1].as_ref().unwrap_err();
        assert_eq!(e.field, "f.txt:2");
        assert!(e.to_string().contains("longer than 4 bytes"), "{e}");
    }

    #[test]
    fn an_endless_line_is_refused_after_the_limit_without_reading_on() {
        // An infinite reader: only the limit (+1 byte) may be read, then the error.
        let endless = std::io::BufReader::new(std::io::repeat(b'7'));
        let mut lines = Lines::with_limit(endless, "/dev/sevens", 1 << 16);
        let e = lines.next().unwrap().unwrap_err();
        assert_eq!(e.field, "/dev/sevens:1");
        assert!(lines.next().is_none());
        assert!(lines.buf.capacity() <= 4 << 16, "{}", lines.buf.capacity());
    }

    #[test]
    fn the_real_limit_stops_an_endless_line() {
        let endless = std::io::BufReader::new(std::io::repeat(b'1'));
        let e = Lines::new(endless, "big").next().unwrap().unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("longer than {MAX_LINE_BYTES} bytes")),
            "{e}"
        );
    }

    #[test]
    fn invalid_utf8_names_the_line_and_column() {
        let out = collect(b"ok\nab\xffc\n", 16);
        let e = out[1].as_ref().unwrap_err();
        assert_eq!(e.field, "f.txt:2");
        assert!(e.to_string().contains("not UTF-8 text"), "{e}");
        assert!(e.to_string().contains("column 3"), "{e}");
    }

    #[test]
    fn a_last_line_without_newline_is_read() {
        let out = collect(b"1 1:0.5\n-1 2:1.", 64);
        assert_eq!(out.last().unwrap().as_ref().unwrap().1, "-1 2:1.");
    }
}
