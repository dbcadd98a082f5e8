//! The schemes this build knows: one line each. Adding a scheme is its file
//! (its parameters and `static` entry, see `registry`) and one line here.

use super::registry::Registry;
use super::{CodingError, Scheme};
use crate::config::Config;

/// Every scheme this build knows, in the order errors and the reference
/// config list them. Adding a scheme is one line here.
pub static SCHEMES: Registry = Registry::new(&[
    &super::static_code::UNCODED,
    &super::static_code::IGNORE_STRAGGLERS,
    &super::static_code::GC_FRAC,
    &super::static_code::GC_CYCLIC,
    &super::static_code::GC_SC,
    &super::dynamic::GC_DC,
    &super::isgc::IS_GC,
    &super::mmc::GC_MMC,
    &super::mmc::UC_MMC,
    &super::partial::GC_PARTIAL,
    &super::approximate::AGC_EXPANDER,
    &super::approximate::AGC_FRC,
    &super::approximate::AGC_BGC,
    &super::approximate::AGC_GRAPH,
    &super::approximate::AGC_BIBD,
    &super::approximate::SGC,
    &super::approximate::ERASUREHEAD,
]);

/// Build the scheme `kind` (a registered name) with the `[scheme]` keys of
/// `config`; its constructor checks its parameters' limits. Configs from the
/// loader (`setup`) have had their keys and types checked already.
pub fn build_kind(kind: &str, config: &Config) -> Result<Box<dyn Scheme>, CodingError> {
    SCHEMES.build_kind(kind, config)
}

/// Build the scheme of `scheme.kind`.
pub fn build(config: &Config) -> Result<Box<dyn Scheme>, CodingError> {
    build_kind(config.scheme.kind.as_str(), config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coding::{BuildArgs, RoundContext};
    use crate::config::Config;

    #[test]
    fn names_are_unique_and_lookups_find_them() {
        let names = SCHEMES.names();
        for (i, name) in names.iter().enumerate() {
            assert!(!names[..i].contains(name), "{name} registered twice");
            assert_eq!(SCHEMES.get(name).unwrap().name(), *name);
        }
        assert!(SCHEMES.get("gc-magic").is_none());
        assert!(SCHEMES.get(crate::config::DEFAULT_SCHEME).is_some());
        assert!(SCHEMES.get(crate::config::GC_SCHEME).is_some());
    }

    /// `graph = "margulis"` builds agc-expander's explicit family (K = 9,
    /// d = 8) and is refused by agc-graph, naming the key.
    #[test]
    fn the_margulis_graph_is_agc_expanders_only() {
        let scheme = |kind: &str| {
            let text = format!(
                "workers = 9\n[scheme]\nkind = \"{kind}\"\ndegree = 8\ngraph = \"margulis\"\nwait_for = 7\n"
            );
            let config = crate::config::parse(&text, "test", &[]).unwrap().config;
            build(&config)
        };
        let expander = scheme("agc-expander").unwrap();
        assert_eq!(expander.partitions(), 9);
        let Err(e) = scheme("agc-graph") else {
            panic!("agc-graph built on the Margulis graph");
        };
        let e = e.to_string();
        assert!(
            e.contains("scheme.graph") && e.contains("random-regular"),
            "{e}"
        );
    }

    #[test]
    fn param_reads_the_config_or_the_shared_default() {
        let mut config = Config::default();
        assert_eq!(SCHEMES.param::<usize>(&config, "load").unwrap(), 2);
        assert_eq!(
            SCHEMES.param::<Option<usize>>(&config, "wait_for").unwrap(),
            None
        );
        config
            .scheme
            .params
            .insert("load".into(), toml::Value::Integer(5));
        assert_eq!(SCHEMES.param::<usize>(&config, "load").unwrap(), 5);
        assert_eq!(
            SCHEMES
                .param::<usize>(&config, "wait_for")
                .unwrap_err()
                .field,
            "scheme.wait_for"
        );
    }

    #[test]
    fn an_unknown_kind_is_an_error_listing_the_names() {
        let Err(e) = SCHEMES.build_kind("gc-magic", &Config::default()) else {
            panic!("an unknown kind was built");
        };
        let message = e.to_string();
        assert!(message.starts_with("scheme.kind = \"gc-magic\" is not known"));
        for name in SCHEMES.names() {
            assert!(message.contains(&format!("`{name}`")), "{message}");
        }
    }

    /// Every fixed-plan scheme answers through its `FixedPlan` what its
    /// plan says: K tasks, computed partitions stored, the same plan twice.
    #[test]
    fn fixed_plans_are_consistent_and_repeat() {
        // Every scheme's defaults at K = 12; ignore-stragglers needs a wait.
        let params: toml::Table = toml::from_str("wait_for = 6\n").unwrap();
        for entry in SCHEMES.entries() {
            // agc-bibd needs a projective plane's size (13 = 3² + 3 + 1).
            let k = if **entry == crate::coding::AGC_BIBD {
                13
            } else {
                12
            };
            let mut scheme = entry
                .build(&BuildArgs::new(k, 1, &params))
                .unwrap_or_else(|e| panic!("{entry}: {e}"));
            assert_eq!(scheme.kind(), *entry);
            let ctx = RoundContext::default();
            let plan = scheme.plan_round(&ctx);
            assert_eq!(plan.tasks.len(), scheme.workers(), "{entry}");
            for (w, task) in plan.tasks.iter().enumerate() {
                for p in &task.compute {
                    assert!(*p < scheme.partitions(), "{entry}");
                    assert!(scheme.stored(w).contains(p), "{entry}: worker {w}");
                }
            }
            if **entry != crate::coding::GC_DC {
                assert_eq!(scheme.plan_round(&ctx), plan, "{entry}: a fixed plan");
            }
        }
    }
}
