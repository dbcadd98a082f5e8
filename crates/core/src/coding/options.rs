//! What several schemes share: the defaults of `scheme.load` and
//! `scheme.clusters`, the numerical options of every real-valued code and
//! the limits of `scheme.deadline`.

use serde::{Deserialize, Serialize};

use super::CodingError;

/// The default of `scheme.load` (r), in every scheme that reads it.
pub(crate) const DEFAULT_LOAD: usize = 2;

/// The default of `scheme.clusters` (P), in every scheme that reads it.
pub(crate) const DEFAULT_CLUSTERS: usize = 1;

/// Numerical settings shared by every real-valued code (`scheme.code_draws`,
/// `scheme.decode_tolerance`, `scheme.decode_cache_entries`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CodeOptions {
    draws: usize,
    tolerance: f64,
    cache_entries: usize,
}

/// The most `scheme.code_draws`: every draw builds a whole code (a dense
/// K × K matrix, K small solves) to keep the best conditioned one, so the
/// setup time grows with the draws; 1024 draws of the K = 100, r = 10 code
/// take about a second, and the best of 8 already avoids the rare
/// near-singular draw the option exists for.
pub const MAX_CODE_DRAWS: usize = 1024;

/// The default `scheme.decode_tolerance`.
pub const DEFAULT_DECODE_TOLERANCE: f64 = 1e-8;

/// The smallest `scheme.decode_tolerance`: the residual |a·B_W − 1|_inf of
/// an f64 solve is a rounding error of at least about 1e-16 × the
/// amplification, so a tolerance below 1e-15 refuses sets that decode as
/// exactly as f64 allows.
pub const MIN_DECODE_TOLERANCE: f64 = 1e-15;

/// The most `scheme.decode_cache_entries`. Each entry holds one arrival set's
/// coefficients; whatever this says, a decoder keeps at most
/// [`MAX_CACHE_BYTES`](super::MAX_CACHE_BYTES) of them.
pub const MAX_DECODE_CACHE_ENTRIES: usize = 1 << 20;

impl CodeOptions {
    /// Limits: `1 <= draws <= MAX_CODE_DRAWS`; `MIN_DECODE_TOLERANCE <=
    /// tolerance < 1`; `1 <= cache_entries <= MAX_DECODE_CACHE_ENTRIES`.
    pub fn new(draws: usize, tolerance: f64, cache_entries: usize) -> Result<Self, CodingError> {
        if draws == 0 {
            return Err(CodingError::invalid(
                "scheme.code_draws",
                0,
                "must be at least 1",
            ));
        }
        if draws > MAX_CODE_DRAWS {
            return Err(CodingError::invalid(
                "scheme.code_draws",
                draws,
                format!(
                    "is more than {MAX_CODE_DRAWS}: every draw builds a whole code to keep the best conditioned, so the setup time grows with the draws (the default 8 already avoids a near-singular draw)"
                ),
            ));
        }
        if !(tolerance.is_finite() && tolerance > 0.0 && tolerance < 1.0) {
            return Err(CodingError::invalid(
                "scheme.decode_tolerance",
                tolerance,
                "must be in (0, 1)",
            ));
        }
        if tolerance < MIN_DECODE_TOLERANCE {
            return Err(CodingError::invalid(
                "scheme.decode_tolerance",
                tolerance,
                format!(
                    "is below {MIN_DECODE_TOLERANCE:e}: an f64 decode has a rounding residual of about 1e-16 × its amplification, so no set of a real-valued code would decode (default 1e-8)"
                ),
            ));
        }
        if cache_entries == 0 {
            return Err(CodingError::invalid(
                "scheme.decode_cache_entries",
                0,
                "must be at least 1",
            ));
        }
        if cache_entries > MAX_DECODE_CACHE_ENTRIES {
            return Err(CodingError::invalid(
                "scheme.decode_cache_entries",
                cache_entries,
                format!(
                    "is more than {MAX_DECODE_CACHE_ENTRIES} (every entry keeps one arrival set's coefficients; the default is 4096)"
                ),
            ));
        }
        Ok(Self {
            draws,
            tolerance,
            cache_entries,
        })
    }

    /// Random MDS matrices drawn per cyclic code; the best conditioned is kept.
    pub fn draws(&self) -> usize {
        self.draws
    }

    /// An arrival set decodes only if |a·B_W − 1|_inf is at most this.
    pub fn tolerance(&self) -> f64 {
        self.tolerance
    }

    /// Arrival sets whose coefficients are kept per code.
    pub fn cache_entries(&self) -> usize {
        self.cache_entries
    }
}

impl Default for CodeOptions {
    fn default() -> Self {
        Self {
            draws: 8,
            tolerance: DEFAULT_DECODE_TOLERANCE,
            cache_entries: 4096,
        }
    }
}

/// The `[scheme]` keys of every real-valued code, written once: a scheme's
/// parameter struct embeds this block as its field `code`
/// ([`CODE_FIELD`](super::registry::CODE_FIELD)), and the registry reads its
/// keys at the top level of `[scheme]` (`scheme.code_draws`), in the
/// struct's place among the scheme's own keys.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CodeParams {
    /// Random MDS matrices drawn, the best conditioned kept.
    pub code_draws: usize,
    /// An arrival set decodes only if |a·B_W − 1|_inf is at most this.
    pub decode_tolerance: f64,
    /// Arrival sets whose coefficients are cached.
    pub decode_cache_entries: usize,
}

impl Default for CodeParams {
    fn default() -> Self {
        let code = CodeOptions::default();
        Self {
            code_draws: code.draws(),
            decode_tolerance: code.tolerance(),
            decode_cache_entries: code.cache_entries(),
        }
    }
}

impl CodeParams {
    /// The options, their limits checked ([`CodeOptions::new`]).
    pub fn options(&self) -> Result<CodeOptions, CodingError> {
        CodeOptions::new(
            self.code_draws,
            self.decode_tolerance,
            self.decode_cache_entries,
        )
    }
}

/// `scheme.deadline`'s limits: a finite model time > 0.
pub(crate) fn check_deadline(deadline: Option<f64>) -> Result<(), CodingError> {
    match deadline {
        Some(d) if !(d.is_finite() && d > 0.0) => Err(CodingError::invalid(
            "scheme.deadline",
            d,
            "must be a finite model time > 0",
        )),
        _ => Ok(()),
    }
}
