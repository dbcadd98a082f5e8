"""One table over every run of a results folder.

`compare(results_dir)` reads every `*.h5` below a folder and returns a
pandas DataFrame with a row per training run and a row per scheme of each
simulation file (its trials pooled): the run's label, file, kind, scheme,
K, P (the largest cluster id in the trace; none when unclustered), r
(`scheme.load`), trials, iterations, iteration time mean/p50/p99, recovered
fraction (mean, share of iterations with the full gradient), messages
received and used per iteration, final and least train and test losses,
final and best test accuracy (a network's run; none otherwise), and the
status. A run of a sweep (jobs/sweep.sbatch: `run.txt` beside
`trace.h5`) is labelled by its line of the runs file; other runs by their
path below the folder (and `: scheme` in a simulation file). A file that
cannot be read gets a row with status `unreadable` and the reason. One
file under several names (a hard link, a symbolic link, the same path
given twice: the same device and inode) is one run, read once under its
first name.
"""

import json
import math
import os
import pathlib
import stat

import pandas as pd

from .summary import summarize
from .trace import Trace, TraceError

COLUMNS = [
    "run", "file", "kind", "scheme", "K", "P", "r", "trials", "iterations",
    "mean_s", "p50_s", "p99_s", "recovered_mean", "recovered_full", "messages_received", "messages_used",
    "final_train_loss", "min_train_loss", "final_test_loss", "min_test_loss",
    "final_test_accuracy", "best_test_accuracy", "status",
]


def run_label(path, root):
    """A sweep run's line of the runs file (run.txt beside the trace), else the path below root."""
    txt = pathlib.Path(path).parent / "run.txt"
    if txt.is_file():
        line = txt.read_text().strip().splitlines()
        if line and line[0].strip():
            return line[0].strip()
    return str(pathlib.Path(path).relative_to(root))


def scheme_settings(config, name=None):
    """(kind, scheme.clusters, scheme.load) of the config's scheme, or of its `simulate.compare` entry `name`."""
    if not config:
        return None, None, None
    scheme = dict(config.get("scheme", {}))
    for entry in (config.get("simulate") or {}).get("compare", []):
        if isinstance(entry, dict) and entry.get("name", entry.get("kind")) == name:
            scheme.update(entry.get("set", {}))
            scheme["kind"] = entry.get("kind", scheme.get("kind"))
        elif entry == name:
            scheme["kind"] = name
    return scheme.get("kind"), scheme.get("clusters"), scheme.get("load")


def _row(label, rel, trace, scheme, runs):
    s = summarize(runs)
    kind, _, r = scheme_settings(trace.config, scheme if trace.kind == "simulation" else None)
    # P as the trace shows it (the largest cluster id), not as configured: GC ignores scheme.clusters.
    p = max((run.clusters() for run in runs), default=0) or None
    t = s["iteration_time_s"] or {}
    rec = s["recovered_fraction"] or {}
    tl, vl, acc = s["train_loss"] or {}, s["test_loss"] or {}, s["test_accuracy"] or {}
    return {
        "run": label, "file": rel, "kind": trace.kind, "scheme": scheme or kind, "K": trace.workers,
        "P": p, "r": r, "trials": len(runs), "iterations": s["iterations"],
        "mean_s": t.get("mean"), "p50_s": t.get("p50"), "p99_s": t.get("p99"),
        "recovered_mean": rec.get("mean"), "recovered_full": rec.get("full_fraction"),
        "messages_received": s["messages_received_per_iteration"],
        "messages_used": s["messages_used_per_iteration"],
        "final_train_loss": tl.get("final"), "min_train_loss": tl.get("min"),
        "final_test_loss": vl.get("final"), "min_test_loss": vl.get("min"),
        "final_test_accuracy": acc.get("final"), "best_test_accuracy": acc.get("best"),
        "status": trace.status or ("completed" if trace.kind == "simulation" else None),
    }


def file_id(path):
    """(st_dev, st_ino) of the file at path (links followed); None when it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def file_kind(mode):
    """What a file of this st_mode is, in words ("a regular file", "a folder", "a FIFO (named pipe)", ...)."""
    for test, words in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a folder"),
                        (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                        (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words
    return "not a regular file"


def once(paths, same=None):
    """paths without the repeats of a file (the same device and inode: a hard link, a symbolic link,
    the same path twice), each kept under its first name; `same`, a list, receives (first, repeat)."""
    seen, out = {}, []
    for p in paths:
        key = file_id(p)
        if key is not None and key in seen:
            if same is not None:
                same.append((seen[key], p))
            continue
        if key is not None:
            seen[key] = p
        out.append(p)
    return out


def trace_files(results_dir, exclude=None, same=None):
    """Every *.h5 below results_dir, sorted, each file once (see `once`; `same` receives the repeats),
    leaving out those under `exclude` (a report folder)."""
    root = pathlib.Path(results_dir)
    files = sorted(root.rglob("*.h5"))
    if exclude is not None:
        ex = pathlib.Path(exclude).resolve()
        files = [p for p in files if ex not in p.resolve().parents]
    return once(files, same)


def compare(results_dir, exclude=None, errors=None, same=None):
    """The comparison table of every trace below results_dir (see the module).
    `errors`, a list, receives one message per unreadable file; `same`, a list, the
    (first name, other name) of each file found under two names (counted once)."""
    root = pathlib.Path(results_dir)
    if not root.is_dir():
        raise TraceError(f"{results_dir}: not a directory")
    rows = []
    for path in trace_files(root, exclude, same):
        rel = str(path.relative_to(root))
        label = run_label(path, root)
        try:
            trace = Trace(path)
        except (TraceError, OSError, KeyError, ValueError) as e:
            if errors is not None:
                errors.append(str(e))
            rows.append({"run": label, "file": rel, "status": f"unreadable: {e}"})
            continue
        if trace.kind == "train":
            (scheme, runs), = trace.runs.items()
            rows.append(_row(label, rel, trace, trace.scheme, runs))
        else:
            for scheme, runs in trace.runs.items():
                if runs:
                    rows.append(_row(f"{label}: {scheme}", rel, trace, scheme, runs))
    # A sweep run that ended without a trace (it failed before creating one) still has its summary.json.
    for summary in sorted(root.rglob("summary.json")):
        if not any(summary.parent.glob("*.h5")):
            try:
                status = json.loads(summary.read_text()).get("status")
            except (OSError, ValueError) as e:
                status = f"unreadable summary.json: {e}"
            rows.append({"run": run_label(summary, root), "file": str(summary.relative_to(root)),
                         "status": f"{status} (no trace)"})
    return pd.DataFrame(rows, columns=COLUMNS)


def _cell(v, digits=4):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


HEADERS = {
    "run": "run", "file": "file", "kind": "kind", "scheme": "scheme", "K": "K", "P": "P", "r": "r",
    "trials": "trials", "iterations": "iterations", "mean_s": "mean (s)", "p50_s": "p50 (s)", "p99_s": "p99 (s)",
    "recovered_mean": "recovered", "recovered_full": "full recovery", "messages_received": "messages/it",
    "messages_used": "used/it", "final_train_loss": "final train loss", "min_train_loss": "least train loss",
    "final_test_loss": "final test loss", "min_test_loss": "least test loss",
    "final_test_accuracy": "final test accuracy", "best_test_accuracy": "best test accuracy", "status": "status",
}

#: Columns shown as percentages (shares).
PERCENT = ("recovered_mean", "recovered_full", "final_test_accuracy", "best_test_accuracy")


def cells(row):
    """The table cells of a row (a dict or pandas Series), percentages for the recovered fractions and accuracies."""
    out = []
    for c in COLUMNS:
        v = row.get(c)
        if c in PERCENT and v is not None and not pd.isna(v):
            out.append(f"{100 * v:.1f}%")
        elif c in ("K", "P", "r", "trials", "iterations") and v is not None and not pd.isna(v):
            out.append(str(int(v)))
        else:
            out.append(_cell(None if v is None or (not isinstance(v, str) and pd.isna(v)) else v))
    return out


def markdown(table):
    """The table as Markdown."""
    lines = ["| " + " | ".join(HEADERS[c] for c in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for _, row in table.iterrows():
        lines.append("| " + " | ".join(x.replace("|", "\\|") for x in cells(row)) + " |")
    return "\n".join(lines)
