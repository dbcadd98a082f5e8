"""Key numbers of runs, with the definitions of `gradcode inspect`'s summary
(docs/json.md, the summary of `inspect --json`): finite values only, percentiles by
linear interpolation (numpy's default), several runs (the trials of a
simulated scheme) pooled over every iteration, and losses and the test
accuracy only for one run; `reach` is `inspect --target-loss` /
`--target-accuracy`.
"""

import numpy as np


def _finite(values):
    v = np.asarray(values, dtype=float)
    return v[np.isfinite(v)]


def distribution(values):
    """{count, mean, p50, p99, min, max} of the finite values; None when there is none."""
    v = _finite(values)
    if len(v) == 0:
        return None
    p50, p99 = np.percentile(v, [50, 99])
    return {"count": int(len(v)), "mean": float(v.mean()), "p50": float(p50), "p99": float(p99),
            "min": float(v.min()), "max": float(v.max())}


def _pooled(runs, name):
    """The column of every run, concatenated; None when a run lacks it (as inspect)."""
    cols = [getattr(r, name) for r in runs]
    if not cols or any(c is None for c in cols):
        return None
    return np.concatenate([np.asarray(c) for c in cols])


def _mean(values):
    v = None if values is None else _finite(values)
    return None if v is None or len(v) == 0 else float(v.mean())


def loss(values):
    """{evaluated, first, first_iteration, final, final_iteration, min, min_iteration} (1-based); None without a finite value."""
    if values is None:
        return None
    v = np.asarray(values, dtype=float)
    idx = np.flatnonzero(np.isfinite(v))
    if len(idx) == 0:
        return None
    m = idx[np.argmin(v[idx])]
    return {"evaluated": int(len(idx)), "first": float(v[idx[0]]), "first_iteration": int(idx[0]) + 1,
            "final": float(v[idx[-1]]), "final_iteration": int(idx[-1]) + 1,
            "min": float(v[m]), "min_iteration": int(m) + 1}


def accuracy(values):
    """{evaluated, first, first_iteration, final, final_iteration, best, best_iteration} (1-based; best
    the highest, the first if several); None without a finite value (or without the dataset)."""
    if values is None:
        return None
    v = np.asarray(values, dtype=float)
    idx = np.flatnonzero(np.isfinite(v))
    if len(idx) == 0:
        return None
    b = idx[np.argmax(v[idx])]
    return {"evaluated": int(len(idx)), "first": float(v[idx[0]]), "first_iteration": int(idx[0]) + 1,
            "final": float(v[idx[-1]]), "final_iteration": int(idx[-1]) + 1,
            "best": float(v[b]), "best_iteration": int(b) + 1}


def reach(run, loss=None, accuracy=None):
    """When one run first reached a target, as `gradcode inspect --target-loss LOSS` (the first
    recorded train loss <= LOSS) or `--target-accuracy ACCURACY` (the first recorded test accuracy
    >= ACCURACY); give one of the two. {target, evaluated, reached, iteration (1-based), value,
    iterations_before, time_s (the finite duration_s of iterations 1..iteration summed), elapsed_s
    (elapsed_s at iteration; None when the trace does not record it)}; the last five None when not
    reached (evaluated 0: nothing recorded). A target outside its domain raises ValueError, as inspect
    refuses it: loss a finite number, accuracy in (0, 1]."""
    if (loss is None) == (accuracy is None):
        raise ValueError("reach: give one of loss= or accuracy=")
    if loss is not None and not np.isfinite(float(loss)):
        raise ValueError(f"reach: loss = {loss} must be a finite number")
    if accuracy is not None and not (np.isfinite(float(accuracy)) and 0 < float(accuracy) <= 1):
        raise ValueError(f"reach: accuracy = {accuracy} must be in (0, 1]: the share of the test samples "
                         "classified correctly")
    values = run.train_loss if loss is not None else run.test_accuracy
    target = float(loss if loss is not None else accuracy)
    v = np.array([], dtype=float) if values is None else np.asarray(values, dtype=float)
    ok = np.isfinite(v) & ((v <= target) if loss is not None else (v >= target))
    hits = np.flatnonzero(ok)
    out = {"target": target, "evaluated": int(np.isfinite(v).sum()), "reached": bool(len(hits)),
           "iteration": None, "value": None, "iterations_before": None, "time_s": None, "elapsed_s": None}
    if len(hits):
        i = int(hits[0])
        elapsed = None if run.elapsed_s is None or not np.isfinite(run.elapsed_s[i]) else float(run.elapsed_s[i])
        out.update(iteration=i + 1, value=float(v[i]), iterations_before=i,
                   time_s=float(_finite(run.duration_s[: i + 1]).sum()), elapsed_s=elapsed)
    return out


def _last_elapsed(run):
    """elapsed_s of the run's last iteration; None when not recorded (or not finite)."""
    e = run.elapsed_s
    if e is None or len(e) == 0 or not np.isfinite(e[-1]):
        return None
    return float(e[-1])


def summarize(runs):
    """The summary of one Run, or of several pooled (a list of Runs)."""
    runs = [runs] if not isinstance(runs, (list, tuple)) else list(runs)
    durations = _pooled(runs, "duration_s")
    durations = np.array([]) if durations is None else durations.astype(float)
    rec = _pooled(runs, "recovered_fraction")
    recovered = None
    if rec is not None and len(_finite(rec)):
        f = _finite(rec)
        recovered = {"mean": float(f.mean()), "min": float(f.min()), "full_fraction": float(np.mean(f >= 1.0 - 1e-12))}
    straggling = _pooled(runs, "straggling")
    finish = _pooled(runs, "finish_s")
    used = _pooled(runs, "used")
    single = len(runs) == 1
    return {
        "iterations": int(sum(r.iterations for r in runs)),
        "total_time_s": float(_finite(durations).sum()),
        "elapsed_s": _last_elapsed(runs[0]) if single else None,
        "iteration_time_s": distribution(durations),
        "decode_time_s": None if _pooled(runs, "decode_s") is None else distribution(_pooled(runs, "decode_s")),
        "recovered_fraction": recovered,
        "messages_received_per_iteration": _mean(_pooled(runs, "messages_received")),
        "messages_used_per_iteration": _mean(_pooled(runs, "messages_used")),
        "workers_received_per_iteration": None if finish is None or len(finish) == 0
        else float(np.isfinite(finish).sum(axis=1).mean()),
        "workers_used_per_iteration": None if used is None or len(used) == 0 else float(used.sum(axis=1).mean()),
        "stragglers_mean_per_iteration": None if straggling is None or len(straggling) == 0
        else float(straggling.sum(axis=1).mean()),
        "train_loss": loss(runs[0].train_loss) if single else None,
        "test_loss": loss(runs[0].test_loss) if single else None,
        "test_accuracy": accuracy(runs[0].test_accuracy) if single else None,
    }


def even_fraction(counts, clustered):
    """Share of clustered iterations whose most stragglers in one cluster is
    ceil(S / P) (as `gradcode inspect`'s even_fraction)."""
    c = counts[clustered]
    if len(c) == 0:
        return float("nan")
    p = counts.shape[1]
    return float(np.mean(c.max(axis=1) == -(-c.sum(axis=1) // p)))
