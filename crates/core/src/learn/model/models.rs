//! The model registry: lists of model kinds ([`ModelRegistry`]) looked up
//! by name, and [`MODELS`], the list this build uses, one line per kind.
//! Adding a model kind is its file (its parameters and `static` entry, see
//! `entry`) and one line here (docs/adding-a-model.md).

use std::collections::BTreeSet;

use super::Model;
use super::entry::{ModelArgs, ModelEntry};
use super::{Input, cnn, linear, mlp, resnet};
use crate::config::{Config, DataFormat, DataKind, Loss, MODEL_KEYS, ModelConfig};
use crate::error::InputError;

/// The most classes a network may have (`model.classes`).
const MAX_CLASSES: usize = 1 << 16;

/// Every model kind this build knows, in the order errors list them.
/// Adding a kind is one line here.
pub static MODELS: ModelRegistry =
    ModelRegistry::new(&[&linear::LINEAR, &mlp::MLP, &cnn::CNN, &resnet::RESNET]);

/// A list of model entries; [`MODELS`] is the one this build uses.
#[derive(Debug, Clone, Copy)]
pub struct ModelRegistry {
    entries: &'static [&'static ModelEntry],
}

impl ModelRegistry {
    pub const fn new(entries: &'static [&'static ModelEntry]) -> Self {
        Self { entries }
    }

    /// The entries in order.
    pub fn entries(&self) -> &'static [&'static ModelEntry] {
        self.entries
    }

    /// The entry named `name`.
    pub fn get(&self, name: &str) -> Option<&'static ModelEntry> {
        self.entries.iter().copied().find(|e| e.name() == name)
    }

    /// The registered names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.entries.iter().map(|e| e.name()).collect()
    }

    /// The entry of `model.kind = name`, or an error naming the key and
    /// listing the registered names.
    pub fn entry(&self, name: &str) -> Result<&'static ModelEntry, InputError> {
        self.get(name).ok_or_else(|| {
            let names: Vec<String> = self.names().iter().map(|n| format!("`{n}`")).collect();
            InputError::value(
                "model.kind",
                format!("\"{name}\""),
                format!("is not known (expected one of {})", names.join(", ")),
            )
        })
    }

    /// A `model.kind` of another type than a name, in the `[model]` table
    /// of the whole config `table` before it is typed: an error listing the
    /// registered names (`model.kind: 1.5 is not one of "linear", "mlp"`),
    /// as every key that takes a name says.
    pub fn check_kind_type(&self, table: &toml::Table) -> Result<(), InputError> {
        let Some(value) = table.get("model").and_then(|model| model.get("kind")) else {
            return Ok(());
        };
        if value.is_str() {
            return Ok(());
        }
        let names: Vec<String> = self.names().iter().map(|n| format!("\"{n}\"")).collect();
        Err(InputError::new(
            "model.kind",
            format!("{value} is not one of {}", names.join(", ")),
        ))
    }

    /// The entry of `config`'s `model.kind`, after the rules of `[model]`
    /// that depend on the kind: the name is registered (checked first);
    /// every key of [`ModelConfig::params`] is read by some registered kind
    /// and has the type each gives it; a classifier
    /// ([`ModelEntry::classifies`]) has 2..=65536 classes, class labels (no
    /// synthetic data) and dense samples; a kind that reads images has image
    /// data; a logistic loss has binary labels; the kind's own keys lie
    /// within its limits ([`super::ModelParams::check`]).
    pub fn check(&self, config: &Config) -> Result<&'static ModelEntry, InputError> {
        let (m, d) = (&config.model, &config.data);
        let entry = self.entry(m.kind.name())?;
        self.check_keys(&m.params)?;
        if entry.classifies() {
            check_network(entry, m, d.kind, d.format)?;
        }
        if m.loss == Loss::Logistic && d.kind == DataKind::SyntheticLinear {
            return Err(InputError::value(
                "model.loss",
                "\"logistic\"",
                "needs binary labels, but data.kind = synthetic-linear generates real-valued ones",
            ));
        }
        // The whole section: a kind's limits may read the typed keys too.
        let table = toml::Table::try_from(m).expect("[model] serialises to a TOML table");
        entry.check_params(&table)?;
        Ok(entry)
    }

    /// The keys of some registered kind that are not [`MODEL_KEYS`], once
    /// each, in registration order (`hidden`, `dropout`, ...).
    pub fn keys(&self) -> Vec<&'static str> {
        let mut keys: Vec<&'static str> = Vec::new();
        for entry in self.entries {
            for key in entry.keys() {
                if !MODEL_KEYS.contains(key) && !keys.contains(key) {
                    keys.push(key);
                }
            }
        }
        keys
    }

    /// The kinds that read the key `key` of their own, in registration order.
    pub fn declaring<'k>(
        &self,
        key: &'k str,
    ) -> impl Iterator<Item = &'static ModelEntry> + use<'k> {
        self.entries
            .iter()
            .copied()
            .filter(move |e| e.keys().contains(&key))
    }

    /// Every key of `params` (the `[model]` keys beyond [`MODEL_KEYS`]) is
    /// read by some registered kind, with the type each gives it; else an
    /// error naming the key (`model.hiden: unknown key (expected one of
    /// ...)`).
    fn check_keys(&self, params: &toml::Table) -> Result<(), InputError> {
        for (key, value) in params {
            let declaring: Vec<&ModelEntry> = self.declaring(key).collect();
            if declaring.is_empty() {
                let expected: Vec<String> = MODEL_KEYS
                    .into_iter()
                    .chain(self.keys())
                    .map(|k| format!("`{k}`"))
                    .collect();
                return Err(InputError::new(
                    format!("model.{key}"),
                    format!("unknown key (expected one of {})", expected.join(", ")),
                ));
            }
            let single = toml::Table::from_iter([(key.clone(), value.clone())]);
            for entry in declaring {
                entry.check_types(&single)?;
            }
        }
        Ok(())
    }

    /// `model` with the defaults of its kind's own keys filled in where they
    /// are not set (the resolved config that `check` prints and traces
    /// store); the keys of other kinds are left as they are.
    pub fn resolve(&self, model: &mut ModelConfig) -> Result<(), InputError> {
        let entry = self.entry(model.kind.name())?;
        for (key, value) in entry.defaults() {
            if !MODEL_KEYS.contains(&key.as_str()) && !model.params.contains_key(&key) {
                model.params.insert(key, value);
            }
        }
        Ok(())
    }

    /// The warnings of the `[model]` keys among `explicit` (the dotted keys
    /// set in the file or by `--set`) that the kind `kind` does not read:
    /// `model.hidden is set but not used by model.kind = cnn`.
    pub fn unused_keys(
        &self,
        kind: &str,
        explicit: &BTreeSet<String>,
    ) -> Result<Vec<String>, InputError> {
        let entry = self.entry(kind)?;
        Ok(explicit
            .iter()
            .filter_map(|key| {
                let name = key.strip_prefix("model.")?;
                if entry.declares(name) {
                    return None;
                }
                Some(format!("{key} is set but not used by model.kind = {entry}"))
            })
            .collect())
    }

    /// Build the model of a `[model]` table (its `kind` and the keys the
    /// kind reads) over samples shaped as `input`.
    pub fn build_table(&self, table: &toml::Table, input: Input) -> Result<Model, InputError> {
        let name = match table.get("kind") {
            Some(toml::Value::String(name)) => name.as_str(),
            Some(other) => {
                return Err(InputError::value(
                    "model.kind",
                    other,
                    "must be the name of a model kind",
                ));
            }
            None => return Err(InputError::new("model.kind", "is not set")),
        };
        let entry = self.entry(name)?;
        entry.build(&ModelArgs::new(entry.name(), table, input))
    }

    /// Build the model of the `[model]` section `model` over samples shaped as `input`.
    pub fn build(&self, model: &ModelConfig, input: Input) -> Result<Model, InputError> {
        let table = toml::Table::try_from(model).expect("[model] serialises to a TOML table");
        self.build_table(&table, input)
    }
}

/// The rules of a classifier `entry` over data of `kind` stored as `format`.
fn check_network(
    entry: &ModelEntry,
    m: &ModelConfig,
    kind: DataKind,
    format: DataFormat,
) -> Result<(), InputError> {
    if !(2..=MAX_CLASSES).contains(&m.classes) {
        return Err(InputError::value(
            "model.classes",
            m.classes,
            format!("must be in 2..={MAX_CLASSES}"),
        ));
    }
    if entry.reads_images() && !kind.is_images() {
        return Err(InputError::value(
            "model.kind",
            format!("\"{entry}\""),
            format!(
                "needs images (data.kind = \"idx\" or \"cifar10\"); data.kind = {} has flat samples",
                kind.name()
            ),
        ));
    }
    if matches!(
        kind,
        DataKind::SyntheticLinear | DataKind::SyntheticLogistic | DataKind::SyntheticOnehot
    ) {
        return Err(InputError::value(
            "model.kind",
            format!("\"{entry}\""),
            format!(
                "needs class labels 0..model.classes, but data.kind = {} generates {} labels \
                 (use data.kind = \"idx\", \"cifar10\", \"csv\" or \"libsvm\" with class labels, or model.kind = \"linear\")",
                kind.name(),
                if kind == DataKind::SyntheticLinear {
                    "real-valued"
                } else {
                    "±1"
                }
            ),
        ));
    }
    if !kind.is_images() && format == DataFormat::Sparse {
        return Err(InputError::value(
            "data.format",
            "\"sparse\"",
            format!("cannot feed model.kind = {entry}: networks read dense samples"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_config_kind_is_registered() {
        let names = MODELS.names();
        for (i, name) in names.iter().enumerate() {
            assert!(!names[..i].contains(name), "{name} registered twice");
        }
        for kind in ["linear", "mlp", "cnn", "resnet"] {
            assert_eq!(MODELS.entry(kind).unwrap().name(), kind);
        }
        let e = MODELS.entry("transformer").unwrap_err().to_string();
        assert!(
            e.starts_with("model.kind = \"transformer\" is not known (expected one of `linear`"),
            "{e}"
        );
    }

    /// Every key a kind reads has the default `[model]` gives it: the
    /// entries' typed parameters and the config's defaults agree on the
    /// keys the config types, and every kind that reads one of the others
    /// gives it the same default and type.
    #[test]
    fn every_kinds_defaults_are_the_configs() {
        let config = toml::Table::try_from(ModelConfig::default()).unwrap();
        for entry in MODELS.entries() {
            for (key, value) in entry.defaults() {
                if MODEL_KEYS.contains(&key.as_str()) {
                    assert_eq!(config.get(&key), Some(&value), "{entry}: model.{key}");
                }
            }
        }
        for key in MODELS.keys() {
            let declaring: Vec<_> = MODELS.declaring(key).collect();
            let default = declaring[0]
                .defaults()
                .remove(key)
                .expect("a kind's key has a default");
            let single = toml::Table::from_iter([(key.to_string(), default.clone())]);
            for entry in declaring {
                assert_eq!(
                    entry.defaults().get(key),
                    Some(&default),
                    "{entry}: model.{key}"
                );
                entry.check_params(&single).unwrap();
            }
        }
    }

    /// A kind's limits see the whole `[model]` section: the typed keys
    /// (`classes`) as set, not their defaults.
    #[test]
    fn a_kinds_limits_read_the_typed_keys_as_set() {
        #[derive(Default, serde::Serialize, serde::Deserialize)]
        #[serde(default)]
        struct FewClasses {
            classes: usize,
        }
        impl super::super::ModelParams for FewClasses {
            fn check(&self) -> Result<(), InputError> {
                if self.classes > 5 {
                    return Err(InputError::value(
                        "model.classes",
                        self.classes,
                        "must be at most 5",
                    ));
                }
                Ok(())
            }
        }
        static FEW: ModelEntry = ModelEntry::new::<FewClasses>("few", "at most 5 classes", |_| {
            unreachable!("check builds nothing")
        });
        static REGISTRY: ModelRegistry = ModelRegistry::new(&[&FEW]);
        let mut config = Config::default();
        config.data.kind = DataKind::Csv;
        config.model.kind = crate::config::ModelName::new("few");
        config.model.classes = 5;
        REGISTRY.check(&config).unwrap();
        config.model.classes = 7;
        assert_eq!(
            REGISTRY.check(&config).unwrap_err().to_string(),
            "model.classes = 7 must be at most 5"
        );
    }

    /// [`MODEL_KEYS`] are the typed fields of [`ModelConfig`], in order.
    #[test]
    fn model_keys_are_the_configs_typed_fields() {
        let mut model = ModelConfig {
            max_memory_mib: Some(1),
            ..ModelConfig::default()
        };
        model.set_param("hidden", vec![4]);
        let table = toml::Table::try_from(&model).unwrap();
        let mut keys: Vec<&str> = table
            .keys()
            .map(String::as_str)
            .filter(|k| *k != "hidden")
            .collect();
        let mut typed = MODEL_KEYS.to_vec();
        keys.sort_unstable();
        typed.sort_unstable();
        assert_eq!(keys, typed);
        assert_eq!(
            MODELS.keys(),
            ["hidden", "dropout", "resnet_blocks", "resnet_width"]
        );
    }

    /// The keys each kind reads, as the config documents them.
    #[test]
    fn the_kinds_read_their_documented_keys() {
        let keys = |name: &str| MODELS.get(name).unwrap().keys().to_vec();
        assert_eq!(keys("linear"), ["loss"]);
        assert_eq!(
            keys("mlp"),
            [
                "classes",
                "hidden",
                "dropout",
                "precision",
                "max_memory_mib"
            ]
        );
        assert_eq!(
            keys("cnn"),
            ["classes", "dropout", "precision", "max_memory_mib"]
        );
        assert_eq!(
            keys("resnet"),
            [
                "classes",
                "precision",
                "resnet_blocks",
                "resnet_width",
                "max_memory_mib"
            ]
        );
        assert!(MODELS.get("mlp").unwrap().declares("l2"));
        assert!(!MODELS.get("linear").unwrap().declares("hidden"));
    }
}
