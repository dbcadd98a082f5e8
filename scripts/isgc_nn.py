#!/usr/bin/env python3
"""Draw 004 §VIII's deep-learning figures from the traces scripts/isgc-nn.sh trained.

Usage: isgc_nn.py TRACES_DIR OUT_DIR [--threshold LOSS]

Reads TRACES_DIR/fig12-*.h5 and fig13-*.h5 (gradcode traces) and writes
OUT_DIR/isgc-nn-fig12.png, isgc-nn-fig13.png, isgc-nn.json (every number) and
isgc-nn.md (the paper's statements beside ours). "Steps to the threshold": the
first iteration at which the mean of the last three recorded training losses
(recorded every train.eval_every iterations and whenever every partition was
recovered) is at most the threshold; "time to the threshold": the sum of the
iterations' durations (duration_s) before it.
"""
import argparse
import json
import math
from pathlib import Path

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

SMOOTH = 3


def load(path):
    with h5py.File(path, "r") as f:
        it = f["iteration"]
        run = {name: it[name][:] for name in ("duration_s", "train_loss", "test_loss",
                                               "recovered_fraction")}
        run["test_accuracy"] = it["test_accuracy"][:] if "test_accuracy" in it else None
    return run


def to_threshold(run, threshold):
    """(steps, seconds) until the smoothed recorded training loss reaches threshold, or None."""
    loss = run["train_loss"]
    seen = [(i, v) for i, v in enumerate(loss) if np.isfinite(v)]
    for k in range(len(seen)):
        window = [v for _, v in seen[max(0, k - SMOOTH + 1):k + 1]]
        if len(window) == SMOOTH and np.mean(window) <= threshold:
            i = seen[k][0]
            return i, float(np.sum(run["duration_s"][:i]))
    return None


def summary(run, threshold):
    reached = to_threshold(run, threshold)
    acc = run["test_accuracy"]
    finite = acc[np.isfinite(acc)] if acc is not None else np.array([])
    return {
        "iterations": int(len(run["duration_s"])),
        "recovered_percent": 100.0 * float(np.mean(run["recovered_fraction"])),
        "mean_step_s": float(np.mean(run["duration_s"])),
        "steps_to_threshold": None if reached is None else reached[0],
        "seconds_to_threshold": None if reached is None else reached[1],
        "final_test_accuracy": float(finite[-1]) if len(finite) else None,
    }


def fmt(x, spec="{:.0f}"):
    return "not reached" if x is None else spec.format(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("traces", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--threshold", type=float, default=1.0)
    args = ap.parse_args()
    runs = {p.stem: load(p) for p in sorted(args.traces.glob("fig1*.h5"))}
    if not runs:
        raise SystemExit(f"isgc_nn.py: no fig12-*.h5 or fig13-*.h5 traces in {args.traces}")
    numbers = {name: summary(run, args.threshold) for name, run in runs.items()}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "isgc-nn.json").write_text(json.dumps(
        {"threshold": args.threshold, "smoothing_evaluations": SMOOTH, "runs": numbers},
        indent=2) + "\n")

    ws = [1, 2, 3]
    schemes = [("is-sgd", "IS-SGD (ignore-stragglers)"), ("is-fr", "IS-GC, FR"),
               ("is-cr", "IS-GC, CR")]
    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5))
    panels = [("recovered_percent", "gradients recovered (%)"),
              ("steps_to_threshold", f"steps to training loss {args.threshold}"),
              ("mean_step_s", "mean time per step (s)"),
              ("seconds_to_threshold", f"time to training loss {args.threshold} (s)")]
    for ax, (key, label) in zip(axes.flat, panels):
        for s, title in schemes:
            ys = [numbers.get(f"fig12-{s}-w{w}", {}).get(key) for w in ws]
            ax.plot(ws, [math.nan if y is None else y for y in ys], "o-", label=title)
        for name, title, w, marker in (("fig12-gc-fr", "GC, FR (w = 3)", 3, "s"),
                                       ("fig12-gc-cr", "GC, CR (w = 3)", 3, "D"),
                                       ("fig12-sgd", "SGD (w = 4)", 4, "^")):
            if name in numbers and numbers[name].get(key) is not None:
                ax.plot([w], [numbers[name][key]], marker, label=title)
        ax.set_xlabel("w (workers waited for)")
        ax.set_ylabel(label)
        ax.set_xticks([1, 2, 3, 4])
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8)
    fig.suptitle("004 Fig. 12 at CPU size: CNN on Fashion-MNIST, n = 4, c = 2")
    fig.tight_layout()
    fig.savefig(args.out / "isgc-nn-fig12.png", dpi=120)

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    c1s = [c for c in range(4) if f"fig13-hr-c1-{c}" in numbers]
    a.bar([str(c) for c in c1s], [numbers[f"fig13-hr-c1-{c}"]["recovered_percent"] for c in c1s])
    a.set_xlabel("c1 of HR(8, c1, 4 - c1) (0: CR, 3: FR)")
    a.set_ylabel("gradients recovered (%), w = 2")
    for c in c1s:
        loss = runs[f"fig13-hr-c1-{c}"]["train_loss"]
        steps = np.flatnonzero(np.isfinite(loss))
        b.plot(steps, loss[steps], label=f"c1 = {c}")
    b.set_xlabel("step")
    b.set_ylabel("training loss (recorded)")
    b.legend()
    for ax in (a, b):
        ax.grid(alpha=0.3)
    fig.suptitle("004 Fig. 13 at CPU size: HR(8, c1, 4 - c1), w = 2")
    fig.tight_layout()
    fig.savefig(args.out / "isgc-nn-fig13.png", dpi=120)

    lines = [
        "# 004 §VIII at CPU size: IS-GC training a CNN",
        "",
        "Written by `scripts/isgc-nn.sh` (configs `configs/paper/isgc-fig12-*.toml`,",
        "`isgc-fig13-*.toml`); do not edit by hand. One run per point (the paper: the",
        "mean of 10), 200 steps each; steps and time to the threshold: the first step",
        f"where the mean of the last {SMOOTH} recorded training losses is at most {args.threshold}.",
        "",
        "![Fig. 12](isgc-nn-fig12.png)",
        "",
        "![Fig. 13](isgc-nn-fig13.png)",
        "",
        "## Fig. 12: n = 4, c = 2",
        "",
        "| run | w | recovered | steps to threshold | mean step (s) | time to threshold (s) | test accuracy |",
        "|---|---|---|---|---|---|---|",
    ]
    order = ["fig12-sgd", "fig12-gc-fr", "fig12-gc-cr"] + [
        f"fig12-{s}-w{w}" for w in ws for s, _ in schemes]
    for name in order:
        if name not in numbers:
            continue
        n = numbers[name]
        w = {"fig12-sgd": 4, "fig12-gc-fr": 3, "fig12-gc-cr": 3}.get(name, name[-1])
        lines.append(
            f"| {name[6:]} | {w} | {n['recovered_percent']:.1f}% | {fmt(n['steps_to_threshold'])} "
            f"| {n['mean_step_s']:.3f} | {fmt(n['seconds_to_threshold'], '{:.1f}')} "
            f"| {fmt(n['final_test_accuracy'], '{:.3f}')} |")
    lines += ["", "## Fig. 13: HR(8, c1, 4 - c1), w = 2", "",
              "| c1 | recovered | steps to threshold | test accuracy |", "|---|---|---|---|"]
    for c in c1s:
        n = numbers[f"fig13-hr-c1-{c}"]
        lines.append(f"| {c} | {n['recovered_percent']:.1f}% | {fmt(n['steps_to_threshold'])} "
                     f"| {fmt(n['final_test_accuracy'], '{:.3f}')} |")

    def steps(name):
        return numbers.get(name, {}).get("steps_to_threshold")

    lines += ["", "## The paper's statements beside ours", "",
              "| statement (004 §VIII) | ours | |", "|---|---|---|"]
    for w in ws:
        base = steps(f"fig12-is-sgd-w{w}")
        for s in ("is-fr", "is-cr"):
            ours = steps(f"fig12-{s}-w{w}")
            if ours is None and base is None:
                verdict = "neither reached the threshold"
            elif base is None or (ours is not None and ours < base):
                verdict = "holds"
            elif ours == base:
                verdict = "equal"
            else:
                verdict = "does not hold"
            lines.append(f"| IS-GC ({s[3:].upper()}) needs fewer steps than IS-SGD at w = {w} "
                         f"| {fmt(ours)} vs {fmt(base)} | {verdict} |")
    for w in ws:
        rec = {s: numbers.get(f"fig12-{s}-w{w}", {}).get("recovered_percent") for s, _ in schemes}
        if None not in rec.values():
            holds = rec["is-fr"] >= rec["is-sgd"] and rec["is-cr"] >= rec["is-sgd"]
            lines.append(f"| IS-GC recovers more than IS-SGD at w = {w} | FR {rec['is-fr']:.1f}%, "
                         f"CR {rec['is-cr']:.1f}%, IS-SGD {rec['is-sgd']:.1f}% "
                         f"| {'holds' if holds else 'does not hold'} |")
    r2 = {s: numbers.get(f"fig12-{s}-w2", {}).get("recovered_percent") for s in ("is-fr", "is-cr")}
    if None not in r2.values():
        lines.append(f"| FR recovers more than CR at w = 2 | {r2['is-fr']:.1f}% vs {r2['is-cr']:.1f}% "
                     f"| {'holds' if r2['is-fr'] > r2['is-cr'] else 'does not hold'} |")
    rec13 = [numbers[f"fig13-hr-c1-{c}"]["recovered_percent"] for c in c1s]
    if len(rec13) == 4:
        between = all(rec13[i] <= rec13[i + 1] + 1e-9 for i in range(3))
        lines.append("| HR's recovered gradients lie between CR (c1 = 0) and FR (c1 = 3), growing with c1 "
                     f"| {', '.join(f'{r:.1f}%' for r in rec13)} | {'holds' if between else 'does not hold'} |")
    lines += [
        "",
        "## What differs from the paper",
        "",
        "- Data and model: the LeNet-style CNN of the authors' public code on Fashion-MNIST",
        "  (28 x 28 grey images), not ResNet-18 on CIFAR-10; CPU ranks on one 2-core machine,",
        "  not GPU virtual machines (`configs/paper/isgc-resnet18-cifar.toml` is the ResNet",
        "  config for a GPU node or a cluster).",
        "- Update: the mean gradient over the recovered samples (the authors: lr x the sum of",
        "  the recovered partitions' mean gradients), learning rate 0.1 so that 200 steps train;",
        "  with part of the gradient recovered the paper's steps are also shorter, ours are not,",
        "  so a partial scheme's disadvantage in steps is the gradient's noise alone here.",
        "- Stragglers: every worker sleeps Exp(mean 50 ms) before sending; the paper's",
        "  stragglers were its cloud machines plus injected delays.",
        "- One run per point: the paper averages 10 trials; a difference of a few steps is",
        "  within the run-to-run spread of the noisy mini-batch loss.",
    ]
    (args.out / "isgc-nn.md").write_text("\n".join(lines) + "\n")
    print(f"isgc_nn.py: wrote {args.out}/isgc-nn-fig12.png, isgc-nn-fig13.png, isgc-nn.json, isgc-nn.md")


if __name__ == "__main__":
    main()
