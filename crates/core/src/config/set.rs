//! One `section.key=value` setting, as `--set` reads it, and a loaded config
//! with settings applied to it ([`LoadedConfig::with_settings`]): how `sweep`
//! and `advise` make their variants from one typed base config, with the
//! checks and the error text of `--set` on a config file.

use std::collections::BTreeSet;

use super::{LoadedConfig, checked, collect_keys};
use crate::error::InputError;

/// A dotted key and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    /// `section.key`, each part non-empty.
    key: String,
    value: toml::Value,
    /// What the setting was read from (`key=value`), for errors.
    text: String,
}

impl Setting {
    /// Read `section.key=value` as `--set` does: the value as a TOML value
    /// (`4`, `1e-9`, `true`, `[1, 2]`, `"x"`), and as a bare string when it
    /// is not one. Errors name `--set`.
    pub fn parse(item: &str) -> Result<Self, InputError> {
        let (key, raw) = item.split_once('=').ok_or_else(|| {
            InputError::value("--set", item, "is not of the form section.key=value")
        })?;
        Self::build(key.trim(), parse_value(raw.trim()), item.to_string())
    }

    /// `key` set to the value text `raw`, read as [`Self::parse`] reads
    /// `key=raw` (a grid's key and one of its values).
    pub fn from_text(key: &str, raw: &str) -> Result<Self, InputError> {
        Self::build(key.trim(), parse_value(raw.trim()), format!("{key}={raw}"))
    }

    /// `key` set to `value` (a typed value: no text is read); errors as
    /// [`Self::parse`]'s.
    pub fn new(key: &str, value: impl Into<toml::Value>) -> Result<Self, InputError> {
        let value = value.into();
        let text = format!("{key}={value}");
        Self::build(key, value, text)
    }

    /// Every part of the dotted key non-empty.
    fn build(key: &str, value: toml::Value, text: String) -> Result<Self, InputError> {
        if key.is_empty() || key.split('.').any(str::is_empty) {
            return Err(InputError::value("--set", &text, "has an empty key"));
        }
        Ok(Self {
            key: key.to_string(),
            value,
            text,
        })
    }

    /// The dotted key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Set the key in `table`, making the sections on its way; a part of
    /// the key that holds a value, not a section, is refused.
    pub(super) fn apply(&self, table: &mut toml::Table) -> Result<(), InputError> {
        let parts: Vec<&str> = self.key.split('.').collect();
        let (last, sections) = parts.split_last().expect("split yields at least one part");
        let mut current = table;
        for (depth, section) in sections.iter().enumerate() {
            let entry = current
                .entry(section.to_string())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            current = match entry {
                toml::Value::Table(t) => t,
                _ => {
                    let path = parts[..=depth].join(".");
                    return Err(InputError::new(
                        format!("--set {}", self.key),
                        format!("{path} is not a section"),
                    ));
                }
            };
        }
        current.insert(last.to_string(), self.value.clone());
        Ok(())
    }

    /// The keys this setting makes explicit, replacing those under it.
    fn mark_explicit(&self, explicit: &mut BTreeSet<String>) {
        let under = format!("{}.", self.key);
        explicit.retain(|k| *k != self.key && !k.starts_with(&under));
        match &self.value {
            toml::Value::Table(t) => collect_keys(t, &self.key, explicit),
            _ => {
                explicit.insert(self.key.clone());
            }
        }
    }
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// A raw value: TOML when it parses as one, else a bare string.
fn parse_value(raw: &str) -> toml::Value {
    let doc = format!("value = {raw}");
    match toml::from_str::<toml::Table>(&doc) {
        Ok(mut t) => t.remove("value").expect("parsed table has the key"),
        Err(_) => toml::Value::String(raw.to_string()),
    }
}

impl LoadedConfig {
    /// This config with `settings` applied in order, as `--set` applies
    /// them after a config file that holds this config, then checked whole
    /// (`validate`): the same errors as `--set`. The settings' keys become
    /// explicit; `[scheme]` is taken as given (the loader `setup` checks
    /// it), and the warnings the loader fills in are cleared.
    pub fn with_settings(&self, settings: &[Setting]) -> Result<LoadedConfig, InputError> {
        let mut table = match toml::Value::try_from(&self.config) {
            Ok(toml::Value::Table(t)) => t,
            _ => unreachable!("a Config always serialises to a TOML table"),
        };
        let mut explicit = self.explicit.clone();
        for setting in settings {
            setting.apply(&mut table)?;
            setting.mark_explicit(&mut explicit);
        }
        checked(table, self.origin.clone(), explicit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{DEMO_TOML, parse};

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    /// Settings on a loaded config give what the same `--set`s after its
    /// file give: the config, the explicit keys and the errors.
    #[test]
    fn settings_on_a_loaded_config_equal_set_on_its_file() {
        let file =
            "workers = 12\n[scheme]\nkind = \"gc-sc\"\nclusters = 4\n[straggler]\nmu = 2.0\n";
        let base = parse(file, "t.toml", &strings(&["simulate.trials=7"])).unwrap();
        let cases: [&[&str]; 5] = [
            &["scheme.load=3", "scheme.kind=gc-cyclic"],
            &["straggler={ model = \"time-varying\", switch_probability = 0.25 }"],
            &[
                "workers=6",
                "data.train_samples=60",
                "simulate.compare=[\"gc-sc\"]",
            ],
            &["scheme.assignment=[[1, 2], [3, 4]]"],
            &[],
        ];
        for items in cases {
            let mut all = strings(&["simulate.trials=7"]);
            all.extend(strings(items));
            let reloaded = parse(file, "t.toml", &all).unwrap();
            let settings: Vec<Setting> = items.iter().map(|i| Setting::parse(i).unwrap()).collect();
            let set = base.with_settings(&settings).unwrap();
            assert_eq!(set.config, reloaded.config, "{items:?}");
            assert_eq!(set.explicit, reloaded.explicit, "{items:?}");
        }
        // The straggler table replaced: the file's mu is explicit no more.
        let replaced = base
            .with_settings(&[Setting::parse("straggler={ model = \"none\" }").unwrap()])
            .unwrap();
        assert!(!replaced.explicit.contains("straggler.mu"));
        assert!(replaced.explicit.contains("straggler.model"));
        for bad in [
            &["workers=0"][..],
            &["train.iteratons=5"],
            &["workers=\"x\""],
        ] {
            let mut all = strings(&["simulate.trials=7"]);
            all.extend(strings(bad));
            let reloaded = parse(file, "t.toml", &all).unwrap_err();
            let settings: Vec<Setting> = bad.iter().map(|i| Setting::parse(i).unwrap()).collect();
            let set = base.with_settings(&settings).unwrap_err();
            assert_eq!(set.to_string(), reloaded.to_string(), "{bad:?}");
        }
    }

    #[test]
    fn a_setting_needs_a_key_and_a_section_path() {
        assert_eq!(Setting::parse("noequals").unwrap_err().field, "--set");
        let e = Setting::parse("a..b=1").unwrap_err();
        assert!(e.to_string().contains("has an empty key"), "{e}");
        assert!(Setting::new("", 1).is_err());
        assert_eq!(
            Setting::from_text("scheme.load", " 3").unwrap(),
            Setting::parse("scheme.load= 3").unwrap()
        );
        let base = parse(DEMO_TOML, "demo", &[]).unwrap();
        let e = base
            .with_settings(&[Setting::parse("workers.x=1").unwrap()])
            .unwrap_err();
        assert_eq!(e.field, "--set workers.x");
        assert!(e.to_string().contains("workers is not a section"), "{e}");
    }

    #[test]
    fn typed_values_equal_their_text() {
        let base = parse(DEMO_TOML, "demo", &[]).unwrap();
        let typed = base
            .with_settings(&[
                Setting::new("scheme.kind", "gc-sc").unwrap(),
                Setting::new("simulate.compare", toml::Value::Array(vec!["gc-sc".into()])).unwrap(),
                Setting::new("straggler.mu", 0.1 + 0.2).unwrap(),
            ])
            .unwrap();
        let text = base
            .with_settings(&[
                Setting::parse("scheme.kind=\"gc-sc\"").unwrap(),
                Setting::parse("simulate.compare=[\"gc-sc\"]").unwrap(),
                Setting::parse(&format!("straggler.mu={:?}", 0.1 + 0.2)).unwrap(),
            ])
            .unwrap();
        assert_eq!(typed.config, text.config);
        assert_eq!(typed.explicit, text.explicit);
    }
}
