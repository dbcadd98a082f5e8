//! The loader: config file or text and `--set` overrides → [`Config`] →
//! the scheme registry's checks → the scheme. Every command (`check`,
//! `explain`, `simulate`, `train`, `train --resume`) loads its config here.
//!
//! It sits above [`crate::config`] (which parses every section but takes
//! `[scheme]` as given) and [`crate::coding`] (whose registry knows the
//! schemes), and checks, in order:
//!
//! 0. image data without `data.train_samples` / `data.test_samples` gets
//!    the counts of its files (every image);
//! 1. `model.kind` names a registered model kind (the model registry,
//!    `learn::model::MODELS`; a value of another type is refused before the
//!    config is typed, listing the names), every `[model]` key beyond the
//!    typed ones is read by some registered kind with its type, and the
//!    rules of `[model]` that depend on the kind hold, the limits of its
//!    own keys among them (`ModelRegistry::check`); `scheme.kind` and
//!    every `simulate.compare` entry name a registered scheme (errors list
//!    the registered names);
//! 2. every `[scheme]` key, and every key of a variant's `set`, is read by
//!    some registered scheme (else `scheme.<key>: unknown key (...)`), and its
//!    value has that scheme's type (errors name `scheme.<key>`, or
//!    `simulate.compare.<name>.set.<key>`). Keys of schemes not in use are
//!    type-checked, never range-checked;
//! 3. keys set but read by no scheme in use, and `[model]` keys that
//!    `model.kind` does not read (the model registry says which), become
//!    warnings ([`LoadedConfig::unused_keys`]), as does a network without
//!    `train.batch_size` ([`LoadedConfig::model_warnings`]);
//! 4. the defaults of the schemes in use are filled into `[scheme]`, and
//!    those of the model kind's own keys into `[model]`
//!    (`ModelRegistry::resolve`), so that [`Config::to_toml`] (what traces
//!    store and MPI workers receive) holds every key they read;
//! 5. the scheme of every `simulate.compare` entry and that of `scheme.kind`
//!    are built: their constructors check the limits of their own keys only;
//!    a gc-dc whose `scheme.straggler_threshold` and the straggler model's
//!    flags can name different stragglers gets a warning
//!    ([`LoadedConfig::threshold_warnings`]).

use std::path::Path;

use crate::coding::SCHEMES;
use crate::coding::registry::{Registry, SchemeEntry, quoted};
use crate::coding::{CodingError, Scheme, dynamic_clustering};
use crate::config::{self, CompareEntry, Config, GC_SCHEME, LoadedConfig};
use crate::error::InputError;
use crate::learn::model::MODELS;

/// A loaded config and its scheme.
pub struct Setup {
    /// The config, resolved: `[scheme]` holds the defaults of the schemes in use.
    pub loaded: LoadedConfig,
    /// The registry entry of `scheme.kind`.
    pub entry: &'static SchemeEntry,
    /// The scheme of `scheme.kind`, built.
    pub scheme: Box<dyn Scheme>,
}

impl Setup {
    /// The parameters of the scheme in use: each key it reads with its value
    /// (set or default); a key without a default that is not set is absent.
    pub fn parameters(&self) -> toml::Table {
        self.entry
            .resolve(&self.loaded.config.scheme.params)
            .expect("the loader checked the types of the scheme's keys")
    }
}

/// Load a config file (the embedded demo when `path` is `None`), apply the
/// overrides, check it against the registry and build its scheme.
pub fn load(path: Option<&Path>, overrides: &[String]) -> Result<Setup, InputError> {
    let check = |table: &toml::Table| MODELS.check_kind_type(table);
    from_parsed(&SCHEMES, config::load_checked(path, overrides, &check)?)
}

/// [`load`] for config text; `origin` names it in errors.
pub fn parse(text: &str, origin: &str, overrides: &[String]) -> Result<Setup, InputError> {
    let check = |table: &toml::Table| MODELS.check_kind_type(table);
    from_parsed(
        &SCHEMES,
        config::parse_checked(text, origin, overrides, &check)?,
    )
}

/// Check a parsed config against `registry` ([`resolve`]), then build the
/// scheme of every `simulate.compare` entry and that of `scheme.kind`.
pub fn from_parsed(registry: &Registry, mut loaded: LoadedConfig) -> Result<Setup, InputError> {
    every_image(&mut loaded)?;
    let mut loaded = resolve(registry, loaded)?;
    let config = &loaded.config;
    let main = CompareEntry::Kind(config.scheme.kind.clone());
    let mut warnings = Vec::new();
    for entry in &config.simulate.compare {
        if *entry != main {
            let built = build_entry(registry, entry, config)?;
            let name = format!("simulate.compare.{}: ", entry.name());
            threshold_warnings(config, built.as_ref(), &name, &mut warnings);
        }
    }
    let scheme = build_entry(registry, &main, config)?;
    threshold_warnings(config, scheme.as_ref(), "", &mut warnings);
    loaded.threshold_warnings = warnings;
    let entry = registry
        .get(loaded.config.scheme.kind.as_str())
        .expect("resolve checked scheme.kind");
    Ok(Setup {
        loaded,
        entry,
        scheme,
    })
}

/// Image data (`data.kind = "idx"` or `"cifar10"`) without
/// `data.train_samples` or `data.test_samples` uses every image of its
/// files: the counts its IDX headers declare, or the CIFAR-10 batches'
/// sizes give (the five training batches together), are filled in (so the
/// resolved config a trace stores, and the workers receive, says how many),
/// and the config is checked again with them. A file that cannot be read
/// leaves the defaults, and the data checks name the file.
fn every_image(loaded: &mut LoadedConfig) -> Result<(), InputError> {
    if !loaded.config.data.kind.is_images() {
        return Ok(());
    }
    let Some((train, test)) = crate::learn::images::image_counts(&loaded.config.data) else {
        return Ok(());
    };
    let d = &mut loaded.config.data;
    if !loaded.explicit.contains("data.train_samples") {
        d.train_samples = train;
    }
    if !loaded.explicit.contains("data.test_samples") {
        d.test_samples = test;
    }
    config::validate(&loaded.config)
}

/// A built scheme that clusters by a rate threshold (gc-dc) whose threshold
/// and the straggler model's flags can disagree: one warning each, after
/// `prefix`, unless the same one is already in `out`.
fn threshold_warnings(config: &Config, scheme: &dyn Scheme, prefix: &str, out: &mut Vec<String>) {
    let Some(dc) = dynamic_clustering(scheme) else {
        return;
    };
    let found = crate::straggler::rate_threshold_disagreements(
        &config.straggler,
        config.workers,
        dc.threshold(),
    );
    for warning in found {
        let warning = format!("{prefix}{warning}");
        if !out.contains(&warning) {
            out.push(warning);
        }
    }
}

/// Steps 1-4 of the module docs: names, keys, types, warnings, defaults.
/// Builds nothing.
pub fn resolve(registry: &Registry, mut loaded: LoadedConfig) -> Result<LoadedConfig, InputError> {
    resolve_model(&mut loaded)?;
    let in_use = schemes_in_use(registry, &loaded.config)?;
    let config = &loaded.config;
    for (key, value) in &config.scheme.params {
        check_key(registry, "scheme", key, value)?;
    }
    for entry in &config.simulate.compare {
        if let CompareEntry::Variant(v) = entry {
            let prefix = format!("simulate.compare.{}.set", v.name);
            if v.set.contains_key("kind") {
                // The same error as `Config::for_entry`.
                config.for_entry(entry)?;
            }
            for (key, value) in &v.set {
                check_key(registry, &prefix, key, value)?;
            }
        }
    }
    loaded.unused_scheme_keys = unused_keys(registry, &loaded, &in_use);
    let params = &mut loaded.config.scheme.params;
    for entry in &in_use {
        let resolved = entry.resolve(params).map_err(|e| e.at("scheme"))?;
        params.extend(resolved);
    }
    Ok(loaded)
}

/// Step 1's model half: `model.kind` names a registered model kind (checked
/// first, whatever the data), the rules of `[model]` that depend on the kind
/// hold ([`crate::learn::model::ModelRegistry::check`]); then step 3's
/// `[model]` warnings: keys the kind does not read, and a network without
/// `train.batch_size`; step 4's defaults of the kind's own keys.
fn resolve_model(loaded: &mut LoadedConfig) -> Result<(), InputError> {
    let entry = MODELS.check(&loaded.config)?;
    MODELS.resolve(&mut loaded.config.model)?;
    let config = &loaded.config;
    loaded.unused_model_keys = MODELS.unused_keys(entry.name(), &loaded.explicit)?;
    loaded.model_warnings.clear();
    if entry.classifies() && config.train.batch_size.is_none() {
        loaded.model_warnings.push(format!(
            "a network (model.kind = \"{entry}\") without train.batch_size takes full-batch steps: every sample of every partition at each step; set train.batch_size for mini-batch SGD"
        ));
    }
    Ok(())
}

/// Build the scheme of one `simulate.compare` entry (or of `scheme.kind`:
/// `CompareEntry::Kind`) of a resolved config; the errors of a variant name
/// it (`simulate.compare.<name>: scheme.clusters = 5 does not divide ...`).
pub fn build_entry(
    registry: &Registry,
    entry: &CompareEntry,
    config: &Config,
) -> Result<Box<dyn Scheme>, InputError> {
    let built = registry.build_kind(entry.kind(), &config.for_entry(entry)?);
    match entry {
        CompareEntry::Variant(v) => built.map_err(|e| {
            InputError::new(
                format!("simulate.compare.{}", v.name),
                InputError::from(e).message(),
            )
        }),
        _ => built.map_err(|e: CodingError| e.into()),
    }
}

/// The entries of `scheme.kind` and of `simulate.compare`, each once, or an
/// error naming the first that is not registered.
fn schemes_in_use(
    registry: &Registry,
    config: &Config,
) -> Result<Vec<&'static SchemeEntry>, InputError> {
    let kind = config.scheme.kind.as_str();
    let main = registry.get(kind).ok_or_else(|| {
        InputError::value(
            "scheme.kind",
            format!("\"{kind}\""),
            format!("is not known (expected one of {})", registry.choices()),
        )
    })?;
    let mut in_use = vec![main];
    for (i, entry) in config.simulate.compare.iter().enumerate() {
        let (field, name, expected) = match entry {
            CompareEntry::Kind(k) => (
                format!("simulate.compare[{i}]"),
                k.as_str(),
                "`gc` or one of",
            ),
            CompareEntry::Gc => (format!("simulate.compare[{i}]"), GC_SCHEME, "one of"),
            CompareEntry::Variant(v) => (
                format!("simulate.compare[{i}].kind"),
                v.kind.as_str(),
                "one of",
            ),
        };
        let found = registry.get(name).ok_or_else(|| {
            InputError::value(
                field,
                format!("\"{name}\""),
                format!("is not known (expected {expected} {})", registry.choices()),
            )
        })?;
        if !in_use.contains(&found) {
            in_use.push(found);
        }
    }
    Ok(in_use)
}

/// `prefix.key = value` is read by some registered scheme, and has the type
/// every scheme that reads it gives it.
fn check_key(
    registry: &Registry,
    prefix: &str,
    key: &str,
    value: &toml::Value,
) -> Result<(), InputError> {
    let declaring: Vec<&SchemeEntry> = registry.declaring(key).collect();
    if declaring.is_empty() {
        let mut keys = registry.keys();
        if prefix == "scheme" {
            keys.insert(0, "kind");
        }
        return Err(InputError::new(
            format!("{prefix}.{key}"),
            format!("unknown key (expected one of {})", quoted(&keys)),
        ));
    }
    let single = toml::Table::from_iter([(key.to_string(), value.clone())]);
    for entry in declaring {
        entry.resolve(&single).map_err(|e| e.at(prefix))?;
    }
    Ok(())
}

/// The warnings of step 3: explicit `[scheme]` keys no scheme in use reads,
/// and `set` keys of a variant that its scheme does not read.
fn unused_keys(
    registry: &Registry,
    loaded: &LoadedConfig,
    in_use: &[&'static SchemeEntry],
) -> Vec<String> {
    let names: Vec<&str> = in_use.iter().map(|e| e.name()).collect();
    let mut warnings: Vec<String> = loaded
        .explicit
        .iter()
        .filter_map(|key| {
            let name = key.strip_prefix("scheme.")?;
            let name = name.split('.').next().unwrap_or(name);
            if name == "kind" || in_use.iter().any(|e| e.declares(name)) {
                return None;
            }
            Some(format!(
                "{key} is set but not used by scheme.kind = {}",
                names.join(", ")
            ))
        })
        .collect();
    for entry in &loaded.config.simulate.compare {
        let CompareEntry::Variant(v) = entry else {
            continue;
        };
        let scheme = registry
            .get(v.kind.as_str())
            .expect("schemes_in_use checked every name");
        for key in v.set.keys().filter(|k| !scheme.declares(k)) {
            warnings.push(format!(
                "simulate.compare.{}.set.{key} is set but not used by {}",
                v.name,
                scheme.name()
            ));
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coding::registry::BuildArgs;
    use crate::coding::{GC_CYCLIC, StaticCode, UNCODED};
    use serde::{Deserialize, Serialize};

    fn parse_ok(text: &str, overrides: &[&str]) -> Setup {
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        parse(text, "test.toml", &overrides).unwrap_or_else(|e| panic!("{e}"))
    }

    fn parse_err(text: &str, overrides: &[&str]) -> InputError {
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        match parse(text, "test.toml", &overrides) {
            Ok(_) => panic!("accepted: {text} {overrides:?}"),
            Err(e) => e,
        }
    }

    /// `model.kind` is a name the model registry resolves: a value of
    /// another type lists the registered names (as every key that takes a
    /// name does), and an unknown name is refused before the rules of the
    /// kind (class labels, images) are checked, whatever the data.
    #[test]
    fn the_model_kind_is_a_name_of_the_model_registry() {
        let e = parse_err("[model]\nkind = 1.5\n", &[]);
        assert_eq!(e.field, "model.kind");
        let line = e.to_string();
        assert!(
            line.starts_with("model.kind: 1.5 is not one of ")
                && line.contains("\"linear\", \"mlp\", \"cnn\", \"resnet\"")
                && !line.contains("invalid type"),
            "{line}"
        );
        let e = parse_err("", &["model.kind=[1, 2]"]);
        assert!(
            e.to_string()
                .starts_with("model.kind: [1, 2] is not one of "),
            "{e}"
        );
        // The default data is synthetic (no class labels): the name comes first.
        for text in [
            "[model]\nkind = \"transformer\"\n",
            "[model]\nkind = \"transformer\"\n[data]\nkind = \"synthetic-onehot\"\n",
        ] {
            let e = parse_err(text, &[]).to_string();
            assert!(
                e.starts_with("model.kind = \"transformer\" is not known (expected one of `linear`, `mlp`, `cnn`, `resnet`)"),
                "{e}"
            );
        }
        let e = parse_err("[model]\nkind = \"mlp\"\n", &[]).to_string();
        assert!(
            e.starts_with("model.kind = \"mlp\" needs class labels 0..model.classes"),
            "{e}"
        );
        let e = parse_err(
            "[model]\nkind = \"cnn\"\n[data]\nkind = \"csv\"\npath = \"x.csv\"\n",
            &[],
        )
        .to_string();
        assert!(e.contains("needs images (data.kind = \"idx\" or \"cifar10\"); data.kind = csv has flat samples"), "{e}");
    }

    /// The model registry says which `[model]` keys each kind reads.
    #[test]
    fn model_keys_the_kind_does_not_read_and_full_batch_networks_are_warned_about() {
        let images = "[data]\nkind = \"idx\"\nset = \"fashion-mnist\"\n";
        let warnings = |text: &str| parse_ok(&format!("{images}{text}"), &[]).loaded.warnings();
        let batch = "[train]\nbatch_size = 8\n";
        for (model, key) in [
            ("kind = \"cnn\"\nhidden = [64]", "model.hidden"),
            ("kind = \"resnet\"\ndropout = 0.5", "model.dropout"),
            ("kind = \"mlp\"\nloss = \"logistic\"", "model.loss"),
            ("kind = \"linear\"\nclasses = 3", "model.classes"),
            ("kind = \"linear\"\nprecision = \"f32\"", "model.precision"),
        ] {
            let w = warnings(&format!("[model]\n{model}\n{batch}"));
            let kind = model.split('"').nth(1).unwrap();
            assert_eq!(
                w,
                [format!("{key} is set but not used by model.kind = {kind}")],
                "{model}"
            );
        }
        // Keys the kind reads: no warning.
        assert!(
            warnings(&format!(
                "[model]\nkind = \"mlp\"\nhidden = [8]\ndropout = 0.1\nl2 = 0.01\n{batch}"
            ))
            .is_empty()
        );
        assert!(warnings("[model]\nkind = \"linear\"\nloss = \"logistic\"\nl2 = 0.1\n").is_empty());
        // A network without batch_size: full-batch steps, said once.
        let w = warnings("[model]\nkind = \"mlp\"\n");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("without train.batch_size takes full-batch steps"),
            "{w:?}"
        );
    }

    /// `[model]`'s keys beyond the typed ones are the model kinds': a key
    /// no kind reads is refused, a value is type-checked against every
    /// kind that reads its key, limits are the kind in use's, and the
    /// resolved config holds the defaults of the kind in use alone.
    #[test]
    fn model_keys_are_the_kinds_checked_by_the_registry() {
        let images = "[data]\nkind = \"idx\"\nset = \"fashion-mnist\"\n[train]\nbatch_size = 8\n";
        let e = parse_err(
            &format!("{images}[model]\nkind = \"mlp\"\nhiden = [8]\n"),
            &[],
        );
        assert_eq!(e.field, "model.hiden");
        assert!(
            e.to_string()
                .contains("unknown key (expected one of `kind`, `loss`"),
            "{e}"
        );
        // Another kind's key: its type is checked, its limits are not.
        let e = parse_err(
            &format!("{images}[model]\nkind = \"cnn\"\nhidden = \"wide\"\n"),
            &[],
        );
        assert_eq!(e.field, "model.hidden");
        let setup = parse_ok(
            &format!("{images}[model]\nkind = \"cnn\"\nhidden = [0]\n"),
            &[],
        );
        assert_eq!(
            setup.loaded.warnings(),
            ["model.hidden is set but not used by model.kind = cnn"]
        );
        let e = parse_err(
            &format!("{images}[model]\nkind = \"mlp\"\nhidden = [0]\n"),
            &[],
        );
        assert_eq!(e.field, "model.hidden");
        let e = parse_err(
            &format!("{images}[model]\nkind = \"cnn\"\ndropout = 1.0\n"),
            &[],
        );
        assert_eq!(e.to_string(), "model.dropout = 1 must be in [0, 1)");
        // The resolved config: the kind's keys with their defaults, no other kind's.
        let setup = parse_ok(
            &format!("{images}[model]\nkind = \"resnet\"\nresnet_width = 8\n"),
            &[],
        );
        let params = &setup.loaded.config.model.params;
        assert_eq!(
            params.keys().collect::<Vec<_>>(),
            ["resnet_blocks", "resnet_width"]
        );
        assert_eq!(params["resnet_width"].as_integer(), Some(8));
        let resolved = setup.loaded.config.to_toml();
        assert!(
            resolved.contains("resnet_blocks = [2, 2, 2, 2]"),
            "{resolved}"
        );
        assert!(!resolved.contains("hidden"), "{resolved}");
    }

    #[test]
    fn an_unknown_kind_lists_the_registered_names() {
        let e = parse_err("[scheme]\nkind = \"gc-magic\"\n", &[]);
        assert_eq!(e.field, "scheme.kind");
        for name in SCHEMES.names() {
            assert!(e.to_string().contains(&format!("`{name}`")), "{e}");
        }
        let e = parse_err("[simulate]\ncompare = [\"gc\", \"gcc\"]\n", &[]);
        assert_eq!(e.field, "simulate.compare[1]");
        assert!(
            e.to_string().contains("expected `gc` or one of `uncoded`"),
            "{e}"
        );
        let e = parse_err(
            "[simulate]\ncompare = [{ name = \"v\", kind = \"gc-sx\" }]\n",
            &[],
        );
        assert_eq!(e.field, "simulate.compare[0].kind");
    }

    #[test]
    fn an_unknown_key_names_its_full_path() {
        let e = parse_err("[scheme]\nloda = 2\n", &[]);
        assert_eq!(e.field, "scheme.loda");
        assert!(
            e.to_string()
                .contains("unknown key (expected one of `kind`, "),
            "{e}"
        );
        let e = parse_err("", &["scheme.load.x=1"]);
        assert_eq!(e.field, "scheme.load");
        let e = parse_err(
            "[simulate]\ncompare = [{ name = \"x\", kind = \"gc-sc\", set = { clusterz = 2 } }]\n",
            &[],
        );
        assert_eq!(e.field, "simulate.compare.x.set.clusterz");
        assert!(e.to_string().contains("unknown key"), "{e}");
    }

    #[test]
    fn a_wrong_type_names_the_key_even_for_a_scheme_not_in_use() {
        let e = parse_err("[scheme]\nload = \"two\"\n", &[]);
        assert_eq!(e.field, "scheme.load");
        assert!(e.to_string().contains("expected usize"), "{e}");
        // uncoded reads neither, but a value of the wrong type is still refused.
        let e = parse_err(
            "[scheme]\nkind = \"uncoded\"\ndecode_tolerance = \"x\"\n",
            &[],
        );
        assert_eq!(e.field, "scheme.decode_tolerance");
        let e = parse_err("[scheme]\nkind = \"uncoded\"\nplacement = \"xx\"\n", &[]);
        assert_eq!(e.field, "scheme.placement");
        assert!(e.to_string().contains("`fr`, `cr`, `hr`"), "{e}");
        let e = parse_err("", &["scheme.assignment=[[1, 2], [3, \"x\"]]"]);
        assert_eq!(e.field, "scheme.assignment[1][1]");
        let e = parse_err(
            "[simulate]\ncompare = [{ name = \"x\", kind = \"gc-sc\", set = { clusters = \"a\" } }]\n",
            &[],
        );
        assert_eq!(e.field, "simulate.compare.x.set.clusters");
    }

    #[test]
    fn only_the_scheme_in_use_checks_the_range_of_its_keys() {
        let setup = parse_ok("[scheme]\nkind = \"uncoded\"\ndecode_tolerance = 2\n", &[]);
        assert_eq!(
            setup.loaded.unused_keys(),
            ["scheme.decode_tolerance is set but not used by scheme.kind = uncoded"]
        );
        let e = parse_err(
            "[scheme]\nkind = \"gc-cyclic\"\ndecode_tolerance = 2\n",
            &[],
        );
        assert_eq!(e.field, "scheme.decode_tolerance");
        assert!(e.to_string().contains("must be in (0, 1)"), "{e}");
        // A compared scheme is in use too.
        let e = parse_err(
            "[scheme]\nkind = \"uncoded\"\nclusters = 5\n[simulate]\ncompare = [\"uncoded\", \"gc-sc\"]\n",
            &[],
        );
        assert_eq!(e.field, "scheme.clusters");
    }

    #[test]
    fn a_gc_dc_threshold_the_flags_disagree_with_is_a_warning() {
        let gc_dc = "workers = 12\n[scheme]\nkind = \"gc-dc\"\nload = 2\nclusters = 4\n[straggler]\nmodel = \"gilbert-elliott\"\n";
        // The defaults: mu_slow = 0.1 < tau = 0.5 <= mu_fast = 10.
        assert!(parse_ok(gc_dc, &[]).loaded.threshold_warnings.is_empty());
        let setup = parse_ok(gc_dc, &["straggler.mu_slow=1"]);
        let w = &setup.loaded.threshold_warnings;
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("straggler.mu_slow = 1 >= scheme.straggler_threshold = 0.5: "),
            "{}",
            w[0]
        );
        // Not an unused key (sweep reads those as keys the scheme ignores).
        assert!(setup.loaded.unused_keys().is_empty());
        // Raising tau above mu_slow makes them agree again.
        let setup = parse_ok(
            gc_dc,
            &["straggler.mu_slow=1", "scheme.straggler_threshold=2"],
        );
        assert!(setup.loaded.threshold_warnings.is_empty());
        // A compared gc-dc variant is named; a scheme without a threshold is not.
        let setup = parse_ok(
            gc_dc,
            &[
                "straggler.mu_slow=1",
                "scheme.kind=\"uncoded\"",
                "simulate.compare=[\"uncoded\", { name = \"dc\", kind = \"gc-dc\", set = { straggler_threshold = 0.8 } }]",
            ],
        );
        assert_eq!(setup.loaded.threshold_warnings.len(), 1);
        assert!(
            setup.loaded.threshold_warnings[0].starts_with(
                "simulate.compare.dc: straggler.mu_slow = 1 >= scheme.straggler_threshold = 0.8: "
            ),
            "{:?}",
            setup.loaded.threshold_warnings
        );
    }

    #[test]
    fn unused_keys_are_warnings_naming_the_schemes_in_use() {
        let setup = parse_ok("[scheme]\nkind = \"gc-cyclic\"\nclusters = 1\n", &[]);
        assert_eq!(
            setup.loaded.unused_keys(),
            ["scheme.clusters is set but not used by scheme.kind = gc-cyclic"]
        );
        let setup = parse_ok("[scheme]\nkind = \"gc-sc\"\nclusters = 1\n", &[]);
        assert!(setup.loaded.unused_keys().is_empty());
        let setup = parse_ok(
            "[scheme]\nkind = \"uncoded\"\nclusters = 1\nplacement = \"fr\"\n[simulate]\ncompare = [\"gc\", { name = \"v\", kind = \"gc-sc\", set = { order = 2 } }]\n",
            &[],
        );
        assert_eq!(
            setup.loaded.unused_keys(),
            [
                "scheme.placement is set but not used by scheme.kind = uncoded, gc-cyclic, gc-sc",
                "simulate.compare.v.set.order is set but not used by gc-sc",
            ]
        );
    }

    #[test]
    fn the_resolved_config_holds_every_key_of_the_schemes_in_use() {
        let setup = parse_ok(
            "[scheme]\nkind = \"gc-sc\"\nwait_for = 6\n[simulate]\ncompare = [\"is-gc\"]\n",
            &[],
        );
        let params = &setup.loaded.config.scheme.params;
        for entry in [&crate::coding::GC_SC, &crate::coding::IS_GC] {
            for (key, value) in entry.defaults() {
                assert_eq!(params.get(&key), Some(&value), "{key}");
            }
        }
        // Keys of schemes not in use are not added; those without a default are absent.
        assert!(!params.contains_key("slowdown"));
        assert!(!params.contains_key("assignment"));
        assert!(!params.contains_key("deadline"));
        let text = setup.loaded.config.to_toml();
        assert!(text.contains("decode_cache_entries = 4096"), "{text}");
        assert!(text.contains("placement = \"cr\""), "{text}");
        // The parameters of the scheme in use, for `check`.
        let parameters = setup.parameters();
        assert_eq!(
            parameters.keys().collect::<Vec<_>>(),
            [
                "clusters",
                "code_draws",
                "decode_cache_entries",
                "decode_tolerance",
                "load"
            ]
        );
    }

    /// CIFAR-10 without `data.train_samples` / `data.test_samples` uses
    /// every image: the records of the five training batches together and
    /// of the test batch, written into the resolved config.
    #[test]
    fn cifar10_without_counts_uses_every_image_of_the_five_batches() {
        let dir = tempfile::tempdir().unwrap();
        crate::learn::cifar::testing::write_folder(dir.path(), [3, 1, 4, 1, 5, 9]);
        let text = format!(
            "workers = 2\n[scheme]\nkind = \"uncoded\"\n[data]\nkind = \"cifar10\"\npath = \"{}\"\n",
            dir.path().display()
        );
        let setup = parse_ok(&text, &[]);
        let d = &setup.loaded.config.data;
        assert_eq!((d.train_samples, d.test_samples), (3 + 1 + 4 + 1 + 5, 9));
        assert!(setup.loaded.config.to_toml().contains("train_samples = 14"));
        // A count that is set stays.
        let setup = parse_ok(&text, &["data.train_samples=6"]);
        assert_eq!(setup.loaded.config.data.train_samples, 6);
        assert_eq!(setup.loaded.config.data.test_samples, 9);
    }

    #[test]
    fn the_resolved_config_loads_to_itself_without_warnings() {
        for text in [
            config::DEMO_TOML,
            "[scheme]\nkind = \"gc-partial\"\nslowdown = 3\n",
            include_str!("../../../configs/paper/mmc-fig1.toml"),
        ] {
            let first = parse_ok(text, &[]);
            let resolved = first.loaded.config.to_toml();
            let again = parse_ok(&resolved, &[]);
            assert_eq!(again.loaded.config, first.loaded.config);
            assert!(again.loaded.unused_scheme_keys.is_empty(), "{resolved}");
        }
    }

    #[test]
    fn variants_are_built_with_errors_naming_them() {
        let base = "[scheme]\nkind = \"gc-sc\"\nclusters = 4\n[simulate]\n";
        let e = parse_err(
            &format!(
                "{base}compare = [\"gc\", {{ name = \"x\", kind = \"gc-sc\", set = {{ clusters = 5 }} }}]\n"
            ),
            &[],
        );
        assert_eq!(
            e.to_string(),
            "simulate.compare.x: scheme.clusters = 5 does not divide workers = 12"
        );
        let e = parse_err(
            &format!(
                "{base}compare = [{{ name = \"x\", kind = \"gc-sc\", set = {{ kind = \"gc-frac\" }} }}]\n"
            ),
            &[],
        );
        assert_eq!(e.field, "simulate.compare.x.set.kind");
        let setup = parse_ok(
            &format!(
                "{base}compare = [\"gc-sc\", {{ name = \"p2\", kind = \"gc-sc\", set = {{ clusters = 2 }} }}]\n"
            ),
            &[],
        );
        let config = &setup.loaded.config;
        let variant = build_entry(&SCHEMES, &config.simulate.compare[1], config).unwrap();
        assert_eq!(variant.kind().name(), "gc-sc");
        // One spare worker per cluster: 2 clusters for the variant, 4 for the config.
        assert_eq!(variant.tolerance().best, 2);
        assert_eq!(setup.scheme.tolerance().best, 4);
    }

    // ------------------------------------------------ a made-up scheme

    /// A scheme defined only here: gc-frac with `blocks` blocks of K / blocks
    /// replicas. It reuses gc-frac's type, so the scheme it builds reports
    /// gc-frac as its `kind()`; the loader knows it by its own entry.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(default)]
    struct BlocksParams {
        blocks: usize,
    }

    impl Default for BlocksParams {
        fn default() -> Self {
            Self { blocks: 3 }
        }
    }

    fn build_blocks(args: &BuildArgs<'_>) -> Result<Box<dyn Scheme>, CodingError> {
        let p: BlocksParams = args.params()?;
        if p.blocks == 0 || args.workers % p.blocks != 0 {
            return Err(CodingError::invalid(
                "scheme.blocks",
                p.blocks,
                format!("does not divide workers = {}", args.workers),
            ));
        }
        Ok(Box::new(StaticCode::fractional_repetition(
            args.workers,
            args.workers / p.blocks,
        )?))
    }

    static BLOCKS: SchemeEntry = SchemeEntry::new::<BlocksParams>(
        "test-blocks",
        "made up for a test: fractional repetition with `blocks` blocks",
        build_blocks,
    );

    static WITH_BLOCKS: Registry = Registry::new(&[&UNCODED, &GC_CYCLIC, &BLOCKS]);

    fn with_blocks(text: &str) -> Result<Setup, InputError> {
        from_parsed(&WITH_BLOCKS, config::parse(text, "test.toml", &[])?)
    }

    #[test]
    fn a_scheme_defined_outside_the_registry_goes_through_the_same_machinery() {
        assert_eq!(BLOCKS.keys(), ["blocks"]);
        let setup = with_blocks("[scheme]\nkind = \"test-blocks\"\n").unwrap();
        // Its default is filled in, its constructor ran (K = 12 in 3 blocks of 4 replicas).
        assert_eq!(
            setup.loaded.config.scheme.params["blocks"],
            toml::Value::Integer(3)
        );
        assert_eq!(setup.entry, &BLOCKS);
        assert_eq!(setup.scheme.partitions(), 12);
        assert_eq!(setup.scheme.tolerance().worst, 3);
        let setup = with_blocks("[scheme]\nkind = \"test-blocks\"\nblocks = 6\n").unwrap();
        assert_eq!(setup.scheme.tolerance().worst, 1);
        assert_eq!(setup.parameters()["blocks"], toml::Value::Integer(6));
        // Type, range, unused and unknown-key rules are the registry's.
        let e = with_blocks("[scheme]\nkind = \"test-blocks\"\nblocks = \"x\"\n")
            .err()
            .unwrap();
        assert_eq!(e.field, "scheme.blocks");
        let e = with_blocks("[scheme]\nkind = \"test-blocks\"\nblocks = 5\n")
            .err()
            .unwrap();
        assert_eq!(
            e.to_string(),
            "scheme.blocks = 5 does not divide workers = 12"
        );
        let setup = with_blocks("[scheme]\nkind = \"gc-cyclic\"\nblocks = 5\n").unwrap();
        assert_eq!(
            setup.loaded.unused_keys(),
            ["scheme.blocks is set but not used by scheme.kind = gc-cyclic"]
        );
        let e = with_blocks("[scheme]\nkind = \"gc-sc\"\n").err().unwrap();
        assert!(
            e.to_string()
                .ends_with("(expected one of `uncoded`, `gc-cyclic`, `test-blocks`)"),
            "{e}"
        );
        let e = with_blocks("[scheme]\nclusters = 2\n").err().unwrap();
        assert_eq!(
            e.to_string(),
            "scheme.clusters: unknown key (expected one of `kind`, `load`, `code_draws`, `decode_tolerance`, `decode_cache_entries`, `blocks`)"
        );
        // The real registry does not know it.
        let e = parse_err("[scheme]\nblocks = 3\n", &[]);
        assert_eq!(e.field, "scheme.blocks");
    }
}

/// `configs/reference.toml` documents every key: those of the sections
/// [`Config`] declares, and those every registered scheme declares, each with
/// its default.
#[cfg(test)]
mod reference_tests {
    use super::*;
    use std::collections::BTreeSet;

    const REFERENCE: &str = include_str!("../../../configs/reference.toml");

    /// Keys of the sections besides `[scheme]` that have no default (absent
    /// from the serialised defaults).
    const OPTIONAL: [&str; 13] = [
        "network.latency_s",
        "network.worker_bandwidth_bytes_per_s",
        "network.master_bandwidth_bytes_per_s",
        "network.master_link_shared",
        "network.master_per_message_s",
        "network.peer_bandwidth_bytes_per_s",
        "output.trace",
        "straggler.trace_file",
        "straggler.trace_columns",
        "simulate.baseline",
        "data.path",
        "data.test_path",
        "model.max_memory_mib",
    ];

    /// The body of `[section]` of `text` (`""`: the top level).
    fn section<'a>(text: &'a str, section: &str) -> Option<&'a str> {
        if section.is_empty() {
            return text.split("\n[").next();
        }
        let header = format!("[{section}]");
        let start = text.find(&header)?;
        text[start + header.len()..].split("\n[").next()
    }

    /// The line that documents `name` in `section`: `name = ...`, commented out or not.
    fn line<'a>(text: &'a str, section_name: &str, name: &str) -> Option<&'a str> {
        section(text, section_name)?.lines().find(|l| {
            let l = l.trim_start_matches(['#', ' ']);
            l.starts_with(&format!("{name} ")) || l.starts_with(&format!("{name}="))
        })
    }

    /// Every key (`section.name`) that `text` does not document with a
    /// comment: those of `Config`'s defaults, [`OPTIONAL`] and every key of
    /// every scheme of `registry`.
    fn undocumented(text: &str, registry: &Registry) -> Vec<String> {
        let mut keys = BTreeSet::new();
        let defaults: toml::Table = toml::from_str(&Config::default().to_toml()).unwrap();
        config::collect_keys(&defaults, "", &mut keys);
        keys.extend(OPTIONAL.iter().map(|k| k.to_string()));
        keys.extend(registry.keys().iter().map(|k| format!("scheme.{k}")));
        keys.into_iter()
            .filter(|key| {
                let (section_name, name) = key.rsplit_once('.').unwrap_or(("", key));
                let documented = line(text, section_name, name)
                    .is_some_and(|l| l.trim_start_matches(['#', ' ']).contains('#'));
                !documented
            })
            .collect()
    }

    #[test]
    fn reference_config_documents_every_key_with_a_comment() {
        assert_eq!(undocumented(REFERENCE, &SCHEMES), Vec::<String>::new());
    }

    #[test]
    fn the_documentation_check_finds_a_missing_or_bare_key() {
        let without = REFERENCE
            .lines()
            .filter(|l| !l.starts_with("slowdown "))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(undocumented(&without, &SCHEMES), ["scheme.slowdown"]);
        let bare = REFERENCE.replace("code_draws = 8                  #", "code_draws = 8\n#");
        assert_eq!(undocumented(&bare, &SCHEMES), ["scheme.code_draws"]);
    }

    #[test]
    fn reference_config_equals_the_defaults() {
        let reference = config::parse(REFERENCE, "configs/reference.toml", &[]).unwrap();
        let mut config = reference.config;
        assert_eq!(config.scheme.kind, config::DEFAULT_SCHEME);
        // Every scheme's keys have their default there (keys without one are commented out).
        for entry in SCHEMES.entries() {
            assert_eq!(
                entry.resolve(&config.scheme.params).unwrap(),
                entry.defaults(),
                "{entry}"
            );
        }
        config.scheme.params.clear();
        // Every model kind's own keys have their default there.
        for entry in MODELS.entries() {
            for (key, value) in entry.defaults() {
                if !config::MODEL_KEYS.contains(&key.as_str()) {
                    assert_eq!(
                        config.model.params.get(&key),
                        Some(&value),
                        "{entry}: {key}"
                    );
                }
            }
        }
        assert_eq!(
            config
                .model
                .params
                .keys()
                .map(String::as_str)
                .collect::<BTreeSet<_>>(),
            MODELS.keys().into_iter().collect(),
        );
        config.model.params.clear();
        assert_eq!(config, Config::default());
        // And it loads: every key is declared with its type.
        parse(REFERENCE, "configs/reference.toml", &[]).unwrap();
    }

    #[test]
    fn a_key_has_one_default_and_type_in_every_scheme_that_reads_it() {
        for key in SCHEMES.keys() {
            let declaring: Vec<&SchemeEntry> = SCHEMES.declaring(key).collect();
            let default = declaring[0].defaults().remove(key);
            for entry in &declaring {
                assert_eq!(entry.defaults().remove(key), default, "{key} in {entry}");
                if let Some(value) = &default {
                    let single = toml::Table::from_iter([(key.to_string(), value.clone())]);
                    entry.resolve(&single).unwrap();
                }
            }
        }
    }

    #[test]
    fn reference_kind_comment_lists_the_registered_schemes() {
        let kind = line(REFERENCE, "scheme", "kind").expect("scheme.kind is documented");
        let (_, comment) = kind.split_once('#').unwrap();
        assert_eq!(comment.trim(), SCHEMES.names().join(" | "));
    }
}
