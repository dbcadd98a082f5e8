//! Gradient codes: placement, per-iteration assignment and decoding.
//!
//! A scheme is one implementation of [`Scheme`], picked by name at run time
//! through the registry ([`SCHEMES`], in `schemes.rs`: the one place that maps
//! `scheme.kind` to a type; each scheme's file declares its parameters and
//! its entry there). A
//! scheme is pure: it plans what every worker computes in an iteration
//! ([`RoundPlan`]), says when the messages received so far suffice
//! ([`ArrivalTracker`]) and turns them into decoding weights ([`Decoding`]).
//! The iteration engine (`crate::engine`: its stop rule, driver and rounds,
//! simulated or MPI) calls these and nothing else, so no scheme logic is
//! written twice.
//!
//! Worker and partition ids are 0-based here; everything a person reads
//! (config, CLI, JSON) is 1-based.
mod approximate;
mod decoding;
mod dynamic;
mod error;
mod fixed_plan;
mod group;
mod isgc;
mod mds;
mod mmc;
mod options;
mod params;
mod partial;
mod plan;
pub mod registry;
mod scheme;
mod schemes;
mod static_code;

pub use approximate::{
    AGC_BGC, AGC_BIBD, AGC_EXPANDER, AGC_FRC, AGC_GRAPH, AgcBgcParams, AgcBibdParams,
    AgcExpanderParams, AgcFrcParams, AgcGraphParams, BernoulliCode, BlockDesignCode, DecoderKind,
    ERASUREHEAD, ErasureHeadParams, ExpanderCode, FrcCode, GraphCode, GraphKind, MAX_CODE_SIZE,
    SGC, SgcParams, StochasticCode, expected_error_per_partition,
};
pub use decoding::{Accuracy, Arrival, Decoding, EXACT_RELATIVE_ERROR, GroupDecoding};
pub use dynamic::{
    ClusteringKind, ClusteringTotals, DynamicClustering, GC_DC, GcDcParams, clustering_policy,
    dynamic_clustering,
};
pub use error::CodingError;
pub use group::{GroupDecoder, MAX_CACHE_BYTES};
pub use isgc::{
    IS_GC, IgnoreStragglerCode, IsGcParams, Layout as IsgcLayout, Placement, WaitPolicy,
};
pub use mds::{CyclicMds, MAX_CONSTRUCTION_WORK, STRUCTURED_MIN_SIZE, Solution};
pub use mmc::{
    ACCURACY_SAMPLES, GC_MMC, GcMmcParams, MmcDesign, MultiMessageCode, UC_MMC, UcMmcParams,
    UncorrelatedCode,
};
pub use options::{
    CodeOptions, CodeParams, DEFAULT_DECODE_TOLERANCE, MAX_CODE_DRAWS, MAX_DECODE_CACHE_ENTRIES,
    MIN_DECODE_TOLERANCE,
};
pub(crate) use options::{DEFAULT_CLUSTERS, DEFAULT_LOAD, check_deadline};
pub use partial::{GC_PARTIAL, GcPartialParams, PartialStragglerCode};
pub use plan::{Codeword, CodewordId, Message, RoundContext, RoundPlan, WorkerTask};
pub use registry::{BuildArgs, Registry, SchemeEntry, SchemeParams};
pub use scheme::{ArrivalTracker, LowerBound, Scheme, Tolerance};
pub use schemes::{SCHEMES, build, build_kind};
pub use static_code::{
    GC_CYCLIC, GC_FRAC, GC_SC, GcCyclicParams, GcFracParams, GcScParams, IGNORE_STRAGGLERS,
    IgnoreStragglersParams, StaticCode, UNCODED,
};
