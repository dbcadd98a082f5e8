//! Configuration: TOML through serde, `--set section.key=value` overrides,
//! validation with errors that name the field and the rule.
//!
//! Loading goes text → [`toml::Table`] → overrides → [`Config`] → [`validate`].
//! This layer knows no scheme: `[scheme]` is a name and a table of keys
//! ([`SchemeConfig`]), taken as given. The loader `setup::load` (above this
//! module and `coding`) checks them against the scheme registry, fills in the
//! defaults of the schemes in use and builds the scheme; every command loads
//! its config through it (MPI workers only parse the resolved config that
//! rank 0 broadcasts).

mod schema;
mod set;
mod validate;

pub use schema::*;
pub use set::Setting;
pub use validate::{
    MAX_MATRIX_MIB_LIMIT, MAX_WORKERS, check_dense_matrix, check_sparse_matrix, check_sparse_width,
    csr_bytes, validate,
};

use crate::error::InputError;
use std::collections::BTreeSet;
use std::path::Path;

/// The demo config compiled into the binary; used when `--config` is not given.
pub const DEMO_TOML: &str = include_str!("../../../../configs/demo.toml");

/// A validated config with where it came from and which keys were set explicitly.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    pub config: Config,
    /// The file it was read from, or `<embedded demo>`.
    pub origin: String,
    /// Dotted keys present in the file or in `--set` (not filled by defaults).
    pub explicit: BTreeSet<String>,
    /// The TOML table as given: the file with every `--set` applied, no
    /// default filled in (`gradcode check --print-config` prints it).
    pub given: toml::Table,
    /// `[scheme]` keys (and `simulate.compare` variants' `set` keys) that were
    /// set but that no scheme in use reads, as one-line warnings. The loader
    /// (`setup`) fills them in, since only the registry knows which scheme
    /// reads which key; [`parse`] alone leaves them empty.
    pub unused_scheme_keys: Vec<String>,
    /// gc-dc schemes in use whose `scheme.straggler_threshold` and the
    /// straggler model's flags can name different stragglers
    /// ([`crate::straggler::rate_threshold_disagreements`]), as one-line
    /// warnings; filled in by the loader like [`Self::unused_scheme_keys`].
    pub threshold_warnings: Vec<String>,
    /// `[model]` keys that were set but that `model.kind` does not read, as
    /// one-line warnings; filled in by the loader from the model registry
    /// (`learn::model::MODELS`), which knows the keys of each kind, like
    /// [`Self::unused_scheme_keys`].
    pub unused_model_keys: Vec<String>,
    /// Warnings about the model kind in use, from the model registry: a
    /// network without `train.batch_size` (each step then computes every
    /// sample); filled in by the loader like [`Self::unused_model_keys`].
    pub model_warnings: Vec<String>,
}

impl LoadedConfig {
    /// Keys that were set but that nothing in use reads, as one-line warnings:
    /// [`Self::unused_scheme_keys`], then the `[straggler]` keys that
    /// `straggler.model` does not read, then [`Self::unused_model_keys`].
    ///
    /// Like PETSc's report of unused options: an explicit `scheme.clusters` on a
    /// `gc-cyclic` run is not an error (a `--set scheme.kind=...` comparison
    /// must stay possible) but it is never silently ignored.
    pub fn unused_keys(&self) -> Vec<String> {
        let mut warnings = self.unused_scheme_keys.clone();
        warnings.extend(self.unused_straggler_keys());
        warnings.extend(self.unused_model_keys.iter().cloned());
        warnings
    }

    /// Every warning about this config, one line each: the unused keys, the
    /// loader's [`Self::threshold_warnings`], and its
    /// [`Self::model_warnings`].
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = self.unused_keys();
        warnings.extend(self.threshold_warnings.iter().cloned());
        warnings.extend(self.model_warnings.iter().cloned());
        warnings
    }

    /// `[straggler]` keys that were set but that `straggler.model` does not read.
    fn unused_straggler_keys(&self) -> Vec<String> {
        const EVERY_MODEL: [&str; 4] = ["model", "state_info", "mode", "time_unit_ms"];
        let model = self.config.straggler.model;
        self.explicit
            .iter()
            .filter_map(|key| {
                let name = key.strip_prefix("straggler.")?;
                if EVERY_MODEL.contains(&name) || model.keys().contains(&name) {
                    return None;
                }
                Some(format!(
                    "{key} is set but not used by straggler.model = {}",
                    model.name()
                ))
            })
            .collect()
    }
}

impl Config {
    /// The schemes `simulate` compares: `simulate.compare`, or `scheme.kind` alone when it is empty.
    pub fn compared(&self) -> Vec<CompareEntry> {
        if self.simulate.compare.is_empty() {
            vec![CompareEntry::Kind(self.scheme.kind.clone())]
        } else {
            self.simulate.compare.clone()
        }
    }

    /// The name of the scheme improvements are measured against:
    /// `simulate.baseline`, default the first compared.
    pub fn baseline(&self) -> String {
        self.simulate
            .baseline
            .clone()
            .unwrap_or_else(|| self.compared()[0].name().to_string())
    }

    /// The config the scheme of `entry` is built from: this one, or for a
    /// variant this one with its `kind` and the `[scheme]` keys of its `set`
    /// changed. Only `kind` inside `set` is refused here (naming
    /// `simulate.compare.<name>.set.kind`); the loader (`setup`) checks the
    /// other keys of `set` against the scheme registry.
    pub fn for_entry(&self, entry: &CompareEntry) -> Result<Config, InputError> {
        let CompareEntry::Variant(v) = entry else {
            return Ok(self.clone());
        };
        if v.set.contains_key("kind") {
            return Err(InputError::new(
                format!("simulate.compare.{}.set.kind", v.name),
                "is not allowed: the entry's `kind` gives the scheme",
            ));
        }
        let mut config = self.clone();
        config.scheme.kind = v.kind.clone();
        for (key, value) in &v.set {
            config.scheme.params.insert(key.clone(), value.clone());
        }
        Ok(config)
    }

    /// The resolved config as TOML (defaults filled in), for `check` and trace attributes.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a Config always serialises to TOML")
    }
}

/// Load a config file (or the embedded demo when `path` is `None`) and apply
/// overrides; `[scheme]` is taken as given (see `setup::load` for the loader
/// that checks it).
pub fn load(path: Option<&Path>, overrides: &[String]) -> Result<LoadedConfig, InputError> {
    load_checked(path, overrides, &|_| Ok(()))
}

/// A check of the whole TOML table (file and settings applied) before it is
/// typed: what the loader (`setup`) checks that this layer cannot (the
/// type of `model.kind`, whose names only the model registry knows).
pub type TableCheck<'a> = &'a dyn Fn(&toml::Table) -> Result<(), InputError>;

/// [`load`] with `check` applied to the table before it is typed.
pub fn load_checked(
    path: Option<&Path>,
    overrides: &[String],
    check: TableCheck<'_>,
) -> Result<LoadedConfig, InputError> {
    match path {
        Some(path) => {
            let origin = path.display().to_string();
            let text = read_config_file(path)?;
            parse_checked(&text, &origin, overrides, check)
        }
        None => parse_checked(DEMO_TOML, "<embedded demo>", overrides, check),
    }
}

/// The largest config file read, in bytes (1 MiB): the reference config,
/// every key with a comment, is 10 KiB; a config is read whole before it is
/// parsed, so a larger file is refused after 1 MiB is read (a device such
/// as `/dev/zero` is refused before, as not a regular file).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The text of the config file at `path`, at most [`MAX_CONFIG_BYTES`] long.
fn read_config_file(path: &Path) -> Result<String, InputError> {
    use std::io::Read;
    let origin = path.display().to_string();
    let cannot =
        |e: std::io::Error| InputError::new("--config", format!("cannot read {origin}: {e}"));
    let file = crate::files::open_input(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(InputError::new(
            "--config",
            format!(
                "{origin} is larger than {MAX_CONFIG_BYTES} bytes (1 MiB), the most a config file may be (the reference config is about 10 KiB)"
            ),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        InputError::new(
            "--config",
            format!(
                "cannot read {origin}: it is not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// Parse config text; `origin` names it in errors (`file:line:column`).
/// `[scheme]` is taken as given (see `setup::parse` for the loader that checks it).
pub fn parse(text: &str, origin: &str, overrides: &[String]) -> Result<LoadedConfig, InputError> {
    parse_checked(text, origin, overrides, &|_| Ok(()))
}

/// [`parse`] with `check` applied to the table before it is typed.
pub fn parse_checked(
    text: &str,
    origin: &str,
    overrides: &[String],
    check: TableCheck<'_>,
) -> Result<LoadedConfig, InputError> {
    let mut table: toml::Table = toml::from_str(text).map_err(|e| {
        let at = match e.span() {
            Some(span) => {
                let (line, column) = line_column(text, span.start);
                format!("{origin}:{line}:{column}")
            }
            None => origin.to_string(),
        };
        InputError::new(at, e.message())
    })?;
    for item in overrides {
        Setting::parse(item)?.apply(&mut table)?;
    }
    let mut explicit = BTreeSet::new();
    collect_keys(&table, "", &mut explicit);
    check(&table)?;
    checked(table, origin.to_string(), explicit)
}

/// The config of a whole TOML `table` (file and settings applied), its
/// keys' errors naming the full key, checked whole ([`validate`]); the
/// loader's warnings are left empty.
fn checked(
    table: toml::Table,
    origin: String,
    explicit: BTreeSet<String>,
) -> Result<LoadedConfig, InputError> {
    let config: Config = match serde_path_to_error::deserialize(table.clone()) {
        Ok(config) => config,
        Err(e) => {
            let path = e.path().to_string();
            let inner = e.into_inner().to_string();
            return Err(enum_type_error(&table, &path, &inner)
                .unwrap_or_else(|| serde_error(&path, &inner)));
        }
    };
    validate(&config)?;
    Ok(LoadedConfig {
        config,
        origin,
        explicit,
        given: table,
        unused_scheme_keys: Vec::new(),
        threshold_warnings: Vec::new(),
        unused_model_keys: Vec::new(),
        model_warnings: Vec::new(),
    })
}

/// A string no key takes as a name: put in place of a value of the wrong
/// type, it makes a key that takes one of a list of names say the list.
pub(crate) const NO_NAME: &str = "\u{1}";

/// `{given} is not one of "a", "b"` when `probe` is serde's message for
/// [`NO_NAME`] at a key that takes names (`unknown variant ..., expected
/// `a` or `b``); None for any other message (a key of another type).
pub(crate) fn not_one_of(given: &toml::Value, probe: &str) -> Option<String> {
    // The toml deserializer appends a line "in `path`".
    let message = probe.lines().next().unwrap_or("");
    let expected = message.strip_prefix(&format!("unknown variant `{NO_NAME}`, expected "))?;
    let names: Vec<String> = expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|name| format!("\"{name}\""))
        .collect();
    if names.is_empty() || given.is_str() {
        return None;
    }
    Some(format!("{given} is not one of {}", names.join(", ")))
}

/// `table` with the value at the dotted `path` replaced by [`NO_NAME`],
/// and the value it had; None when `path` is not a key of nested tables or
/// its value is a string (a name already: its error says so).
pub(crate) fn probe_names(table: &toml::Table, path: &str) -> Option<(toml::Table, toml::Value)> {
    let mut probe = table.clone();
    let (parents, key) = match path.rsplit_once('.') {
        Some((parents, key)) => (Some(parents), key),
        None => (None, path),
    };
    let mut section = &mut probe;
    for name in parents.into_iter().flat_map(|p| p.split('.')) {
        section = section.get_mut(name)?.as_table_mut()?;
    }
    let value = section.get_mut(key)?;
    if value.is_str() {
        return None;
    }
    let given = std::mem::replace(value, toml::Value::from(NO_NAME));
    Some((probe, given))
}

/// A value of the wrong type (an integer, a boolean, an array, a table)
/// where a key takes one of a list of names: the key, the value given and
/// the names (`model.precision: 32 is not one of "f64", "f32"`), for every
/// such key alike. serde's own message names neither the value nor the
/// names; the names are found by deserializing the table again with the
/// value replaced by [`NO_NAME`], which every such key refuses with its
/// list. None when the error is another one.
fn enum_type_error(table: &toml::Table, path: &str, message: &str) -> Option<InputError> {
    if !message.starts_with("invalid type:") {
        return None;
    }
    let (probe, given) = probe_names(table, path)?;
    let e = serde_path_to_error::deserialize::<_, Config>(probe).err()?;
    if e.path().to_string() != path {
        return None;
    }
    let rule = not_one_of(&given, &e.into_inner().to_string())?;
    Some(InputError::new(path, rule))
}

/// Turn a serde error at `path` into an error naming the full key.
pub(crate) fn serde_error(path: &str, message: &str) -> InputError {
    let path = if path == "." { "" } else { path };
    // The toml deserializer appends " in `path`", which the field already says.
    let message = message.split_whitespace().collect::<Vec<_>>().join(" ");
    let message = match message.rfind(" in `") {
        Some(i) if message.ends_with('`') => &message[..i],
        _ => &message,
    };
    if let Some(rest) = message.strip_prefix("unknown field `") {
        if let Some((key, expected)) = rest.split_once('`') {
            let expected = expected.trim_start_matches(',').trim();
            // The path may or may not end with the unknown key itself.
            let field = if path == key || path.ends_with(&format!(".{key}")) {
                path.to_string()
            } else if path.is_empty() {
                key.to_string()
            } else {
                format!("{path}.{key}")
            };
            return InputError::new(field, format!("unknown key ({expected})"));
        }
    }
    if let Some(rest) = message.strip_prefix("unknown variant `") {
        if let Some((value, expected)) = rest.split_once('`') {
            let expected = expected.trim_start_matches(',').trim();
            return InputError::value(
                path,
                format!("\"{value}\""),
                format!("is not known ({expected})"),
            );
        }
    }
    InputError::new(if path.is_empty() { "config" } else { path }, message)
}

/// 1-based line and column of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

pub(crate) fn collect_keys(table: &toml::Table, prefix: &str, out: &mut BTreeSet<String>) {
    for (key, value) in table {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            toml::Value::Table(t) => collect_keys(t, &path, out),
            _ => {
                out.insert(path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(text: &str, overrides: &[&str]) -> LoadedConfig {
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        parse(text, "test.toml", &overrides).unwrap()
    }

    fn parse_err(text: &str, overrides: &[&str]) -> InputError {
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        parse(text, "test.toml", &overrides).unwrap_err()
    }

    #[test]
    fn each_schedule_key_is_checked_and_read_by_its_schedule_only() {
        for (text, field, rule) in [
            (
                "schedule = \"step\"",
                "train.milestones",
                "is required with",
            ),
            (
                "schedule = \"step\"\nmilestones = []",
                "train.milestones",
                "is required with",
            ),
            (
                "schedule = \"step\"\nmilestones = [5, 5]",
                "train.milestones",
                "strictly increasing",
            ),
            (
                "schedule = \"step\"\nmilestones = [0, 5]",
                "train.milestones",
                "≥ 1",
            ),
            (
                "schedule = \"step\"\nmilestones = [5]\ngamma = 0.0",
                "train.gamma",
                "(0, 1]",
            ),
            (
                "schedule = \"step\"\nmilestones = [5]\ngamma = 1e300",
                "train.gamma",
                "(0, 1]",
            ),
            (
                "schedule = \"step\"\nmilestones = [5]\ngamma = nan",
                "train.gamma",
                "(0, 1]",
            ),
            (
                "milestones = [5]",
                "train.milestones",
                "read only with train.schedule = \"step\"",
            ),
            (
                "schedule = \"cosine\"\ngamma = 0.5",
                "train.gamma",
                "read only with",
            ),
            (
                "min_learning_rate = 0.01",
                "train.min_learning_rate",
                "\"cosine\"",
            ),
            (
                "schedule = \"cosine\"\nmin_learning_rate = 0.2",
                "train.min_learning_rate",
                "[0, train.learning_rate]",
            ),
            (
                "schedule = \"cosine\"\nmin_learning_rate = -1.0",
                "train.min_learning_rate",
                "[0, train.learning_rate]",
            ),
            (
                "warmup_iterations = 101",
                "train.warmup_iterations",
                "at most train.iterations",
            ),
        ] {
            let e = parse_err(&format!("[train]\n{text}\n"), &[]);
            assert_eq!(e.field, field, "{text}: {e}");
            assert!(e.to_string().contains(rule), "{text}: {e}");
        }
        let ok = parse_ok(
            "[train]\nschedule = \"cosine\"\nmin_learning_rate = 0.01\nwarmup_iterations = 10\n",
            &[],
        );
        assert_eq!(ok.config.train.min_learning_rate, Some(0.01));
        // The config the master sends its workers keeps them.
        let again = parse_ok(&ok.config.to_toml(), &[]);
        assert_eq!(again.config.train, ok.config.train);
    }

    #[test]
    fn empty_config_takes_every_default() {
        let loaded = parse_ok("", &[]);
        assert_eq!(loaded.config, Config::default());
        assert!(loaded.explicit.is_empty());
    }

    #[test]
    fn overrides_parse_toml_values_and_bare_strings() {
        let loaded = parse_ok(
            "workers = 12\n[scheme]\nkind = \"gc-sc\"\nclusters = 4\n",
            &[
                "scheme.load=3",
                "scheme.kind=gc-cyclic",
                "straggler.mu=2.5",
                "scheme.clusters=1",
            ],
        );
        let scheme = &loaded.config.scheme;
        assert_eq!(scheme.params["load"], toml::Value::Integer(3));
        assert_eq!(scheme.params["clusters"], toml::Value::Integer(1));
        assert_eq!(scheme.kind, "gc-cyclic");
        assert_eq!(loaded.config.straggler.mu, 2.5);
        assert!(loaded.explicit.contains("straggler.mu"));
    }

    #[test]
    fn override_of_array_value() {
        let loaded = parse_ok(
            "[scheme]\nkind = \"gc-sc\"\nclusters = 2\n",
            &["workers=4", "scheme.assignment=[[1, 2], [3, 4]]"],
        );
        let expected: toml::Table = toml::from_str("assignment = [[1, 2], [3, 4]]").unwrap();
        assert_eq!(
            loaded.config.scheme.params["assignment"],
            expected["assignment"]
        );
    }

    #[test]
    fn unknown_key_names_its_full_path() {
        let e = parse_err("", &["train.iteratons=5"]);
        assert_eq!(e.field, "train.iteratons");
        assert!(e.to_string().contains("unknown key"), "{e}");
        let e = parse_err("wrokers = 3\n", &[]);
        assert_eq!(e.field, "wrokers");
    }

    #[test]
    fn scheme_keys_are_taken_as_given() {
        // Only the loader (`setup`) knows which keys and names the schemes declare.
        let loaded = parse_ok("[scheme]\nkind = \"gc-magic\"\nloda = \"two\"\n", &[]);
        assert_eq!(loaded.config.scheme.kind, "gc-magic");
        assert_eq!(loaded.config.scheme.params.len(), 1);
        assert!(loaded.unused_keys().is_empty());
        let e = parse_err("[scheme]\nkind = 3\n", &[]);
        assert_eq!(e.field, "scheme.kind");
    }

    #[test]
    fn wrong_type_names_the_key() {
        let e = parse_err("[train]\niterations = \"two\"\n", &[]);
        assert_eq!(e.field, "train.iterations");
    }

    #[test]
    fn a_value_of_another_type_for_a_named_choice_lists_the_choices() {
        let e = parse_err("[model]\nprecision = 32\n", &[]);
        assert_eq!(e.field, "model.precision");
        assert_eq!(
            e.to_string(),
            "model.precision: 32 is not one of \"f64\", \"f32\""
        );
        let e = parse_err("", &["model.precision=32"]);
        assert_eq!(
            e.to_string(),
            "model.precision: 32 is not one of \"f64\", \"f32\""
        );
        // Every key that takes a name, whatever the wrong type.
        for (key, value, names) in [
            (
                "data.kind",
                "true",
                "\"synthetic-linear\", \"synthetic-logistic\"",
            ),
            ("data.format", "[1, 2]", "\"auto\", \"dense\", \"sparse\""),
            ("model.loss", "0", "\"least-squares\", \"logistic\""),
            ("train.optimizer", "1979-05-27", "\"gd\", \"nesterov\""),
            (
                "train.schedule",
                "2",
                "\"constant\", \"inverse-time\", \"step\", \"cosine\"",
            ),
            ("straggler.model", "7", "\"shifted-exponential\""),
            ("straggler.state_info", "7", "\"imperfect\", \"perfect\""),
            ("straggler.mode", "7", "\"emulate\", \"measured\""),
            ("runtime.wait", "7", "\"auto\", \"spin\", \"backoff\""),
            ("runtime.aggregate", "7", "\"gather\", \"reduce\", \"auto\""),
        ] {
            let (section, name) = key.split_once('.').unwrap();
            let e = parse_err(&format!("[{section}]\n{name} = {value}\n"), &[]);
            assert_eq!(e.field, key);
            let line = e.to_string();
            assert!(
                line.starts_with(&format!("{key}: {value} is not one of "))
                    && line.contains(names)
                    && !line.contains("invalid type"),
                "{line}"
            );
        }
        // Other type errors keep serde's words, which name the type.
        let e = parse_err("[train]\niterations = \"two\"\n", &[]);
        assert!(e.to_string().contains("invalid type"), "{e}");
    }

    #[test]
    fn unknown_variant_names_the_key_and_the_choices() {
        let e = parse_err("[straggler]\nmodel = \"pareto\"\n", &[]);
        assert_eq!(e.field, "straggler.model");
        assert!(e.to_string().contains("gilbert-elliott"), "{e}");
    }

    #[test]
    fn compare_variants_change_kind_and_keys() {
        let loaded = parse_ok(
            "[scheme]\nkind = \"gc-sc\"\nclusters = 4\nload = 2\n[simulate]\ncompare = [\"gc\", \"gc-sc\", { name = \"v\", kind = \"gc-dc\", set = { clusters = 2 } }]\n",
            &[],
        );
        let c = &loaded.config;
        let kinds: Vec<&str> = c.simulate.compare.iter().map(CompareEntry::kind).collect();
        assert_eq!(kinds, ["gc-cyclic", "gc-sc", "gc-dc"]);
        let v = c.for_entry(&c.simulate.compare[2]).unwrap();
        assert_eq!(v.scheme.kind, "gc-dc");
        assert_eq!(v.scheme.params["clusters"], toml::Value::Integer(2));
        assert_eq!(v.scheme.params["load"], toml::Value::Integer(2));
        assert_eq!(c.for_entry(&c.simulate.compare[0]).unwrap(), *c);
        let with_kind = parse_ok(
            "[simulate]\ncompare = [{ name = \"v\", kind = \"gc-dc\", set = { kind = \"gc-sc\" } }]\n",
            &[],
        );
        let c = &with_kind.config;
        let e = c.for_entry(&c.simulate.compare[0]).unwrap_err();
        assert_eq!(e.field, "simulate.compare.v.set.kind");
    }

    #[test]
    fn syntax_error_gives_file_line_and_column() {
        let e = parse_err("workers = 12\n[scheme\n", &[]);
        assert!(e.field.starts_with("test.toml:2:"), "{}", e.field);
        assert!(!e.to_string().contains('\n'));
    }

    #[test]
    fn override_into_a_value_that_is_not_a_section_fails() {
        let e = parse_err("workers = 4\n", &["workers.x=1"]);
        assert!(e.to_string().contains("workers is not a section"), "{e}");
        let e = parse_err("", &["workers.x=1"]);
        assert_eq!(e.field, "workers");
        let e = parse_err("", &["noequals"]);
        assert_eq!(e.field, "--set");
    }

    #[test]
    fn unused_straggler_keys_are_reported() {
        let loaded = parse_ok(
            "[straggler]\nmodel = \"shifted-exponential\"\nmu_fast = 2.0\n",
            &[],
        );
        assert_eq!(
            loaded.unused_keys(),
            ["straggler.mu_fast is set but not used by straggler.model = shifted-exponential"]
        );
    }

    #[test]
    fn resolved_config_round_trips_through_toml() {
        let loaded = parse_ok(DEMO_TOML, &[]);
        let again = parse_ok(&loaded.config.to_toml(), &[]);
        assert_eq!(loaded.config, again.config);
    }

    #[test]
    fn huge_worker_counts_are_refused_before_anything_is_allocated() {
        let e = parse_err("workers = 4097\n", &[]);
        assert_eq!(e.field, "workers");
        assert!(e.to_string().contains("more than 4096"), "{e}");
        // validate allocates one flag per worker for delayed_workers: never for such K.
        let e = parse_err(&format!("workers = {}\n", i64::MAX), &[]);
        assert_eq!(e.field, "workers");
        let e = parse_err("", &["workers=1e18"]);
        assert_eq!(e.field, "workers");
        let max = parse_ok("workers = 4096\n[data]\ntrain_samples = 4096\n", &[]);
        assert_eq!(max.config.workers, 4096);
    }

    #[test]
    fn config_files_are_read_up_to_one_mib() {
        // A device never ends: refused before a byte is read.
        let e = load(Some(Path::new("/dev/zero")), &[]).unwrap_err();
        assert_eq!(e.field, "--config");
        assert!(
            e.to_string()
                .contains("/dev/zero: is a character device, not a regular file"),
            "{e}"
        );
        let dir = tempfile::Builder::new()
            .prefix("gradcode-config-")
            .tempdir()
            .unwrap();
        // Exactly 1 MiB of comments is a valid (empty) config; one byte more is not.
        let path = dir.path().join("big.toml");
        let mut text = "#".repeat(MAX_CONFIG_BYTES as usize - 1);
        text.push('\n');
        std::fs::write(&path, &text).unwrap();
        assert!(load(Some(&path), &[]).is_ok());
        text.push('\n');
        std::fs::write(&path, &text).unwrap();
        let e = load(Some(&path), &[]).unwrap_err();
        assert!(e.to_string().contains("is larger than"), "{e}");
        std::fs::write(&path, b"workers = 3\n\xff\n").unwrap();
        let e = load(Some(&path), &[]).unwrap_err();
        assert!(e.to_string().contains("not UTF-8"), "{e}");
    }

    #[test]
    fn line_column_counts_from_one() {
        assert_eq!(line_column("ab\ncd", 0), (1, 1));
        assert_eq!(line_column("ab\ncd", 4), (2, 2));
    }
}
