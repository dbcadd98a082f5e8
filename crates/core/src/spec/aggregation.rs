//! `runtime.aggregate` resolved: how the master collects one iteration's
//! coded vectors.

use serde::Serialize;

use crate::config::RuntimeAggregate;

/// What `runtime.aggregate` resolves to for a run (`auto` decided);
/// serialised as its [`Aggregation::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Aggregation {
    /// Every result carries its vector to the master.
    #[default]
    Gather,
    /// Results are headers; the decodable set reduces its vectors and one
    /// of them sends the sum.
    Reduce,
}

impl Aggregation {
    /// `aggregate` for a run of `dim` parameters; `one_node`: every rank on
    /// the master's node ([`RuntimeAggregate::reduces`]).
    pub fn resolve(aggregate: RuntimeAggregate, dim: usize, one_node: bool) -> Self {
        if aggregate.reduces(dim, one_node) {
            Self::Reduce
        } else {
            Self::Gather
        }
    }

    /// "gather" or "reduce", as summaries and traces write it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Gather => "gather",
            Self::Reduce => "reduce",
        }
    }

    /// Whether the vectors are reduced among the workers.
    pub fn reduces(self) -> bool {
        self == Self::Reduce
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_resolves_as_runtime_aggregate_reduces() {
        let big = RuntimeAggregate::AUTO_REDUCE_BYTES / 8;
        assert_eq!(
            Aggregation::resolve(RuntimeAggregate::Auto, big, false),
            Aggregation::Reduce
        );
        assert_eq!(
            Aggregation::resolve(RuntimeAggregate::Auto, big, true),
            Aggregation::Gather
        );
        assert_eq!(
            Aggregation::resolve(RuntimeAggregate::Auto, 10, false),
            Aggregation::Gather
        );
        assert_eq!(
            Aggregation::resolve(RuntimeAggregate::Reduce, 1, true).name(),
            "reduce"
        );
        assert_eq!(
            Aggregation::resolve(RuntimeAggregate::Gather, big, false).name(),
            "gather"
        );
        assert!(Aggregation::Reduce.reduces() && !Aggregation::Gather.reduces());
    }

    #[test]
    fn it_serialises_as_its_name() {
        for a in [Aggregation::Gather, Aggregation::Reduce] {
            let value = toml::Value::try_from(a).unwrap();
            assert_eq!(value.as_str(), Some(a.name()));
        }
    }
}
