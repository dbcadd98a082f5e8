//! The candidates `advise` searches for a scheme: the user's grid axes the
//! scheme reads, then its default axes (`scheme.load` up to a memory budget,
//! `scheme.clusters` the divisors of K, `scheme.clusters_per_worker` up to
//! K, `scheme.wait_for` where partial recovery is admitted), and the
//! memory a scheme stores on a worker.

use super::grid::Axis;
use crate::coding::SchemeEntry;
use crate::config::{CompareEntry, Config, LoadedConfig, Setting};
use crate::error::InputError;
use crate::setup::{self, Setup};

/// The scheme keys advise searches by default (`wait_for` only where
/// partial-recovery candidates are admitted).
pub const SEARCHED: [&str; 4] = ["load", "clusters", "clusters_per_worker", "wait_for"];

/// The divisors of `k`, ascending.
pub fn divisors(k: usize) -> Vec<usize> {
    (1..=k).filter(|d| k % d == 0).collect()
}

/// The axes of `entry`'s scheme: the user's `grid` axes it reads (a
/// `scheme.*` key it declares, or any other key), then the default ones of
/// [`SEARCHED`] it declares and `grid` does not give: `load` from 1 to
/// min(`memory`, K), `clusters` the divisors of K, `clusters_per_worker`
/// 1..=K, and `wait_for` (from ⌈K/2⌉ to K − 1) only when `partial` admits
/// partial-recovery candidates and `grid` sets neither it nor
/// `scheme.deadline`.
pub fn axes_for(
    entry: &SchemeEntry,
    grid: &[Axis],
    workers: usize,
    memory: Option<usize>,
    partial: bool,
) -> Vec<Axis> {
    let reads = |key: &str| match key.strip_prefix("scheme.") {
        Some(k) => entry.declares(k),
        None => true,
    };
    let mut axes: Vec<Axis> = grid.iter().filter(|a| reads(&a.key)).cloned().collect();
    for key in SEARCHED {
        let full = format!("scheme.{key}");
        if !entry.declares(key) || grid.iter().any(|a| a.key == full) {
            continue;
        }
        let values: Vec<usize> = match key {
            "load" => (1..=memory.unwrap_or(workers).min(workers)).collect(),
            "clusters" => divisors(workers),
            "wait_for" => {
                if !partial || grid.iter().any(|a| a.key == "scheme.deadline") {
                    continue;
                }
                (workers.div_ceil(2)..workers).collect()
            }
            _ => (1..=workers).collect(),
        };
        if values.is_empty() {
            continue;
        }
        axes.push(Axis {
            key: full,
            values: values.iter().map(ToString::to_string).collect(),
        });
    }
    axes
}

/// Whether `combo` has more clusters per worker than clusters, from the
/// default search (`grid` does not give `scheme.clusters_per_worker`):
/// such a combination is no variant (a worker can join at most every
/// cluster), so it is not run or listed.
pub fn beyond_clusters(combo: &[(String, String)], grid: &[Axis]) -> bool {
    if grid.iter().any(|a| a.key == "scheme.clusters_per_worker") {
        return false;
    }
    let value = |key: &str| {
        combo
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.parse::<usize>().ok())
    };
    matches!(
        (value("scheme.clusters_per_worker"), value("scheme.clusters")),
        (Some(n), Some(p)) if n > p
    )
}

/// The most partitions a worker of the setup's scheme stores.
pub fn max_stored(setup: &Setup) -> usize {
    let s = &setup.scheme;
    (0..s.workers())
        .map(|w| s.stored(w).len())
        .max()
        .unwrap_or(0)
}

/// The most partitions a worker stores in the experiment of `base` (a
/// config as parsed, `[scheme]` not resolved): its scheme and each scheme
/// `simulate.compare` compares (with a variant's keys).
pub fn experiment_memory(base: &LoadedConfig) -> Result<usize, InputError> {
    let config: &Config = &base.config;
    let mut most = max_stored(&setup::from_parsed(&crate::coding::SCHEMES, base.clone())?);
    for entry in config.compared() {
        let mut settings = vec![Setting::new("scheme.kind", entry.kind())?];
        if let CompareEntry::Variant(v) = &entry {
            for (k, value) in &v.set {
                settings.push(Setting::new(&format!("scheme.{k}"), value.clone())?);
            }
        }
        let setup = setup::from_parsed(&crate::coding::SCHEMES, base.with_settings(&settings)?)?;
        most = most.max(max_stored(&setup));
    }
    Ok(most)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::parse_axis;

    #[test]
    fn divisors_of_twenty() {
        assert_eq!(divisors(20), [1, 2, 4, 5, 10, 20]);
        assert_eq!(divisors(1), [1]);
    }

    #[test]
    fn axes_search_only_the_keys_a_scheme_reads() {
        let gc_sc = crate::coding::SCHEMES.get("gc-sc").unwrap();
        let uncoded = crate::coding::SCHEMES.get("uncoded").unwrap();
        let grid = [
            parse_axis("scheme.clusters=2,4").unwrap(),
            parse_axis("scheme.wait_for=3").unwrap(),
        ];
        let axes = axes_for(gc_sc, &grid, 12, Some(3), true);
        let keys: Vec<&str> = axes.iter().map(|a| a.key.as_str()).collect();
        // wait_for is not a gc-sc key; clusters comes from --grid; load
        // from the default range capped by the budget.
        assert_eq!(keys, ["scheme.clusters", "scheme.load"]);
        assert_eq!(axes[0].values, ["2", "4"]);
        assert_eq!(axes[1].values, ["1", "2", "3"]);
        assert!(axes_for(uncoded, &[], 12, None, true).is_empty());
    }

    #[test]
    fn wait_for_is_searched_only_where_partial_candidates_are_admitted() {
        let is_gc = crate::coding::SCHEMES.get("is-gc").unwrap();
        let keys = |axes: &[Axis]| axes.iter().map(|a| a.key.clone()).collect::<Vec<_>>();
        let admitted = axes_for(is_gc, &[], 8, Some(2), true);
        let wait_for = admitted
            .iter()
            .find(|a| a.key == "scheme.wait_for")
            .unwrap();
        assert_eq!(wait_for.values, ["4", "5", "6", "7"]);
        assert!(
            !keys(&axes_for(is_gc, &[], 8, Some(2), false)).contains(&"scheme.wait_for".into())
        );
        // A deadline on the grid is the wait policy the user chose.
        let deadline = [parse_axis("scheme.deadline=1.5").unwrap()];
        assert!(
            !keys(&axes_for(is_gc, &deadline, 8, Some(2), true))
                .contains(&"scheme.wait_for".into())
        );
    }

    #[test]
    fn clusters_per_worker_beyond_clusters_is_no_variant() {
        let combo = |n: &str, p: &str| {
            vec![
                ("scheme.clusters".to_string(), p.to_string()),
                ("scheme.clusters_per_worker".to_string(), n.to_string()),
            ]
        };
        assert!(beyond_clusters(&combo("3", "2"), &[]));
        assert!(!beyond_clusters(&combo("2", "2"), &[]));
        let given = [parse_axis("scheme.clusters_per_worker=3").unwrap()];
        assert!(!beyond_clusters(&combo("3", "2"), &given));
    }

    /// The experiment's memory is the most any compared scheme stores.
    #[test]
    fn experiment_memory_is_the_most_a_compared_scheme_stores() {
        let text = "workers = 6\n[data]\ntrain_samples = 60\n[scheme]\nkind = \"uncoded\"\n\
                    [simulate]\ncompare = [\"uncoded\", { name = \"r3\", kind = \"gc-cyclic\", set = { load = 3 } }]\n";
        let base = crate::config::parse(text, "t", &[]).unwrap();
        assert_eq!(experiment_memory(&base).unwrap(), 3);
        let alone = crate::config::parse(text, "t", &["simulate.compare=[]".into()]).unwrap();
        assert_eq!(experiment_memory(&alone).unwrap(), 1);
    }
}
