//! A scheme's typed `[scheme]` parameters: what a constructor reads
//! ([`BuildArgs`]), the keys and defaults the registry learns from them.
//!
//! A scheme declares, in its own file, its typed parameters and an entry
//! ([`SchemeEntry`](super::SchemeEntry), beside the `Scheme` trait):
//!
//! - the parameters are a serde struct with one field per `[scheme]` key it
//!   reads (`#[serde(default)]`; its `Default` gives the keys' defaults; an
//!   `Option` field is a key without a default; no `#[serde(flatten)]`);
//!   the shared options of a real-valued code ([`CodeParams`]:
//!   `code_draws`, `decode_tolerance`, `decode_cache_entries`) are one field
//!   named [`CODE_FIELD`] (`code`) of that type, whose keys the registry
//!   reads at the top level of `[scheme]`, in that field's place;
//! - the entry is a `static` `SchemeEntry`: its name (`scheme.kind`), a
//!   one-line description citing the paper section, and its constructor,
//!   which reads the parameters through [`BuildArgs::params`] and checks
//!   their limits (errors name the key, `scheme.load`).
//!
//! The entry learns the keys from the struct itself (serde hands every
//! deserializer a struct's field names, see [`field_names`]), so a key, its
//! type and its default are written once, in the struct.

use serde::de::{self, DeserializeOwned, Visitor};
use serde::{Deserialize, Serialize};

use super::{CodeParams, CodingError};
use crate::error::InputError;

/// The typed `[scheme]` parameters of a scheme: a struct with one field per
/// key, deserialised with `#[serde(default)]` (see the module docs).
pub trait SchemeParams: Serialize + DeserializeOwned + Default {}

impl<T: Serialize + DeserializeOwned + Default> SchemeParams for T {}

/// What a constructor is given: K, the master seed and the `[scheme]` keys.
#[derive(Debug, Clone, Copy)]
pub struct BuildArgs<'a> {
    /// K: the number of workers.
    pub workers: usize,
    /// The master seed; every random stream derives from it (`rng::stream`).
    pub seed: u64,
    params: &'a toml::Table,
}

impl<'a> BuildArgs<'a> {
    /// `params` is the `[scheme]` table without `kind` (it may hold keys of
    /// other schemes: each scheme reads only its own).
    pub fn new(workers: usize, seed: u64, params: &'a toml::Table) -> Self {
        Self {
            workers,
            seed,
            params,
        }
    }

    /// The scheme's parameters: the keys of the table that `P` declares, the
    /// defaults of `P` for the others. A value of the wrong type is an error
    /// naming its key (the loader has refused such values before, so this
    /// happens only to schemes built from a config that skipped it).
    pub fn params<P: SchemeParams>(&self) -> Result<P, CodingError> {
        deserialize_params(self.params).map_err(|e| {
            let key = e.key().to_string();
            let value = self
                .params
                .get(&key)
                .map_or_else(|| "(missing)".to_string(), ToString::to_string);
            CodingError::invalid(
                &format!("scheme.{key}"),
                value,
                format!("has the wrong type ({})", e.message),
            )
        })
    }

    /// The random stream `purpose` of the master seed.
    pub fn rng(&self, purpose: crate::rng::Stream) -> rand_chacha::ChaCha8Rng {
        crate::rng::stream(self.seed, purpose)
    }
}

/// A `[scheme]` value of the wrong type for a scheme's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamError {
    /// Where: the key, with the position inside its value when the error is
    /// there (`assignment[1][0]`).
    pub path: String,
    /// serde's message (`invalid type: string "two", expected usize`).
    pub message: String,
}

impl ParamError {
    /// The key the error is about.
    pub fn key(&self) -> &str {
        self.path.split(['.', '[']).next().unwrap_or(&self.path)
    }

    /// The error naming the full key: `{prefix}.{path}` (`scheme.load`,
    /// `simulate.compare.v.set.load`).
    pub fn at(&self, prefix: &str) -> InputError {
        let path = match self.path.as_str() {
            "" | "." => prefix.to_string(),
            path => format!("{prefix}.{path}"),
        };
        crate::config::serde_error(&path, &self.message)
    }
}

/// The field of a parameter struct that holds the shared code options
/// ([`CodeParams`]): its keys are `[scheme]` keys of their own
/// (`scheme.code_draws`), not a table `scheme.code`.
pub const CODE_FIELD: &str = "code";

/// Whether the parameters `P` embed the shared code options.
fn has_code<P: DeserializeOwned>() -> bool {
    field_names::<P>().contains(&CODE_FIELD)
}

/// The keys of a parameter struct with `fields`, its [`CODE_FIELD`]
/// replaced by the keys of [`CodeParams`].
pub(crate) fn expand(fields: &'static [&'static str]) -> Vec<&'static str> {
    fields
        .iter()
        .flat_map(|field| {
            if *field == CODE_FIELD {
                field_names::<CodeParams>()
            } else {
                std::slice::from_ref(field)
            }
        })
        .copied()
        .collect()
}

fn deserialize_params<P: DeserializeOwned>(params: &toml::Table) -> Result<P, ParamError> {
    let mut table = params.clone();
    let code = has_code::<P>();
    if code {
        // The code keys move into the table the embedded struct reads.
        let keys = field_names::<CodeParams>();
        let block: toml::Table = keys
            .iter()
            .filter_map(|key| Some((key.to_string(), table.remove(*key)?)))
            .collect();
        table.insert(CODE_FIELD.to_string(), toml::Value::Table(block));
    }
    let e = match serde_path_to_error::deserialize(table) {
        Ok(typed) => return Ok(typed),
        Err(e) => e,
    };
    let path = e.path().to_string();
    // A code key is named as it is written: `decode_tolerance`, not `code.decode_tolerance`.
    let path = match path
        .strip_prefix(CODE_FIELD)
        .and_then(|p| p.strip_prefix('.'))
    {
        Some(inner) if code => inner.to_string(),
        _ => path,
    };
    let mut message = e.into_inner().to_string();
    // A value of another type where the key takes a name: the names
    // (`3 is not one of "greedy", "optimal"`), as for the other sections.
    if message.starts_with("invalid type:") {
        if let Some((probe, given)) = crate::config::probe_names(params, &path) {
            if let Err(again) = deserialize_params::<P>(&probe) {
                if let (true, Some(rule)) = (
                    again.path == path,
                    crate::config::not_one_of(&given, &again.message),
                ) {
                    message = rule;
                }
            }
        }
    }
    Err(ParamError { path, message })
}

/// The parameters as a `[scheme]` table: the code keys at the top level.
fn to_table<P: SchemeParams>(params: &P) -> toml::Table {
    let mut table =
        toml::Table::try_from(params).expect("scheme parameters serialise to a TOML table");
    if has_code::<P>()
        && let Some(toml::Value::Table(block)) = table.remove(CODE_FIELD)
    {
        table.extend(block);
    }
    table
}

pub(crate) fn defaults_of<P: SchemeParams>() -> toml::Table {
    to_table(&P::default())
}

pub(crate) fn resolve_params<P: SchemeParams>(
    params: &toml::Table,
) -> Result<toml::Table, ParamError> {
    let typed: P = deserialize_params(params)?;
    Ok(to_table(&typed))
}

/// The field names of the struct `P`, as serde knows them: `P::deserialize`
/// is handed a deserializer that records the names serde passes to
/// `deserialize_struct` and stops there.
///
/// # Panics
///
/// When `P` is not a struct with named fields deserialised through
/// `deserialize_struct` (a `#[serde(flatten)]` field makes serde use a map).
pub fn field_names<P: DeserializeOwned>() -> &'static [&'static str] {
    let mut names = None;
    let _ = P::deserialize(FieldNames(&mut names));
    names.unwrap_or_else(|| {
        panic!(
            "{}: scheme parameters must be a struct with named fields and no #[serde(flatten)]",
            std::any::type_name::<P>()
        )
    })
}

/// The deserializer of [`field_names`].
struct FieldNames<'a>(&'a mut Option<&'static [&'static str]>);

impl<'de> de::Deserializer<'de> for FieldNames<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = Some(fields);
        Err(de::Error::custom("field names recorded"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// The parameters of a scheme that reads no `[scheme]` key (`uncoded`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NoParams {}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
    #[serde(default)]
    struct Sample {
        load: usize,
        #[serde(skip_serializing_if = "Option::is_none")]
        deadline: Option<f64>,
        #[serde(rename = "renamed_key")]
        inner: Vec<usize>,
    }

    #[derive(Debug, Default, Serialize, Deserialize)]
    struct Flattened {
        #[serde(flatten)]
        sample: Sample,
    }

    #[test]
    fn field_names_are_the_keys_serde_reads() {
        assert_eq!(field_names::<Sample>(), ["load", "deadline", "renamed_key"]);
        assert_eq!(field_names::<NoParams>(), [] as [&str; 0]);
    }

    #[test]
    #[should_panic(expected = "no #[serde(flatten)]")]
    fn flattened_parameters_are_refused() {
        field_names::<Flattened>();
    }

    #[test]
    fn resolve_fills_defaults_and_names_the_wrong_type() {
        let given: toml::Table = toml::from_str("load = 3\nother = \"x\"\n").unwrap();
        let resolved = resolve_params::<Sample>(&given).unwrap();
        let expected: toml::Table = toml::from_str("load = 3\nrenamed_key = []\n").unwrap();
        assert_eq!(resolved, expected);
        let bad: toml::Table = toml::from_str("renamed_key = [1, \"x\"]\n").unwrap();
        let e = resolve_params::<Sample>(&bad).unwrap_err();
        assert_eq!(e.path, "renamed_key[1]");
        assert_eq!(e.key(), "renamed_key");
        assert_eq!(e.at("scheme").field, "scheme.renamed_key[1]");
    }

    /// A key that takes a name, as gc-dc's `clustering` does.
    #[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    enum Clustering {
        #[default]
        Greedy,
        Optimal,
    }

    #[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
    #[serde(default)]
    struct Named {
        load: usize,
        clustering: Clustering,
    }

    /// A scheme key that takes a name, given a value of another type: the
    /// key, the value and the names, as for the keys of the other sections.
    #[test]
    fn a_value_of_another_type_for_a_scheme_name_lists_the_names() {
        for value in ["3", "true", "[1]"] {
            let bad: toml::Table = toml::from_str(&format!("clustering = {value}\n")).unwrap();
            let e = resolve_params::<Named>(&bad).unwrap_err();
            assert_eq!(e.path, "clustering");
            assert_eq!(
                e.at("scheme").to_string(),
                format!("scheme.clustering: {value} is not one of \"greedy\", \"optimal\"")
            );
        }
        // Other keys keep serde's words; a wrong name keeps its own message.
        let bad: toml::Table = toml::from_str("load = \"x\"\n").unwrap();
        let e = resolve_params::<Named>(&bad).unwrap_err();
        assert!(e.message.starts_with("invalid type"), "{e:?}");
        let bad: toml::Table = toml::from_str("clustering = \"best\"\n").unwrap();
        let e = resolve_params::<Named>(&bad)
            .unwrap_err()
            .at("scheme")
            .to_string();
        assert!(
            e.contains("\"best\" is not known (expected `greedy` or `optimal`)"),
            "{e}"
        );
    }

    /// Parameters with the shared code options between two keys of their own.
    #[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
    #[serde(default)]
    struct Coded {
        load: usize,
        code: CodeParams,
        #[serde(skip_serializing_if = "Option::is_none")]
        deadline: Option<f64>,
    }

    #[test]
    fn the_code_options_are_keys_of_their_own_in_their_fields_place() {
        assert_eq!(
            expand(field_names::<Coded>()),
            [
                "load",
                "code_draws",
                "decode_tolerance",
                "decode_cache_entries",
                "deadline"
            ]
        );
        let defaults = defaults_of::<Coded>();
        let expected: toml::Table = toml::from_str(
            "load = 0\ncode_draws = 8\ndecode_tolerance = 1e-8\ndecode_cache_entries = 4096\n",
        )
        .unwrap();
        assert_eq!(defaults, expected);
        let given: toml::Table =
            toml::from_str("code_draws = 3\ndeadline = 2.5\ncode = 1\n").unwrap();
        let typed: Coded = deserialize_params(&given).unwrap();
        assert_eq!(typed.code.code_draws, 3);
        assert_eq!(typed.code.decode_cache_entries, 4096);
        assert_eq!(typed.deadline, Some(2.5));
        let resolved = resolve_params::<Coded>(&given).unwrap();
        assert_eq!(resolved["code_draws"], toml::Value::Integer(3));
        assert!(!resolved.contains_key(CODE_FIELD), "{resolved:?}");
        let bad: toml::Table = toml::from_str("decode_tolerance = \"x\"\n").unwrap();
        let e = BuildArgs::new(4, 1, &bad).params::<Coded>().unwrap_err();
        assert!(
            e.to_string()
                .starts_with("scheme.decode_tolerance = \"x\" has the wrong type"),
            "{e}"
        );
    }

    #[test]
    fn build_args_name_the_key_of_a_wrong_type() {
        let params: toml::Table = toml::from_str("load = \"two\"\n").unwrap();
        let e = BuildArgs::new(4, 1, &params)
            .params::<Sample>()
            .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("scheme.load = \"two\" has the wrong type"),
            "{e}"
        );
    }
}
