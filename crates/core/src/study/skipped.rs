//! The variants a study did not run, with the reason, merged per scheme and
//! reason so that a value the reason does not depend on is not reported
//! once per value.

use std::collections::BTreeMap;

use serde::Serialize;

use super::grid::describe;

/// A variant that did not run, and why; after [`merge_skipped`], the first
/// of the `variants` of its scheme skipped for the same reason (the reason
/// names the keys that make it).
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub scheme: String,
    pub settings: BTreeMap<String, String>,
    pub reason: String,
    /// Variants of the scheme skipped for this reason (1 before merging).
    pub variants: usize,
}

/// One entry per scheme and reason, in the order they first occur, with the
/// number of variants it stands for.
pub fn merge_skipped(skipped: Vec<Skipped>) -> Vec<Skipped> {
    let mut merged: Vec<Skipped> = Vec::new();
    for s in skipped {
        match merged
            .iter_mut()
            .find(|m| m.scheme == s.scheme && m.reason == s.reason)
        {
            Some(m) => m.variants += s.variants,
            None => merged.push(s),
        }
    }
    merged
}

/// How a merged skip is printed: the scheme, the first variant's settings,
/// the reason and how many more variants share it.
pub fn describe_skipped(s: &Skipped) -> String {
    let more = match s.variants {
        0 | 1 => String::new(),
        2 => " (and 1 more variant)".to_string(),
        n => format!(" (and {} more variants)", n - 1),
    };
    format!("{} {}: {}{more}", s.scheme, describe(&s.settings), s.reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skip(scheme: &str, load: &str, reason: &str) -> Skipped {
        Skipped {
            scheme: scheme.into(),
            settings: BTreeMap::from([("scheme.load".to_string(), load.to_string())]),
            reason: reason.into(),
            variants: 1,
        }
    }

    #[test]
    fn skips_merge_per_scheme_and_reason_keeping_the_first() {
        let merged = merge_skipped(vec![
            skip("gc-sc", "2", "too big"),
            skip("gc-dc", "2", "too big"),
            skip("gc-sc", "3", "too big"),
            skip("gc-sc", "4", "too big"),
            skip("gc-sc", "5", "other"),
        ]);
        let counts: Vec<(&str, usize)> = merged
            .iter()
            .map(|m| (m.scheme.as_str(), m.variants))
            .collect();
        assert_eq!(counts, [("gc-sc", 3), ("gc-dc", 1), ("gc-sc", 1)]);
        assert_eq!(
            describe_skipped(&merged[0]),
            "gc-sc scheme.load=2: too big (and 2 more variants)"
        );
        assert_eq!(describe_skipped(&merged[1]), "gc-dc scheme.load=2: too big");
    }
}
