//! The model registry: lists of model kinds ([`ModelRegistry`]) looked up
//! by name, and [`MODELS`], the list this build uses, one line per kind.
//! Adding a model kind is its file (its parameters and `static` entry, see
//! `entry`) and one line here (docs/adding-a-model.md).

use std::collections::BTreeSet;

use super::Model;
use super::entry::{ModelArgs, ModelEntry};
use super::{Input, cnn, linear, mlp, resnet};
use crate::config::ModelConfig;
use crate::error::InputError;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ModelKind;

    #[test]
    fn names_are_unique_and_every_config_kind_is_registered() {
        let names = MODELS.names();
        for (i, name) in names.iter().enumerate() {
            assert!(!names[..i].contains(name), "{name} registered twice");
        }
        for kind in [
            ModelKind::Linear,
            ModelKind::Mlp,
            ModelKind::Cnn,
            ModelKind::Resnet,
        ] {
            assert_eq!(MODELS.entry(kind.name()).unwrap().name(), kind.name());
        }
        let e = MODELS.entry("transformer").unwrap_err().to_string();
        assert!(
            e.starts_with("model.kind = \"transformer\" is not known (expected one of `linear`"),
            "{e}"
        );
    }

    /// Every key a kind reads has the default `[model]` gives it: the
    /// entries' typed parameters and the config's defaults agree.
    #[test]
    fn every_kinds_defaults_are_the_configs() {
        let config = toml::Table::try_from(ModelConfig::default()).unwrap();
        for entry in MODELS.entries() {
            for (key, value) in entry.defaults() {
                assert_eq!(config.get(&key), Some(&value), "{entry}: model.{key}");
            }
            for key in entry.keys() {
                assert!(
                    config.contains_key(*key) || *key == "max_memory_mib",
                    "{entry}: model.{key} is no [model] key"
                );
            }
        }
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
