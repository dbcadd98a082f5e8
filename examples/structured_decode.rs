//! The structured decoder of large cyclic codes against the dense solve
//! (`crates/core/src/coding/mds.rs`): for one code of K positions and load
//! r, decode random arrival sets of K − r + 1 + EXTRA positions both ways and
//! print the construction time, the time per solve of each, and how often
//! each fails the tolerance (1e-8, the default) where the other decodes.
//!
//! It asserts that every solution either way decodes (a·B_W = 1 within
//! twice the tolerance, recomputed from the code's rows) and, with
//! `--strict`, that no set decodes only densely (`scripts/test.sh` runs it
//! strict at K = 40, r = 10).
//!
//! `cargo run --release --example structured_decode -- K R SETS [EXTRA] [--strict]`.

use std::time::Instant;

use gradcode::coding::CyclicMds;
use gradcode::rng::{Stream, stream};
use rand::seq::SliceRandom;

fn main() {
    let strict = std::env::args().any(|a| a == "--strict");
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter(|a| a != "--strict")
        .map(|a| a.parse().expect("K R SETS [EXTRA]: whole numbers"))
        .collect();
    let [k, r, sets] = args[..3] else {
        panic!("usage: structured_decode K R SETS [EXTRA]");
    };
    let extra = args.get(3).copied().unwrap_or(0);
    let tolerance = 1e-8;
    let start = Instant::now();
    let code = CyclicMds::best_of(k, r, 8, &mut stream(1, Stream::Code)).expect("a code");
    let build = start.elapsed().as_secs_f64();
    let mut rng = stream(3, Stream::CheckSampling);
    let mut order: Vec<usize> = (0..k).collect();
    let (mut only_dense, mut only_structured, mut neither) = (0, 0, 0);
    let (mut structured_s, mut dense_s, mut first_s) = (0.0, 0.0, 0.0);
    for i in 0..sets {
        order.shuffle(&mut rng);
        let mut set = order[..(k - r + 1 + extra).min(k)].to_vec();
        set.sort_unstable();
        let t = Instant::now();
        let s = code.solve_structured(&set, tolerance);
        if i == 0 {
            first_s = t.elapsed().as_secs_f64();
        } else {
            structured_s += t.elapsed().as_secs_f64();
        }
        let t = Instant::now();
        let d = code.solve_dense(&set, tolerance);
        dense_s += t.elapsed().as_secs_f64();
        // Every solution either way decodes: a·B_W = 1 within the
        // tolerance, recomputed here from the code's rows.
        for (how, solution) in [("structured", &s), ("dense", &d)] {
            if let Some(solution) = solution {
                let mut sum = vec![0.0; k];
                for (&position, &a) in set.iter().zip(&solution.coefficients) {
                    for (column, b) in code.row(position) {
                        sum[column] += a * b;
                    }
                }
                let residual = sum.iter().map(|x| (x - 1.0).abs()).fold(0.0, f64::max);
                assert!(
                    residual <= 2.0 * tolerance,
                    "{how} solve of {set:?}: |a·B_W - 1| = {residual:e} above the tolerance {tolerance:e}"
                );
            }
        }
        match (s.is_some(), d.is_some()) {
            (false, true) => only_dense += 1,
            (true, false) => only_structured += 1,
            (false, false) => neither += 1,
            (true, true) => {}
        }
    }
    println!(
        "K={k} r={r} sets={sets} extra={extra}: build {build:.3} s; structured: first solve (factors) {first_s:.3} s, then {:.3e} s per set; dense {:.3e} s per set; decoded only densely {only_dense}, only by structure {only_structured}, by neither {neither}",
        structured_s / (sets.max(2) - 1) as f64,
        dense_s / sets.max(1) as f64,
    );
    assert!(
        !strict || only_dense == 0,
        "{only_dense} sets decoded only densely: the structured solve is less accurate"
    );
}
