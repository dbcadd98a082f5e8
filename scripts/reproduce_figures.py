#!/usr/bin/env python3
"""Reproduce the papers' simulation figures with `gradcode simulate`.

For every configs/paper/*.toml: run the simulator (JSON), save
results/paper/<name>.json, draw results/paper/<name>.png, and write
results/paper/README.md with our numbers beside the ones the papers state.

Directives in a config, as comment lines starting with `#!`:

    #! sweep scheme.wait_for = [1, 2, 3, 4, 5, 6, 7, 8]
        run once per value (with --set), draw lines against the value
    #! plot = time, messages
        panels of a bar chart: time (mean per-iteration time with its 95%
        CI, and the lower bound), messages (per iteration), recovered
        (fraction); default: time

Usage: scripts/reproduce_figures.py [--bin target/release/gradcode]
           [--configs configs/paper] [--out results/paper] [names...]
(scripts/reproduce-figures.sh builds the binary and the Python venv first.)
"""

import argparse
import json
import pathlib
import re
import subprocess
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent


def directives(text):
    """(sweep key, values) or None, and the panels of the plot."""
    sweep, panels = None, ["time"]
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
        sys.exit(f"unknown directive `{line}`")
    for p in panels:
        if p not in ("time", "messages", "recovered"):
            sys.exit(f"unknown plot panel `{p}` (time, messages, recovered)")
    return sweep, panels


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
    sweep, panels = directives(text)
    if sweep is None:
        result = simulate(binary, path)
    else:
        key, values = sweep
        runs = [simulate(binary, path, [f"{key}={fmt_value(v)}"]) for v in values]
        result = {"sweep": {"key": key, "values": values}, "runs": runs}
    return result, panels, title_of(text)


PANEL = {
    "time": ("mean_iteration_time", "average per-iteration time\n(model time)"),
    "messages": ("messages_per_iteration", "messages per iteration"),
    "recovered": ("recovered_fraction", "recovered fraction"),
}


def plot_bars(result, panels, title, png):
    schemes = result["schemes"]
    width = max(5.5, 1.8 + len(panels) * (1.2 + 0.9 * (len(schemes) + 1)))
    fig, axes = plt.subplots(1, len(panels), figsize=(width, 3.8))
    axes = [axes] if len(panels) == 1 else list(axes)
    for ax, panel in zip(axes, panels):
        key, label = PANEL[panel]
        names = [s["name"].upper() for s in schemes]
        values = [s[key] for s in schemes]
        errors = [s["ci95"] if panel == "time" and s["ci95"] is not None else 0 for s in schemes]
        if panel == "time":
            names.append("LB")
            values.append(result["lower_bound"]["mean_iteration_time"])
            errors.append(result["lower_bound"]["ci95"] or 0)
        colors = [f"C{i}" for i in range(len(names))]
        bars = ax.bar(names, values, yerr=errors if any(errors) else None, capsize=4, color=colors, edgecolor="black", linewidth=0.6)
        if panel == "time":
            bars[-1].set_hatch("//")
            bars[-1].set_facecolor("white")
        for b, v, e in zip(bars, values, errors):
            ax.annotate(f"{v:.3g}", (b.get_x() + b.get_width() / 2, v + e), ha="center", va="bottom",
                        fontsize=8, xytext=(0, 2), textcoords="offset points")
        ax.set_ylabel(label)
        ax.margins(y=0.15)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(textwrap.fill(title, int(13 * width)), fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def plot_sweep(result, title, png):
    key, values = result["sweep"]["key"], result["sweep"]["values"]
    runs = result["runs"]
    names = [s["name"] for s in runs[0]["schemes"]]
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.6))
    for ax, (metric, label) in zip(axes, [PANEL["recovered"], PANEL["time"]]):
        for i, name in enumerate(names):
            ys = [r["schemes"][i][metric] for r in runs]
            ax.plot(values, ys, marker="o", label=name)
        ax.set_xlabel(key)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(textwrap.fill(title, 110), fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


# --- what the papers state, beside what we get ------------------------------


def mean(results, config, scheme):
    r = results.get(config)
    if r is None or "schemes" not in r:
        return None
    for s in r["schemes"]:
        if s["name"] == scheme:
            return s["mean_iteration_time"]
    return None


def gain(results, config, scheme, over):
    """Percent reduction of the mean iteration time of `scheme` against `over`."""
    a, b = mean(results, config, scheme), mean(results, config, over)
    if a is None or b is None:
        missing = [n for n, v in ((scheme, a), (over, b)) if v is None]
        return None, f"not simulated yet ({', '.join(missing)} not in {config})"
    return 100.0 * (1.0 - a / b), None


def claim_gain(config, scheme, over, paper_percent):
    def check(results):
        g, why = gain(results, config, scheme, over)
        if g is None:
            return "—", why
        if paper_percent is None:
            return f"{g:.1f}%", "no number to compare"
        diff = g - paper_percent
        note = "agrees within 3 points" if abs(diff) <= 3 else f"differs by {diff:+.1f} points: see the notes"
        return f"{g:.1f}%", note
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
        a, why_a = gain(results, *first)
        b, why_b = gain(results, *second)
        if a is None or b is None:
            return "—", why_a or why_b
        holds = "holds" if a > b else "does NOT hold"
        return f"{a:.1f}% vs {b:.1f}%", f"{what}: {holds}"
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
        m = mean(results, config, "gc")
        if m is None:
            return "—", "not simulated"
        r = results[config]["schemes"][0]
        return f"{m:.4f} ± {r['ci95']:.4f}", f"closed form {expected:.4f}"
    return check


CLAIMS = [
    ("000 Fig. 3", "clustering far ahead of GC: GC-SC's gain over GC", "large (no number in the text)",
     claim_gain("gcdc-fig3", "gc-sc", "gc", None)),
    ("000 Fig. 3", "GC-DC is the fastest of GC, GC-SC, GC-DC", "GC-DC", claim_best("gcdc-fig3", ["gc", "gc-sc", "gc-dc"])),
    ("000 Fig. 3", "GC-DC's gain over GC-SC is smaller than GC-SC's over GC", "smaller",
     claim_ordering(("gcdc-fig3", "gc-sc", "gc"), ("gcdc-fig3", "gc-dc", "gc-sc"), "GC-SC/GC > GC-DC/GC-SC")),
    ("000 Fig. 4(a)", "GC-DC faster than GC-SC, imperfect SSI", "≈34%", claim_gain("gcdc-fig4a", "gc-dc", "gc-sc", 34)),
    ("000 Fig. 4(b)", "GC-DC faster than GC-SC, perfect SSI", "≈45%", claim_gain("gcdc-fig4b", "gc-dc", "gc-sc", 45)),
    ("000 Fig. 5", "GC-DC beats GC-SC, by more with perfect SSI", "larger in (b)",
     claim_ordering(("gcdc-fig5b", "gc-dc", "gc-sc"), ("gcdc-fig5a", "gc-dc", "gc-sc"), "gain (b) > gain (a)")),
    ("000 Fig. 6(a)", "GC-DC faster than GC-SC, imperfect SSI, tau = 1", "≈16%", claim_gain("gcdc-fig6a", "gc-dc", "gc-sc", 16)),
    ("000 Fig. 6(b)", "GC-DC faster than GC-SC, perfect SSI, tau = 1", "≈20%", claim_gain("gcdc-fig6b", "gc-dc", "gc-sc", 20)),
    ("000 Fig. 7(a)", "GC-DC's gain over GC-SC larger than in Fig. 6(a)", "larger",
     claim_ordering(("gcdc-fig7a", "gc-dc", "gc-sc"), ("gcdc-fig6a", "gc-dc", "gc-sc"), "Fig. 7(a) > Fig. 6(a)")),
    ("000 Fig. 7(b)", "GC-DC's gain over GC-SC larger than in Fig. 6(b)", "larger",
     claim_ordering(("gcdc-fig7b", "gc-dc", "gc-sc"), ("gcdc-fig6b", "gc-dc", "gc-sc"), "Fig. 7(b) > Fig. 6(b)")),
    ("000 Fig. 7", "every scheme slower than in Fig. 6 (tau = 0.1 starts with 10x slower stragglers)", "larger",
     claim_all_larger("gcdc-fig7a", "gcdc-fig6a", ["gc", "gc-sc", "gc-dc"])),
    ("003 Fig. 1", "GC (K = 40, r = 10, mu = 10, alpha = 0.01): waits for 31 of 40", "(bar, no number in the text)",
     closed_form_gc("mmc-fig1", 40, 10, 0.01, 10.0)),
]


def claims_table(results):
    rows = ["| figure | statement | paper | ours | |", "|---|---|---|---|---|"]
    for fig, statement, paper, check in CLAIMS:
        ours, note = check(results)
        rows.append(f"| {fig} | {statement} | {paper} | {ours} | {note} |")
    return "\n".join(rows)


def result_table(result):
    rows = [
        f"| scheme | mean ± 95% CI | p50 | p99 | messages | recovered | vs {result['baseline']} |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in result["schemes"]:
        ci = f"{s['ci95']:.4f}" if s["ci95"] is not None else "n/a"
        rows.append(
            f"| {s['name']} | {s['mean_iteration_time']:.4f} ± {ci} | {s['p50']:.4f} | {s['p99']:.4f} | "
            f"{s['messages_per_iteration']:.2f} | {100 * s['recovered_fraction']:.1f}% | {s['improvement_percent']:+.1f}% |"
        )
    lb = result["lower_bound"]
    ci = f"{lb['ci95']:.4f}" if lb["ci95"] is not None else "n/a"
    rows.append(f"| LB ({lb['workers']} fastest) | {lb['mean_iteration_time']:.4f} ± {ci} | {lb['p50']:.4f} | {lb['p99']:.4f} | | | |")
    return "\n".join(rows)


def sweep_table(result):
    key, values = result["sweep"]["key"], result["sweep"]["values"]
    names = [s["name"] for s in result["runs"][0]["schemes"]]
    rows = [f"| {key} | " + " | ".join(f"{n}: recovered, time" for n in names) + " |",
            "|---" * (len(names) + 1) + "|"]
    for v, r in zip(values, result["runs"]):
        cells = [f"{100 * s['recovered_fraction']:.1f}%, {s['mean_iteration_time']:.4g}" for s in r["schemes"]]
        rows.append(f"| {v} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def readme(results, titles, notes):
    out = [
        "# Reproduced figures",
        "",
        "Written by `scripts/reproduce-figures.sh` from `configs/paper/*.toml`: do not edit by hand",
        "(the notes come from `results/paper/NOTES.md`). Times are the papers' model time;",
        "means over 30 trials of 400 iterations with 95% confidence intervals over trials;",
        "all schemes of a figure see the same sampled delays (common random numbers);",
        "LB is the lower bound of 000 §VI (the P(l - r + 1)-th fastest of all K).",
        "",
        "## The papers' statements beside ours",
        "",
        claims_table(results),
        "",
    ]
    if notes:
        out += ["## Notes", "", notes.strip(), ""]
    for name in sorted(results):
        r = results[name]
        out += [f"## {name}", "", titles[name], "", f"![{name}]({name}.png)", ""]
        out += [sweep_table(r) if "sweep" in r else result_table(r), ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=str(ROOT / "target/release/gradcode"))
    ap.add_argument("--configs", default=str(ROOT / "configs/paper"))
    ap.add_argument("--out", default=str(ROOT / "results/paper"))
    ap.add_argument("names", nargs="*", help="config names (default: all)")
    args = ap.parse_args()
    configs = sorted(pathlib.Path(args.configs).glob("*.toml"))
    if args.names:
        configs = [c for c in configs if c.stem in args.names]
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for path in configs:
        print(f"== {path.stem}", flush=True)
        result, panels, title = run_config(args.bin, path)
        (out / f"{path.stem}.json").write_text(json.dumps(result, indent=2) + "\n")
        if "sweep" in result:
            plot_sweep(result, title, out / f"{path.stem}.png")
        else:
            plot_bars(result, panels, title, out / f"{path.stem}.png")
    # The README covers every result present, also those of earlier runs.
    results, titles = {}, {}
    for j in sorted(out.glob("*.json")):
        cfg = pathlib.Path(args.configs) / f"{j.stem}.toml"
        if not cfg.exists():
            continue
        results[j.stem] = json.loads(j.read_text())
        titles[j.stem] = title_of(cfg.read_text())
    notes_path = out / "NOTES.md"
    notes = notes_path.read_text() if notes_path.exists() else ""
    (out / "README.md").write_text(readme(results, titles, notes))
    print(f"wrote {out}/README.md")


if __name__ == "__main__":
    main()
