//! Variants of one base config: a scheme and one value per grid key, set on
//! the typed base ([`LoadedConfig::with_settings`], the checks and errors of
//! `--set`), each run exactly as `gradcode simulate --set KEY=VALUE ...
//! --set scheme.kind=S --set simulate.compare=["S"]` runs it, and the
//! variants that repeat an earlier one recognised.

use std::collections::BTreeMap;

use super::grid::describe;
use super::skipped::Skipped;
use crate::coding::SCHEMES;
use crate::config::{LoadedConfig, Setting};
use crate::engine::EngineError;
use crate::error::InputError;
use crate::setup::{self, Setup};
use crate::sim::{SimReport, Simulation};

/// What became of one variant.
pub enum Outcome {
    /// It ran: its resolved setup and the simulation's report (one scheme).
    Ran {
        settings: BTreeMap<String, String>,
        /// The settings its scheme reads (the others are listed as unused).
        read: BTreeMap<String, String>,
        setup: Box<Setup>,
        report: SimReport,
    },
    /// Invalid, refused by the caller, or a duplicate, with the reason.
    Skipped(Skipped),
}

/// Runs variants of one base config: each is the base with the variant's
/// values set and `scheme.kind`, `simulate.compare` and `simulate.baseline`
/// set to its scheme, loaded as `simulate` loads its config.
pub struct VariantRunner {
    /// The base as parsed (`[scheme]` as given, not resolved by the loader).
    base: LoadedConfig,
    /// A variant's signature (the scheme and the grid values it reads) → its settings.
    seen: BTreeMap<String, BTreeMap<String, String>>,
}

impl VariantRunner {
    /// Variants of `base`, a config as `config::load` returns it (before
    /// the loader `setup` resolves its `[scheme]`).
    pub fn new(base: LoadedConfig) -> Self {
        Self {
            base,
            seen: BTreeMap::new(),
        }
    }

    /// The setup of `scheme` with the values of `combo` (key, value text),
    /// or why it is invalid.
    pub fn setup(&self, combo: &[(String, String)], scheme: &str) -> Result<Setup, InputError> {
        let mut settings = combo
            .iter()
            .map(|(k, v)| Setting::from_text(k, v))
            .collect::<Result<Vec<_>, _>>()?;
        settings.push(Setting::new("scheme.kind", scheme)?);
        settings.push(Setting::new(
            "simulate.compare",
            toml::Value::Array(vec![scheme.into()]),
        )?);
        settings.push(Setting::new("simulate.baseline", scheme)?);
        setup::from_parsed(&SCHEMES, self.base.with_settings(&settings)?)
    }

    /// Run `scheme` with the values of `combo`, unless the config they make
    /// is invalid, `admit` refuses its setup (its reason), or it repeats an
    /// earlier variant (a key the scheme does not read).
    pub fn run(
        &mut self,
        combo: &[(String, String)],
        scheme: &str,
        admit: impl FnOnce(&Setup) -> Result<(), String>,
    ) -> Result<Outcome, EngineError> {
        let settings: BTreeMap<String, String> = combo.iter().cloned().collect();
        let skip = |settings, reason| {
            Ok(Outcome::Skipped(Skipped {
                scheme: scheme.to_string(),
                settings,
                reason,
                variants: 1,
            }))
        };
        let setup = match self.setup(combo, scheme) {
            Ok(setup) => setup,
            Err(e) => return skip(settings, e.to_string()),
        };
        let unused = setup.loaded.unused_keys();
        let read: BTreeMap<String, String> = settings
            .iter()
            .filter(|(k, _)| !unused.iter().any(|w| w.starts_with(&format!("{k} "))))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let signature = format!("{scheme} {read:?}");
        if let Some(first) = self.seen.get(&signature) {
            let reason = format!(
                "the same variant as {}: {scheme} does not read {}",
                describe(first),
                settings_not_read(combo, &read)
            );
            return skip(settings, reason);
        }
        self.seen.insert(signature, settings.clone());
        if let Err(reason) = admit(&setup) {
            return skip(settings, reason);
        }
        let report = match Simulation::from_config(&setup.loaded.config) {
            Ok(mut sim) => sim.run(&mut [])?,
            Err(e) => return skip(settings, e.to_string()),
        };
        Ok(Outcome::Ran {
            settings,
            read,
            setup: Box::new(setup),
            report,
        })
    }
}

/// The keys of `combo` that are not in `read`, comma-separated.
fn settings_not_read(combo: &[(String, String)], read: &BTreeMap<String, String>) -> String {
    combo
        .iter()
        .filter(|(k, _)| !read.contains_key(k))
        .map(|(k, _)| k.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DEMO_TOML;

    fn combo(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// A variant's setup is the one `setup::parse` gives for the same
    /// `--set`s after the base's.
    #[test]
    fn a_variant_is_its_settings_set_on_the_file() {
        let base_sets = ["simulate.trials=2".to_string()];
        let base = crate::config::parse(DEMO_TOML, "demo", &base_sets).unwrap();
        let runner = VariantRunner::new(base);
        let c = combo(&[("scheme.load", "2"), ("scheme.clusters", "2")]);
        let variant = runner.setup(&c, "gc-sc").unwrap();
        let mut sets = base_sets.to_vec();
        sets.extend(c.iter().map(|(k, v)| format!("{k}={v}")));
        sets.extend([
            "scheme.kind=\"gc-sc\"".to_string(),
            "simulate.compare=[\"gc-sc\"]".to_string(),
            "simulate.baseline=\"gc-sc\"".to_string(),
        ]);
        let reloaded = setup::parse(DEMO_TOML, "demo", &sets).unwrap();
        assert_eq!(variant.loaded.config, reloaded.loaded.config);
        assert_eq!(variant.loaded.unused_keys(), reloaded.loaded.unused_keys());
        let bad = runner.setup(&combo(&[("scheme.load", "0")]), "gc-sc");
        let mut sets = base_sets.to_vec();
        sets.extend([
            "scheme.load=0".to_string(),
            "scheme.kind=\"gc-sc\"".to_string(),
        ]);
        let reloaded = setup::parse(DEMO_TOML, "demo", &sets);
        assert_eq!(
            bad.err().unwrap().to_string(),
            reloaded.err().unwrap().to_string()
        );
    }

    #[test]
    fn a_key_the_scheme_does_not_read_repeats_a_variant() {
        let base_sets = [
            "simulate.trials=2".to_string(),
            "simulate.iterations=5".to_string(),
        ];
        let base = crate::config::parse(DEMO_TOML, "demo", &base_sets).unwrap();
        let mut runner = VariantRunner::new(base);
        let first = runner
            .run(&combo(&[("scheme.clusters", "1")]), "gc-cyclic", |_| Ok(()))
            .unwrap();
        assert!(matches!(first, Outcome::Ran { ref read, .. } if read.is_empty()));
        let Outcome::Skipped(again) = runner
            .run(&combo(&[("scheme.clusters", "2")]), "gc-cyclic", |_| Ok(()))
            .unwrap()
        else {
            panic!("a repeated variant ran")
        };
        assert_eq!(
            again.reason,
            "the same variant as scheme.clusters=1: gc-cyclic does not read scheme.clusters"
        );
        let Outcome::Skipped(refused) = runner
            .run(&combo(&[]), "gc-sc", |_| Err("no".to_string()))
            .unwrap()
        else {
            panic!("a refused variant ran")
        };
        assert_eq!(refused.reason, "no");
    }
}
