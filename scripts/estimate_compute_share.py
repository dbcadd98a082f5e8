#!/usr/bin/env python3
"""Estimate the computation share s of the AWS Lambda round trips
(straggler.trace_compute_share) from the campaigns that measured one setting
at several loads.

What a load is. The file name's `lX_XXX` is the `load` the probe sent to the
Lambda function; the function computes the gradient of
n = max(1, round(load * B)) samples of its data set in one vectorised pass
(`cno_forloop`), B the file's batch size `bB`, and returns it
(mamaj/Sequential-Gradient-Coding-2, 0_create_aws_lambda/sam-efs/code/app.py;
the same repository's 2_find_runtimes/.../compute_model_params.py fits the
mean round trip linearly against this "normalized load"). So the load is the
fraction of a batch computed, and `l0_000` still computes one sample. We take
the effective load x = n / B and the model

    T(x) = F + C * x

with F the fixed cost of a round trip (invocation, model load, gradient
serialisation and transfer) and C the computation of a full batch of B
samples. A replayed value v of the file at load x then splits into C*x of
computation and F of fixed cost, and the computation share of that file is

    s(x) = C * x / (F + C * x).

The base load is x = 1: one partition is a full batch, the `l1_000` file is
the one to replay, and its share s(1) = C / (F + C) is what
`straggler.trace_compute_share` should be. (Reading `lX_XXX` instead as an
extra load on top of a base task held in the `l0_000` file, as the traces'
README words it, gives s_alt = C / T(0); the table prints it too.)

The fit: per file the median of all its values (robust to the 5-40x
stragglers), then Theil-Sen (the median of the pairwise slopes, the
intercept the median of the residuals) over the loads of a campaign. The
uncertainty: a bootstrap over rounds (rows are resampled with replacement
within each file, the fit repeated), whose 2.5% and 97.5% quantiles are the
stated 95% interval; and, as a check on drift between the files (the loads
were measured one after another), the range of s(1) when one load is left
out. A least-squares fit of the file means is printed for comparison.

    estimate_compute_share.py [--traces DIR] [--json OUT] [--bootstrap N] [--seed S]

prints the table and writes the JSON (results/replay/compute-share.json by
default when run by scripts/replay-study.sh).
"""

import argparse
import json
import math
import pathlib
import re
import sys

import numpy as np
import scipy.stats

NAME = re.compile(
    r"^(?P<probe>.+?)--w(?P<workers>\d+)-n(?P<rounds>\d+)-l(?P<load>\d+_\d+)"
    r"-b(?P<batch>\d+)-c(?P<comp>[A-Za-z_]+)-(?P<region>[A-Za-z]+)\.csv$"
)

# Campaigns need this many distinct loads (and this many workers) to be fitted.
MIN_LOADS = 3
MIN_WORKERS = 16


def parse_name(name):
    """The parameters in a trace file's name, or None when it does not follow
    the `probe--wW-nR-lX_XXX-bB-cCOMP-Region.csv` pattern."""
    m = NAME.match(name)
    if not m:
        return None
    d = m.groupdict()
    load = float(d["load"].replace("_", "."))
    batch = int(d["batch"])
    return {
        "probe": d["probe"],
        "workers": int(d["workers"]),
        "rounds": int(d["rounds"]),
        "load": load,
        "batch": batch,
        "samples": max(1, round(load * batch)),
        "effective_load": max(1, round(load * batch)) / batch,
        "comp": d["comp"],
        "region": d["region"],
    }


def read_trace(path):
    """Rows x columns of a trace CSV (header row skipped when present)."""
    with open(path) as f:
        first = f.readline()
    skip = 0 if re.match(r"^\s*[-+0-9.eE]", first.split(",")[0]) else 1
    return np.loadtxt(path, delimiter=",", skiprows=skip, ndmin=2)


def campaigns(trace_dir):
    """{campaign: [(meta, values), ...] sorted by load} for the campaigns with
    at least MIN_LOADS loads of at least MIN_WORKERS workers. A campaign is a
    probe, region, batch size and worker count."""
    groups = {}
    for path in sorted(pathlib.Path(trace_dir).glob("*.csv")):
        meta = parse_name(path.name)
        if meta is None or meta["workers"] < MIN_WORKERS:
            continue
        key = f"{meta['probe']}-{meta['region']}"
        meta["file"] = path.name
        groups.setdefault(key, []).append((meta, read_trace(path)))
    out = {}
    for key, files in groups.items():
        files.sort(key=lambda f: f[0]["load"])
        loads = {m["load"] for m, _ in files}
        batches = {(m["batch"], m["workers"]) for m, _ in files}
        if len(loads) >= MIN_LOADS and len(loads) == len(files) and len(batches) == 1:
            out[key] = files
    return out


def theil_sen(x, y):
    """Slope and intercept of the Theil-Sen line through (x, y): scipy's, with
    the intercept the median of the residuals (method "joint")."""
    fit = scipy.stats.theilslopes(np.asarray(y, float), np.asarray(x, float), method="joint")
    return float(fit.slope), float(fit.intercept)


def shares(slope, intercept):
    """(s(1), s_alt) of a fitted line T(x) = intercept + slope * x."""
    t1 = intercept + slope
    s1 = slope / t1 if t1 > 0 else math.nan
    s_alt = slope / intercept if intercept > 0 else math.nan
    return s1, s_alt


def fit_campaign(files, bootstrap, rng):
    x = np.array([m["effective_load"] for m, _ in files])
    medians = np.array([float(np.median(v)) for _, v in files])
    means = np.array([float(np.mean(v)) for _, v in files])
    slope, intercept = theil_sen(x, medians)
    s1, s_alt = shares(slope, intercept)
    # Least squares on the means (the source repository's fit), for comparison.
    ls_slope, ls_intercept = np.polyfit(x, means, 1)
    s1_mean, _ = shares(float(ls_slope), float(ls_intercept))
    # Leave one load out.
    loo = []
    for k in range(len(x)):
        keep = np.arange(len(x)) != k
        a, b = theil_sen(x[keep], medians[keep])
        loo.append(shares(a, b)[0])
    # Bootstrap over rounds within each file.
    boot_s1, boot_alt, boot_slope = [], [], []
    for _ in range(bootstrap):
        meds = np.empty(len(files))
        for k, (_, v) in enumerate(files):
            rows = rng.integers(0, v.shape[0], v.shape[0])
            meds[k] = np.median(v[rows])
        a, b = theil_sen(x, meds)
        p, q = shares(a, b)
        boot_s1.append(p)
        boot_alt.append(q)
        boot_slope.append(a)

    def interval(samples):
        if not samples:
            return [math.nan, math.nan]
        lo, hi = np.nanquantile(np.array(samples), [0.025, 0.975])
        return [float(lo), float(hi)]

    meta0 = files[0][0]
    return {
        "probe": meta0["probe"],
        "region": meta0["region"],
        "batch": meta0["batch"],
        "workers": meta0["workers"],
        "files": [
            {
                "file": m["file"],
                "load": m["load"],
                "samples": m["samples"],
                "effective_load": m["effective_load"],
                "rounds": int(v.shape[0]),
                "median_s": float(np.median(v)),
                "mean_s": float(np.mean(v)),
            }
            for m, v in files
        ],
        "loads": [m["load"] for m, _ in files],
        "fixed_s": intercept,
        "batch_compute_s": slope,
        "t1_s": intercept + slope,
        "share": s1,
        "share_ci95": interval(boot_s1),
        "share_leave_one_load_out": [float(min(loo)), float(max(loo))],
        "share_alt": s_alt,
        "share_alt_ci95": interval(boot_alt),
        "batch_compute_ci95": interval(boot_slope),
        "share_least_squares_means": s1_mean,
        "replay_file": next((m["file"] for m, _ in files if m["load"] == 1.0), None),
    }


def estimate(trace_dir, bootstrap=1000, seed=1):
    rng = np.random.default_rng(seed)
    found = campaigns(trace_dir)
    return {
        "model": "T(x) = F + C x, x = max(1, round(load * B)) / B; s = C / (F + C) at x = 1",
        "statistic": "per-file median of all values; Theil-Sen over loads",
        "interval": f"95% bootstrap over rounds within each file ({bootstrap} resamples, seed {seed})",
        "bootstrap": bootstrap,
        "seed": seed,
        "campaigns": {k: fit_campaign(v, bootstrap, rng) for k, v in sorted(found.items())},
    }


def table(result):
    head = (
        f"{'campaign':44s} {'B':>5s} {'R':>3s} {'loads':>5s} {'F (s)':>6s} {'C (s)':>6s} "
        f"{'s(1)':>6s} {'95% CI':>15s} {'leave-1-out':>13s} {'s_alt':>6s} {'s(1) LS':>7s}"
    )
    lines = [head, "-" * len(head)]
    for key, c in result["campaigns"].items():
        rows = min(f["rounds"] for f in c["files"])
        lo, hi = c["share_ci95"]
        a, b = c["share_leave_one_load_out"]
        lines.append(
            f"{key:44s} {c['batch']:5d} {rows:3d} {len(c['loads']):5d} {c['fixed_s']:6.2f} "
            f"{c['batch_compute_s']:6.2f} {c['share']:6.3f} [{lo:6.3f}, {hi:6.3f}] "
            f"[{a:5.3f},{b:5.3f}] {c['share_alt']:6.3f} {c['share_least_squares_means']:7.3f}"
        )
    return "\n".join(lines)


def main(argv=None):
    root = pathlib.Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", default=str(root / "data/traces/aws-lambda"))
    ap.add_argument("--json", help="write the result here")
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    result = estimate(args.traces, args.bootstrap, args.seed)
    if not result["campaigns"]:
        print(f"no campaign with {MIN_LOADS} or more loads in {args.traces}", file=sys.stderr)
        return 1
    print(table(result))
    print(
        "\ns(1) = C/(F+C): computation share of a round trip of the l1_000 file (one partition = a batch of B);"
        "\nF, C: Theil-Sen fit of the per-file medians against x = max(1, round(l*B))/B;"
        f"\n95% CI: {result['interval']}; leave-1-out: range of s(1) with one load left out;"
        "\ns_alt = C/T(0): the share if lX_XXX were an extra load on a base task held in l0_000;"
        "\ns(1) LS: least squares on the per-file means."
    )
    if args.json:
        out = pathlib.Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n")
        print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
