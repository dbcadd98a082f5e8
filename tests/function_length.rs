//! The heart stays readable (issue 40): no function in
//! `crates/core/src/engine/`, `src/runtime/`, the commands (`src/cli/`) or
//! the data sources (`crates/core/src/learn/data/`) is longer than 80 lines,
//! counted from the line of its `fn` to the line of its closing brace
//! (attributes and doc comments above it do not count; test functions do).
//!
//! The source is read as text with comments, string and char literals
//! blanked out first, so that a brace inside them is not counted.

use std::path::{Path, PathBuf};

/// The longest a function in the checked folders may be, in lines.
const MAX_FUNCTION_LINES: usize = 80;

/// The folders whose functions are held to [`MAX_FUNCTION_LINES`].
const CHECKED_FOLDERS: &[&str] = &[
    "crates/core/src/engine",
    "src/runtime",
    "src/cli",
    "crates/core/src/learn/data",
];

/// `text` with every comment, string literal (raw ones included) and char
/// literal replaced by spaces; line breaks are kept, so line numbers hold.
fn blank_comments_and_literals(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out: Vec<char> = Vec::with_capacity(c.len());
    let blank = |out: &mut Vec<char>, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        if ch == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                blank(&mut out, c[i]);
                i += 1;
            }
        } else if ch == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.extend([' ', ' ']);
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.extend([' ', ' ']);
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
        } else if ch == 'r' && (next == Some('#') || next == Some('"')) && !ident_before(&c, i) {
            // A raw string: r"..." or r#"..."#, closed by a quote and as many hashes.
            let mut j = i + 1;
            let mut hashes = 0;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(ch);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= c.len() {
                    break;
                }
                if c[j] == '"' && (0..hashes).all(|h| c.get(j + 1 + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            for &k in &c[i..j.min(c.len())] {
                blank(&mut out, k);
            }
            i = j;
        } else if ch == '"' {
            blank(&mut out, ch);
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    blank(&mut out, c[i]);
                    i += 1;
                }
                if i < c.len() {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
            if i < c.len() {
                blank(&mut out, c[i]);
                i += 1;
            }
        } else if ch == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            let close = if next == Some('\\') {
                (i + 2..c.len().min(i + 12)).find(|&k| c[k] == '\'')
            } else if c.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match close {
                Some(end) => {
                    for &k in &c[i..=end] {
                        blank(&mut out, k);
                    }
                    i = end + 1;
                }
                None => {
                    out.push(ch);
                    i += 1;
                }
            }
        } else {
            out.push(ch);
            i += 1;
        }
    }
    out.into_iter().collect()
}

/// Whether the character before `i` continues an identifier (so an `r` at
/// `i` is part of a name, not a raw string's prefix).
fn ident_before(c: &[char], i: usize) -> bool {
    i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_')
}

/// Every function with a body in `code` (already blanked): its name, the
/// line (1-based) of its `fn` and its length in lines.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let c: Vec<char> = code.chars().collect();
    let line_at = |pos: usize| c[..pos].iter().filter(|&&ch| ch == '\n').count() + 1;
    let mut found = Vec::new();
    let mut i = 0;
    while i + 2 < c.len() {
        let starts_fn =
            c[i] == 'f' && c[i + 1] == 'n' && c[i + 2].is_whitespace() && !ident_before(&c, i);
        if !starts_fn {
            i += 1;
            continue;
        }
        let name_start = (i + 2..c.len()).find(|&k| !c[k].is_whitespace());
        let Some(name_start) = name_start else { break };
        let name_end = (name_start..c.len())
            .find(|&k| !(c[k].is_alphanumeric() || c[k] == '_'))
            .unwrap_or(c.len());
        let name: String = c[name_start..name_end].iter().collect();
        // The body opens at the first `{` at nesting depth 0 of parentheses,
        // brackets and angle brackets; a `;` before it ends a declaration.
        let mut depth = 0i32;
        let mut body = None;
        let mut k = name_end;
        while k < c.len() {
            match c[k] {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                '{' if depth == 0 => {
                    body = Some(k);
                    break;
                }
                ';' if depth == 0 => break,
                _ => {}
            }
            k += 1;
        }
        let Some(open) = body else {
            i = k.max(i + 1);
            continue;
        };
        let mut braces = 0i32;
        let mut close = open;
        for (k, &ch) in c.iter().enumerate().skip(open) {
            if ch == '{' {
                braces += 1;
            } else if ch == '}' {
                braces -= 1;
                if braces == 0 {
                    close = k;
                    break;
                }
            }
        }
        let first = line_at(i);
        found.push((name, first, line_at(close) - first + 1));
        // Nested functions are counted on their own as well.
        i = name_end;
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_function_in_the_checked_folders_is_longer_than_80_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut too_long = Vec::new();
    let mut seen = 0;
    for folder in CHECKED_FOLDERS {
        let mut files = Vec::new();
        rust_files(&root.join(folder), &mut files);
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).expect("a source file");
            for (name, line, length) in functions(&blank_comments_and_literals(&text)) {
                seen += 1;
                if length > MAX_FUNCTION_LINES {
                    let shown = file
                        .strip_prefix(root)
                        .unwrap_or(&file)
                        .display()
                        .to_string();
                    too_long.push(format!("{shown}:{line} {name}: {length} lines"));
                }
            }
        }
    }
    assert!(
        seen > 100,
        "only {seen} functions found: the scan is broken"
    );
    assert!(
        too_long.is_empty(),
        "functions longer than {MAX_FUNCTION_LINES} lines:\n{}",
        too_long.join("\n")
    );
}

#[test]
fn the_scan_measures_a_function_from_its_fn_line_to_its_closing_brace() {
    let code = "/// doc { not counted\n#[inline]\npub(crate) fn short<T: Into<u8>>(x: T) -> [u8; 2] {\n    let s = \"}}}\";\n    let c = '}';\n    // }\n    [x.into(), 0]\n}\ntrait T { fn declared(&self); }\nfn raw() { let _ = r#\"{{\"#; }\n";
    let found = functions(&blank_comments_and_literals(code));
    assert_eq!(
        found,
        vec![("short".to_string(), 3, 6), ("raw".to_string(), 10, 1)]
    );
}
