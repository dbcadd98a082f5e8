//! The scheme registry: lists of entries ([`Registry`]) looked up by name;
//! the list this build uses is `coding::SCHEMES`, one line per scheme.
//!
//! A scheme declares, in its own file, its typed parameters
//! ([`SchemeParams`], read through [`BuildArgs::params`]; `params.rs`) and
//! a `static` [`SchemeEntry`] (`scheme.rs`, beside the `Scheme` trait it
//! builds): its name (`scheme.kind`), a one-line description citing the
//! paper section, and its constructor, which checks the parameters' limits
//! (errors name the key, `scheme.load`). Everything else derives from the
//! registry: the loader's key and type checks and its unused-key warnings
//! (`setup`), the names in its errors, the parameters `check` prints, and
//! the test that `configs/reference.toml` documents every key with its
//! default.

use serde::de::{self, DeserializeOwned};

pub use super::params::{BuildArgs, CODE_FIELD, NoParams, ParamError, SchemeParams, field_names};
pub use super::scheme::{Constructor, SchemeEntry};
use super::{CodingError, Scheme};
use crate::config::Config;
use crate::error::InputError;

/// A list of scheme entries; [`SCHEMES`](super::SCHEMES) is the one this build uses.
///
/// Every scheme is picked by its name at run time (`scheme.kind`):
///
/// ```
/// use gradcode_core::coding::{SCHEMES, build_kind};
/// let names = SCHEMES.names();
/// assert!(names.contains(&"gc-cyclic") && names.contains(&"is-gc"));
/// let config = gradcode_core::config::parse("workers = 6\n", "example", &[]).unwrap().config;
/// let scheme = build_kind("gc-frac", &config).unwrap();
/// assert_eq!(scheme.kind().name(), "gc-frac");
/// assert_eq!(scheme.workers(), 6);
/// // An unknown name is an error, never a default.
/// assert!(build_kind("gc-nothing", &config).is_err());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Registry {
    entries: &'static [&'static SchemeEntry],
}

impl Registry {
    pub const fn new(entries: &'static [&'static SchemeEntry]) -> Self {
        Self { entries }
    }

    /// The entries in order.
    pub fn entries(&self) -> &'static [&'static SchemeEntry] {
        self.entries
    }

    /// The entry named `name`.
    pub fn get(&self, name: &str) -> Option<&'static SchemeEntry> {
        self.entries.iter().copied().find(|e| e.name() == name)
    }

    /// The registered names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.entries.iter().map(|e| e.name()).collect()
    }

    /// The names as errors list them: `` `uncoded`, `gc-frac`, ... ``.
    pub fn choices(&self) -> String {
        quoted(&self.names())
    }

    /// Every `[scheme]` key some scheme reads, each once, in registry order.
    pub fn keys(&self) -> Vec<&'static str> {
        let mut keys: Vec<&'static str> = Vec::new();
        for key in self.entries.iter().flat_map(|e| e.keys()) {
            if !keys.contains(key) {
                keys.push(key);
            }
        }
        keys
    }

    /// The entries that read `key`.
    pub fn declaring<'k>(
        &self,
        key: &'k str,
    ) -> impl Iterator<Item = &'static SchemeEntry> + use<'k> {
        self.entries
            .iter()
            .copied()
            .filter(move |e| e.declares(key))
    }

    /// The default of `key`: that of the first scheme that reads it (every
    /// scheme that reads a key gives it the same default, which a test
    /// checks); `None` when the key has no default or no scheme reads it.
    pub fn default_of(&self, key: &str) -> Option<toml::Value> {
        self.declaring(key).next()?.defaults().remove(key)
    }

    /// Build the scheme `kind` with the `[scheme]` keys of `config`.
    pub fn build_kind(&self, kind: &str, config: &Config) -> Result<Box<dyn Scheme>, CodingError> {
        let entry = self.get(kind).ok_or_else(|| {
            CodingError::invalid(
                "scheme.kind",
                format!("\"{kind}\""),
                format!("is not known (expected one of {})", self.choices()),
            )
        })?;
        entry.build(&BuildArgs::new(
            config.workers,
            config.seed,
            &config.scheme.params,
        ))
    }

    /// The value of the `[scheme]` key `key` in `config`, or when it is not set
    /// the registry's default for it; `T = Option<_>` for a key without a
    /// default. For code that needs a key whatever the scheme (the simulator's
    /// lower bound reads `load` and `clusters`).
    pub fn param<T: DeserializeOwned>(&self, config: &Config, key: &str) -> Result<T, InputError> {
        let field = format!("scheme.{key}");
        let value = config
            .scheme
            .params
            .get(key)
            .cloned()
            .or_else(|| self.default_of(key));
        match value {
            Some(v) => T::deserialize(v.clone()).map_err(|e| {
                let probe = T::deserialize(toml::Value::from(crate::config::NO_NAME));
                match probe
                    .map(|_| ())
                    .map_err(|p| crate::config::not_one_of(&v, &p.to_string()))
                {
                    Err(Some(rule)) => InputError::new(field.clone(), rule),
                    _ => crate::config::serde_error(&field, &e.to_string()),
                }
            }),
            None => T::deserialize(de::value::UnitDeserializer::<de::value::Error>::new())
                .map_err(|_| InputError::new(field, "is not set and has no default")),
        }
    }
}

/// `` `a`, `b`, `c` ``.
pub(crate) fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
