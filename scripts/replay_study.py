#!/usr/bin/env python3
"""Aggregate the replay study's simulations (scripts/replay-study.sh runs
them; this script only reads them) and write results/replay/.

    replay_study.py --runs DIR --out results/replay [--column-sets 10] [--workers 24] CONFIG...

Input: DIR/<config>/set<j>/<share>-<variant>.h5 from `gradcode simulate
--out` (share: s1 or sest; variant: base, perfect, thr1.1) and the
config files; OUT/compute-share.json from scripts/estimate_compute_share.py.

What is measured. Every trial of a config replays its own pair of rows
(trial k: rows 2k + 1 and 2k + 2; simulate starts trial k at row
k * iterations). Only iteration 2 is read: there GC-DC plans with the flags
of the pair's first row (imperfect state information) or of the row itself
(perfect). A cell is (column set j, trial k): the time of iteration 2 of
every scheme on the same 24 columns and the same row, so every comparison
is paired within a cell.

The intervals. "cells": mean +- t(0.975, n - 1) * sd / sqrt(n) over the
n = column sets x trials cells, as if the cells were independent. They are
not quite: the column sets are disjoint workers and the trials disjoint
rounds, but the cells of one trial share the round (the Lambda service's
state at that time) and the cells of one column set share the workers. So
the table also gives "rounds": the same interval over the per-trial means
over column sets (n = trials, the rounds being the independent unit);
the README's statements rest on that one when the two disagree.

How often a straggler stays one: from the config's trace file (the file
replayed), per column set with the simulator's definition (value > threshold
x the median of the set's 24 values in that row), over every consecutive
pair of rows: P(straggler at t+1 | straggler at t) against the chance rate
P(straggler at t+1), with a 95% bootstrap interval over workers (columns,
resampled with replacement, 2000 resamples, seed 1).
"""

import argparse
import csv
import functools
import json
import math
import pathlib
import random
import re
import sys
import tomllib

import numpy as np
import scipy.stats

# The trace reader (python/gradcode_traces, installed into .venv by
# scripts/python-env.sh); from the source tree when not installed.
try:
    import gradcode_traces as gt
except ImportError:
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "python"))
    import gradcode_traces as gt

SCHEMES = ["uncoded", "gc", "gc-sc", "gc-dc", "is-gc"]
VARIANTS = {"perfect": "gc-dc perfect SSI", "thr1.1": "gc-dc threshold 1.1"}
THRESHOLDS = [2.0, 1.1]

def interval(x):
    """Mean and 95% t half-width of a 1-d sample."""
    x = np.asarray(x, float).ravel()
    n = len(x)
    m = float(np.mean(x))
    if n < 2:
        return m, math.nan
    return m, float(scipy.stats.t.ppf(0.975, n - 1)) * float(np.std(x, ddof=1)) / math.sqrt(n)


def stat(cells):
    """cells: [column sets, trials]. Mean with the cells and rounds intervals."""
    cells = np.asarray(cells, float)
    m, h_cells = interval(cells)
    _, h_rounds = interval(cells.mean(axis=0))
    return {"mean": m, "ci95_cells": h_cells, "ci95_rounds": h_rounds,
            "n_cells": int(cells.size), "n_rounds": int(cells.shape[1])}


def iteration2(path, scheme):
    """[trials] time (s) and recovered fraction of iteration 2 of each trial."""
    trace = open_trace(path)
    return trace.values_at("duration_s", 2, scheme), trace.values_at("recovered_fraction", 2, scheme)


@functools.lru_cache(maxsize=2)
def open_trace(path):
    """The trace at path, read once for all its schemes."""
    return gt.open_trace(path)


def read_csv(path):
    """Rows x columns of a trace CSV, read as gradcode reads it
    (crates/core/src/straggler/replay.rs): quoted cells, blank rows skipped, a
    first row none of whose cells is a number is a header."""
    with open(path, newline="") as f:
        rows = [[c.strip() for c in row] for row in csv.reader(f) if any(c.strip() for c in row)]

    def number(cell):
        try:
            float(cell)
            return True
        except ValueError:
            return False

    if not any(number(c) for c in rows[0]):
        rows = rows[1:]
    return np.array(rows, dtype=float)


def persistence(trace, column_sets, workers, threshold, rng):
    """How often a straggler stays one, per the simulator's definition."""
    per_worker = []  # (stragglers at t with a t+1, of those still at t+1, flags at t+1, transitions)
    for j in range(column_sets):
        v = trace[:, j * workers:(j + 1) * workers]
        flags = v > threshold * np.median(v, axis=1, keepdims=True)
        a, b = flags[:-1], flags[1:]
        for w in range(workers):
            per_worker.append((int(a[:, w].sum()), int((a[:, w] & b[:, w]).sum()),
                               int(b[:, w].sum()), int(len(b))))
    arr = np.array(per_worker)

    def rates(rows):
        s, ss, nxt, n = rows.sum(axis=0)
        p_stay = ss / s if s else math.nan
        p_chance = nxt / n
        # P(straggler at t+1 | not one at t)
        p_new = (nxt - ss) / (n - s) if n > s else math.nan
        return p_stay, p_chance, p_new, int(s), int(ss), int(n)

    p_stay, p_chance, p_new, s, ss, n = rates(arr)
    boot_stay, boot_lift = [], []
    idx = list(range(len(arr)))
    for _ in range(2000):
        pick = arr[[rng.choice(idx) for _ in idx]]
        a, c, _, _, _, _ = rates(pick)
        if not math.isnan(a) and c > 0:
            boot_stay.append(a)
            boot_lift.append(a / c)

    def q(xs):
        if not xs:
            return [math.nan, math.nan]
        xs = sorted(xs)
        return [xs[int(0.025 * (len(xs) - 1))], xs[int(math.ceil(0.975 * (len(xs) - 1)))]]

    return {"threshold": threshold, "stragglers_with_next_round": s, "stayed": ss,
            "transitions": n, "p_stay": p_stay, "p_stay_ci95": q(boot_stay),
            "p_chance": p_chance, "p_new": p_new,
            "lift": p_stay / p_chance if p_chance else math.nan, "lift_ci95": q(boot_lift)}


def campaign_of(trace_file):
    m = re.match(r"^(?P<probe>.+?)--w\d+-n\d+-l\d+_\d+-b\d+-c[A-Za-z_]+-(?P<region>[A-Za-z]+)\.csv$",
                 pathlib.Path(trace_file).name)
    return f"{m['probe']}-{m['region']}"


def study(config_path, runs, column_sets, workers, shares, rng):
    name = pathlib.Path(config_path).stem
    cfg = tomllib.loads(pathlib.Path(config_path).read_text())
    st = cfg["straggler"]
    campaign = campaign_of(st["trace_file"])
    est = shares["campaigns"][campaign]
    if round(est["share"], 3) != st["trace_compute_share"]:
        raise SystemExit(f"{config_path}: trace_compute_share = {st['trace_compute_share']}, "
                         f"but the estimate of {campaign} is {est['share']:.3f}")
    trace = read_csv(st["trace_file"])
    out = {"config": str(config_path), "campaign": campaign, "trace_file": st["trace_file"],
           "rows": int(trace.shape[0]), "trials": cfg["simulate"]["trials"],
           "column_sets": column_sets, "workers": workers,
           "estimated_share": st["trace_compute_share"], "share_ci95": est["share_ci95"],
           "models": {}}
    for tag, share in (("s1", 1.0), ("sest", st["trace_compute_share"])):
        times = {s: [] for s in SCHEMES + list(VARIANTS)}
        recovered = []
        replay_notes = []
        replay_keys = []
        for j in range(1, column_sets + 1):
            d = runs / name / f"set{j}"
            meta = json.loads((d / f"{tag}-base.json").read_text())
            replay_keys.append(meta.get("replay"))
            if meta.get("replay") and meta["replay"].get("rows_reused"):
                replay_notes.append(meta["replay"])
            for s in SCHEMES:
                t, r = iteration2(d / f"{tag}-base.h5", s)
                times[s].append(t)
                if s == "is-gc":
                    recovered.append(r)
            for v in VARIANTS:
                t, _ = iteration2(d / f"{tag}-{v}.h5", "gc-dc")
                times[v].append(t)
        times = {s: np.array(x) for s, x in times.items()}  # [column sets, trials]
        rows = {}
        for s, x in times.items():
            row = {"time_s": stat(x)}
            for ref in ("uncoded", "gc-sc"):
                if s != ref:
                    d = x - times[ref]
                    row[f"minus_{ref}_s"] = stat(d)
                    row[f"minus_{ref}_percent"] = 100 * float(d.mean()) / float(times[ref].mean())
                    row[f"faster_than_{ref}_cells"] = float((d < 0).mean())
            if s == "is-gc":
                row["recovered_fraction"] = stat(np.array(recovered))
            if s in ("gc-dc", "perfect", "thr1.1"):
                row["minus_gc-dc_imperfect_s"] = stat(x - times["gc-dc"]) if s != "gc-dc" else None
            rows[s] = row
        out["models"][tag] = {"trace_compute_share": share, "schemes": rows,
                              "rows_reused": replay_notes,
                              "replay_of_base_runs": replay_keys}
    out["persistence"] = [persistence(trace, column_sets, workers, th, rng) for th in THRESHOLDS]
    return out


def fmt_ci(s, key="time_s", digits=2):
    st = s[key]
    return f"{st['mean']:.{digits}f} ± {st['ci95_cells']:.{digits}f} ({st['ci95_rounds']:.{digits}f})"


LABEL = {"uncoded": "uncoded", "gc": "GC", "gc-sc": "GC-SC", "gc-dc": "GC-DC",
         "is-gc": "IS-GC", "perfect": "GC-DC, perfect SSI", "thr1.1": "GC-DC, threshold 1.1"}


def table(model):
    lines = ["| scheme | iteration time (s) | − uncoded (s) | − uncoded | faster than uncoded (cells) | − GC-SC (s) | − GC-SC | recovered |",
             "|---|---|---|---|---|---|---|---|"]
    for s, row in model["schemes"].items():
        du = "0" if s == "uncoded" else fmt_ci(row, "minus_uncoded_s")
        pu = "" if s == "uncoded" else f"{row['minus_uncoded_percent']:+.1f}%"
        fu = "" if s == "uncoded" else f"{100 * row['faster_than_uncoded_cells']:.0f}%"
        dg = "0" if s == "gc-sc" else fmt_ci(row, "minus_gc-sc_s")
        pg = "" if s == "gc-sc" else f"{row['minus_gc-sc_percent']:+.1f}%"
        rec = fmt_ci(row, "recovered_fraction", 3) if "recovered_fraction" in row else "1"
        lines.append(f"| {LABEL[s]} | {fmt_ci(row)} | {du} | {pu} | {fu} | {dg} | {pg} | {rec} |")
    return "\n".join(lines)


def significant(st):
    """Sign of a difference whose wider interval (cells or rounds) excludes 0, else 0."""
    if abs(st["mean"]) > max(st["ci95_rounds"], st["ci95_cells"]):
        return 1 if st["mean"] > 0 else -1
    return 0


def readme(results, shares_path):
    L = []
    L.append("# Replay study: gradient coding on AWS Lambda round trips\n")
    L.append("Written by `scripts/replay-study.sh` (issue 16, item 6); every number below is computed "
             "by `scripts/replay_study.py` from the simulations that script runs, and is in "
             "`results/replay/<config>.json` (`compute-share.json`: the estimate of s). Do not edit by hand.\n")
    L.append("## Setup\n")
    L.append("- Schemes: uncoded, GC (cyclic, K = 24, r = 2), GC-SC and GC-DC (P = 4 clusters of 6, r = 2; "
             "GC-DC n = 2), IS-GC (cr placement, r = 2, stops at the fastest 20). Configs: `configs/replay/*.toml` "
             "(every setting commented).")
    L.append("- Traces: the `l1_000` file of four campaigns of `data/traces/aws-lambda/` (256 workers each). "
             "Each config runs on 10 disjoint sets of 24 columns (columns 1-24, ..., 217-240).")
    L.append("- Trials: trial k replays the disjoint rows 2k + 1, 2k + 2; only iteration 2 is read, where GC-DC "
             "plans with the flags of the first row (imperfect state information, what a master can know; "
             "the trace has no state before a trial's first row). A cell = (column set, trial); every "
             "difference is paired within a cell (same workers, same round).")
    L.append("- Intervals: `mean ± h (h')`: h the 95% t half-width over the cells (column sets × trials, "
             "treated as independent), h' the same over the per-round means (n = trials: the rounds are "
             "the independent unit; cells of one round share the service's state at that time). "
             "Statements below call a difference significant when the wider of h and h' excludes 0.")
    L.append("- Two replay models: **s = 1**, the old model (a worker with load c takes c·v: the whole round "
             "trip scales with the load), and **s estimated**, the computation share of the round trip "
             "(a message after c computations arrives at c·s·v + (1 − s)·v), estimated per campaign by "
             "`scripts/estimate_compute_share.py` from the campaign's files measured at five loads "
             "(Theil-Sen of per-file medians against the load; 95% bootstrap over rounds).\n")

    L.append("| config | campaign | rows | trials | cells | estimated s (95% CI) |")
    L.append("|---|---|---|---|---|---|")
    for r in results:
        lo, hi = r["share_ci95"]
        L.append(f"| {pathlib.Path(r['config']).stem} | {r['campaign']} | {r['rows']} | {r['trials']} | "
                 f"{r['column_sets'] * r['trials']} | {r['estimated_share']:.3f} [{lo:.3f}, {hi:.3f}] |")
    L.append("")

    L.append("## Which replay model the studies use\n")
    L.append("The replay studies use the **estimated s** (`straggler.trace_compute_share` as set in "
             "`configs/replay/`). A traced value is a whole round trip (invocation, transfer, computation); "
             "the loads the campaigns measured show that the computation is a small part of it "
             "(s between " + f"{min(r['estimated_share'] for r in results):.3f} and "
             f"{max(r['estimated_share'] for r in results):.3f}" + " for these four campaigns), so scaling the "
             "whole value by the load (s = 1) charges redundancy for invocation and transfer it does not "
             "repeat: a worker of load 2 sends one message, not two round trips. s = 1 is kept below for "
             "comparison with the earlier results. The paper-style figures (`results/paper/`) use the "
             "papers' delay distributions, not traces, and are not affected.\n")

    def span(tag, s, key):
        xs = [r["models"][tag]["schemes"][s][key] for r in results]
        return f"{min(xs):+.1f}% to {max(xs):+.1f}%"

    coded = ("gc", "gc-sc", "gc-dc", "is-gc")
    L.append("## In brief\n")
    L.append("- Old model (s = 1): against uncoded, " + "; ".join(
        f"{LABEL[s]} {span('s1', s, 'minus_uncoded_percent')}" for s in coded)
        + " over the four campaigns (mean iteration time).")
    L.append("- Estimated s: " + "; ".join(
        f"{LABEL[s]} {span('sest', s, 'minus_uncoded_percent')}" for s in coded)
        + ". Counted as significant (wider interval excludes 0): " + "; ".join(
        f"{LABEL[s]} " + ", ".join(
            f"{pathlib.Path(r['config']).stem} "
            + {1: "slower", -1: "faster", 0: "n.s."}[significant(r['models']['sest']['schemes'][s]['minus_uncoded_s'])]
            for r in results) for s in coded) + ".")
    L.append("- GC-DC against GC-SC at the estimated s: imperfect state information "
             f"{span('sest', 'gc-dc', 'minus_gc-sc_percent')}, perfect state information (an oracle) "
             f"{span('sest', 'perfect', 'minus_gc-sc_percent')}, threshold 1.1 "
             f"{span('sest', 'thr1.1', 'minus_gc-sc_percent')}.")
    L.append("- Values above twice their round's median (the default straggler): "
             + ", ".join(f"{pathlib.Path(r['config']).stem} {100 * r['persistence'][0]['p_chance']:.1f}%"
                         for r in results)
             + " of the worker-rounds from row 2 on; IS-GC recovers "
             + ", ".join(f"{r['models']['sest']['schemes']['is-gc']['recovered_fraction']['mean']:.3f}"
                         for r in results) + " of the partitions.")
    reused = [k for r in results for m in r["models"].values() for k in m["replay_of_base_runs"]
              if k is None or k.get("rows_reused")]
    # Where the mean gain comes from: the share of cells in which GC-SC beats uncoded.
    wins = [(pathlib.Path(r["config"]).stem, r["models"]["sest"]["schemes"]["gc-sc"]) for r in results]
    L.append("- Where a coded scheme gains on average, it gains in few rounds: GC-SC beats uncoded in "
             + ", ".join(f"{n} {100 * w['faster_than_uncoded_cells']:.0f}% (mean {w['minus_uncoded_percent']:+.1f}%)"
                         for n, w in wins)
             + " of the cells; in the other cells it pays its extra computation (s of a round trip) "
             "and finds no straggler to skip, and the rare very slow worker of a few rounds carries the mean.")
    L.append(f"- Every simulation replayed disjoint rows (simulate's `replay.rows_reused` false in all "
             f"{sum(len(m['replay_of_base_runs']) for r in results for m in r['models'].values())} base runs)."
             if not reused else f"- {len(reused)} runs reused rows or reported no replay: see the JSON.")
    L.append("")

    for r in results:
        name = pathlib.Path(r["config"]).stem
        L.append(f"## {name} ({r['campaign']})\n")
        for tag, title in (("sest", f"estimated s = {r['estimated_share']:.3f}"), ("s1", "s = 1 (old model)")):
            m = r["models"][tag]
            L.append(f"**{title}**\n")
            L.append(table(m))
            L.append("")
            if m["rows_reused"]:
                L.append(f"Note: rows reused: {m['rows_reused']}\n")
        L.append("How often a straggler stays one (trace file, per column set, every consecutive pair of rows):\n")
        L.append("| threshold × median | stragglers (with a next round) | stayed | P(stay) [95%] | chance P(straggler) | P(new straggler) | lift [95%] |")
        L.append("|---|---|---|---|---|---|---|")
        for p in r["persistence"]:
            a, b = p["p_stay_ci95"]
            c, d = p["lift_ci95"]
            L.append(f"| {p['threshold']} | {p['stragglers_with_next_round']} | {p['stayed']} | "
                     f"{p['p_stay']:.3f} [{a:.3f}, {b:.3f}] | {p['p_chance']:.3f} | {p['p_new']:.3f} | "
                     f"{p['lift']:.2f} [{c:.2f}, {d:.2f}] |")
        L.append("")

    L.append("## What helps and what does not\n")
    L.append("Computed from the tables above (a difference counts when the wider of its two intervals "
             "excludes 0; faster in x% of cells: the share of cells where the scheme beat uncoded).\n")
    for r in results:
        name = pathlib.Path(r["config"]).stem
        m = r["models"]["sest"]["schemes"]
        m1 = r["models"]["s1"]["schemes"]
        parts = []
        for s in ("gc", "gc-sc", "gc-dc", "is-gc"):
            st = m[s]["minus_uncoded_s"]
            word = {1: "slower than", -1: "faster than", 0: "no different from"}[significant(st)]
            parts.append(f"{LABEL[s]} {word} uncoded ({m[s]['minus_uncoded_percent']:+.1f}%, faster in "
                         f"{100 * m[s]['faster_than_uncoded_cells']:.0f}% of cells; "
                         f"s = 1: {m1[s]['minus_uncoded_percent']:+.1f}%)")
        dc = m["gc-dc"]["minus_gc-sc_s"]
        word = {1: "slower than", -1: "faster than", 0: "no different from"}[significant(dc)]
        parts.append(f"GC-DC {word} GC-SC ({m['gc-dc']['minus_gc-sc_percent']:+.1f}%; "
                     f"perfect SSI {m['perfect']['minus_gc-sc_percent']:+.1f}%, "
                     f"threshold 1.1 {m['thr1.1']['minus_gc-sc_percent']:+.1f}%)")
        p = r["persistence"][0]
        if p["stragglers_with_next_round"] >= 20:
            parts.append(f"a straggler (threshold 2) stays one with probability {p['p_stay']:.2f} "
                         f"against {p['p_chance']:.2f} by chance ({p['stayed']} of {p['stragglers_with_next_round']})")
        else:
            parts.append(f"only {p['stragglers_with_next_round']} value(s) (of {p['transitions']} with a next round) "
                         f"exceed twice their round's median, so there is almost no straggler to plan around "
                         f"(at 1.1 × median: P(stay) {r['persistence'][1]['p_stay']:.2f} against "
                         f"{r['persistence'][1]['p_chance']:.2f} by chance)")
        rec = m["is-gc"]["recovered_fraction"]["mean"]
        parts.append(f"IS-GC recovers {rec:.3f} of the partitions")
        L.append(f"- **{name}** (s = {r['estimated_share']:.3f}): " + "; ".join(parts) + ".")
    L.append("")
    L.append("Limits: 10 to 15 rounds per campaign (trials) are the independent unit; the column sets "
             "add workers, not rounds. The estimate of s assumes the fixed cost does not grow with the load "
             "and that the loads' files, measured one after another, saw the same service; its interval "
             "(bootstrap over rounds) does not cover drift between those files "
             "(`compute-share.json` has the leave-one-load-out range).\n")
    return "\n".join(L)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--column-sets", type=int, default=10)
    ap.add_argument("--workers", type=int, default=24)
    ap.add_argument("configs", nargs="+")
    args = ap.parse_args(argv)
    out = pathlib.Path(args.out)
    shares = json.loads((out / "compute-share.json").read_text())
    rng = random.Random(1)
    results = []
    for c in args.configs:
        r = study(c, pathlib.Path(args.runs), args.column_sets, args.workers, shares, rng)
        (out / f"{pathlib.Path(c).stem}.json").write_text(json.dumps(r, indent=1) + "\n")
        results.append(r)
    # The README covers every config whose JSON is present.
    present = []
    for p in sorted(out.glob("*.json")):
        if p.name == "compute-share.json":
            continue
        present.append(json.loads(p.read_text()))
    (out / "README.md").write_text(readme(present, out / "compute-share.json"))
    print(f"wrote {out}/README.md and {len(results)} JSON files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
