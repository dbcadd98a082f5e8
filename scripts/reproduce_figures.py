#!/usr/bin/env python3
"""Reproduce the papers' simulation figures with `gradcode simulate`.

For every configs/paper/*.toml with a [simulate] section: run the simulator (JSON), save
results/paper/<name>.json, draw results/paper/<name>.png, and write
results/paper/README.md with our numbers beside the ones the papers state.

Directives in a config, as comment lines starting with `#!`:

    #! sweep scheme.wait_for = [1, 2, 3, 4, 5, 6, 7, 8]
        run once per value (with --set), draw lines against the value
    #! plot = time, messages
        panels of a bar chart: time (mean per-iteration time with its 95%
        CI, and the lower bound), messages (per iteration), recovered
        (fraction); default: time
    #! lower_bound = off
        leave out the lower bound LB of 000 §VI (that of scheme.kind,
        defined for gc-cyclic, gc-sc and gc-dc; left out when null)

Beyond the papers, the clustering study: every GC-DC figure of 000 (the
configs gcdc-fig*.toml) run again with GC-DC's greedy clustering (000 §V) and
the optimal one (`scheme.clustering = "optimal"`) on the same seeds, beside
the lower bound LB, and the deadline trade-off of gcdc-deadline.toml with
both; results/paper/clustering-study.{json,png} and
results/paper/clustering-deadline.{json,png}, and a section of the README.

Every figure is written as PNG, PDF and SVG, with a caption (the paper's
full citation and figure, from docs/papers.md, and the setting: K, P, r, n,
the straggler model, trials x iterations), the numbers the papers state drawn
as black-edged markers labelled with their source (PAPER_NUMBERS), and one
colour-blind-safe colour per scheme (Okabe-Ito, SCHEME_COLORS) in every figure.

Usage: scripts/reproduce_figures.py [--bin target/release/gradcode]
           [--configs configs/paper] [--out results/paper] [--replot] [names...]
       (a name `clustering-study` runs only the clustering study; no names: everything)
--replot draws the figures and README again from the results/paper/*.json
present, without simulating. (scripts/reproduce-figures.sh builds the binary
and the Python venv first.)
"""

import argparse
import itertools
import json
import math
import pathlib
import re
import subprocess
import sys
import textwrap
import tomllib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent


def directives(text):
    """(sweep key, values) or None, the panels of the plot, and whether to show the lower bound."""
    sweep, panels, bound = None, ["time"], True
    for line in text.splitlines():
        if not line.startswith("#!"):
            continue
        body = line[2:].strip()
        m = re.fullmatch(r"sweep\s+([\w.]+)\s*=\s*(\[.*\])", body)
        if m:
            sweep = (m.group(1), json.loads(m.group(2)))
            continue
        m = re.fullmatch(r"plot\s*=\s*(.+)", body)
        if m:
            panels = [p.strip() for p in m.group(1).split(",")]
            continue
        m = re.fullmatch(r"lower_bound\s*=\s*(on|off)", body)
        if m:
            bound = m.group(1) == "on"
            continue
        sys.exit(f"unknown directive `{line}`")
    for p in panels:
        if p not in ("time", "messages", "recovered"):
            sys.exit(f"unknown plot panel `{p}` (time, messages, recovered)")
    return sweep, panels, bound


def title_of(text):
    """The config's first sentence: its leading `# ` comment lines up to the first ending in `.`."""
    words = []
    for line in text.splitlines():
        if line.startswith("#!"):
            continue
        if not line.startswith("# "):
            break
        words.append(line[2:].strip())
        if words[-1].endswith("."):
            break
    return " ".join(words)


def simulate(binary, config, sets=()):
    # Relative to the repository, so the `origin` in the JSON is the same on every machine.
    config = pathlib.Path(config).resolve()
    try:
        config = config.relative_to(ROOT)
    except ValueError:
        pass
    args = [str(binary), "simulate", "--config", str(config), "--json"]
    for s in sets:
        args += ["--set", s]
    done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{done.stderr}")
    return json.loads(done.stdout)


def fmt_value(v):
    return json.dumps(v) if isinstance(v, str) else str(v)


def run_config(binary, path):
    text = path.read_text()
    sweep, panels, bound = directives(text)
    if sweep is None:
        result = simulate(binary, path)
    else:
        key, values = sweep
        runs = [simulate(binary, path, [f"{key}={fmt_value(v)}"]) for v in values]
        result = {"sweep": {"key": key, "values": values}, "runs": runs}
    # The bound is that of scheme.kind: null when that scheme defines none.
    result["lower_bound_shown"] = bound and result.get("lower_bound") is not None
    return result, panels, title_of(text)


PANEL = {
    "time": ("mean_iteration_time", "average per-iteration time (model time)"),
    "messages": ("messages_per_iteration", "messages per iteration"),
    "recovered": ("recovered_fraction", "recovered fraction"),
}

# One colour per scheme name across all figures, so GC-DC looks the same
# everywhere: the Okabe-Ito palette (Okabe and Ito, "Color Universal Design",
# 2008), distinguishable with the common colour-vision deficiencies. Schemes
# of one figure never share a colour (tests check it).
OKABE_ITO = {
    "black": "#000000", "orange": "#E69F00", "sky blue": "#56B4E9", "bluish green": "#009E73",
    "yellow": "#F0E442", "blue": "#0072B2", "vermillion": "#D55E00", "reddish purple": "#CC79A7",
    "grey": "#999999",
}
SCHEME_COLORS = {
    "gc": OKABE_ITO["blue"], "gc-sc": OKABE_ITO["orange"], "gc-dc": OKABE_ITO["bluish green"],
    "uc-mmc": OKABE_ITO["vermillion"], "gc-mmc-1": OKABE_ITO["reddish purple"], "gc-mmc-2": OKABE_ITO["sky blue"],
    "fr": OKABE_ITO["blue"], "hr-8-3-1": OKABE_ITO["sky blue"], "hr-8-2-2": OKABE_ITO["bluish green"],
    "hr-8-1-3": OKABE_ITO["orange"], "cr": OKABE_ITO["vermillion"], "is-sgd": OKABE_ITO["grey"],
}
EXTRA_COLORS = [OKABE_ITO[c] for c in ("reddish purple", "yellow", "black", "sky blue", "vermillion")]


def color(name, i):
    """The scheme's colour (SCHEME_COLORS); a scheme not listed gets an unused Okabe-Ito colour."""
    return SCHEME_COLORS.get(name, EXTRA_COLORS[i % len(EXTRA_COLORS)])


# --- citations, settings and the papers' numbers on the figures ---------------------


def citations(path=ROOT / "docs/papers.md"):
    """{"000": "B. Buyukates, ..., IEEE Transactions on Communications, 2022", ...} from docs/papers.md's table."""
    out = {}
    for line in pathlib.Path(path).read_text().splitlines():
        m = re.match(r"\|\s*(\d{3})\s*\|\s*(.+?)\s*\|", line)
        if m:
            out[m.group(1)] = m.group(2).replace("*", "")
    return out


def short_citation(full):
    """'Buyukates et al., IEEE Transactions on Communications, 2022' from a full citation."""
    authors, _, rest = full.partition(', "')
    first = authors.split(",")[0].split()[-1]
    more = " et al." if "," in authors else ""
    venue = rest.split('", ', 1)[1] if '", ' in rest else ""
    return f"{first}{more}" + (f", {venue}" if venue else "")


def figure_source(text):
    """(paper number, figure) the config reproduces, from its first comment line:
    '000 §VI-A, Fig. 4(a): ...' -> ('000', 'Fig. 4(a)'); a figure beyond the papers: ('000', None)."""
    first = title_of(text)
    paper = re.search(r"\b(00\d)\b", first)
    fig = re.search(r"Figs?\. ?[\dA-Za-z()\-–]+", first)
    beyond = first.lower().startswith("beyond")
    return (paper.group(1) if paper else None), (None if beyond or not fig else fig.group(0).rstrip(":,"))


MODEL_KEYS = {
    "shifted-exponential": ["alpha", "mu"],
    "gilbert-elliott": ["switch_probability", "alpha", "mu_slow", "mu_fast", "initial_stragglers", "state_info"],
}


def setting(config):
    """The setting of a figure in one line: K, P, r, n, the straggler model and its parameters, trials x iterations."""
    sch, st, sim = config.get("scheme", {}), config.get("straggler", {}), config.get("simulate", {})
    parts = [f"K = {config['workers']}"]
    for key, sym in (("clusters", "P"), ("load", "r"), ("clusters_per_worker", "n")):
        if key in sch:
            parts.append(f"{sym} = {sch[key]}" + (" (GC-DC)" if key == "clusters_per_worker" else ""))
    model = st.get("model", "?")
    keys = MODEL_KEYS.get(model) or [k for k in st if k not in ("model", "time_unit_ms") and not isinstance(st[k], dict)]
    params = ", ".join(f"{k} = {st[k]}" for k in keys if k in st)
    parts.append(f"straggler model {model}" + (f" ({params})" if params else ""))
    parts.append(f"{sim.get('trials', '?')} trials x {sim.get('iterations', '?')} iterations")
    return "; ".join(parts)


def caption(text, config, cites):
    """The figure's caption: what it reproduces (full citation) and its setting."""
    paper, fig = figure_source(text)
    cite = cites.get(paper, f"paper {paper}") if paper else ""
    if fig:
        head = f"Reproduction of {fig} of [{paper}] {cite}."
    elif paper:
        head = f"Beyond the papers, in the setting of [{paper}] {cite}."
    else:
        head = ""
    return f"{head} Setting: {setting(config)}.".strip()


# The numbers the papers state, drawn on the figures (and checked in the README's table):
# (config, paper, where, scheme, what, value), what one of
#   ("gain", over): the scheme's mean per-iteration time is `value` percent below `over`'s,
#   ("messages_per_worker",): the scheme's messages per iteration per worker,
#   ("recovered_at", w): the scheme's recovered share (percent) at the swept value w.
PAPER_NUMBERS = [
    ("gcdc-fig4a", "000", "Fig. 4(a)", "gc-dc", ("gain", "gc-sc"), 34),
    ("gcdc-fig4b", "000", "Fig. 4(b)", "gc-dc", ("gain", "gc-sc"), 45),
    ("gcdc-fig6a", "000", "Fig. 6(a)", "gc-dc", ("gain", "gc-sc"), 16),
    ("gcdc-fig6b", "000", "Fig. 6(b)", "gc-dc", ("gain", "gc-sc"), 20),
    ("mmc-fig1", "003", "Fig. 1(b)", "gc-mmc-2", ("messages_per_worker",), 1.0),
] + [("isgc-recovery", "004", "Thms. 10-11", s, ("recovered_at", 1), 50.0)
     for s in ("fr", "hr-8-3-1", "hr-8-2-2", "hr-8-1-3", "cr")]


def paper_markers(name, result, cites):
    """[(panel, x, y, label)] of the papers' numbers for a figure: panel 'time', 'messages'
    (bar charts: x the scheme) or 'recovered' (sweeps: x the swept value, y in percent)."""
    out = []
    for config, paper, where, scheme, what, value in PAPER_NUMBERS:
        if config != name:
            continue
        src = f"[{paper}] {short_citation(cites.get(paper, paper))}, {where}"
        if what[0] == "gain":
            over = next((s for s in result.get("schemes", []) if s["name"] == what[1]), None)
            if over is None:
                continue
            y = over["mean_iteration_time"] * (1 - value / 100)
            out.append(("time", scheme, y, f"paper: {scheme.upper()} ≈{value:g}% below {what[1].upper()} ({src})"))
        elif what[0] == "messages_per_worker":
            out.append(("messages", scheme, value * result["workers"],
                        f"paper: {scheme.upper()} ≈{value:g} message per worker ({src})"))
        elif what[0] == "recovered_at":
            out.append(("recovered", what[1], value, f"paper: c/n = {value:g}% at w = {what[1]} ({src})"))
    return out


def plot_bars(result, panels, title, markers=()):
    """The bar chart of a figure (a matplotlib Figure): one bar per scheme, in its colour."""
    schemes = result["schemes"]
    bound = result.get("lower_bound_shown", True)
    bars_per_panel = len(schemes) + (1 if bound else 0)
    width = max(5.0, 1.4 + len(panels) * (1.3 + 0.85 * bars_per_panel))
    fig, axes = plt.subplots(1, len(panels), figsize=(width, 4.0))
    axes = [axes] if len(panels) == 1 else list(axes)
    for n, (ax, panel) in enumerate(zip(axes, panels)):
        key, label = PANEL[panel]
        names = [s["name"].upper() for s in schemes]
        values = [s[key] for s in schemes]
        errors = [s["ci95"] if panel == "time" and s["ci95"] is not None else 0 for s in schemes]
        colors = [color(s["name"], i) for i, s in enumerate(schemes)]
        if panel == "time" and bound:
            names.append("LB")
            values.append(result["lower_bound"]["mean_iteration_time"])
            errors.append(result["lower_bound"]["ci95"] or 0)
            colors.append("white")
        bars = ax.bar(names, values, yerr=errors if any(errors) else None, capsize=4, color=colors,
                      edgecolor="black", linewidth=0.6, error_kw={"elinewidth": 1})
        if panel == "time" and bound:
            bars[-1].set_hatch("//")
        for b, v, e in zip(bars, values, errors):
            ax.annotate(f"{v:.3g}", (b.get_x() + b.get_width() / 2, v + e), ha="center", va="bottom",
                        fontsize=8, xytext=(0, 2), textcoords="offset points")
        for where, scheme, y, text in markers:
            if where == panel and scheme.upper() in names:
                ax.plot([names.index(scheme.upper())], [y], linestyle="none", marker="D", markersize=7,
                        markerfacecolor="white", markeredgecolor="black", markeredgewidth=1.4, zorder=5,
                        label=textwrap.fill(text, 48))
        if any(where == panel for where, *_ in markers):
            ax.legend(fontsize=6.5, loc="upper right")
        ax.set_ylabel(label)
        if len(panels) > 1:
            ax.set_title(f"({chr(ord('a') + n)}) {label.split(' (')[0]}", fontsize=9)
        ax.tick_params(axis="x", labelsize=8)
        ax.margins(y=0.15)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    fig.suptitle(textwrap.fill(title, int(14 * width)), fontsize=8)
    fig.tight_layout()
    return fig


def save_all(fig, stem, caption_text):
    """The figure with its caption below, as stem.png, stem.pdf and stem.svg."""
    width = fig.get_size_inches()[0]
    wrapped = textwrap.fill(caption_text, int(15.5 * width))
    lines = wrapped.count("\n") + 1
    fig.set_size_inches(width, fig.get_size_inches()[1] + 0.16 * lines + 0.1)
    fig.tight_layout(rect=(0, (0.16 * lines + 0.1) / fig.get_size_inches()[1], 1, 1))
    fig.text(0.01, 0.01, wrapped, fontsize=6.5, ha="left", va="bottom")
    paths = []
    for ext in ("png", "pdf", "svg"):
        paths.append(pathlib.Path(f"{stem}.{ext}"))
        # No creation date, fixed SVG ids: the same results give the same files.
        metadata = {"png": None, "pdf": {"Title": caption_text, "CreationDate": None},
                    "svg": {"Title": caption_text, "Date": None}}[ext]
        with plt.rc_context({"svg.hashsalt": "gradcode"}):
            fig.savefig(paths[-1], dpi=110, metadata=metadata)
    plt.close(fig)
    return paths


def plot_sweep(result, title, exact=None, paper=()):
    """The line chart of a swept figure (a matplotlib Figure): recovered share and time against the value."""
    key, values = result["sweep"]["key"], result["sweep"]["values"]
    runs = result["runs"]
    names = [s["name"] for s in runs[0]["schemes"]]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.9))
    xlabel = {"scheme.wait_for": "w (workers waited for)",
              "scheme.deadline": "deadline (model time)"}.get(key, key)
    markers = "osD^vP*X"
    for ax, (metric, label) in zip(axes, [PANEL["recovered"], PANEL["time"]]):
        drawn = []
        for i, name in enumerate(names):
            ys = [r["schemes"][i][metric] for r in runs]
            scale = 100.0 if metric == "recovered_fraction" else 1.0
            # Dashed when a baseline (is-sgd) or when it repeats a series already drawn.
            style = "--" if name == "is-sgd" or ys in drawn else "-"
            drawn.append(ys)
            # Earlier series wider, so that a series hidden under a later identical one still shows.
            ax.plot(values, [scale * y for y in ys], style, marker=markers[i % len(markers)],
                    markersize=max(3.0, 7.0 - 0.8 * i), label=name.upper(), color=color(name, i),
                    linewidth=max(1.0, 3.2 - 0.45 * i))
        ax.set_xlabel(xlabel)
        if key == "scheme.deadline":
            # Deadlines span decades: a log axis keeps every point readable.
            ax.set_xscale("log", base=2)
        ax.set_xticks(values)
        ax.set_xticklabels([f"{v:g}" for v in values])
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("gradients recovered (%)")
    axes[0].set_title("(a) recovered share of the gradients", fontsize=9)
    axes[1].set_ylabel(PANEL["time"][1])
    times = {n: [r["schemes"][i]["mean_iteration_time"] for r in runs] for i, n in enumerate(names)}
    same = [n for n in names if sum(times[m] == times[n] for m in names) > 1]
    axes[1].set_title("(b) per-iteration time" + (f"\n(identical: {', '.join(s.upper() for s in same)})"
                                                  if same else ""), fontsize=9)
    if exact:
        first = True
        for name, per_w in exact.items():
            xs = [v for v in values if v in per_w]
            axes[0].plot(xs, [100 * per_w[v] for v in xs], linestyle="none", marker="+", color="black",
                         markersize=7, label="exact (all w-sets)" if first else None, zorder=5)
            first = False
    first = True
    for where, x, y, text in paper:
        if where == "recovered":
            axes[0].plot([x], [y], linestyle="none", marker="D", markersize=8, markerfacecolor="white",
                         markeredgecolor="black", markeredgewidth=1.4, zorder=6,
                         label=textwrap.fill(text, 40) if first else None)
            first = False
    axes[0].legend(fontsize=7)
    fig.suptitle(textwrap.fill(title, 120), fontsize=8)
    fig.tight_layout()
    return fig


# --- exact values, computed here independently of the Rust code ------------


def stored_sets(kind, scheme, n):
    """The partitions each of the n workers stores (0-based), from the papers' definitions."""
    c = scheme.get("load", 2)
    if kind == "ignore-stragglers":
        return [{i} for i in range(n)]
    placement = scheme.get("placement", "cr")
    if placement == "fr":  # 004 §III: n/c groups of c workers storing the same c partitions
        return [set(range((i // c) * c, (i // c) * c + c)) for i in range(n)]
    if placement == "cr":  # 004 §III: worker i stores i, ..., i + c - 1 (mod n)
        return [{(i + j) % n for j in range(c)} for i in range(n)]
    # 004 §VI-B, Fig. 7: HR(n, c1, c2), g groups of n0: the bottom c1 rows of the
    # per-group cyclic table HR(n, n0, 0) and the top c2 rows of CR(n, c).
    g, c1, c2 = scheme["groups"], scheme["c1"], scheme["c2"]
    n0 = n // g
    sets = []
    for i in range(n):
        grp, k = divmod(i, n0)
        mine = {grp * n0 + (k - j) % n0 for j in range(1, c1 + 1)}
        mine |= {(i + j) % n for j in range(c2)}
        assert len(mine) == c, f"HR({n}, {c1}, {c2}): worker {i} stores {sorted(mine)}"
        sets.append(mine)
    return sets


def max_independent(workers, sets):
    """Size of a maximum set of received workers with pairwise disjoint partitions (brute force)."""
    for size in range(len(workers), 0, -1):
        for chosen in itertools.combinations(workers, size):
            if all(not (sets[a] & sets[b]) for a, b in itertools.combinations(chosen, 2)):
                return size
    return 0


def exact_recovered(sets, n, w):
    """Expected share of the n partitions recovered when the fastest w are a uniformly random w-set."""
    total = count = 0
    for received in itertools.combinations(range(n), w):
        best = max_independent(received, sets)
        total += best * len(sets[0]) / n
        count += 1
    return total / count


def exact_sweep(config_path, result):
    """{scheme: {w: expected recovered share}} for an is-gc sweep over scheme.wait_for."""
    if result.get("sweep", {}).get("key") != "scheme.wait_for":
        return None
    config = tomllib.loads(config_path.read_text())
    n = config["workers"]
    out = {}
    for entry in config["simulate"]["compare"]:
        if not isinstance(entry, dict):
            continue
        scheme = dict(config.get("scheme", {}))
        scheme.update(entry.get("set", {}))
        if entry["kind"] not in ("is-gc", "ignore-stragglers"):
            continue
        sets = stored_sets(entry["kind"], scheme, n)
        out[entry["name"]] = {w: exact_recovered(sets, n, w) for w in result["sweep"]["values"]}
    return out


# --- what the papers state, beside what we get ------------------------------


def summary(results, config, scheme):
    r = results.get(config)
    if r is None or "schemes" not in r:
        return None
    for s in r["schemes"]:
        if s["name"] == scheme:
            return s
    return None


def mean(results, config, scheme):
    s = summary(results, config, scheme)
    return None if s is None else s["mean_iteration_time"]


def gain(results, config, scheme, over):
    """Percent reduction of the mean iteration time of `scheme` against `over`, and its 95% CI
    half-width when `over` is the run's baseline (paired over trials), else None."""
    a, b = mean(results, config, scheme), mean(results, config, over)
    if a is None or b is None:
        missing = [n for n, v in ((scheme, a), (over, b)) if v is None]
        return None, None, f"not simulated yet ({', '.join(missing)} not in {config})"
    ci = None
    if results[config]["baseline"] == over:
        ci = summary(results, config, scheme).get("improvement_ci95")
    return 100.0 * (1.0 - a / b), ci, None


def fmt_gain(g, ci):
    return f"{g:.1f}% ± {ci:.1f}" if ci is not None else f"{g:.1f}%"


def claim_gain(config, scheme, over, paper_percent):
    def check(results):
        g, ci, why = gain(results, config, scheme, over)
        if g is None:
            return "—", why
        if paper_percent is None:
            return fmt_gain(g, ci), "no number to compare"
        diff = g - paper_percent
        inside = ci is not None and abs(diff) <= ci
        if abs(diff) <= 3:
            note = "agrees within 3 points"
        else:
            note = f"differs by {diff:+.1f} points{' (inside our 95% CI)' if inside else ''}: see the notes"
        return fmt_gain(g, ci), note
    return check


def claim_best(config, schemes):
    def check(results):
        means = {s: mean(results, config, s) for s in schemes}
        missing = [s for s, m in means.items() if m is None]
        if missing:
            return "—", f"not simulated yet ({', '.join(missing)} not in {config})"
        order = sorted(means, key=means.get)
        return " < ".join(f"{s} {means[s]:.3g}" for s in order), f"fastest: {order[0]}"
    return check


def claim_ordering(first, second, what):
    """`first` (a (config, scheme, over) gain) is larger than `second`."""
    def check(results):
        a, ca, why_a = gain(results, *first)
        b, cb, why_b = gain(results, *second)
        if a is None or b is None:
            return "—", why_a or why_b
        holds = "holds" if a > b else "does NOT hold"
        return f"{fmt_gain(a, ca)} vs {fmt_gain(b, cb)}", f"{what}: {holds}"
    return check


def claim_all_larger(config_hi, config_lo, schemes):
    def check(results):
        pairs = [(s, mean(results, config_hi, s), mean(results, config_lo, s)) for s in schemes]
        present = [(s, h, lo) for s, h, lo in pairs if h is not None and lo is not None]
        if not present:
            return "—", "not simulated yet"
        text = ", ".join(f"{s} {h:.3g} vs {lo:.3g}" for s, h, lo in present)
        holds = all(h > lo for _, h, lo in present)
        missing = [s for s, h, lo in pairs if h is None or lo is None]
        note = ("holds" if holds else "does NOT hold") + (f" (not yet: {', '.join(missing)})" if missing else "")
        return text, note
    return check


def closed_form_gc(config, workers, load, alpha, mu):
    """E of the (K - r + 1)-th of K tasks r(alpha + Exp(mu)): r(alpha + (1/mu) sum_{i<K-r+1} 1/(K-i))."""
    expected = load * (alpha + sum(1.0 / (workers - i) for i in range(workers - load + 1)) / mu)

    def check(results):
        s = summary(results, config, "gc")
        if s is None:
            return "—", "not simulated"
        return f"{s['mean_iteration_time']:.4f} ± {s['ci95']:.4f}", f"closed form {expected:.4f}"
    return check


def claim_tradeoff(config, fastest, cheapest):
    """`fastest` has the lowest time and the highest load; `cheapest` the lowest load and the highest time."""
    def check(results):
        r = results.get(config)
        if r is None:
            return "—", "not simulated"
        by_time = sorted(r["schemes"], key=lambda s: s["mean_iteration_time"])
        by_load = sorted(r["schemes"], key=lambda s: s["messages_per_iteration"])
        text = "; ".join(f"{s['name']} {s['mean_iteration_time']:.3g} / {s['messages_per_iteration']:.1f}"
                         for s in by_time)
        holds = (by_time[0]["name"] == fastest and by_load[-1]["name"] == fastest
                 and by_time[-1]["name"] == cheapest and by_load[0]["name"] == cheapest)
        return text, ("holds" if holds else "does NOT hold") + " (time / messages, fastest first)"
    return check


def claim_messages_per_worker(config, scheme, paper):
    def check(results):
        s = summary(results, config, scheme)
        if s is None:
            return "—", "not simulated"
        per = s["messages_per_iteration"] / results[config]["workers"]
        return f"{per:.2f} ({s['messages_per_iteration']:.1f} of {results[config]['workers']} workers)", \
            ("agrees" if abs(per - paper) <= 0.15 * paper else "differs: see the notes")
    return check


def sweep_values(results, config, metric="recovered_fraction"):
    """{scheme: [value per swept value]}, and the swept values."""
    r = results.get(config)
    if r is None or "sweep" not in r:
        return None, None
    names = [s["name"] for s in r["runs"][0]["schemes"]]
    return {n: [run["schemes"][i][metric] for run in r["runs"]] for i, n in enumerate(names)}, r["sweep"]["values"]


def claim_monotone(config, order):
    """At every swept value, recovered(order[0]) >= recovered(order[1]) >= ..."""
    def check(results):
        v, ws = sweep_values(results, config)
        if v is None:
            return "—", "not simulated"
        bad = [w for j, w in enumerate(ws)
               if any(v[a][j] < v[b][j] - 1e-12 for a, b in zip(order, order[1:]))]
        at2 = ", ".join(f"{n} {100 * v[n][ws.index(2)]:.1f}%" for n in order) if 2 in ws else ""
        return f"w = 2: {at2}", "holds at every w" if not bad else f"does NOT hold at w = {bad}"
    return check


def claim_same(config, a, b):
    def check(results):
        v, ws = sweep_values(results, config)
        if v is None:
            return "—", "not simulated"
        same = v[a] == v[b]
        return ("identical at every w" if same else "different"), ("holds" if same else "does NOT hold")
    return check


def claim_endpoints(config, schemes, n, c):
    """At the first swept w (1) every placement recovers c/n (one worker, Theorems 10-11), and from
    some w on every placement recovers everything."""
    def check(results):
        v, ws = sweep_values(results, config)
        if v is None:
            return "—", "not simulated"
        first = {round(100 * v[s][0], 1) for s in schemes}
        full = [w for j, w in enumerate(ws) if all(v[s][j] == 1.0 for s in schemes)]
        return (f"w = {ws[0]}: {', '.join(f'{x}%' for x in sorted(first))}; all 100% from w = {min(full)}"
                if full else f"w = {ws[0]}: {sorted(first)}"), \
            ("holds" if first == {round(100 * c / n, 1)} else "does NOT hold")
    return check


def claim_exact(config):
    def check(results):
        r = results.get(config)
        ex = r.get("exact") if r else None
        if not ex:
            return "—", "not simulated"
        v, ws = sweep_values(results, config)
        worst = max((abs(v[n][j] - ex[n][str(w)]), n, w) for n in ex for j, w in enumerate(ws))
        return f"largest difference {100 * worst[0]:.2f} points ({worst[1]}, w = {worst[2]})", \
            "Monte Carlo error only (12,000 iterations per point)"
    return check


def stated(config, scheme):
    """The number PAPER_NUMBERS states for a scheme of a figure."""
    (value,) = [v for c, _, _, s, _, v in PAPER_NUMBERS if c == config and s == scheme]
    return value


CLAIMS = [
    ("000 Fig. 3", "clustering far ahead of GC: GC-SC's gain over GC", "large (no number in the text)",
     claim_gain("gcdc-fig3", "gc-sc", "gc", None)),
    ("000 Fig. 3", "GC-DC is the fastest of GC, GC-SC, GC-DC", "GC-DC", claim_best("gcdc-fig3", ["gc", "gc-sc", "gc-dc"])),
    ("000 Fig. 3", "GC-DC's gain over GC-SC is smaller than GC-SC's over GC", "smaller",
     claim_ordering(("gcdc-fig3", "gc-sc", "gc"), ("gcdc-fig3", "gc-dc", "gc-sc"), "GC-SC/GC > GC-DC/GC-SC")),
    ("000 Fig. 4(a)", "GC-DC faster than GC-SC, imperfect SSI", "≈34%", claim_gain("gcdc-fig4a", "gc-dc", "gc-sc", stated("gcdc-fig4a", "gc-dc"))),
    ("000 Fig. 4(b)", "GC-DC faster than GC-SC, perfect SSI", "≈45%", claim_gain("gcdc-fig4b", "gc-dc", "gc-sc", stated("gcdc-fig4b", "gc-dc"))),
    ("000 Fig. 5", "GC-DC beats GC-SC, by more with perfect SSI", "larger in (b)",
     claim_ordering(("gcdc-fig5b", "gc-dc", "gc-sc"), ("gcdc-fig5a", "gc-dc", "gc-sc"), "gain (b) > gain (a)")),
    ("000 Fig. 6(a)", "GC-DC faster than GC-SC, imperfect SSI, tau = 1", "≈16%", claim_gain("gcdc-fig6a", "gc-dc", "gc-sc", stated("gcdc-fig6a", "gc-dc"))),
    ("000 Fig. 6(b)", "GC-DC faster than GC-SC, perfect SSI, tau = 1", "≈20%", claim_gain("gcdc-fig6b", "gc-dc", "gc-sc", stated("gcdc-fig6b", "gc-dc"))),
    ("000 Fig. 7(a)", "GC-DC's gain over GC-SC larger than in Fig. 6(a)", "larger",
     claim_ordering(("gcdc-fig7a", "gc-dc", "gc-sc"), ("gcdc-fig6a", "gc-dc", "gc-sc"), "Fig. 7(a) > Fig. 6(a)")),
    ("000 Fig. 7(b)", "GC-DC's gain over GC-SC larger than in Fig. 6(b)", "larger",
     claim_ordering(("gcdc-fig7b", "gc-dc", "gc-sc"), ("gcdc-fig6b", "gc-dc", "gc-sc"), "Fig. 7(b) > Fig. 6(b)")),
    ("000 Fig. 7", "every scheme slower than in Fig. 6 (tau = 0.1 starts with 10x slower stragglers)", "larger",
     claim_all_larger("gcdc-fig7a", "gcdc-fig6a", ["gc", "gc-sc", "gc-dc"])),
    ("003 Fig. 1", "GC (K = 40, r = 10, mu = 10, alpha = 0.01): waits for 31 of 40", "(bar, no number in the text)",
     closed_form_gc("mmc-fig1", 40, 10, 0.01, 10.0)),
    ("003 Fig. 1", "more messages buy time: UC-MMC fastest with the most messages, GC slowest with the fewest",
     "UC-MMC fastest, GC slowest", claim_tradeoff("mmc-fig1", "uc-mmc", "gc")),
    ("003 Fig. 1(b)", "GC-MMC-2 sends about one message per worker and iteration", "≈1",
     claim_messages_per_worker("mmc-fig1", "gc-mmc-2", 1.0)),
    ("004 Fig. 13(a)", "more gradients recovered as c1 grows: FR ≥ HR(8,3,1) ≥ HR(8,2,2) ≥ HR(8,1,3) ≥ CR",
     "trend (no number in the text)", claim_monotone("isgc-recovery", ["fr", "hr-8-3-1", "hr-8-2-2", "hr-8-1-3", "cr"])),
    ("004 §VIII-C", "HR(8, 3, 1) places the data exactly as FR (c1 = 3 is c1 = 4)", "same",
     claim_same("isgc-recovery", "fr", "hr-8-3-1")),
    ("004 Thms. 10-11", "w = 1 recovers c/n = 50% for every placement; enough w recovers all",
     "50%", claim_endpoints("isgc-recovery", ["fr", "hr-8-3-1", "hr-8-2-2", "hr-8-1-3", "cr"], 8, 4)),
    ("004 Fig. 13(a)", "recovered share against the exact expectation over uniformly random w-sets (brute force here)",
     "(our check)", claim_exact("isgc-recovery")),
]


def claims_table(results):
    rows = ["| figure | statement | paper | ours | |", "|---|---|---|---|---|"]
    for fig, statement, paper, check in CLAIMS:
        ours, note = check(results)
        rows.append(f"| {fig} | {statement} | {paper} | {ours} | {note} |")
    return "\n".join(rows)


def result_table(result):
    bound = result.get("lower_bound_shown", True)
    rows = [
        f"| scheme | mean ± 95% CI | p50 | p99 | messages | recovered | vs {result['baseline']} (± 95% CI) |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in result["schemes"]:
        ci = f"{s['ci95']:.4f}" if s["ci95"] is not None else "n/a"
        gci = s.get("improvement_ci95")
        g = f"{s['improvement_percent']:+.1f}%" + (f" ± {gci:.1f}" if gci else "")
        rows.append(
            f"| {s['name']} | {s['mean_iteration_time']:.4f} ± {ci} | {s['p50']:.4f} | {s['p99']:.4f} | "
            f"{s['messages_per_iteration']:.2f} | {100 * s['recovered_fraction']:.1f}% | {g} |"
        )
    if bound:
        lb = result["lower_bound"]
        ci = f"{lb['ci95']:.4f}" if lb["ci95"] is not None else "n/a"
        rows.append(f"| LB ({lb['workers']} fastest) | {lb['mean_iteration_time']:.4f} ± {ci} | {lb['p50']:.4f} | "
                    f"{lb['p99']:.4f} | | | |")
    return "\n".join(rows)


def sweep_table(result):
    key, values = result["sweep"]["key"], result["sweep"]["values"]
    names = [s["name"] for s in result["runs"][0]["schemes"]]
    exact = result.get("exact") or {}
    rows = [f"| {key} | " + " | ".join(f"{n}: recovered{' (exact)' if n in exact else ''}, time" for n in names) + " |",
            "|---" * (len(names) + 1) + "|"]
    for v, r in zip(values, result["runs"]):
        cells = []
        for s in r["schemes"]:
            ex = exact.get(s["name"], {}).get(str(v))
            exs = f" ({100 * ex:.1f}%)" if ex is not None else ""
            cells.append(f"{100 * s['recovered_fraction']:.1f}%{exs}, {s['mean_iteration_time']:.4g}")
        rows.append(f"| {v} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def readme(results, titles, notes, captions=None, cites=None, study=()):
    captions, cites = captions or {}, cites or {}
    out = [
        "# Reproduced figures",
        "",
        "Written by `scripts/reproduce-figures.sh` from `configs/paper/*.toml`: do not edit by hand",
        "(the notes come from `results/paper/NOTES.md`). Times are the papers' model time;",
        "means over 30 trials of 400 iterations with 95% confidence intervals over trials;",
        "all schemes of a figure see the same sampled delays (common random numbers), so a gain",
        "`x% ± h` has a paired 95% interval (delta method over the per-trial means);",
        "LB is the lower bound of 000 §VI (the P(l - r + 1)-th fastest of all K).",
        "Every figure is also in PDF and SVG beside the PNG; a white diamond with a black edge marks",
        "a number a paper states, labelled with its source. Colours: one per scheme, the same in",
        "every figure (the colour-blind-safe Okabe-Ito palette).",
        "",
        "## References",
        "",
    ]
    out += [f"- [{n}] {c}" for n, c in sorted(cites.items())] + [""]
    out += [
        "## The papers' statements beside ours",
        "",
        claims_table(results),
        "",
    ]
    if notes:
        out += ["## Notes", "", notes.strip(), ""]
    out += study
    for name in sorted(results):
        r = results[name]
        out += [f"## {name}", "", titles[name], "", f"![{name}]({name}.png)", ""]
        if name in captions:
            out += [f"*{captions[name]}* ([PDF]({name}.pdf), [SVG]({name}.svg))", ""]
        out += [sweep_table(r) if "sweep" in r else result_table(r), ""]
    return "\n".join(out)


# --- beyond the papers: greedy vs optimal clustering --------------------------

STUDY_COMPARE = ('simulate.compare=['
                 '{ name = "gc-dc-greedy", kind = "gc-dc", set = { clustering = "greedy" } }, '
                 '{ name = "gc-dc-optimal", kind = "gc-dc", set = { clustering = "optimal" } }]')
STUDY_SETS = [STUDY_COMPARE, 'simulate.baseline="gc-dc-greedy"']


def study_row(name, result):
    """Greedy, optimal and LB of one figure; the optimal's gain over the greedy with its paired 95%
    interval, and the share of the greedy's gap to LB that the optimal closes (interval: the paired
    one of the gain, scaled by greedy / (greedy - LB), LB taken as fixed)."""
    by = {s["name"]: s for s in result["schemes"]}
    g, o = by["gc-dc-greedy"], by["gc-dc-optimal"]
    lb = result["lower_bound"]["mean_iteration_time"]
    gt, ot = g["mean_iteration_time"], o["mean_iteration_time"]
    gain, gain_ci = o["improvement_percent"], o["improvement_ci95"]
    gap = gt - lb
    return {
        "figure": name, "greedy": gt, "greedy_ci95": g["ci95"], "optimal": ot, "optimal_ci95": o["ci95"],
        "lower_bound": lb, "lower_bound_ci95": result["lower_bound"]["ci95"],
        "gain_percent": gain, "gain_ci95": gain_ci,
        "gap_closed_percent": 100.0 * (gt - ot) / gap, "gap_closed_ci95": gain_ci * gt / gap,
        "trials": result["trials"], "iterations": result["iterations"],
    }


def run_study(binary, configs, out):
    figures = sorted(pathlib.Path(configs).glob("gcdc-fig*.toml"))
    rows, raw = [], {}
    for path in figures:
        print(f"== clustering study: {path.stem}", flush=True)
        result = simulate(binary, path, STUDY_SETS)
        raw[path.stem] = result
        rows.append(study_row(path.stem, result))
    (out / "clustering-study.json").write_text(json.dumps({"rows": rows, "runs": raw}, indent=2) + "\n")
    plot_study(rows, out / "clustering-study.png")
    deadline = pathlib.Path(configs) / "gcdc-deadline.toml"
    print("== clustering study: gcdc-deadline", flush=True)
    sweep, _, _ = directives(deadline.read_text())
    key, values = sweep
    runs = [simulate(binary, deadline, STUDY_SETS + [f"{key}={fmt_value(v)}"]) for v in values]
    result = {"sweep": {"key": key, "values": values}, "runs": runs}
    (out / "clustering-deadline.json").write_text(json.dumps(result, indent=2) + "\n")
    fig = plot_sweep(result, "Deadline-aware GC-DC (Fig. 4(a)'s setting) with the greedy and the optimal clustering: "
                     "recovered share and per-iteration time against the deadline.")
    fig.savefig(out / "clustering-deadline.png", dpi=110)
    plt.close(fig)


def plot_study(rows, png):
    fig, ax = plt.subplots(figsize=(11, 4.2))
    width = 0.27
    xs = range(len(rows))
    for i, (key, label, colour) in enumerate([("greedy", "GC-DC greedy (000 §V)", "#55a868"),
                                                ("optimal", "GC-DC optimal", "#8172b3"),
                                                ("lower_bound", "LB (000 §VI)", "white")]):
        vals = [r[key] for r in rows]
        errs = [r[f"{key}_ci95"] or 0 for r in rows]
        bars = ax.bar([x + (i - 1) * width for x in xs], vals, width, yerr=errs, capsize=3, label=label,
                      color=colour, edgecolor="black", linewidth=0.6, error_kw={"elinewidth": 1})
        if key == "lower_bound":
            for b in bars:
                b.set_hatch("//")
    for x, r in zip(xs, rows):
        top = max(r["greedy"] + (r["greedy_ci95"] or 0), r["optimal"])
        ax.annotate(f"{r['gain_percent']:+.1f}% ± {r['gain_ci95']:.1f}\ngap closed {r['gap_closed_percent']:.0f}%",
                    (x, top), ha="center", va="bottom", fontsize=7, xytext=(0, 3), textcoords="offset points")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([r["figure"].replace("gcdc-", "") for r in rows])
    ax.set_ylabel("average per-iteration time (model time)")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.margins(y=0.2)
    fig.suptitle("Beyond 000: GC-DC's greedy clustering against the optimal one and LB on every GC-DC figure "
                 "(same seeds; gain of optimal over greedy with its paired 95% interval)", fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def study_section(out):
    path = out / "clustering-study.json"
    if not path.exists():
        return []
    rows = json.loads(path.read_text())["rows"]
    lines = [
        "## Beyond 000: optimal clustering",
        "",
        "GC-DC with the greedy clustering of 000 §V and with `scheme.clustering = \"optimal\"` (the exact",
        "optimum of the straggler profile, and with rates of the bottleneck rate first, its ties broken by",
        "the straggler profile, then the profiles of the slow workers:",
        "`crates/core/src/cluster/optimal.rs`) on every GC-DC figure, same seeds and settings as the",
        "figure. *gain*: reduction of the mean iteration time, optimal against greedy, with its paired",
        "95% interval; *gap closed*: (greedy − optimal) / (greedy − LB), its interval the gain's scaled",
        "by greedy / (greedy − LB) (LB taken as fixed).",
        "",
        "![clustering-study](clustering-study.png)",
        "",
        "| figure | greedy ± 95% CI | optimal ± 95% CI | LB | gain (paired 95%) | gap to LB closed |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['figure']} | {r['greedy']:.4f} ± {r['greedy_ci95']:.4f} | "
                     f"{r['optimal']:.4f} ± {r['optimal_ci95']:.4f} | {r['lower_bound']:.4f} | "
                     f"{r['gain_percent']:+.1f}% ± {r['gain_ci95']:.1f} | "
                     f"{r['gap_closed_percent']:.1f}% ± {r['gap_closed_ci95']:.1f} |")
    lines += ["", "The deadline trade-off (gcdc-deadline's setting) with both clusterings:", "",
              "![clustering-deadline](clustering-deadline.png)", ""]
    dpath = out / "clustering-deadline.json"
    if dpath.exists():
        lines += [sweep_table(json.loads(dpath.read_text())), ""]
    return lines


def draw(path, result, cites):
    """Draw the figure of config `path` from its result: (Figure, caption)."""
    text = path.read_text()
    _, panels, _ = directives(text)
    title = title_of(text)
    cap = caption(text, tomllib.loads(text), cites)
    marks = paper_markers(path.stem, result, cites)
    if "sweep" in result:
        exact = {n: {int(w) if float(w).is_integer() else float(w): x for w, x in per.items()}
                 for n, per in (result.get("exact") or {}).items()} or None
        return plot_sweep(result, title, exact, marks), cap
    return plot_bars(result, panels, title, marks), cap


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=str(ROOT / "target/release/gradcode"))
    ap.add_argument("--configs", default=str(ROOT / "configs/paper"))
    ap.add_argument("--out", default=str(ROOT / "results/paper"))
    ap.add_argument("--replot", action="store_true",
                    help="draw the figures and README from the JSON present, without simulating")
    ap.add_argument("names", nargs="*", help="config names (default: all)")
    args = ap.parse_args(argv)
    cites = citations()
    # A figure is a config with a [simulate] section (gcdc-example.toml is a worked example for `explain`).
    configs = [c for c in sorted(pathlib.Path(args.configs).glob("*.toml"))
               if "simulate" in tomllib.loads(c.read_text())]
    if args.names:
        unknown = set(args.names) - {c.stem for c in configs} - {"clustering-study"}
        if unknown:
            sys.exit(f"no figure config {', '.join(sorted(unknown))} in {args.configs}")
        configs = [c for c in configs if c.stem in args.names]
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not args.replot and (not args.names or "clustering-study" in args.names):
        run_study(args.bin, args.configs, out)
    for path in configs:
        print(f"== {path.stem}", flush=True)
        if args.replot:
            j = out / f"{path.stem}.json"
            if not j.is_file():
                if args.names:
                    sys.exit(f"--replot: no {j} (run without --replot to simulate it)")
                print(f"   no {j}: skipped (not simulated yet)")
                continue
            result = json.loads(j.read_text())
        else:
            result, _, _ = run_config(args.bin, path)
            if "sweep" in result:
                exact = exact_sweep(path, result)
                if exact:
                    # JSON keys are strings.
                    result["exact"] = {n: {str(w): x for w, x in per.items()} for n, per in exact.items()}
            (out / f"{path.stem}.json").write_text(json.dumps(result, indent=2) + "\n")
        fig, cap = draw(path, result, cites)
        save_all(fig, out / path.stem, cap)
    # The README covers every result present, also those of earlier runs.
    results, titles, captions = {}, {}, {}
    figures = {c.stem for c in sorted(pathlib.Path(args.configs).glob("*.toml"))
               if "simulate" in tomllib.loads(c.read_text())}
    for j in sorted(out.glob("*.json")):
        cfg = pathlib.Path(args.configs) / f"{j.stem}.toml"
        if j.stem not in figures:
            continue
        results[j.stem] = json.loads(j.read_text())
        text = cfg.read_text()
        titles[j.stem] = title_of(text)
        captions[j.stem] = caption(text, tomllib.loads(text), cites)
    notes_path = out / "NOTES.md"
    notes = notes_path.read_text() if notes_path.exists() else ""
    (out / "README.md").write_text(readme(results, titles, notes, captions, cites, study_section(out)))
    print(f"wrote {out}/README.md")


if __name__ == "__main__":
    main()
