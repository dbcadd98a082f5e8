//! Multi-message communication (003 §III) and partial stragglers (001 §4):
//! the paper's Example 1 thresholds, and for every arrival pattern of small
//! codes (every prefix of every worker's messages, exhaustively) the decode is
//! exact to 1e-9 relative on random gradients exactly when the pattern holds
//! enough distinct codewords, and is reported as not decodable otherwise.

use gradcode_core::coding::MmcDesign;
use gradcode_core::coding::{
    Arrival, CodeOptions, MultiMessageCode, PartialStragglerCode, RoundContext, RoundPlan, Scheme,
    UncorrelatedCode,
};
use gradcode_core::engine::decode_prefix;
use gradcode_core::rng::{Stream, stream};
use rand::RngExt;

fn options() -> CodeOptions {
    CodeOptions::default()
}

fn correlated(k: usize, p: usize, r: usize, m: usize) -> MultiMessageCode {
    MultiMessageCode::correlated(k, p, r, m, None, options(), &mut stream(1, Stream::Code)).unwrap()
}

fn uncorrelated(k: usize, p: usize, r: usize, orders: &[usize], hybrid: bool) -> MultiMessageCode {
    MultiMessageCode::uncorrelated(
        k,
        p,
        r,
        orders,
        hybrid,
        None,
        options(),
        &mut stream(1, Stream::MmcAccuracy),
    )
    .unwrap()
}

/// Worker w's first `counts[w]` messages, interleaved round-robin.
fn prefixes(counts: &[usize]) -> Vec<Arrival> {
    let mut out = Vec::new();
    for m in 0..counts.iter().copied().max().unwrap_or(0) {
        for (w, &c) in counts.iter().enumerate() {
            if m < c {
                out.push(Arrival {
                    worker: w,
                    message: m,
                });
            }
        }
    }
    out
}

/// Relative error of the decoded sum against the sum of the recovered partitions.
fn relative_error(
    scheme: &mut dyn Scheme,
    plan: &RoundPlan,
    received: &[Arrival],
    seed: u64,
) -> Option<f64> {
    let decoding = scheme.decode(plan, received);
    if !decoding.decodable {
        return None;
    }
    let mut rng = stream(seed, Stream::CheckSampling);
    let gradients: Vec<Vec<f64>> = (0..scheme.partitions())
        .map(|_| (0..5).map(|_| rng.random_range(-1.0..1.0)).collect())
        .collect();
    let messages: Vec<Vec<f64>> = received
        .iter()
        .map(|a| {
            plan.tasks[a.worker].messages[a.message]
                .codeword
                .encode(&gradients)
        })
        .collect();
    let refs: Vec<&[f64]> = messages.iter().map(|m| m.as_slice()).collect();
    let decoded = decoding.combine(&refs);
    assert_eq!(decoding.recovered.len(), scheme.partitions());
    let truth: Vec<f64> = (0..5)
        .map(|k| gradients.iter().map(|g| g[k]).sum())
        .collect();
    let err = decoded
        .iter()
        .zip(&truth)
        .fold(0.0_f64, |m, (d, t)| m.max((d - t).abs()));
    let norm = truth.iter().fold(0.0_f64, |m, t| m.max(t.abs()));
    Some(err / norm)
}

/// For every per-worker message count, decodable iff `enough(counts)`, and exact when so.
fn exhaustive(scheme: &mut dyn Scheme, enough: &dyn Fn(&RoundPlan, &[Arrival]) -> bool) -> usize {
    let plan = scheme.plan_round(&RoundContext::default());
    let k = scheme.workers();
    let per: Vec<usize> = plan.tasks.iter().map(|t| t.messages.len()).collect();
    let mut counts = vec![0usize; k];
    let mut decodable = 0;
    loop {
        let received = prefixes(&counts);
        let expected = enough(&plan, &received);
        match relative_error(
            scheme,
            &plan,
            &received,
            counts.iter().sum::<usize>() as u64,
        ) {
            Some(e) => {
                assert!(expected, "{counts:?} decoded but should not");
                assert!(e < 1e-9, "{counts:?}: relative error {e}");
                decodable += 1;
            }
            None => assert!(!expected, "{counts:?} should decode"),
        }
        // Odometer over 0..=per[w].
        let mut w = 0;
        loop {
            if w == k {
                return decodable;
            }
            counts[w] += 1;
            if counts[w] <= per[w] {
                break;
            }
            counts[w] = 0;
            w += 1;
        }
    }
}

/// Distinct codeword ids per cluster (group).
fn distinct_per_group(plan: &RoundPlan, received: &[Arrival], groups: usize) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new(); groups];
    for a in received {
        let id = plan.tasks[a.worker].messages[a.message].codeword.id;
        if !out[id.group].contains(&id.index) {
            out[id.group].push(id.index);
        }
    }
    out
}

#[test]
fn example_1_correlated_five_distinct_codewords_decode() {
    // K = 6, r = 3, m = 2: worker i sends c_i after 2 computations, c_{i+1} after 3.
    let mut code = correlated(6, 1, 3, 2);
    let plan = code.plan_round(&RoundContext::default());
    for (w, task) in plan.tasks.iter().enumerate() {
        assert_eq!(task.messages.len(), 2);
        assert_eq!(task.messages[0].after, 2);
        assert_eq!(task.messages[1].after, 3);
        assert_eq!(task.messages[0].codeword.id.index, w);
        assert_eq!(task.messages[1].codeword.id.index, (w + 1) % 6);
    }
    // Workers 1, 2, 4 (1-based) send both: c1, c2, c2 (again), c3, c4, c5.
    let received = [
        Arrival {
            worker: 0,
            message: 0,
        },
        Arrival {
            worker: 0,
            message: 1,
        },
        Arrival {
            worker: 1,
            message: 0,
        },
        Arrival {
            worker: 1,
            message: 1,
        },
        Arrival {
            worker: 3,
            message: 0,
        },
        Arrival {
            worker: 3,
            message: 1,
        },
    ];
    let (d, used) = decode_prefix(&mut code, &plan, &received);
    assert_eq!(used, 6, "the fifth distinct codeword arrives last");
    assert!(d.decodable);
    assert_eq!(d.weights[2], 0.0, "c2 received twice counts once");
    assert_eq!(d.messages_used(), 5);
    assert!(relative_error(&mut code, &plan, &received, 3).unwrap() < 1e-12);
    // Four distinct codewords do not decode.
    let d = code.decode(&plan, &received[..5]);
    assert!(!d.decodable);
    assert!(d.recovered.is_empty());
}

#[test]
fn example_1_uncorrelated_needs_eight_messages() {
    // Order vector [3, 2]: one virtual worker per worker; 7 zeros per column.
    let mut code = uncorrelated(6, 1, 3, &[3, 2], false);
    assert_eq!(code.coded_needed(), 8);
    let c = UncorrelatedCode::new(6, &[2, 3]).unwrap();
    let mask_zeros: Vec<usize> = (0..6)
        .map(|j| (0..12).filter(|&q| c.matrix()[(q, j)] == 0.0).count())
        .collect();
    assert_eq!(mask_zeros, vec![7; 6]);
    let plan = code.plan_round(&RoundContext::default());
    // Three workers send both, two send one, one sends nothing: 8 messages.
    let received = prefixes(&[2, 2, 2, 1, 1, 0]);
    let (d, used) = decode_prefix(&mut code, &plan, &received);
    assert_eq!(used, 8);
    assert!(d.decodable);
    assert!(relative_error(&mut code, &plan, &received, 1).unwrap() < 1e-9);
    assert!(!code.decode(&plan, &received[..7]).decodable);
}

#[test]
fn every_arrival_pattern_decodes_exactly_or_is_reported() {
    // Correlated, clustered and not.
    for (k, p, r, m) in [
        (6, 1, 3, 2),
        (6, 1, 3, 1),
        (8, 2, 3, 2),
        (6, 1, 4, 2),
        (6, 2, 3, 3),
    ] {
        let mut code = correlated(k, p, r, m);
        let need = k / p - m + 1;
        let n = exhaustive(&mut code, &|plan, rec| {
            distinct_per_group(plan, rec, p)
                .iter()
                .all(|g| g.len() >= need)
        });
        assert!(n > 0, "({k}, {p}, {r}, {m})");
    }
    // Uncorrelated.
    for (k, p, r, orders) in [
        (6, 1, 3, vec![2, 3]),
        (6, 1, 3, vec![1, 3]),
        (8, 2, 4, vec![2, 4]),
        (5, 1, 4, vec![1, 2, 4]),
    ] {
        let mut code = uncorrelated(k, p, r, &orders, false);
        let need = code.coded_needed();
        let n = exhaustive(&mut code, &|plan, rec| {
            distinct_per_group(plan, rec, p)
                .iter()
                .all(|g| g.len() >= need)
        });
        assert!(n > 0, "({k}, {p}, {r}, {orders:?})");
    }
    // Hybrid: a plain sum (the last message) decodes its cluster alone.
    for (k, p, orders) in [(5, 1, vec![5, 3]), (6, 2, vec![1, 2, 3]), (4, 1, vec![4])] {
        let l = k / p;
        let mut code = uncorrelated(k, p, l, &orders, true);
        let need = code.coded_needed();
        let n = exhaustive(&mut code, &|plan, rec| {
            let sums = distinct_per_group(plan, rec, p);
            (0..p).all(|g| {
                let has_sum = rec.iter().any(|a| {
                    let t = &plan.tasks[a.worker];
                    t.messages[a.message].codeword.id.group == g
                        && a.message + 1 == t.messages.len()
                });
                has_sum || sums[g].len() >= need
            })
        });
        assert!(n > 0, "hybrid ({k}, {p}, {orders:?})");
    }
    // UC-MMC: every partition once.
    for (k, r) in [(6, 3), (5, 2), (4, 4)] {
        let mut code = MultiMessageCode::uncoded(k, r).unwrap();
        let n = exhaustive(&mut code, &|plan, rec| {
            distinct_per_group(plan, rec, 1)[0].len() == k
        });
        assert!(n > 0);
    }
}

#[test]
fn gc_partial_matches_001_figure_4_and_decodes_exactly() {
    // n = 3, s = 1 (r = 2), alpha = 2: q = 2 naive partitions per worker, 9 in all.
    let mut code =
        PartialStragglerCode::new(3, 2, 2.0, options(), &mut stream(1, Stream::Code)).unwrap();
    assert_eq!(code.partitions(), 9);
    assert_eq!(code.naive_per_worker(), 2);
    let plan = code.plan_round(&RoundContext::default());
    for (w, task) in plan.tasks.iter().enumerate() {
        assert_eq!(task.compute.len(), 4, "4/9 of the data per worker");
        assert_eq!(task.messages.len(), 2);
        assert_eq!(task.messages[0].after, 2);
        assert_eq!(task.messages[1].after, 4);
        assert_eq!(code.stored(w).len(), 4);
    }
    // Every naive sum and any n - r + 1 = 2 codewords.
    let n = exhaustive(&mut code, &|_, rec| {
        let naive = (0..3).all(|w| {
            rec.contains(&Arrival {
                worker: w,
                message: 0,
            })
        });
        let coded = rec.iter().filter(|a| a.message == 1).count();
        naive && coded >= 2
    });
    assert!(n > 0);
    for (alpha, field) in [(1.0, "scheme.slowdown"), (1.3, "scheme.slowdown")] {
        let e = PartialStragglerCode::new(3, 2, alpha, options(), &mut stream(1, Stream::Code))
            .unwrap_err();
        assert!(e.to_string().starts_with(field), "{e}");
    }
}

#[test]
fn invalid_mmc_parameters_name_their_key() {
    let mut rng = stream(1, Stream::Code);
    let e = MultiMessageCode::correlated(6, 1, 3, 4, None, options(), &mut rng).unwrap_err();
    assert!(e.to_string().starts_with("scheme.order = 4"), "{e}");
    let e = MultiMessageCode::correlated(6, 4, 1, 1, None, options(), &mut rng).unwrap_err();
    assert!(e.to_string().starts_with("scheme.clusters = 4"), "{e}");
    for (orders, load, hybrid, starts) in [
        (vec![], 3, false, "scheme.orders"),
        (vec![2, 2], 3, false, "scheme.orders"),
        (vec![4], 3, false, "scheme.orders"),
        (vec![0, 2], 3, false, "scheme.orders"),
        (vec![2, 3], 3, true, "scheme.load = 3"),
    ] {
        let e =
            MultiMessageCode::uncorrelated(6, 1, load, &orders, hybrid, None, options(), &mut rng)
                .unwrap_err();
        assert!(e.to_string().starts_with(starts), "{orders:?}: {e}");
    }
}

#[test]
fn conditioning_of_the_uncorrelated_design_at_the_papers_size() {
    // K = 40, r = 10, 4 clusters (l = 10), order vector [6, 8, 10] (003 §IV).
    let code = UncorrelatedCode::new(10, &[6, 8, 10]).unwrap();
    assert_eq!(code.needed(), 7, "30 messages, 6 zeros per column");
    let acc = code.measure_accuracy(5000, 1e-8, &mut stream(9, Stream::MmcAccuracy));
    eprintln!(
        "uncorrelated K=40 r=10 P=4 [6,8,10]: worst relative error {:.3e}, worst amplification {:.3e}, failed {} of {}",
        acc.worst_relative_error, acc.worst_amplification, acc.failed, acc.sets
    );
    let scheme = uncorrelated(40, 4, 10, &[6, 8, 10], false);
    let built = scheme
        .accuracy()
        .expect("the uncorrelated design measures itself");
    assert_eq!(scheme.exact_decoding(), built.exact());
    assert!(built.worst_relative_error.is_finite() && built.worst_amplification >= 1.0);
    // The measurement says what check and train act on: both agree with a larger sample.
    assert_eq!(acc.exact(), built.exact(), "{acc:?} vs {built:?}");
    assert_eq!(scheme.design(), MmcDesign::Uncorrelated);
}
