#!/usr/bin/env python3
"""Tests of scripts/reproduce_figures.py: every paper figure re-rendered from
the committed results/paper/*.json (`--replot`, no simulation) as PNG, PDF
and SVG; the papers' stated numbers drawn where the JSON puts them, labelled
with the citation; captions and the README carrying the full citations and
the settings of the configs; one colour per scheme, the same in every
figure. Also scripts/isgc_nn.py (004 §VIII's CNN experiments, several seeds
per point) on small fake traces: its intervals against a hand computation,
its "k of n reached", its verdicts and its figures. And scripts/approximate.py:
FRC's exact expected decode error against every straggler set of a small
code, and its tables and verdicts from a fake sweep. Run by scripts/test-plots.sh.
"""

import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import unittest
import xml.etree.ElementTree as ET

import h5py
import matplotlib.colors as mcolors
import numpy as np
from PIL import Image

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import approximate  # noqa: E402
import isgc_nn  # noqa: E402
import reproduce_figures as rf  # noqa: E402

PAPER = ROOT / "results/paper"
CONFIGS = ROOT / "configs/paper"
FIGURES = sorted(c.stem for c in CONFIGS.glob("*.toml") if "simulate" in tomllib.loads(c.read_text()))


def result(name):
    return json.loads((PAPER / f"{name}.json").read_text())


def markers(fig):
    """[(axes index, x, y, label)] of the white diamonds (the papers' numbers)."""
    out = []
    for i, ax in enumerate(fig.axes):
        for line in ax.get_lines():
            if line.get_marker() == "D" and line.get_markerfacecolor() == "white":
                out += [(i, x, y, line.get_label()) for x, y in zip(line.get_xdata(), line.get_ydata())]
    return out


class FiguresTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cites = rf.citations()
        cls.out = pathlib.Path(tempfile.mkdtemp(prefix="gradcode-figures-"))
        for j in PAPER.glob("*.json"):
            shutil.copy(j, cls.out)
        shutil.copy(PAPER / "NOTES.md", cls.out)
        cls.replot = subprocess.run([sys.executable, HERE / "reproduce_figures.py", "--replot", "--out", cls.out],
                                 capture_output=True, text=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.out)

    def test_every_figure_is_written_as_png_pdf_and_svg(self):
        self.assertEqual(self.replot.returncode, 0, self.replot.stderr)
        self.assertEqual(sorted(p.stem for p in PAPER.glob("*.json") if p.stem in FIGURES), FIGURES)
        for name in FIGURES:
            with Image.open(self.out / f"{name}.png") as im:
                self.assertEqual(im.format, "PNG")
                self.assertGreater(len(im.convert("RGB").getcolors(1 << 20) or range(1 << 20)), 20, name)
            self.assertEqual((self.out / f"{name}.pdf").read_bytes()[:5], b"%PDF-", name)
            root = ET.parse(self.out / f"{name}.svg").getroot()
            self.assertEqual(root.tag, "{http://www.w3.org/2000/svg}svg", name)
            # The caption (drawn as paths) is also the SVG's title, as the README gives it.
            title = root.find(".//{http://purl.org/dc/elements/1.1/}title")
            text = (CONFIGS / f"{name}.toml").read_text()
            self.assertEqual(title.text, rf.caption(text, tomllib.loads(text), self.cites), name)
            self.assertIn(f"*{title.text}*", (self.out / "README.md").read_text())

    def test_readme_has_the_full_citations_and_a_caption_with_the_setting_per_figure(self):
        readme = (self.out / "README.md").read_text()
        self.assertIn("## References", readme)
        papers_md = (ROOT / "docs/papers.md").read_text()
        for number, cite in self.cites.items():
            self.assertIn(f"- [{number}] {cite}", readme)
            self.assertIn(cite.split(",")[0], papers_md)
        self.assertIn("IEEE Transactions on Communications, 2022", self.cites["000"])
        for name in FIGURES:
            cfg = tomllib.loads((CONFIGS / f"{name}.toml").read_text())
            section = readme.split(f"## {name}\n", 1)[1].split("\n## ", 1)[0]
            cap = re.search(r"^\*(.+)\* \(\[PDF\]", section, re.M)
            self.assertIsNotNone(cap, name)
            cap = cap.group(1)
            self.assertIn(f"K = {cfg['workers']}", cap, name)
            self.assertIn(f"straggler model {cfg['straggler']['model']}", cap, name)
            self.assertIn(f"{cfg['simulate']['trials']} trials x {cfg['simulate']['iterations']} iterations", cap)
            for key, sym in (("clusters", "P"), ("load", "r"), ("clusters_per_worker", "n")):
                if key in cfg["scheme"]:
                    self.assertIn(f"{sym} = {cfg['scheme'][key]}", cap, name)
            paper, fig = rf.figure_source((CONFIGS / f"{name}.toml").read_text())
            self.assertIn(self.cites[paper], cap, name)
            if fig:
                self.assertIn(f"Reproduction of {fig} of [{paper}]", cap)
            self.assertIn(f"]({name}.svg)", section)
        self.assertIn("Reproduction of Fig. 4(a) of [000] B. Buyukates", readme)

    def test_the_papers_numbers_are_drawn_where_they_belong(self):
        for name, over, percent in (("gcdc-fig4a", "gc-sc", 34), ("gcdc-fig4b", "gc-sc", 45),
                                    ("gcdc-fig6a", "gc-sc", 16), ("gcdc-fig6b", "gc-sc", 20)):
            r = result(name)
            fig, _ = rf.draw(CONFIGS / f"{name}.toml", r, self.cites)
            (ax, x, y, label), = markers(fig)
            means = {s["name"]: s["mean_iteration_time"] for s in r["schemes"]}
            self.assertAlmostEqual(y, means[over] * (1 - percent / 100), places=9)
            self.assertEqual(x, [s["name"] for s in r["schemes"]].index("gc-dc"))
            flat = label.replace("\n", " ")
            self.assertIn(f"≈{percent}% below GC-SC", flat)
            self.assertIn("[000] Buyukates et al., IEEE Transactions on Communications, 2022", flat)
            self.assertIn(f"Fig. {name[-2]}({name[-1]})", flat)
        r = result("mmc-fig1")
        fig, _ = rf.draw(CONFIGS / "mmc-fig1.toml", r, self.cites)
        drawn = markers(fig)
        self.assertIn("messages", rf.directives((CONFIGS / "mmc-fig1.toml").read_text())[1])
        (ax, x, y, label), = drawn
        self.assertEqual(fig.axes[ax].get_ylabel(), rf.PANEL["messages"][1])
        self.assertEqual(x, [s["name"] for s in r["schemes"]].index("gc-mmc-2"))
        self.assertEqual(y, r["workers"] * 1.0)
        self.assertIn("[003] Ozfatura et al., IEEE Data Science Workshop (DSW), 2019, Fig. 1(b)", label.replace("\n", " "))
        r = result("isgc-recovery")
        fig, _ = rf.draw(CONFIGS / "isgc-recovery.toml", r, self.cites)
        pts = {(ax, x, y) for ax, x, y, _ in markers(fig)}
        self.assertEqual(pts, {(0, 1, 50.0)})
        # What the marker says is what the run gives at w = 1 (c/n of 004's Theorems).
        w1 = r["sweep"]["values"].index(1)
        for s in r["runs"][w1]["schemes"]:
            if s["name"] != "is-sgd":
                self.assertAlmostEqual(100 * s["recovered_fraction"], 50.0, places=9)

    def test_one_colour_per_scheme_in_every_figure(self):
        seen = {}
        for name in FIGURES:
            r = result(name)
            fig, _ = rf.draw(CONFIGS / f"{name}.toml", r, self.cites)
            ax = fig.axes[0]
            names = [s["name"] for s in (r["runs"][0] if "sweep" in r else r)["schemes"]]
            if "sweep" in r:
                drawn = {line.get_label().lower(): mcolors.to_hex(line.get_color()) for line in ax.get_lines()
                         if line.get_label().lower() in names}
            else:
                drawn = {t.get_text().lower(): mcolors.to_hex(b.get_facecolor())
                         for t, b in zip(ax.get_xticklabels(), ax.patches) if t.get_text() != "LB"}
            self.assertEqual(set(drawn), set(names), name)
            self.assertEqual(len(set(drawn.values())), len(drawn), f"{name}: two schemes share a colour")
            for scheme, c in drawn.items():
                self.assertIn(c.upper(), {v.upper() for v in rf.OKABE_ITO.values()}, f"{name}: {scheme}")
                self.assertEqual(seen.setdefault(scheme, c), c, f"{scheme} changes colour in {name}")
        self.assertEqual(seen["gc-dc"].upper(), rf.OKABE_ITO["bluish green"])


def fake_trace(path, batch_loss, step_s, recovered, train_loss=None):
    """A trace with the datasets isgc_nn.py reads: /iteration/ duration_s, recovered_fraction, batch_loss
    (absent when train_loss is given: an older trace), batch_accuracy, test_accuracy, elapsed_s; and the
    root attributes gradcode_traces (the reader isgc_nn.py reads through) needs of a trace."""
    n = len(batch_loss if train_loss is None else train_loss)
    acc = np.full(n, np.nan)
    acc[9::10] = np.linspace(0.5, 0.8, len(acc[9::10]))
    with h5py.File(path, "w") as f:
        f.attrs["gradcode_version"] = "0.1.0"
        f.attrs["trace_schema"] = np.uint64(1)
        it = f.create_group("iteration")
        it["duration_s"] = np.full(n, step_s)
        it["elapsed_s"] = np.cumsum(np.full(n, step_s)) + 0.01 * (np.arange(n) // 10)  # evaluations
        it["recovered_fraction"] = np.resize(recovered, n).astype(float)
        it["test_accuracy"] = acc
        if train_loss is None:
            it["batch_loss"] = np.asarray(batch_loss, dtype=float)
            it["batch_accuracy"] = np.linspace(0.3, 0.7, n)
        else:
            it["train_loss"] = np.asarray(train_loss, dtype=float)


def drop_at(k, n=40):
    """A batch loss of 2 until step k, 0.5 from it on."""
    return np.where(np.arange(n) < k, 2.0, 0.5)


def hand_steps(loss, window=10, threshold=1.0):
    """Steps completed before the first step whose trailing mean of `window` batch losses is <= threshold."""
    for i in range(window - 1, len(loss)):
        if sum(loss[i - window + 1:i + 1]) / window <= threshold:
            return i
    return None


def hand_interval(xs):
    """Mean ± t·s/√n, t(0.975, n - 1) of n = 3 in closed form ((2p - 1) / √(2p(1 - p)) for 2 dof)."""
    assert len(xs) == 3
    t = 0.95 / (2 * 0.975 * 0.025) ** 0.5
    mean = sum(xs) / 3
    s = (sum((x - mean) ** 2 for x in xs) / 2) ** 0.5
    return mean, mean - t * s / 3 ** 0.5, mean + t * s / 3 ** 0.5


class IsgcNnTest(unittest.TestCase):
    # (point, [drop step per seed, None: never], recovered per seed (a constant or an iteration pattern))
    POINTS = [
        ("fig12-is-sgd-w1", [None, None, None], [0.25] * 3),
        ("fig12-is-fr-w1", [5, 7, 12], [0.5] * 3),
        ("fig12-is-cr-w1", [20, None, 24], [0.5] * 3),
        ("fig12-is-sgd-w2", [3, 4, 5], [0.5] * 3),
        ("fig12-is-fr-w2", [20, 22, 24], [[1.0, 0.6], [1.0, 0.7], [1.0, 0.64]]),
        ("fig12-is-cr-w2", [4, 10, 16], [[1.0, 0.4], [1.0, 0.7], [1.0, 0.56]]),
    ] + [(f"fig13-hr-c1-{c}", [10, 11, 12], [0.5 + 0.1 * c + 0.01 * k for k in range(3)]) for c in range(4)]

    @classmethod
    def setUpClass(cls):
        cls.dir = pathlib.Path(tempfile.mkdtemp(prefix="gradcode-isgc-nn-"))
        traces = cls.dir / "traces"
        traces.mkdir()
        cls.steps = {}
        for point, drops, recovered in cls.POINTS:
            for seed, (k, rec) in enumerate(zip(drops, recovered), start=1):
                loss = drop_at(40 if k is None else k)
                cls.steps[(point, seed)] = hand_steps(loss)
                fake_trace(traces / f"{point}-s{seed}.h5", loss, 0.05 * seed, rec)
        # An older trace without batch_loss: the training loss every 5 steps (NaN otherwise).
        for seed in (1, 2):
            train = np.full(40, np.nan)
            train[::5] = np.where(np.arange(0, 40, 5) < 15, 2.0, 0.4)
            fake_trace(traces / f"fig12-sgd-s{seed}.h5", None, 0.1, [1.0], train_loss=train)
        cls.out = cls.dir / "out"
        cls.proc = subprocess.run([sys.executable, HERE / "isgc_nn.py", traces, cls.out],
                                  capture_output=True, text=True)
        cls.md = (cls.out / "isgc-nn.md").read_text() if cls.proc.returncode == 0 else ""
        cls.json = json.loads((cls.out / "isgc-nn.json").read_text()) if cls.proc.returncode == 0 else {}
        cls.verdicts = {row["statement"]: row for row in cls.json.get("statements", [])}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def row(self, cell):
        """The markdown table row whose first cell is `cell`."""
        return next(line for line in self.md.splitlines() if line.startswith(f"| {cell} |"))

    def test_intervals_are_mean_plus_minus_t_s_over_root_n(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        self.assertEqual(self.steps[("fig12-is-fr-w2", 1)], 26, "2 until step 20: the trailing mean is 0.95 at 26")
        for point in ("fig12-is-fr-w2", "fig12-is-sgd-w2", "fig12-is-cr-w2", "fig12-is-fr-w1"):
            steps = [self.steps[(point, s)] for s in (1, 2, 3)]
            got = self.json["points"][point]["steps_to_threshold"]
            for key, want in zip(("mean", "low", "high"), hand_interval(steps)):
                self.assertAlmostEqual(got[key], want, places=9, msg=f"{point} {key}")
            # Time to the threshold: the steps before it, 0.05 s x seed each.
            secs = self.json["points"][point]["seconds_to_threshold"]
            by_hand = hand_interval([0.05 * s * n for s, n in zip((1, 2, 3), steps)])
            for key, want in zip(("mean", "low", "high"), by_hand):
                self.assertAlmostEqual(secs[key], want, places=9, msg=f"{point} seconds {key}")
        mean, low, high = hand_interval([26, 28, 30])
        self.assertIn(f"| is-fr-w2 | 2 | 3 | 3 of 3 reached | {mean:.1f} [{low:.1f}, {high:.1f}] |", self.md)
        rec = self.json["points"]["fig12-is-fr-w2"]["recovered_percent"]
        for key, want in zip(("mean", "low", "high"), hand_interval([80.0, 85.0, 82.0])):
            self.assertAlmostEqual(rec[key], want, places=9)
        # Without scipy the table gives the same t.
        from scipy.stats import t
        for dof, q in enumerate(isgc_nn.T975, start=1):
            self.assertAlmostEqual(q, t.ppf(0.975, dof), delta=5e-5)

    def test_runs_not_reaching_the_threshold(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        self.assertIn("| is-sgd-w1 | 1 | 3 | 0 of 3 reached | not reached | not reached |", self.md)
        cr = self.row("is-cr-w1")
        self.assertIn("| 2 of 3 reached |", cr)
        self.assertIn("(2 of 3 reached)", cr)
        p = self.json["points"]["fig12-is-cr-w1"]
        self.assertEqual((p["n"], p["reached"]), (3, 2))
        self.assertEqual(p["steps_to_threshold"]["values"], [26.0, 30.0], "over the reaching runs only")
        self.assertAlmostEqual(p["steps_to_threshold"]["mean"], 28.0)
        self.assertIn(f"{p['steps_to_threshold']['mean']:.1f} [", cr)

    def test_a_verdict_of_each_kind_with_its_intervals(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        want = {
            "IS-GC (FR) needs fewer steps than IS-SGD at w = 1": "holds",           # all reached vs none
            "IS-GC (CR) needs fewer steps than IS-SGD at w = 1": "not separable at this size",  # 2 of 3 vs none
            "IS-GC (FR) needs fewer steps than IS-SGD at w = 2": "does not hold",   # [23, 33] vs [7.5, 12.5]
            "IS-GC (CR) needs fewer steps than IS-SGD at w = 2": "not separable at this size",  # overlapping
            "IS-GC recovers more than IS-SGD at w = 1": "holds",                    # 50% vs 25% in every run
            "IS-GC recovers more than IS-SGD at w = 2": "holds",
            "FR recovers more than CR at w = 2": "not separable at this size",
            "HR's recovered gradients lie between CR (c1 = 0) and FR (c1 = 3), growing with c1": "holds",
        }
        self.assertEqual({s: v["verdict"] for s, v in self.verdicts.items()}, want)
        for statement, verdict in want.items():
            self.assertIn(f"| {statement} | {verdict} | {self.verdicts[statement]['reason']} |", self.md)
        fr, sgd = hand_interval([26, 28, 30]), hand_interval([9, 10, 11])
        self.assertEqual(self.verdicts["IS-GC (FR) needs fewer steps than IS-SGD at w = 2"]["reason"],
                         f"steps: IS-GC (FR) {fr[0]:.1f} [{fr[1]:.1f}, {fr[2]:.1f}] vs IS-SGD "
                         f"{sgd[0]:.1f} [{sgd[1]:.1f}, {sgd[2]:.1f}]")
        self.assertIn("IS-SGD not reached (0 of 3 reached)",
                      self.verdicts["IS-GC (FR) needs fewer steps than IS-SGD at w = 1"]["reason"])
        fr, cr = hand_interval([80.0, 85.0, 82.0]), hand_interval([70.0, 85.0, 78.0])
        self.assertEqual(self.verdicts["FR recovers more than CR at w = 2"]["reason"],
                         f"recovered: FR {fr[0]:.1f}% [{fr[1]:.1f}%, {fr[2]:.1f}%] vs CR "
                         f"{cr[0]:.1f}% [{cr[1]:.1f}%, {cr[2]:.1f}%]")

    def test_the_text_states_seeds_window_threshold_time_basis_and_method(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        head = self.md.split("## Fig. 12", 1)[0]
        self.assertIn("2 to 3 seeds per point", head)
        self.assertIn("trailing moving average over 10 steps", head)
        self.assertIn("Threshold 1.0", head)
        self.assertIn("evaluation time is excluded", head)
        self.assertIn("Student t with n - 1 degrees of freedom", head)
        self.assertIn("Traces without `/iteration/batch_loss` (older gradcode): fig12-sgd-s1, fig12-sgd-s2;", head)
        self.assertIn("## What differs from the paper", self.md)
        self.assertIn("- Seeds: 2 to 3 per point", self.md)
        # The fallback: training loss 0.4 from step 15, recorded every 5 steps: the mean of the last 10
        # steps' records (two) is 1.2 at step 15 and 0.4 at step 20.
        self.assertEqual(self.json["points"]["fig12-sgd"]["steps_to_threshold"]["values"], [20.0, 20.0])
        self.assertEqual((self.json["threshold"], self.json["window_steps"]), (1.0, 10))

    def test_figures_draw_every_point(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        for name in ("isgc-nn-fig12.png", "isgc-nn-fig13.png"):
            with Image.open(self.out / name) as im:
                self.assertEqual(im.format, "PNG")
                self.assertGreater(im.size[0], 800)
        paths = isgc_nn.group(sorted((self.dir / "traces").glob("fig1*.h5")))
        runs = {p: [isgc_nn.load(path) for _, path in sorted(s.items())] for p, s in paths.items()}
        points = self.json["points"]
        fig = isgc_nn.figure12(points, runs, 1.0, 10)
        want = ["IS-SGD, w = 1", "IS-SGD, w = 2", "IS-GC, FR, w = 1", "IS-GC, FR, w = 2", "IS-GC, CR, w = 1",
                "IS-GC, CR, w = 2", "SGD (w = 4)"]
        for ax in fig.axes[:4]:
            lines = {line.get_label(): line for line in ax.get_lines() if not line.get_label().startswith("_")}
            self.assertEqual(sorted(lines), sorted(want), ax.get_ylabel())
            # The series that never reaches the threshold is drawn, its mean over the seeds 2.
            self.assertTrue(np.isfinite(lines["IS-SGD, w = 1"].get_ydata()).any())
        sgd = {line.get_label(): line for line in fig.axes[0].get_lines()}["IS-SGD, w = 1"]
        self.assertEqual(sgd.get_xdata()[0], 9, "the trailing mean of 10 steps starts at step 9")
        self.assertTrue(np.allclose(sgd.get_ydata(), 2.0))
        colours = {line.get_label().rsplit(", w", 1)[0]: mcolors.to_hex(line.get_color())
                   for line in fig.axes[0].get_lines() if not line.get_label().startswith("_")}
        self.assertEqual(len(set(colours.values())), len(colours), f"one colour per scheme: {colours}")
        self.assertEqual(len(fig.legends), 1, "7 entries: one legend, outside the axes")
        self.assertEqual(len(fig.legends[0].get_texts()), 7)
        # Error bars of recovered % and steps to the threshold: every point with an interval has one.
        self.assertGreaterEqual(len(fig.axes[4].containers), 7)
        fig13 = isgc_nn.figure13(points, runs, 1.0, 10)
        self.assertEqual([t.get_text() for t in fig13.axes[1].get_legend().get_texts()],
                         [f"c1 = {c}" for c in range(4)])
        self.assertEqual(len(fig13.axes[0].containers), 4)


class ApproximateTest(unittest.TestCase):
    def test_frc_expected_error_is_the_mean_over_every_straggler_set(self):
        import itertools
        import math
        for k, d in ((6, 2), (6, 3), (8, 2)):
            blocks = k // d
            for s in range(0, k + 1):
                errors = []
                for stragglers in itertools.combinations(range(k), s):
                    # Worker w holds block w % blocks, as gradcode's FRC places them.
                    lost = sum(1 for b in range(blocks)
                               if all(w in stragglers for w in range(k) if w % blocks == b))
                    errors.append(math.sqrt(d * lost))
                self.assertAlmostEqual(approximate.frc_expected_error(k, d, s), float(np.mean(errors)),
                                       places=12, msg=f"k={k} d={d} s={s}")

    def test_tables_and_verdicts_from_a_sweep(self):
        rows = []
        for kind in ("agc-expander", "agc-frc", "agc-bgc", "agc-graph"):
            n = 16 if kind == "agc-graph" else 24
            for decoder, scale in (("optimal", 1.0), ("one-step", 1.5)):
                for wait in (24, 20, 16):
                    s = 24 - wait
                    # The FRC optimal curve at its exact expectation; the
                    # others grow with s; one-step 1.5x optimal.
                    if kind == "agc-frc" and decoder == "optimal":
                        error = approximate.frc_expected_error(24, 3, s)
                    else:
                        error = scale * 0.1 * s * np.sqrt(n)
                    rows.append({"scheme": kind, "settings": {"scheme.decoder": f'"{decoder}"',
                                                               "scheme.wait_for": str(wait)},
                                 "mean_decode_error": error, "mean_iteration_time": 1.0 / wait})
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(tmp)
            (tmp / "runs").mkdir()
            (tmp / "runs/error-sweep.json").write_text(json.dumps({"trials": 2, "iterations": 5, "rows": rows}))
            subprocess.run([sys.executable, str(HERE / "approximate.py"), str(tmp / "runs"), str(tmp / "out")],
                           check=True, capture_output=True)
            md = (tmp / "out/approximate.md").read_text()
            self.assertTrue((tmp / "out/approximate-error.png").is_file())
            self.assertIn("| 4 |", md)
            self.assertIn("| 8 |", md)
            self.assertEqual(md.count("the error grows gracefully with the stragglers (no cliff)"), 4)
            self.assertEqual(md.count("optimal decoding's error is at most one-step's"), 4)
            self.assertNotIn("does not hold", md)
            self.assertIn("largest gap 0.0000 | holds", md)


if __name__ == "__main__":
    unittest.main(verbosity=2)
