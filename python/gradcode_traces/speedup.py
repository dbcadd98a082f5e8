"""`gradcode compare` in Python: traces side by side with the speedup over a baseline.

`compare_traces(paths, baseline=None, target_loss=None, target_accuracy=None)`
returns a pandas DataFrame with the columns of `gradcode compare --csv`
(`COLUMNS`), a row per scheme (repeated seeds grouped), with the definitions
of the binary (docs/running.md, *Comparing runs*):

- runs are repetitions of one another when their resolved configs differ only
  in `seed` and `[output]`; a simulation trace gives a row per scheme, its
  trials the runs; rows that share a label get the config keys that tell them
  apart;
- iteration time mean/p50/p99 over every iteration of every run of a row;
  elapsed time: `elapsed_s` of each run's last iteration, mean over the runs;
- speedup = baseline time / this time, for the mean iteration time and the
  time to a target (the elapsed time at the first recorded value at or past
  it, or the sum of duration_s up to it when a trace lacks elapsed_s); runs
  with the baseline's seeds (two or more, the same set) are paired: the
  geometric mean of the per-seed ratios with a 95% Student t interval on
  the logarithms (`speedup_low`, `speedup_high`: needs scipy, else NaN with
  a warning); otherwise the ratio of the two rows' mean times.

The DataFrame's `attrs` hold `baseline` (its label), `time_basis` (`elapsed`
or `iteration time`) and `time_basis_reason`.
"""

import math
import pathlib
import warnings

import numpy as np
import pandas as pd

from .summary import reach, summarize
from .table import file_id, once
from .trace import Trace, TraceError, TraceWarning

#: The columns, as `gradcode compare --csv` writes them.
COLUMNS = [
    "label", "scheme", "baseline", "runs", "files", "seeds", "iterations", "mean_s", "p50_s", "p99_s",
    "elapsed_s", "speedup", "speedup_low", "speedup_high",
    "target_loss", "loss_reached", "loss_iteration", "loss_time_s", "loss_speedup",
    "target_accuracy", "accuracy_reached", "accuracy_iteration", "accuracy_time_s", "accuracy_speedup",
    "mean_decode_error",
]


def _mean_decode_error(members):
    """The mean /iteration/decode_error over every iteration of every run (finite values), as gradcode
    compare pools it; None when no run records it (a trace of an older gradcode)."""
    values = []
    for m in members:
        column = getattr(m["run"], "decode_error", None)
        if column is None:
            return None
        values.extend(v for v in np.asarray(column, dtype=float) if np.isfinite(v))
    return float(np.sum(values) / len(values)) if values else None


def _t975(df):
    """The 0.975 quantile of Student's t with df degrees of freedom (scipy), or None without scipy."""
    try:
        from scipy.stats import t
    except ImportError:
        warnings.warn("scipy is not installed: the speedup's 95% interval is NaN", stacklevel=4)
        return None
    return float(t.ppf(0.975, df))


def speedup(baseline, this):
    """(value, low, high) of baseline / this for lists of ((seed, trial), time); None when a time is
    missing, not finite or not positive. low and high are NaN unless the runs are paired."""
    def times(runs):
        out = []
        for key, t in runs:
            if t is None or not math.isfinite(t) or t <= 0:
                return None
            out.append((key, float(t)))
        return out
    b, a = times(baseline), times(this)
    if not b or not a:
        return None
    nan = float("nan")
    if len(a) == 1 and len(b) == 1:
        return b[0][1] / a[0][1], nan, nan
    def keyed(runs):
        out = {}
        for (seed, trial), t in runs:
            if seed is None or (seed, trial) in out:
                return None
            out[(seed, trial)] = t
        return out
    kb, ka = keyed(b), keyed(a)
    if kb is not None and ka is not None and len(kb) >= 2 and set(kb) == set(ka):
        keys = sorted(kb, key=lambda k: (k[0], -1 if k[1] is None else k[1]))
        logs = np.array([math.log(kb[k] / ka[k]) for k in keys])
        n = len(logs)
        m = float(logs.sum() / n)
        var = float(((logs - m) ** 2).sum() / (n - 1))
        q = _t975(n - 1)
        if q is None:
            return math.exp(m), nan, nan
        half = q * math.sqrt(var / n)
        return math.exp(m), math.exp(m - half), math.exp(m + half)
    mean = lambda runs: sum(t for _, t in runs) / len(runs)  # noqa: E731
    return mean(b) / mean(a), nan, nan


def repetition_key(config):
    """The resolved config without what differs between repetitions of a run (seed, [output])."""
    if config is None:
        return None
    return {k: v for k, v in config.items() if k not in ("seed", "output")}


def _toml_value(v):
    """A TOML value as gradcode prints it in a label (`scheme.clusters=4`, `scheme.kind="gc-dc"`)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    return str(v)


def _flatten(table, prefix="", out=None):
    out = {} if out is None else out
    for k, v in table.items():
        key = f"{prefix}.{k}" if prefix else k
        if isinstance(v, dict):
            _flatten(v, key, out)
        else:
            out[key] = _toml_value(v)
    return out


def _members(paths, want_losses):
    """The runs of every trace: dicts with file, seed, trial, kind, label, key, status, run."""
    members, kind, first = [], None, None
    for path in paths:
        name = str(path)
        trace = Trace(path)
        if kind is None:
            kind, first = trace.kind, name
        elif trace.kind != kind:
            what = {"train": "a training trace", "simulation": "a simulation trace"}
            raise TraceError(f"{name}: is {what[trace.kind]} and {first} {what[kind]}: the times of a simulation "
                             "are model time, not measured, so the two are not compared")
        key = repetition_key(trace.config)
        if trace.kind == "train":
            (_, runs), = trace.runs.items()
            members.append({"file": name, "seed": trace.seed, "trial": None, "kind": trace.scheme or "?",
                            "label": trace.scheme or "?", "key": key, "status": trace.status, "run": runs[0]})
        else:
            if want_losses:
                raise ValueError(f"{name} is a simulation trace, which records no losses or accuracies")
            for scheme, runs in trace.runs.items():
                skey = None if key is None else dict(key, compared_scheme=scheme)
                for run in runs:
                    members.append({"file": name, "seed": trace.seed, "trial": run.trial,
                                    "kind": run.kind, "label": scheme, "key": skey,
                                    "status": trace.status, "run": run})
            if not any(m["file"] == name for m in members):
                raise TraceError(f"{name}: holds no run (a simulation trace without trials)")
    return kind, members


def _rows(members):
    """[(label, [member indices])] in the order of their first run, twins told apart."""
    rows = []
    for i, m in enumerate(members):
        for r in rows:
            f = members[r[0]]
            if f["label"] == m["label"] and f["key"] is not None and f["key"] == m["key"]:
                r.append(i)
                break
        else:
            rows.append([i])
    flat = [_flatten(members[r[0]]["key"] or {}) for r in rows]
    out = []
    for i, r in enumerate(rows):
        label = members[r[0]]["label"]
        twins = [j for j in range(len(rows)) if j != i and members[rows[j][0]]["label"] == label]
        if not twins:
            out.append((label, r))
            continue
        differing = sorted((k for k, v in flat[i].items() if any(flat[j].get(k) != v for j in twins)),
                           key=lambda k: (not k.startswith("scheme."), k))
        shown = [f"{k}={flat[i][k]}" for k in differing[:3]]
        if not shown:
            text = f"{label} ({members[r[0]]['file']})"
        elif len(differing) > 3:
            text = f"{label} ({', '.join(shown)}, ...)"
        else:
            text = f"{label} ({', '.join(shown)})"
        out.append((text, r))
    return out


def _same(a, b):
    """The same file: equal paths, or the same device and inode (a hard link, a symbolic link)."""
    return pathlib.Path(a) == pathlib.Path(b) or (file_id(a) is not None and file_id(a) == file_id(b))


def compare_traces(paths, baseline=None, target_loss=None, target_accuracy=None):
    """The table of `gradcode compare PATHS... [--baseline B] [--target-loss X] [--target-accuracy A]`
    (see the module). `baseline`: one of the traces (added when not among them) or a row label."""
    paths = [str(p) for p in paths]
    if not paths:
        raise ValueError("compare_traces: give at least one trace")
    if target_loss is not None and not math.isfinite(target_loss):
        raise ValueError(f"target_loss = {target_loss} must be a finite number")
    if target_accuracy is not None and not (math.isfinite(target_accuracy) and 0 < target_accuracy <= 1):
        raise ValueError(f"target_accuracy = {target_accuracy} must be in (0, 1]")
    choice = ("default", None)
    if baseline is not None:
        b = str(baseline)
        known = next((p for p in paths if _same(p, b)), None)
        if known is not None:
            choice = ("file", known)
        elif pathlib.Path(b).exists():
            paths.insert(0, b)
            choice = ("file", b)
        else:
            choice = ("label", b)
    same = []
    paths = once(paths, same)
    for first, repeat in same:
        warnings.warn(f"{repeat}: is the same file as {first} (the same device and inode): one run, compared once",
                      TraceWarning, stacklevel=2)
    kind, members = _members(paths, target_loss is not None or target_accuracy is not None)
    rows = _rows(members)
    if choice[0] == "file":
        base = next(i for i, (_, r) in enumerate(rows) if any(members[m]["file"] == choice[1] for m in r))
    elif choice[0] == "label":
        base = next((i for i, (label, _) in enumerate(rows) if label == choice[1]), None)
        if base is None:
            raise ValueError(f"baseline = {choice[1]} names neither a trace nor a row "
                             f"(rows: {', '.join(label for label, _ in rows)})")
    else:
        base = next((i for i, (_, r) in enumerate(rows) if any(members[m]["kind"] == "uncoded" for m in r)), 0)
    for m in members:
        m["summary"] = summarize([m["run"]])
        m["loss"] = None if target_loss is None else reach(m["run"], loss=target_loss)
        m["accuracy"] = None if target_accuracy is None else reach(m["run"], accuracy=target_accuracy)
    lacking = next((m["file"] for m in members if m["summary"]["elapsed_s"] is None and m["summary"]["iterations"] > 0),
                   None)
    basis = "elapsed_s" if lacking is None else "time_s"

    def pair(m):
        return (m["seed"], m["trial"])

    def mean_time(m):
        d = m["summary"]["iteration_time_s"]
        return None if d is None else d["mean"]

    def target_times(runs, which):
        return [(pair(members[i]), None if members[i][which] is None else members[i][which][basis]) for i in runs]

    base_runs = rows[base][1]
    table = []
    for r, (label, runs) in enumerate(rows):
        ms = [members[i] for i in runs]
        pooled = summarize([m["run"] for m in ms])["iteration_time_s"] or {}
        elapsed = [m["summary"]["elapsed_s"] for m in ms]
        s = speedup([(pair(members[i]), mean_time(members[i])) for i in base_runs],
                    [(pair(m), mean_time(m)) for m in ms])
        row = {
            "label": label, "scheme": ms[0]["kind"], "baseline": r == base, "runs": len(ms),
            "files": ";".join(m["file"] for m in ms),
            "seeds": ";".join("" if m["seed"] is None else str(m["seed"]) for m in ms),
            "iterations": sum(m["summary"]["iterations"] for m in ms) / len(ms),
            "mean_s": pooled.get("mean"), "p50_s": pooled.get("p50"), "p99_s": pooled.get("p99"),
            "elapsed_s": None if any(e is None for e in elapsed) else sum(elapsed) / len(elapsed),
            "speedup": None if s is None else s[0],
            "speedup_low": None if s is None else s[1],
            "speedup_high": None if s is None else s[2],
            "mean_decode_error": _mean_decode_error(ms),
        }
        for which, prefix, target in (("loss", "loss", target_loss), ("accuracy", "accuracy", target_accuracy)):
            row[f"target_{which}"] = target
            if target is None:
                row.update({f"{prefix}_reached": None, f"{prefix}_iteration": None, f"{prefix}_time_s": None,
                            f"{prefix}_speedup": None})
                continue
            reached = sum(m[which]["reached"] for m in ms)
            every = reached == len(ms)
            times = [t for _, t in target_times(runs, which)]
            ts = speedup(target_times(base_runs, which), target_times(runs, which))
            row.update({
                f"{prefix}_reached": reached,
                f"{prefix}_iteration": sum(m[which]["iteration"] for m in ms) / len(ms) if every else None,
                f"{prefix}_time_s": sum(times) / len(times) if every and None not in times else None,
                f"{prefix}_speedup": None if ts is None else ts[0],
            })
        table.append(row)
    df = pd.DataFrame(table, columns=COLUMNS)
    df.attrs.update(baseline=rows[base][0], time_basis="elapsed" if lacking is None else "iteration time",
                    time_basis_reason=None if lacking is None
                    else f"{lacking} does not record /iteration/elapsed_s (a trace of an older gradcode)",
                    kind=kind)
    return df
