//! The paper configs (configs/paper/*.toml) say what the papers say: they
//! load without warnings, build every compared scheme, and the two straggler
//! thresholds of a GC-DC figure agree (000 §VI has one tau: the model's
//! `straggler.rate_threshold` and GC-DC's `scheme.straggler_threshold`).

use std::path::PathBuf;

use gradcode_core::coding::SCHEMES;
use gradcode_core::config::{CompareEntry, LoadedConfig, StateInfo, StragglerModel};

fn paper_configs() -> Vec<(String, LoadedConfig)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../configs/paper");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("configs/paper")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            let loaded = gradcode_core::setup::load(Some(p), &[])
                .unwrap_or_else(|e| panic!("{name}: {e}"))
                .loaded;
            (name, loaded)
        })
        .collect()
}

#[test]
fn every_paper_config_loads_without_warnings_and_builds_its_schemes() {
    let configs = paper_configs();
    assert!(configs.len() >= 12, "{} configs", configs.len());
    for (name, loaded) in &configs {
        assert_eq!(loaded.unused_keys(), Vec::<String>::new(), "{name}");
        for entry in loaded.config.compared() {
            gradcode_core::setup::build_entry(&SCHEMES, &entry, &loaded.config)
                .unwrap_or_else(|e| panic!("{name}: {entry}: {e}"));
        }
    }
}

#[test]
fn gcdc_figures_compare_gc_gc_sc_and_gc_dc_with_the_papers_settings() {
    let configs = paper_configs();
    let figures: Vec<_> = configs
        .iter()
        .filter(|(n, _)| n.starts_with("gcdc-fig"))
        .collect();
    assert_eq!(figures.len(), 9);
    for (name, loaded) in figures {
        let c = &loaded.config;
        let names: Vec<&str> = c.simulate.compare.iter().map(CompareEntry::name).collect();
        assert_eq!(names, ["gc", "gc-sc", "gc-dc"], "{name}");
        assert_eq!(
            (c.simulate.trials, c.simulate.iterations),
            (30, 400),
            "{name}"
        );
        let (k, p, r, n) = if name == "gcdc-fig3" {
            (12, 4, 2, 2)
        } else {
            (20, 5, 3, 3)
        };
        let key = |key: &str| SCHEMES.param::<Option<usize>>(c, key).unwrap();
        assert_eq!(
            (
                c.workers,
                key("clusters"),
                key("load"),
                key("clusters_per_worker")
            ),
            (k, Some(p), Some(r), Some(n)),
            "{name}"
        );
        assert_eq!(c.scheme.kind, "gc-sc", "{name}");
        let info = if name.ends_with('b') {
            StateInfo::Perfect
        } else {
            StateInfo::Imperfect
        };
        assert_eq!(c.straggler.state_info, info, "{name}");
        let st = &c.straggler;
        let tau: f64 = SCHEMES.param(c, "straggler_threshold").unwrap();
        match st.model {
            // Homogeneous: GC-DC gets the rates mu_f / mu_s and must call
            // exactly the slow state a straggler.
            StragglerModel::GilbertElliott => assert!(
                st.mu_slow < tau && tau <= st.mu_fast,
                "{name}: tau = {tau} must separate mu_s = {} from mu_f = {}",
                st.mu_slow,
                st.mu_fast
            ),
            StragglerModel::GilbertElliottHeterogeneous | StragglerModel::TimeVarying => {
                assert_eq!(tau, st.rate_threshold, "{name}: the two taus differ")
            }
            other => panic!("{name}: unexpected model {}", other.name()),
        }
    }
}
