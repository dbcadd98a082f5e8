//! The documentation points at things that exist: every relative link and
//! every backticked repository path in README.md, python/README.md and
//! docs/*.md names a file or folder of the repository, and the README stays
//! short enough for a newcomer to read.
//!
//! - A link `[text](target)` is resolved as a Markdown viewer resolves it:
//!   relative to the folder of the document it is in (the repository root
//!   for README.md). `#anchor` is stripped; `http://`, `https://`, `mailto:`
//!   and pure `#anchor` links are not checked.
//! - A backticked token that starts with a top-level folder of the
//!   repository (`scripts/`, `docs/`, ...) is a path relative to the
//!   repository root. Anything after a space (arguments) and a trailing
//!   `:line` are stripped; tokens with `*`, `<`, `{` or `$` are patterns or
//!   placeholders and are not checked.
//!
//! Fenced code blocks are commands and their output, not references: they
//! are skipped.

use std::path::{Path, PathBuf};

/// Top-level folders whose paths the documents name in backticks.
const PATH_PREFIXES: &[&str] = &[
    "scripts/",
    "configs/",
    "docs/",
    "python/",
    "examples/",
    "benches/",
    "tests/",
    "src/",
    "crates/",
    "jobs/",
    "results/",
    "fuzz/",
    "data/",
];

/// The most lines README.md may have (issue 24: about 250-300).
const README_MAX_LINES: usize = 300;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, python/README.md and every docs/*.md, relative to the root.
fn documents() -> Vec<PathBuf> {
    let mut docs = vec![
        PathBuf::from("README.md"),
        PathBuf::from("python/README.md"),
    ];
    let mut in_docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ is readable")
        .map(|entry| entry.expect("a docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| {
            p.strip_prefix(root())
                .expect("under the root")
                .to_path_buf()
        })
        .collect();
    in_docs.sort();
    docs.extend(in_docs);
    docs
}

/// The text outside fenced code blocks (lines from one ``` or ~~~ fence to
/// the next), other lines kept as they are.
fn prose(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<&str> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(open), Some(m)) if open == m => fence = None,
            (None, None) => {
                out.push_str(line);
                out.push('\n');
            }
            _ => {}
        }
    }
    out
}

/// The code spans of `text` (the contents between a run of n backticks and
/// the next run of exactly n, line breaks as spaces, trimmed) and the text
/// outside them (a link inside a code span is not a link).
fn split_code(text: &str) -> (Vec<String>, String) {
    let bytes = text.as_bytes();
    let run_at = |i: usize| bytes[i..].iter().take_while(|&&b| b == b'`').count();
    let mut spans = Vec::new();
    let mut outside = String::with_capacity(text.len());
    let (mut i, mut copied) = (0, 0);
    while i < bytes.len() {
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let n = run_at(i);
        let start = i + n;
        let mut j = start;
        let mut end = None;
        while j < bytes.len() {
            if bytes[j] == b'`' {
                let m = run_at(j);
                if m == n {
                    end = Some(j);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        match end {
            Some(e) => {
                spans.push(text[start..e].replace('\n', " ").trim().to_string());
                outside.push_str(&text[copied..i]);
                outside.push(' ');
                i = e + n;
                copied = i;
            }
            // An unmatched run is literal backticks.
            None => i = start,
        }
    }
    outside.push_str(&text[copied..]);
    (spans, outside)
}

/// The targets of Markdown links `](target)` worth checking: no URL, no
/// pure anchor, the `#anchor` and an optional title stripped.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let Some(close) = rest.find(')') else { break };
        let target = rest[..close].split_whitespace().next().unwrap_or("");
        rest = &rest[close..];
        let skip = target.is_empty()
            || target.starts_with('#')
            || ["http://", "https://", "mailto:"]
                .iter()
                .any(|s| target.starts_with(s));
        if skip {
            continue;
        }
        let path = target.split('#').next().unwrap_or(target);
        targets.push(path.to_string());
    }
    targets
}

/// The repository path a code span names, if it names one.
fn code_path(span: &str) -> Option<String> {
    let token = span.split_whitespace().next()?;
    if !PATH_PREFIXES.iter().any(|p| token.starts_with(p)) {
        return None;
    }
    if token.contains(['*', '<', '{', '$']) {
        return None;
    }
    // A trailing `:line` (or `:line:column`).
    let path = match token.split_once(':') {
        Some((path, line))
            if !line.is_empty()
                && line
                    .split(':')
                    .all(|n| n.bytes().all(|b| b.is_ascii_digit())) =>
        {
            path
        }
        _ => token,
    };
    Some(path.to_string())
}

/// Every checked reference of one document: (what it is, the path as
/// written, the path it resolves to).
fn references(doc: &Path, text: &str) -> Vec<(&'static str, String, PathBuf)> {
    let (spans, outside) = split_code(&prose(text));
    let folder = doc.parent().unwrap_or(Path::new(""));
    let mut refs = Vec::new();
    for target in link_targets(&outside) {
        let resolved = root().join(folder).join(&target);
        refs.push(("link", target, resolved));
    }
    for span in &spans {
        if let Some(path) = code_path(span) {
            let resolved = root().join(&path);
            refs.push(("path", path, resolved));
        }
    }
    refs
}

#[test]
fn every_link_and_path_in_the_docs_exists() {
    let mut missing = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(root().join(&doc))
            .unwrap_or_else(|e| panic!("{}: {e}", doc.display()));
        for (kind, written, resolved) in references(&doc, &text) {
            checked += 1;
            if !resolved.exists() {
                missing.push(format!("{}: {kind} {written}", doc.display()));
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} references found: is the extraction broken?"
    );
    assert!(
        missing.is_empty(),
        "{} of {checked} links and paths in the docs name nothing in the repository:\n  {}",
        missing.len(),
        missing.join("\n  ")
    );
}

#[test]
fn the_readme_is_short() {
    let text = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let lines = text.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, at most {README_MAX_LINES}: move detail to docs/"
    );
}

#[test]
fn the_extraction_finds_what_it_should() {
    let text = "See [the docs](docs/a.md#x), [a site](https://example.org), [here](#top).\n\
                ```sh\nscripts/not-checked.sh `scripts/nor-this.sh`\n```\n\
                Run `scripts/b.sh ARG`, `src/c.rs:12`, `configs/*.toml`, `results/<name>.json`,\n\
                `python/` and `[x](not/a/link.md)`; `gradcode check` is no path.\n";
    let prose = prose(text);
    assert!(!prose.contains("not-checked"), "fenced blocks are skipped");
    let (spans, outside) = split_code(&prose);
    assert_eq!(link_targets(&outside), ["docs/a.md"]);
    let paths: Vec<String> = spans.iter().filter_map(|s| code_path(s)).collect();
    assert_eq!(paths, ["scripts/b.sh", "src/c.rs", "python/"]);
    assert_eq!(split_code("a ``x ` y`` b").0, ["x ` y"]);
    assert_eq!(split_code("a `b\nc` d").0, ["b c"]);
}

/// The README's emulation-fidelity figures are those of the committed
/// `results/bench-runtime.json`, the output of the run they quote.
#[test]
fn the_readme_fidelity_figures_are_the_committed_bench_runtime_output() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let bench: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("results/bench-runtime.json"))
            .expect("results/bench-runtime.json, written by scripts/bench-runtime.sh"),
    )
    .unwrap();
    let percent = |kind: &str| {
        format!(
            "{:+.2}%",
            100.0 * bench[kind]["difference"].as_f64().unwrap()
        )
    };
    let quoted = format!(
        "measured {} (gc-sc) and {} (gc-dc)",
        percent("gc-sc"),
        percent("gc-dc")
    );
    assert!(
        readme.contains(&quoted),
        "README.md should quote `{quoted}` from results/bench-runtime.json"
    );
}

/// docs/design.md stays true (issue 40, item 7): its layout names every
/// top-level module of both crates (a folder as `name/`, a file as
/// `name.rs`), it names every subcommand (hidden ones too), and its config
/// table has a row for every section of the config.
#[test]
fn the_design_doc_names_every_module_subcommand_and_config_section() {
    use clap::CommandFactory;
    let design = std::fs::read_to_string(root().join("docs/design.md")).unwrap();
    let layout_start = design.find("## Layout").expect("a Layout section");
    let layout = &design[layout_start..];
    let layout = &layout[..layout.find("\n## ").map_or(layout.len(), |i| i + 1)];
    let mut missing = Vec::new();
    for dir in ["src", "crates/core/src"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            let named = if entry.file_type().unwrap().is_dir() {
                format!("{name}/")
            } else if name.ends_with(".rs") && name != "lib.rs" && name != "main.rs" {
                name.clone()
            } else {
                continue;
            };
            if !layout.contains(&named) {
                missing.push(format!("{dir}/{named} (module)"));
            }
        }
    }
    for sub in gradcode::cli::Cli::command().get_subcommands() {
        let name = sub.get_name();
        if name != "help" && !design.contains(name) {
            missing.push(format!("{name} (subcommand)"));
        }
    }
    let config = toml::Value::try_from(gradcode::config::Config::default()).unwrap();
    for (key, value) in config.as_table().unwrap() {
        if value.is_table() && !design.contains(&format!("| `[{key}]` |")) {
            missing.push(format!("[{key}] (config section)"));
        }
    }
    assert!(
        missing.is_empty(),
        "docs/design.md does not name: {}",
        missing.join(", ")
    );
}
