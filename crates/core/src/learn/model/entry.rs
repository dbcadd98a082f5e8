//! A model kind's entry in the registry ([`ModelEntry`]): its name
//! (`model.kind`), one line saying what it is and where it comes from, its
//! typed `[model]` keys and its constructor; and what a constructor is
//! given ([`ModelArgs`]).
//!
//! A model kind declares, in its own file, its typed parameters (a serde
//! struct with one field per `[model]` key it reads, `#[serde(default)]`,
//! its `Default` giving the keys' defaults) and a `static` `ModelEntry`
//! made by [`ModelEntry::new`]. The entry learns the keys from the struct
//! (as a scheme's entry does, [`field_names`]), so a key, its type and its
//! default are written once; the loader's unused-key warnings
//! (`setup`) ask the entry which keys its kind reads.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Input, Model};
use crate::coding::registry::field_names;
use crate::error::InputError;

/// The `[model]` keys every model kind reads (the registry's own `kind`,
/// and `l2`, the optimiser's weight decay).
pub const EVERY_MODEL_KEYS: [&str; 2] = ["kind", "l2"];

/// The typed `[model]` parameters of a model kind: a struct with one field
/// per key it reads, deserialised with `#[serde(default)]` (no
/// `#[serde(flatten)]`: the entry reads the keys off the struct's fields),
/// and the limits of its keys.
pub trait ModelParams: Serialize + DeserializeOwned + Default {
    /// The limits of the keys' values, an error naming the key
    /// (`model.hidden`) for the first outside them. The loader checks them
    /// before anything is read (`ModelRegistry::check`), and
    /// [`ModelArgs::params`] again. None by default.
    fn check(&self) -> Result<(), InputError> {
        Ok(())
    }
}

/// What a model kind's constructor is given: its name, the `[model]` keys
/// (a table that may hold keys of other kinds: each reads only its own) and
/// the shape of the samples.
#[derive(Debug, Clone, Copy)]
pub struct ModelArgs<'a> {
    kind: &'static str,
    table: &'a toml::Table,
    /// The samples the model reads.
    pub input: Input,
}

impl<'a> ModelArgs<'a> {
    /// The arguments of the kind `kind` (its `model.kind`) with the
    /// `[model]` keys `table`, over samples shaped as `input`.
    pub fn new(kind: &'static str, table: &'a toml::Table, input: Input) -> Self {
        Self { kind, table, input }
    }

    /// The kind's name (`model.kind`).
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// The kind's parameters: the keys of the table that `P` declares, the
    /// defaults of `P` for the others. A value of the wrong type, or outside
    /// the kind's limits ([`ModelParams::check`]), is an error naming its
    /// key (`model.hidden`); configs from the loader have had both checked
    /// before.
    pub fn params<P: ModelParams>(&self) -> Result<P, InputError> {
        checked_params(self.table)
    }

    /// The samples' image shape (channels, height, width); an error naming
    /// `model.kind` when the samples are flat, for kinds that read images.
    pub fn image(&self) -> Result<[usize; 3], InputError> {
        self.input.image.ok_or_else(|| {
            InputError::value(
                "model.kind",
                format!("\"{}\"", self.kind),
                "needs images (data.kind = \"idx\" or \"cifar10\"); this data has flat samples",
            )
        })
    }
}

/// A model kind's constructor: it reads its parameters from `args` and
/// checks their limits (errors name the key, `model.hidden`).
pub type Constructor = fn(&ModelArgs<'_>) -> Result<Model, InputError>;

/// One registered model kind: its name, description, parameters and
/// constructor. Made by [`ModelEntry::new`] in the kind's own file.
pub struct ModelEntry {
    name: &'static str,
    description: &'static str,
    fields: fn() -> &'static [&'static str],
    defaults: fn() -> toml::Table,
    typed: fn(&toml::Table) -> Result<(), InputError>,
    checked: fn(&toml::Table) -> Result<(), InputError>,
    build: Constructor,
    images: bool,
}

impl ModelEntry {
    /// The entry of the kind `name` (as in `model.kind`) with parameters
    /// `P` and constructor `build`.
    pub const fn new<P: ModelParams>(
        name: &'static str,
        description: &'static str,
        build: Constructor,
    ) -> Self {
        Self {
            name,
            description,
            fields: field_names::<P>,
            defaults: defaults_of::<P>,
            typed: |table| read_params::<P>(table).map(drop),
            checked: |table| checked_params::<P>(table).map(drop),
            build,
            images: false,
        }
    }

    /// This entry, for a kind that reads images (its constructor asks
    /// [`ModelArgs::image`]): the loader then refuses flat data before
    /// anything is read (`needs images`).
    pub const fn reading_images(self) -> Self {
        Self {
            images: true,
            ..self
        }
    }

    /// Whether the kind reads images ([`Self::reading_images`]).
    pub fn reads_images(&self) -> bool {
        self.images
    }

    /// Whether the kind is a classifier: it reads `model.classes`, and its
    /// labels are classes 0..classes (a network trained with softmax
    /// cross-entropy, on dense samples).
    pub fn classifies(&self) -> bool {
        self.keys().contains(&"classes")
    }

    /// The name in configs and traces (`model.kind`).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// One line: what the model is, and the paper it comes from.
    pub fn description(&self) -> &'static str {
        self.description
    }

    /// The `[model]` keys of its own (besides [`EVERY_MODEL_KEYS`]), in
    /// declaration order.
    pub fn keys(&self) -> &'static [&'static str] {
        (self.fields)()
    }

    /// Whether it reads the `[model]` key `key` (its own or one every kind reads).
    pub fn declares(&self, key: &str) -> bool {
        EVERY_MODEL_KEYS.contains(&key) || self.keys().contains(&key)
    }

    /// Its keys with their defaults (a key without a default is absent).
    pub fn defaults(&self) -> toml::Table {
        (self.defaults)()
    }

    /// Whether the keys of `table` that the kind reads have the types it
    /// gives them: an error naming the first that has not (`model.hidden`).
    /// Their limits are not checked, and the other keys are not read.
    pub fn check_types(&self, table: &toml::Table) -> Result<(), InputError> {
        (self.typed)(table)
    }

    /// Whether the keys of `table` that the kind reads have its types and
    /// lie within its limits ([`ModelParams::check`]): an error naming the
    /// first key that does not.
    pub fn check_params(&self, table: &toml::Table) -> Result<(), InputError> {
        (self.checked)(table)
    }

    /// Build the model.
    pub fn build(&self, args: &ModelArgs<'_>) -> Result<Model, InputError> {
        (self.build)(args)
    }
}

/// The parameters `P` read from the keys of `table` it declares (the
/// defaults of `P` for the others), types checked, limits not.
fn read_params<P: ModelParams>(table: &toml::Table) -> Result<P, InputError> {
    let keys = field_names::<P>();
    let own: toml::Table = table
        .iter()
        .filter(|(key, _)| keys.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    serde_path_to_error::deserialize(own).map_err(|e| {
        let path = format!("model.{}", e.path());
        crate::config::serde_error(&path, &e.into_inner().to_string())
    })
}

/// [`read_params`], then the limits of its keys ([`ModelParams::check`]).
fn checked_params<P: ModelParams>(table: &toml::Table) -> Result<P, InputError> {
    let params: P = read_params(table)?;
    params.check()?;
    Ok(params)
}

fn defaults_of<P: ModelParams>() -> toml::Table {
    toml::Table::try_from(P::default()).expect("model parameters serialise to a TOML table")
}

impl PartialEq for ModelEntry {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for ModelEntry {}

impl std::fmt::Debug for ModelEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelEntry")
            .field("name", &self.name)
            .field("keys", &self.keys())
            .finish()
    }
}

impl std::fmt::Display for ModelEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}
