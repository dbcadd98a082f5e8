#!/usr/bin/env python3
"""Plots of gradcode HDF5 traces (the schema of src/trace/mod.rs).

A TRACE argument is a file written by `gradcode train --out` (one run) or
`gradcode simulate --out` (one trace per scheme and trial under
/sim/<scheme>/trial_<k>/). Select part of a simulation file with
FILE.h5:SCHEME (all its trials) or FILE.h5:SCHEME:TRIAL.

    plots.py cdf TRACE... -o cdf.png         iteration-time CDFs (a simulation: one curve per scheme, trials pooled)
    plots.py loss TRACE... -o loss.png       train (solid) and test (dashed) loss against wall-clock time
    plots.py accuracy TRACE... -o acc.png    a network's runs: loss and test accuracy against iterations and wall-clock time
    plots.py heatmap TRACE -o h.png          stragglers, iterations x workers (a simulation: first scheme, trial 0)
    plots.py clusters TRACE -o c.png         cluster formation over time and stragglers per cluster
    plots.py overview TRACE -o o.png         CDF, loss, heat map and clusters on one page (with a test accuracy: also
                                             loss and accuracy against iterations, accuracy against wall-clock time)
    plots.py report RESULTS_DIR [-o OUT]     every *.h5 under RESULTS_DIR: PNGs and an index (OUT = RESULTS_DIR/report)

-o of a plot names an image file, its format by its extension (png, pdf, svg,
... as matplotlib writes them); an input trace, a FIFO, a device or a folder
is refused before anything is read (one line on stderr, exit status 2).

scripts/report.sh RESULTS_DIR sets up the pinned Python environment and runs
`report`. Everything here is also a function for use from Python; the traces
are read with the gradcode_traces package (python/).

Every plot colours a run by its scheme (`scheme.kind`, SCHEME_COLORS: the
Okabe-Ito palette, as the paper figures of reproduce_figures.py, and two of
Paul Tol's colours), the same in every plot; several runs of one scheme in a
plot get shades of its colour.
Against wall-clock time means against the trace's `elapsed_s` (evaluation
waits included); a trace older than that dataset is drawn against the running
sum of `duration_s`, and the axis says so.
"""

import argparse
import html
import math
import os
import pathlib
import re
import stat
import subprocess
import sys
import zlib

import matplotlib
import numpy as np

# The trace reader (python/gradcode_traces, installed into .venv by
# scripts/python-env.sh); from a checkout without it installed, python/ is used.
try:
    import gradcode_traces as gt
except ModuleNotFoundError:
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "python"))
    import gradcode_traces as gt
from gradcode_traces import Run, Trace, TraceError, even_fraction  # noqa: E402,F401 (re-exported)
from gradcode_traces import table as gtt  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.backend_bases import FigureCanvasBase  # noqa: E402
from matplotlib.colors import BoundaryNorm, ListedColormap, to_rgb  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402


def parse_selector(arg):
    """FILE.h5[:SCHEME[:TRIAL]] -> (path, scheme, trial)."""
    parts = arg.split(":")
    if len(parts) > 1 and parts[0].endswith(".h5"):
        path, scheme = parts[0], parts[1] or None
        trial = None
        if len(parts) > 2:
            try:
                trial = int(parts[2])
            except ValueError:
                raise TraceError(f"{arg}: trial `{parts[2]}` is not a number") from None
        return path, scheme, trial
    return arg, None, None


#: Okabe and Ito, "Color Universal Design" (2008): distinguishable with the common colour-vision deficiencies.
OKABE_ITO = {
    "black": "#000000", "orange": "#E69F00", "sky blue": "#56B4E9", "bluish green": "#009E73",
    "yellow": "#F0E442", "blue": "#0072B2", "vermillion": "#D55E00", "reddish purple": "#CC79A7",
    "grey": "#999999",
}

#: One colour per registered scheme kind, in every plot (gc-sc, gc-dc, uc-mmc and gc-mmc as in the paper figures
#: of reproduce_figures.py; `gc` is the paper figures' name of gc-cyclic). Okabe-Ito has nine colours for ten
#: kinds, and its sky blue beside gc-cyclic's blue reads as the same blue, so two kinds take Paul Tol's colours
#: (also safe for colour-blind readers): gc-partial his wine, is-gc his sand. Sand stays apart from every other
#: kind's colour, gc-frac's yellow and ignore-stragglers' grey included, under deuteranopia and protanopia too (it
#: nears the yellow only under the rare tritanopia); Tol's teal would fall on the grey under deuteranopia. Sky
#: blue is left unused. The seven approximate codes take the rest of Tol's muted palette (indigo, green, teal,
#: cyan, rose, purple, olive): seventeen kinds are more than any colour-blind-safe palette tells apart, so a plot
#: of many kinds also differs by line style and label.
SCHEME_COLORS = {
    "uncoded": OKABE_ITO["black"], "ignore-stragglers": OKABE_ITO["grey"], "gc-frac": OKABE_ITO["yellow"],
    "gc-cyclic": OKABE_ITO["blue"], "gc": OKABE_ITO["blue"], "gc-sc": OKABE_ITO["orange"],
    "gc-dc": OKABE_ITO["bluish green"], "is-gc": "#DDCC77", "gc-mmc": OKABE_ITO["reddish purple"],
    "uc-mmc": OKABE_ITO["vermillion"], "gc-partial": "#882255",
    "agc-expander": "#332288", "agc-frc": "#117733", "agc-bgc": "#44AA99", "agc-graph": "#88CCEE",
    "agc-bibd": "#CC6677", "sgc": "#AA4499", "erasurehead": "#999933",
}

#: Colours of kinds not in SCHEME_COLORS, chosen by a hash of the name (the same in every plot): Paul Tol's light
#: palette (his muted one is the registered kinds').
OTHER_COLORS = ["#77AADD", "#EE8866", "#FFAABB", "#AAAA00", "#BBCC33", "#44BB99"]


def scheme_color(kind):
    """The colour of a scheme kind: SCHEME_COLORS, else one of OTHER_COLORS fixed by the name."""
    if kind in SCHEME_COLORS:
        return SCHEME_COLORS[kind]
    return OTHER_COLORS[zlib.crc32(str(kind).encode()) % len(OTHER_COLORS)]


def series_colors(kinds):
    """The colour of each of several series of one plot, by kind: the first of a kind its colour, the next
    ones alternately darker and lighter shades of it (so runs of one scheme stay told apart)."""
    seen, out = {}, []
    for kind in kinds:
        k = seen.get(kind, 0)
        seen[kind] = k + 1
        base = np.array(to_rgb(scheme_color(kind)))
        if k == 0:
            out.append(tuple(base))
            continue
        step = min(0.6, 0.22 * ((k + 1) // 2))
        target = np.zeros(3) if k % 2 else np.ones(3)
        out.append(tuple((1 - step) * base + step * target))
    return out


#: gradcode's default trace name, `<scheme>-<UTC time stamp>[-n]` (results/gc-dc-20261126T190312Z.h5).
_DEFAULT_NAME = re.compile(r"-\d{8}T\d{6}Z(-\d+)?$")


def run_name(name, scheme):
    """A training run's legend: `name (scheme)`, or the name alone when it already says the scheme (the
    name is the scheme, or gradcode's default name `<scheme>-<UTC time stamp>`): never `uncoded (uncoded)`."""
    if not scheme or name == scheme or (name.startswith(f"{scheme}-") and _DEFAULT_NAME.fullmatch(name[len(scheme):])):
        return name
    return f"{name} ({scheme})"


def load_selection(arg):
    """[(label, [runs])] for a TRACE argument; labels name the file when it is a training run."""
    path, scheme, trial = parse_selector(arg)
    t = Trace(path)
    sel = t.select(scheme, trial)
    if t.kind == "train":
        return [(run_name(t.path.stem, label), runs) for label, runs in sel]
    return sel


def one_run(arg):
    """(label, run, trace) of a TRACE argument for the single-run plots: a
    simulation without selector gives its first scheme, trial 0."""
    path, scheme, trial = parse_selector(arg)
    t = Trace(path)
    if t.kind == "simulation":
        scheme = scheme or next(iter(t.runs), None)
        if scheme is None:
            raise TraceError(f"{path}: no scheme under /sim")
        trial = 0 if trial is None else trial
        (label, runs), = t.select(scheme, trial)
    else:
        (label, runs), = t.select(scheme, trial)
        label = run_name(t.path.stem, label)
    if not runs:
        raise TraceError(f"{path}: {label} has no trial")
    return label, runs[0], t


# --- statistics shared with the plots ---------------------------------------


def ecdf(values):
    """(x, y): the sorted finite values and the share of values <= each."""
    v = np.sort(np.asarray(values, dtype=float)[np.isfinite(values)])
    return v, np.arange(1, len(v) + 1) / max(len(v), 1)


def time_unit(seconds):
    """(scale, unit) to show times of this size: s or ms."""
    finite = np.asarray(seconds, dtype=float)
    finite = finite[np.isfinite(finite)]
    if len(finite) and np.median(finite) < 0.5:
        return 1e3, "ms"
    return 1.0, "s"


# --- plots: each draws on an Axes ------------------------------------------------


def plot_cdf(ax, series, title="Iteration time CDF"):
    """series: [(label, durations in s)] or [(label, durations in s, scheme kind)] (coloured by kind)."""
    all_values = np.concatenate([np.asarray(item[1], dtype=float) for item in series]) if series else np.array([])
    scale, unit = time_unit(all_values)
    finite = all_values[np.isfinite(all_values) & (all_values > 0)]
    colors = series_colors([item[2] if len(item) > 2 else item[0] for item in series])
    for (label, values, *_), color in zip(series, colors):
        x, y = ecdf(values)
        if len(x) == 0:
            continue
        p50, p99 = np.percentile(x, [50, 99])
        ax.step(
            x * scale,
            y,
            where="post",
            color=color,
            label=f"{label}: p50 {p50 * scale:.3g}, p99 {p99 * scale:.3g} {unit} (n={len(x)})",
        )
    if len(finite) and finite.max() / finite.min() > 100:
        ax.set_xscale("log")
    ax.set_xlabel(f"iteration time ({unit})")
    ax.set_ylabel("fraction of iterations ≤ x")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.set_title(title)
    if series:
        ax.legend(fontsize="small", loc="best")


#: The x axes of the training curves: wall-clock time (elapsed_s at the end of
#: each iteration, or the running sum of duration_s in a trace without it) or
#: the iteration (the steps).
AXES = ("wall", "steps")


def _x_values(run, x):
    """The x of each iteration of `run` on axis `x` (AXES)."""
    if x not in AXES:
        raise ValueError(f"x must be one of {AXES}, not {x!r}")
    return run.wall_s() if x == "wall" else np.arange(1, run.iterations + 1, dtype=float)


def _x_axis(ax, x, wall_max, without_elapsed=()):
    """Scale the drawn lines' wall-clock times to a unit that fits and label the axis (naming the runs
    `without_elapsed`, drawn against the sum of their iteration times)."""
    if x == "steps":
        ax.set_xlabel("iteration")
        return
    scale, unit = time_unit([wall_max])
    if scale != 1.0:
        for line in ax.get_lines():
            line.set_xdata(np.asarray(line.get_xdata()) * scale)
        ax.relim()
        ax.autoscale_view()
    label = f"wall-clock time since the first iteration ({unit})"
    if without_elapsed:
        label += f"; {', '.join(without_elapsed)}: sum of iteration times (no elapsed_s recorded)"
    ax.set_xlabel(label)


def _kinds(runs_by_label):
    """The colours of [(label, run)] by the runs' scheme kinds."""
    return series_colors([getattr(run, "kind", None) or label for label, run in runs_by_label])


#: Entries past which a legend is placed outside the axes (it would cover the curves).
LEGEND_INSIDE_MAX = 6


def legend(ax, entries):
    """The axes' legend: inside at its best place for at most LEGEND_INSIDE_MAX entries, else outside,
    right of the axes."""
    if entries > LEGEND_INSIDE_MAX:
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    else:
        ax.legend(fontsize="small", loc="best")


def with_gaps(xs, ys, steps):
    """The points of a series recorded at the iterations `steps`, with a NaN wherever two recorded points
    lie more than 1.5 times the series' usual (median) spacing apart: iterations the run did not record are
    drawn as a gap, not bridged by a straight line."""
    xs, ys = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if len(steps) < 3:
        return xs, ys
    spacing = np.diff(steps)
    breaks = np.flatnonzero(spacing > 1.5 * np.median(spacing)) + 1
    return np.insert(xs, breaks, np.nan), np.insert(ys, breaks, np.nan)


def plot_loss(ax, runs_by_label, title="Loss against wall-clock time", x="wall"):
    """runs_by_label: [(label, run)]; train loss solid, test loss dashed with markers, the batch loss
    (every step's, the samples the update used) thin and light; x: "wall" (wall-clock time) or "steps"
    (the iteration). A stretch of iterations a series did not record is a gap (`with_gaps`)."""
    drawn = 0
    positive = True
    spans = []
    wall_max = 0.0
    for (label, run), color in zip(runs_by_label, _kinds(runs_by_label)):
        xs = _x_values(run, x)
        wall = run.wall_s()
        wall_max = max(wall_max, wall[-1] if len(wall) else 0.0)
        batch = getattr(run, "batch_loss", None)
        for values, style, kind in ((run.train_loss, "-", "train"), (run.test_loss, "--o", "test"),
                                    (batch, ":", "batch")):
            if values is None:
                continue
            ok = np.isfinite(values)
            if not ok.any():
                continue
            gx, gy = with_gaps(xs[ok], values[ok], np.flatnonzero(ok))
            thin = {"linewidth": 0.8, "alpha": 0.6} if kind == "batch" else {"linewidth": 1.2}
            ax.plot(gx, gy, style, color=color, markersize=3, label=f"{label}: {kind}", **thin)
            positive &= bool((values[ok] > 0).all())
            spans.append(values[ok])
            drawn += 1
    _x_axis(ax, x, wall_max, [label for label, run in runs_by_label if not run.has_elapsed() and run.has_losses()])
    if drawn and positive:
        v = np.concatenate(spans)
        if v.max() / v.min() > 10:
            ax.set_yscale("log")
    ax.set_ylabel("loss")
    ax.grid(True, alpha=0.3)
    ax.set_title(title)
    if drawn:
        legend(ax, drawn)
    else:
        ax.text(0.5, 0.5, "no loss recorded", ha="center", va="center", transform=ax.transAxes)
    return drawn


def plot_accuracy(ax, runs_by_label, title="Test accuracy against wall-clock time", x="wall"):
    """runs_by_label: [(label, run)]; the test accuracy (in %) where recorded, with markers;
    x: "wall" (wall-clock time) or "steps" (the iteration). Returns the curves drawn."""
    drawn = 0
    wall_max = 0.0
    for (label, run), color in zip(runs_by_label, _kinds(runs_by_label)):
        wall = run.wall_s()
        wall_max = max(wall_max, wall[-1] if len(wall) else 0.0)
        if not run.has_accuracy():
            continue
        ok = np.isfinite(run.test_accuracy)
        gx, gy = with_gaps(_x_values(run, x)[ok], 100 * run.test_accuracy[ok], np.flatnonzero(ok))
        ax.plot(gx, gy, "-o", color=color, markersize=3, linewidth=1.2, label=f"{label}: test accuracy")
        drawn += 1
    _x_axis(ax, x, wall_max, [label for label, run in runs_by_label if not run.has_elapsed() and run.has_accuracy()])
    ax.set_ylabel("test accuracy (%)")
    ax.grid(True, alpha=0.3)
    ax.set_title(title)
    if drawn:
        legend(ax, drawn)
    else:
        ax.text(0.5, 0.5, "no test accuracy recorded", ha="center", va="center", transform=ax.transAxes)
    return drawn


def plot_iteration_times(ax, run, title="Iteration time per iteration"):
    """The iteration times in order (for traces without losses)."""
    scale, unit = time_unit(run.duration_s)
    x = np.arange(1, run.iterations + 1)
    ax.plot(x, run.duration_s * scale, linewidth=0.8, color=scheme_color(run.kind))
    ax.set_xlabel("iteration")
    ax.set_ylabel(f"iteration time ({unit})")
    ax.grid(True, alpha=0.3)
    ax.set_title(title)


def _iteration_extent(run):
    return (0.5, run.iterations + 0.5, run.workers + 0.5, 0.5)


def _worker_ticks(ax, workers):
    step = max(1, math.ceil(workers / 24))
    ticks = list(range(1, workers + 1, step))
    ax.set_yticks(ticks)
    ax.set_ylabel("worker")


def plot_straggler_heatmap(ax, run, title="Stragglers"):
    """Workers (rows, worker 1 on top) x iterations: dark = straggling."""
    if run.straggling is None:
        ax.text(0.5, 0.5, "no /worker/straggling", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(title)
        return None
    cmap = ListedColormap(["#e8eef4", "#b2182b"])
    ax.imshow(
        run.straggling.T.astype(int),
        aspect="auto",
        interpolation="nearest",
        cmap=cmap,
        vmin=0,
        vmax=1,
        extent=_iteration_extent(run),
    )
    _worker_ticks(ax, run.workers)
    ax.set_xlabel("iteration")
    share = run.straggling.mean() if run.straggling.size else 0.0
    ax.set_title(f"{title} ({100 * share:.1f}% of worker-iterations straggling)")
    ax.legend(
        handles=[Patch(color="#b2182b", label="straggling"), Patch(color="#e8eef4", label="not straggling")],
        loc="upper right",
        bbox_to_anchor=(1.0, 1.18),
        ncol=2,
        fontsize="small",
        frameon=False,
    )
    return run.straggling.mean(axis=0)


def plot_straggler_share(ax, run):
    """Per worker: share of the iterations straggling (a bar per worker, beside the heat map)."""
    if run.straggling is None:
        ax.set_axis_off()
        return
    share = run.straggling.mean(axis=0) if run.iterations else np.zeros(run.workers)
    ax.barh(np.arange(1, run.workers + 1), 100 * share, color="#b2182b", height=0.8)
    ax.set_ylim(run.workers + 0.5, 0.5)
    ax.set_xlim(0, 100)
    ax.set_xlabel("% straggling")
    ax.tick_params(labelleft=False)
    ax.grid(True, axis="x", alpha=0.3)


def cluster_colors(p):
    base = plt.get_cmap("tab10" if p <= 10 else "tab20")
    return [to_rgb(base(i % base.N)) for i in range(p)]


def plot_cluster_formation(ax, run, title="Cluster formation"):
    """Workers x iterations coloured by cluster: light when not straggling,
    dark when straggling; grey = in no cluster."""
    p = run.clusters()
    if p == 0:
        ax.text(0.5, 0.5, "no clusters (every worker unclustered)", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(title)
        ax.set_axis_off()
        return
    colors = cluster_colors(p)
    light = [tuple(0.55 * np.array(c) + 0.45) for c in colors]
    dark = [tuple(0.75 * np.array(c)) for c in colors]
    # Index 0: unclustered; 1..P light (not straggling); P+1..2P dark (straggling).
    cmap = ListedColormap([(0.85, 0.85, 0.85)] + light + dark)
    norm = BoundaryNorm(np.arange(-0.5, 2 * p + 1.5), cmap.N)
    c = np.where(run.cluster >= 1, run.cluster, 0)
    if run.straggling is not None:
        c = np.where((c >= 1) & run.straggling, c + p, c)
    ax.imshow(c.T, aspect="auto", interpolation="nearest", cmap=cmap, norm=norm, extent=_iteration_extent(run))
    _worker_ticks(ax, run.workers)
    ax.set_xlabel("iteration")
    changes = int((run.cluster[1:] != run.cluster[:-1]).any(axis=1).sum()) if run.iterations > 1 else 0
    ax.set_title(f"{title}: P = {p}, re-formed in {changes} of {run.iterations} iterations")
    handles = [Patch(color=colors[i], label=f"cluster {i + 1}") for i in range(p)]
    if run.straggling is not None:
        handles.append(Patch(facecolor="white", edgecolor="black", label="dark = straggling"))
    if (run.cluster < 1).any():
        handles.append(Patch(color=(0.85, 0.85, 0.85), label="no cluster"))
    ax.legend(
        handles=handles,
        loc="upper right",
        bbox_to_anchor=(1.0, 1.2),
        ncol=min(len(handles), 8),
        fontsize="small",
        frameon=False,
    )


def plot_cluster_stragglers(ax, run, fig=None, title="Stragglers per cluster"):
    """Clusters x iterations: how many workers of the cluster straggle."""
    spc = run.stragglers_per_cluster()
    if spc is None:
        ax.text(0.5, 0.5, "no clusters or no /worker/straggling", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(title)
        ax.set_axis_off()
        return None
    counts, clustered = spc
    p = counts.shape[1]
    shown = np.where(clustered[:, None], counts, -1).astype(float)
    shown[shown < 0] = np.nan
    vmax = max(int(counts.max()), 1)
    cmap = plt.get_cmap("viridis", vmax + 1).with_extremes(bad=(0.85, 0.85, 0.85))
    im = ax.imshow(
        shown.T,
        aspect="auto",
        interpolation="nearest",
        cmap=cmap,
        vmin=-0.5,
        vmax=vmax + 0.5,
        extent=(0.5, run.iterations + 0.5, p + 0.5, 0.5),
    )
    ax.set_yticks(range(1, p + 1))
    ax.set_ylabel("cluster")
    ax.set_xlabel("iteration")
    ef = even_fraction(counts, clustered)
    means = ", ".join(f"{m:.2f}" for m in counts[clustered].mean(axis=0)) if clustered.any() else "-"
    ax.set_title(f"{title} (mean per cluster: {means}); spread as even as possible in {100 * ef:.1f}% of iterations")
    if fig is not None:
        cb = fig.colorbar(im, ax=ax, ticks=range(0, vmax + 1), pad=0.01)
        cb.set_label("stragglers")
    return counts


# --- figures -----------------------------------------------------------------------


def figure_cdf(selections, title="Iteration time CDF"):
    fig, ax = plt.subplots(figsize=(9, 5.5), layout="constrained")
    series = [(label, np.concatenate([r.duration_s for r in runs]), runs[0].kind) for label, runs in selections if runs]
    plot_cdf(ax, series, title)
    return fig


def figure_loss(runs_by_label, title="Loss against wall-clock time"):
    fig, ax = plt.subplots(figsize=(9, 5.5), layout="constrained")
    plot_loss(ax, runs_by_label, title)
    return fig


def figure_training(runs_by_label, title=None):
    """Loss (top) and test accuracy (bottom) against the iteration (left) and wall-clock time (right)."""
    fig, axes = plt.subplots(2, 2, figsize=(13, 9), layout="constrained")
    plot_loss(axes[0, 0], runs_by_label, "Loss against iterations", x="steps")
    plot_loss(axes[0, 1], runs_by_label, "Loss against wall-clock time")
    plot_accuracy(axes[1, 0], runs_by_label, "Test accuracy against iterations", x="steps")
    plot_accuracy(axes[1, 1], runs_by_label, "Test accuracy against wall-clock time")
    if title:
        fig.suptitle(title, fontsize="x-large")
    return fig


def figure_heatmap(label, run):
    fig = plt.figure(figsize=(13, 1.6 + 0.28 * max(run.workers, 6)), layout="constrained")
    gs = fig.add_gridspec(1, 2, width_ratios=[6, 1])
    ax = fig.add_subplot(gs[0])
    plot_straggler_heatmap(ax, run, f"Stragglers: {label}")
    plot_straggler_share(fig.add_subplot(gs[1], sharey=ax), run)
    return fig


def figure_clusters(label, run):
    p = max(run.clusters(), 1)
    fig = plt.figure(figsize=(13, 2.5 + 0.28 * max(run.workers, 6) + 0.35 * p), layout="constrained")
    gs = fig.add_gridspec(2, 1, height_ratios=[max(run.workers, 6), max(2 * p, 3)])
    plot_cluster_formation(fig.add_subplot(gs[0]), run, f"Cluster formation: {label}")
    plot_cluster_stragglers(fig.add_subplot(gs[1]), run, fig)
    return fig


def figure_overview(label, run, pooled=None, note="", pooled_label=None):
    """One page: CDF, loss (or iteration times), with a test accuracy (a
    network's run) loss and accuracy against iterations and accuracy against
    wall-clock time, straggler heat map, clusters; a panel whose datasets are
    missing is left out. `pooled`: durations for the CDF when `run` is one
    trial of several (`pooled_label` names them)."""
    k = max(run.workers, 6)
    p = run.clusters()
    rows = [("top", 9)]
    if run.has_accuracy():
        rows.append(("accuracy", 9))
    if run.straggling is not None:
        rows.append(("stragglers", k))
    if p > 0:
        rows.append(("clusters", k))
        if run.straggling is not None:
            rows.append(("per-cluster", max(2 * p, 3)))
    heights = [h for _, h in rows]
    fig = plt.figure(figsize=(14, 1.5 + 0.34 * sum(heights)), layout="constrained")
    gs = fig.add_gridspec(len(rows), 2, height_ratios=heights, width_ratios=[6, 1])
    for i, (kind, _) in enumerate(rows):
        if kind == "top":
            top = gs[i, :].subgridspec(1, 2)
            if pooled is None:
                plot_cdf(fig.add_subplot(top[0]), [(label, run.duration_s, run.kind)])
            else:
                plot_cdf(fig.add_subplot(top[0]), [(pooled_label or label, pooled, run.kind)],
                         "Iteration time CDF (all trials)")
            ax = fig.add_subplot(top[1])
            if run.has_losses():
                plot_loss(ax, [(label, run)])
            else:
                plot_iteration_times(ax, run, "Iteration time per iteration" + (f" ({note})" if note else ""))
        elif kind == "accuracy":
            row = gs[i, :].subgridspec(1, 3)
            plot_loss(fig.add_subplot(row[0]), [(label, run)], "Loss against iterations", x="steps")
            plot_accuracy(fig.add_subplot(row[1]), [(label, run)], "Test accuracy against iterations", x="steps")
            plot_accuracy(fig.add_subplot(row[2]), [(label, run)])
        elif kind == "stragglers":
            heat = fig.add_subplot(gs[i, 0])
            plot_straggler_heatmap(heat, run)
            plot_straggler_share(fig.add_subplot(gs[i, 1], sharey=heat), run)
        elif kind == "clusters":
            plot_cluster_formation(fig.add_subplot(gs[i, :]), run)
        else:
            plot_cluster_stragglers(fig.add_subplot(gs[i, :]), run, fig)
    if p == 0:
        fig.text(0.01, 0.002, "No clusters in this trace (every worker unclustered).", fontsize="small")
    fig.suptitle(label, fontsize="x-large")
    return fig


class ArgumentError(Exception):
    """A bad command-line argument: one line on stderr, exit status 2."""


#: The extensions of the image formats matplotlib writes (png, pdf, svg, ...): what -o may end in.
IMAGE_FORMATS = sorted(FigureCanvasBase.get_supported_filetypes())


def check_out(out, traces):
    """Refuse (ArgumentError) a plot's -o OUT before anything is read or written: an existing file
    that is not a regular one (a FIFO, a device, a folder), one of the TRACE arguments (the same
    file: device and inode, so a hard or symbolic link counts), a name whose extension is not an
    image format matplotlib writes (it would write another file or fail), or a path under a file."""
    path = pathlib.Path(out)
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        st = None
    except OSError as e:
        raise ArgumentError(f"-o: {out}: {e.strerror}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise ArgumentError(f"-o: {out} is {gtt.file_kind(st.st_mode)}: a plot is written only over a regular file; "
                            "it was not touched")
    for t in traces:
        trace = parse_selector(t)[0]
        if st is not None and gtt.file_id(trace) == (st.st_dev, st.st_ino):
            raise ArgumentError(f"-o: {out} is this command's trace ({trace}): an output never replaces an input; "
                                "it was not touched")
    ext = path.suffix[1:].lower()
    if ext not in IMAGE_FORMATS:
        what = f"its extension .{path.suffix[1:]} is" if ext else "it has no extension, which is"
        raise ArgumentError(f"-o: {out}: {what} not an image format matplotlib writes ({', '.join(IMAGE_FORMATS)})")
    for up in path.parents:
        if up.exists():
            if not up.is_dir():
                raise ArgumentError(f"-o: cannot create {out}: {up} is not a folder")
            break


def save(fig, path):
    path = pathlib.Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=100, bbox_inches="tight")
    except OSError as e:
        raise ArgumentError(f"-o: cannot write {path}: {e.strerror or e}") from None
    finally:
        plt.close(fig)
    return path


# --- the report --------------------------------------------------------------------


def summary_row(runs):
    """Key numbers of runs (pooled): for the index (gradcode_traces.summarize, as inspect)."""
    s = gt.summarize(runs)
    t = s["iteration_time_s"] or {}
    row = {
        "trials": len(runs),
        "iterations": s["iterations"],
        "mean_s": t.get("mean", float("nan")),
        "p50_s": t.get("p50", float("nan")),
        "p99_s": t.get("p99", float("nan")),
    }
    spi = s["stragglers_mean_per_iteration"]
    row["stragglers_per_iteration"] = float("nan") if spi is None else spi
    spcs = [r.stragglers_per_cluster() for r in runs]
    if spcs and all(x is not None for x in spcs):
        counts = np.concatenate([x[0] for x in spcs if x[0].shape[1] == spcs[0][0].shape[1]])
        clustered = np.concatenate([x[1] for x in spcs if x[0].shape[1] == spcs[0][0].shape[1]])
        row["even_fraction"] = even_fraction(counts, clustered)
    else:
        row["even_fraction"] = float("nan")
    loss = s["train_loss"]
    row["final_train_loss"] = float("nan") if loss is None else loss["final"]
    return row


def _fmt(x, digits=4):
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}g}"


def report(results_dir, out_dir=None, gradcode=None, log=print):
    """Render every *.h5 under results_dir into out_dir (PNGs, index.html,
    index.md). Returns (written files, errors); a file that cannot be read is
    listed in the index and in the errors, the others are still rendered."""
    results_dir = pathlib.Path(results_dir)
    if not results_dir.is_dir():
        raise TraceError(f"{results_dir}: not a directory")
    out_dir = pathlib.Path(out_dir) if out_dir else results_dir / "report"
    out_dir.mkdir(parents=True, exist_ok=True)
    files = gtt.trace_files(results_dir, exclude=out_dir)
    table = gt.compare(results_dir, exclude=out_dir)
    table.to_csv(out_dir / "compare.csv", index=False)
    entries, errors, written = [], [], [out_dir / "compare.csv"]
    all_cdf, all_loss, all_accuracy = [], [], []
    for path in files:
        rel = path.relative_to(results_dir)
        stem = str(rel.with_suffix("")).replace(os.sep, "-")
        # A sweep run (run.txt beside its trace) is titled by its line of the runs file.
        label = gt.run_label(path, results_dir)
        title = str(rel) if label == str(rel) else f"{label} ({rel})"
        entry = {"file": title, "images": [], "rows": [], "inspect": None}
        entries.append(entry)
        try:
            t = Trace(path)
        except (TraceError, OSError, KeyError, ValueError) as e:
            errors.append(str(e))
            entry["error"] = str(e)
            log(f"report: skipped {e}")
            continue
        entry["kind"] = t.kind
        entry["meta"] = f"{t.kind} trace, scheme {t.scheme}, K = {t.workers}, seed {t.seed}, gradcode {t.gradcode_version}"
        if t.kind == "train":
            (scheme, runs), = t.runs.items()
            run = runs[0]
            name = label if label != str(rel) else run_name(str(rel.with_suffix("")), scheme)
            written.append(save(figure_overview(name, run), out_dir / f"{stem}.png"))
            entry["images"].append(written[-1].name)
            entry["rows"].append((scheme, summary_row(runs)))
            all_cdf.append((name, run.duration_s, run.kind))
            if run.has_losses():
                all_loss.append((name, run))
            if run.has_accuracy():
                all_accuracy.append((name, run))
        else:
            if t.model_time_unit_s() is not None:
                entry["meta"] += f"; model time × {t.model_time_unit_s():g} s"
            sel = [(n, r) for n, r in t.runs.items() if r]
            if len(sel) > 1:
                written.append(save(figure_cdf(sel, f"Iteration time CDF: {label} (trials pooled)"), out_dir / f"{stem}-cdf.png"))
                entry["images"].append(written[-1].name)
            for scheme, runs in sel:
                pooled = np.concatenate([r.duration_s for r in runs])
                fig = figure_overview(
                    f"{label}: {scheme} (trial 0 of {len(runs)})", runs[0], pooled, "trial 0", f"{scheme}, {len(runs)} trials"
                )
                written.append(save(fig, out_dir / f"{stem}-{scheme}.png"))
                entry["images"].append(written[-1].name)
                entry["rows"].append((scheme, summary_row(runs)))
                all_cdf.append((f"{label}: {scheme}", pooled, runs[0].kind))
        if gradcode:
            txt = out_dir / f"{stem}.inspect.txt"
            res = subprocess.run([gradcode, "inspect", str(path)], capture_output=True, text=True)
            if res.returncode == 0:
                txt.write_text(res.stdout)
                entry["inspect"] = txt.name
                written.append(txt)
            else:
                errors.append(f"gradcode inspect {path}: {res.stderr.strip()}")
                log(f"report: {errors[-1]}")
        log(f"report: {rel}: {len(entry['images'])} PNG(s)")
    overview = []
    if len(all_cdf) > 1:
        fig, ax = plt.subplots(figsize=(11, 6.5), layout="constrained")
        plot_cdf(ax, all_cdf, f"Iteration time CDF: every trace in {results_dir.name}")
        written.append(save(fig, out_dir / "all-cdf.png"))
        overview.append(written[-1].name)
    if len(all_loss) > 1:
        written.append(save(figure_loss(all_loss, f"Loss: every training trace in {results_dir.name}"), out_dir / "all-loss.png"))
        overview.append(written[-1].name)
    if len(all_accuracy) > 1:
        fig = figure_training(all_accuracy, f"Loss and test accuracy: every network's trace in {results_dir.name}")
        written.append(save(fig, out_dir / "all-accuracy.png"))
        overview.append(written[-1].name)
    written += write_index(out_dir, results_dir, entries, overview, errors, table)
    return written, errors


def write_index(out_dir, results_dir, entries, overview, errors, table=None):
    head = ["trace", "trials", "iterations", "mean (s)", "p50 (s)", "p99 (s)", "stragglers/it", "even spread", "final train loss"]

    def cells(label, r):
        return [
            label,
            str(r["trials"]),
            str(r["iterations"]),
            _fmt(r["mean_s"]),
            _fmt(r["p50_s"]),
            _fmt(r["p99_s"]),
            _fmt(r["stragglers_per_iteration"], 3),
            "–" if math.isnan(r["even_fraction"]) else f"{100 * r['even_fraction']:.1f}%",
            _fmt(r["final_train_loss"]),
        ]

    md = [f"# gradcode report: {results_dir}", ""]
    h = [
        "<!doctype html><meta charset='utf-8'>",
        f"<title>gradcode report: {html.escape(str(results_dir))}</title>",
        "<style>body{font-family:sans-serif;max-width:1400px;margin:auto}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
        "td:first-child{text-align:left}img{max-width:100%;border:1px solid #ddd;margin:6px 0}"
        ".error{color:#b2182b}</style>",
        f"<h1>gradcode report: {html.escape(str(results_dir))}</h1>",
        "<p>Times in seconds (simulations: model time × straggler.time_unit_ms). "
        "Even spread: share of clustered iterations whose most stragglers in one cluster is ceil(stragglers / P). "
        "Summaries by <code>gradcode inspect</code> where linked.</p>",
    ]
    if table is not None and len(table):
        md += ["## Every run", "", "One row per training run and per simulated scheme (its trials pooled); "
               "also in [compare.csv](compare.csv).", "", gt.markdown(table), ""]
        h.append("<h2>Every run</h2><p>One row per training run and per simulated scheme (its trials pooled); "
                 "also in <a href='compare.csv'>compare.csv</a>.</p>")
        h.append("<table id='compare'><tr>" + "".join(f"<th>{html.escape(gtt.HEADERS[c])}</th>"
                                                    for c in gtt.COLUMNS) + "</tr>")
        for _, row in table.iterrows():
            h.append("<tr>" + "".join(f"<td>{html.escape(x)}</td>" for x in gtt.cells(row)) + "</tr>")
        h.append("</table>")
    if errors:
        md += ["**Errors:**", ""] + [f"- {e}" for e in errors] + [""]
        h.append("<ul class='error'>" + "".join(f"<li>{html.escape(e)}</li>" for e in errors) + "</ul>")
    for img in overview:
        md.append(f"![{img}]({img})")
        h.append(f"<p><img src='{html.escape(img)}' alt='{html.escape(img)}'></p>")
    for e in entries:
        md += ["", f"## {e['file']}", ""]
        h.append(f"<h2>{html.escape(e['file'])}</h2>")
        if "error" in e:
            md.append(f"Not rendered: {e['error']}")
            h.append(f"<p class='error'>Not rendered: {html.escape(e['error'])}</p>")
            continue
        md += [e["meta"], ""]
        h.append(f"<p>{html.escape(e['meta'])}</p>")
        if e["inspect"]:
            md += [f"[gradcode inspect]({e['inspect']})", ""]
            h.append(f"<p><a href='{html.escape(e['inspect'])}'>gradcode inspect</a></p>")
        md += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        h.append("<table><tr>" + "".join(f"<th>{c}</th>" for c in head) + "</tr>")
        for label, r in e["rows"]:
            c = cells(label, r)
            md.append("| " + " | ".join(c) + " |")
            h.append("<tr>" + "".join(f"<td>{html.escape(x)}</td>" for x in c) + "</tr>")
        h.append("</table>")
        md.append("")
        for img in e["images"]:
            md.append(f"![{img}]({img})")
            h.append(f"<p><img src='{html.escape(img)}' alt='{html.escape(img)}'></p>")
    (out_dir / "index.md").write_text("\n".join(md) + "\n")
    (out_dir / "index.html").write_text("\n".join(h) + "\n")
    return [out_dir / "index.md", out_dir / "index.html"]


# --- command line --------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("cdf", help="iteration-time CDFs of several traces")
    c.add_argument("traces", nargs="+", metavar="TRACE")
    c.add_argument("-o", "--out", required=True, metavar="PNG")
    c = sub.add_parser("loss", help="train and test loss against wall-clock time")
    c.add_argument("traces", nargs="+", metavar="TRACE")
    c.add_argument("-o", "--out", required=True, metavar="PNG")
    c = sub.add_parser("accuracy", help="loss and test accuracy against iterations and wall-clock time")
    c.add_argument("traces", nargs="+", metavar="TRACE")
    c.add_argument("-o", "--out", required=True, metavar="PNG")
    for name, help_text in (
        ("heatmap", "straggler heat map, iterations x workers"),
        ("clusters", "cluster formation over time, stragglers per cluster"),
        ("overview", "CDF, loss, heat map and clusters on one page"),
    ):
        c = sub.add_parser(name, help=help_text)
        c.add_argument("trace", metavar="TRACE")
        c.add_argument("-o", "--out", required=True, metavar="PNG")
    c = sub.add_parser("report", help="PNGs and an index for every *.h5 under a results folder")
    c.add_argument("results", metavar="RESULTS_DIR")
    c.add_argument("-o", "--out", metavar="DIR", help="default RESULTS_DIR/report")
    c.add_argument("--gradcode", metavar="BIN", help="also save `BIN inspect` of each trace")
    args = ap.parse_args(argv)
    try:
        # -o first: nothing is read or written before it is known to be a plot's path.
        if args.command == "report":
            if args.out and pathlib.Path(args.out).exists() and not pathlib.Path(args.out).is_dir():
                raise ArgumentError(f"-o: {args.out} is not a folder (report writes a folder of PNGs and an index)")
        else:
            check_out(args.out, getattr(args, "traces", None) or [args.trace])
        if args.command == "cdf":
            sel = [s for t in args.traces for s in load_selection(t)]
            print(save(figure_cdf(sel), args.out))
        elif args.command in ("loss", "accuracy"):
            runs = []
            for t in args.traces:
                for label, rs in load_selection(t):
                    runs += [(label if len(rs) == 1 else r.label, r) for r in rs]
            if args.command == "loss":
                if not any(r.has_losses() for _, r in runs):
                    raise TraceError(f"{', '.join(args.traces)}: no loss recorded (simulations have none)")
                print(save(figure_loss(runs), args.out))
            else:
                if not any(r.has_accuracy() for _, r in runs):
                    raise TraceError(
                        f"{', '.join(args.traces)}: no test accuracy recorded (a network's training run records it; "
                        "linear models and simulations do not)"
                    )
                print(save(figure_training(runs), args.out))
        elif args.command in ("heatmap", "clusters", "overview"):
            label, run, _ = one_run(args.trace)
            fig = {"heatmap": figure_heatmap, "clusters": figure_clusters, "overview": figure_overview}[args.command](label, run)
            print(save(fig, args.out))
        else:
            written, errors = report(args.results, args.out, args.gradcode)
            index = [w for w in written if w.name == "index.html"]
            print(f"report: {len(written)} files, index {index[0] if index else '-'}")
            if errors:
                print(f"report: {len(errors)} trace(s) not rendered, see the index", file=sys.stderr)
                return 1
    except (TraceError, ArgumentError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
