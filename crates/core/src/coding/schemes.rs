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

    /// The least-squares error ‖a·B_S − 1‖₂ of the arrivals `alive`, by a
    /// route of its own: the pseudo-inverse of the Gram matrix B_S·B_Sᵀ
    /// (a self-adjoint eigendecomposition), a = B_S·1·(B_S·B_Sᵀ)⁺.
    fn gram_least_squares_error(plan: &crate::coding::RoundPlan, alive: &[usize], n: usize) -> f64 {
        let b = faer::Mat::<f64>::from_fn(alive.len(), n, |i, p| {
            let terms = &plan.tasks[alive[i]].messages[0].codeword.terms;
            terms
                .iter()
                .filter(|&&(q, _)| q == p)
                .map(|&(_, c)| c)
                .sum()
        });
        let gram = &b * b.transpose();
        let pinv = gram
            .self_adjoint_eigen(faer::Side::Lower)
            .unwrap()
            .pseudoinverse();
        let rhs = faer::Mat::<f64>::from_fn(alive.len(), 1, |i, _| (0..n).map(|p| b[(i, p)]).sum());
        let a = &pinv * &rhs;
        (0..n)
            .map(|p| {
                let c: f64 = (0..alive.len()).map(|i| a[(i, 0)] * b[(i, p)]).sum();
                (c - 1.0).powi(2)
            })
            .sum::<f64>()
            .sqrt()
    }

    /// Every approximate family's optimal decoder attains the least-squares
    /// minimum of ‖a·B_S − 1‖₂ on random survivor sets, small codes (their
    /// components solved densely) and large ones (CGLS), against an
    /// independent solve.
    #[test]
    fn every_optimal_decode_attains_the_least_squares_minimum() {
        use crate::coding::Arrival;
        use crate::rng::{Stream, stream};
        use rand::RngExt;
        let mut rng = stream(11, Stream::CheckSampling);
        for (kind, k, keys) in [
            ("agc-expander", 12, "degree = 3\ndecoder = \"optimal\""),
            ("agc-expander", 150, "degree = 4\ndecoder = \"optimal\""),
            ("agc-bgc", 12, "load = 3\ndecoder = \"optimal\""),
            ("agc-bgc", 150, "load = 6\ndecoder = \"optimal\""),
            ("agc-bibd", 13, "decoder = \"optimal\""),
            ("agc-bibd", 133, "decoder = \"optimal\""),
            ("agc-frc", 12, "load = 3\ndecoder = \"optimal\""),
            ("agc-frc", 150, "load = 3\ndecoder = \"optimal\""),
            ("erasurehead", 150, "load = 5"),
            ("agc-graph", 15, "degree = 3\ndecoder = \"optimal\""),
            ("agc-graph", 150, "degree = 4\ndecoder = \"optimal\""),
        ] {
            let params: toml::Table =
                toml::from_str(&format!("{keys}\nwait_for = {}\n", k / 2)).unwrap();
            let entry = SCHEMES.get(kind).unwrap();
            let mut scheme = entry
                .build(&BuildArgs::new(k, 1, &params))
                .unwrap_or_else(|e| panic!("{kind}: {e}"));
            let n = scheme.partitions();
            let plan = scheme.plan_round(&RoundContext::default());
            for _ in 0..12 {
                let keep = rng.random_range(0.4..1.0);
                let alive: Vec<usize> = (0..k).filter(|_| rng.random::<f64>() < keep).collect();
                let arrivals: Vec<Arrival> = alive.iter().map(|&w| Arrival::only(w)).collect();
                let decoding = scheme.decode(&plan, &arrivals);
                let e = decoding.error(&plan, &arrivals, n, &mut Vec::new());
                let want = gram_least_squares_error(&plan, &alive, n);
                assert!(
                    (e - want).abs() <= 1e-7 * want.max(1.0),
                    "{kind}, K = {k}, {} alive: decode {e}, least squares {want}",
                    alive.len()
                );
            }
        }
    }

    /// An approximate code past MAX_CODE_SIZE workers is refused naming
    /// `workers` and the bound; one at the bound builds.
    #[test]
    fn an_approximate_code_past_the_size_bound_is_refused() {
        let max = crate::coding::MAX_CODE_SIZE;
        let params: toml::Table = toml::from_str("load = 2\nwait_for = 2\n").unwrap();
        let entry = SCHEMES.get("agc-frc").unwrap();
        assert!(entry.build(&BuildArgs::new(max, 1, &params)).is_ok());
        let Err(e) = entry.build(&BuildArgs::new(max + 2, 1, &params)) else {
            panic!("a code of {} workers was built", max + 2);
        };
        let e = e.to_string();
        assert!(e.contains("workers") && e.contains(&max.to_string()), "{e}");
    }
}
