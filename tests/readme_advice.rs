//! The README's "which scheme when" picks are what `gradcode advise`
//! recommends (issue 24, item 4): every bullet after the marker line names
//! an `advise` command (or `the same` one with more `--set`s) and the
//! schemes one of which must rank first; this runs each and checks.

mod common;

use common::{gradcode, stderr, stdout};

const MARKER: &str = "<!-- advise picks: checked by tests/readme_advice.rs -->";

/// The backticked spans of a line.
fn spans(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

/// (advise arguments, schemes one of which ranks first) per bullet.
fn picks(readme: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let after = readme
        .split_once(MARKER)
        .unwrap_or_else(|| panic!("README.md has no line {MARKER}"))
        .1;
    let mut picks: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for line in after.lines().skip(1).take_while(|l| l.starts_with("- ")) {
        let spans = spans(line);
        assert!(
            spans.len() >= 2,
            "a pick names a command and a scheme: {line}"
        );
        let words: Vec<String> = spans[0].split_whitespace().map(String::from).collect();
        let args = if line.starts_with("- the same ") {
            let (earlier, _) = picks.last().expect("`the same` follows a command");
            earlier.iter().cloned().chain(words).collect()
        } else {
            assert_eq!(words[0], "advise", "a pick is an advise command: {line}");
            words
        };
        let schemes = spans[1..].iter().map(|s| s.to_string()).collect();
        picks.push((args, schemes));
    }
    picks
}

#[test]
fn the_readmes_picks_are_what_advise_ranks_first() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let picks = picks(&readme);
    assert!(picks.len() >= 2, "the README lists {} picks", picks.len());
    let mut firsts = Vec::new();
    for (args, schemes) in &picks {
        let mut argv: Vec<&str> = args.iter().map(String::as_str).collect();
        argv.push("--json");
        let o = gradcode(&argv);
        assert!(o.status.success(), "{argv:?}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("advise --json");
        let best = &v["ranking"][0];
        assert_eq!(best["rank"], 1);
        let first = best["scheme"].as_str().expect("a scheme").to_string();
        assert!(
            schemes.contains(&first),
            "{argv:?} ranks {first} first ({}), the README says {schemes:?}",
            best["settings"]
        );
        firsts.push(first);
    }
    // The picks differ: the network is what the list shows changing them.
    assert_ne!(firsts[0], firsts[1], "{firsts:?}");
}
