#!/usr/bin/env python3
"""Tests of scripts/plots.py and scripts/report.sh on real traces: training
traces written through `TraceWriter` (examples/synthetic_trace; a network's,
with a test accuracy, by its `--accuracy`) and a simulation written by
`gradcode simulate --out`. The Python reader is checked
against `gradcode inspect --json`, the figures against the data they draw,
and the report end to end. Run by scripts/test-plots.sh (which builds the
binaries and the venv): GRADCODE and SYNTHETIC_TRACE name the binaries.
"""

import csv
import json
import os
import pathlib
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

import h5py
import numpy as np
from matplotlib.colors import to_hex, to_rgb
from PIL import Image

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import plots  # noqa: E402

GRADCODE = os.environ.get("GRADCODE", str(HERE.parent / "target/release/gradcode"))
SYNTHETIC = os.environ.get("SYNTHETIC_TRACE", str(HERE.parent / "target/release/examples/synthetic_trace"))

GE = """workers = 12
seed = {seed}
[scheme]
kind = "{kind}"
load = 2
clusters = 4
[straggler]
model = "gilbert-elliott"
alpha = 0.01
mu_fast = 10.0
mu_slow = 0.1
switch_probability = 0.05
initial_stragglers = 6
state_info = "imperfect"
time_unit_ms = 10
[simulate]
trials = 3
iterations = {iterations}
compare = ["gc", "gc-sc", "gc-dc"]
"""


def run(*args, **kw):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, **kw)


class PlotsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = pathlib.Path(tempfile.mkdtemp(prefix="gradcode-plots-"))
        cls.results = cls.tmp / "results" / "gradcode-train-17"
        cls.results.mkdir(parents=True)
        cls.train = {}
        for kind, seed in (("gc-dc", 1), ("gc-sc", 2)):
            cfg = cls.tmp / f"{kind}.toml"
            cfg.write_text(GE.format(kind=kind, seed=seed, iterations=120))
            out = cls.results / f"{kind}-run.h5"
            r = run(SYNTHETIC, out, cfg)
            assert r.returncode == 0, r.stderr
            cls.train[kind] = out
        # Networks' runs (a test accuracy with the test loss) beside a linear model's, in a folder of their own.
        cls.nn_results = cls.tmp / "nn-results"
        cls.nn_results.mkdir()
        cls.net = {}
        for kind, seed in (("gc-dc", 4), ("gc-sc", 5)):
            cfg = cls.tmp / f"net-{kind}.toml"
            cfg.write_text(GE.format(kind=kind, seed=seed, iterations=120))
            out = cls.nn_results / f"net-{kind}.h5"
            r = run(SYNTHETIC, out, cfg, "--accuracy")
            assert r.returncode == 0, r.stderr
            cls.net[kind] = out
        shutil.copy(cls.train["gc-sc"], cls.nn_results / "linear.h5")
        cfg = cls.tmp / "sim.toml"
        cfg.write_text(GE.format(kind="gc-sc", seed=3, iterations=80))
        cls.sim = cls.results / "sim" / "compare.h5"
        cls.sim.parent.mkdir()
        r = run(GRADCODE, "simulate", "--config", cfg, "--out", cls.sim)
        assert r.returncode == 0, r.stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def inspect(self, path):
        r = run(GRADCODE, "inspect", path, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def assert_png(self, path, min_size=(600, 300)):
        self.assertTrue(path.is_file(), path)
        with Image.open(path) as im:
            self.assertEqual(im.format, "PNG")
            self.assertGreaterEqual(im.size[0], min_size[0])
            self.assertGreaterEqual(im.size[1], min_size[1])
            # Not blank: a drawn figure has many colours.
            self.assertGreater(len(im.convert("RGB").getcolors(1 << 20) or range(1 << 20)), 20)

    def test_reader_agrees_with_inspect(self):
        for path in list(self.train.values()) + [self.sim]:
            t = plots.Trace(path)
            v = self.inspect(path)
            self.assertEqual(t.kind, v["kind"])
            self.assertEqual(t.workers, v["workers"])
            if t.kind == "train":
                pairs = [(next(iter(t.runs.values()))[0], v["summary"])]
            else:
                self.assertEqual(list(t.runs), [s["name"] for s in v["schemes"]])
                pairs = [
                    (t.runs[s["name"]][tr["trial"]], tr["summary"]) for s in v["schemes"] for tr in s["per_trial"]
                ]
            for r, s in pairs:
                self.assertEqual(r.iterations, s["iterations"])
                x, y = plots.ecdf(r.duration_s)
                self.assertTrue(np.array_equal(x, np.sort(r.duration_s)))
                self.assertEqual(y[-1], 1.0)
                self.assertAlmostEqual(np.percentile(x, 99), s["iteration_time_s"]["p99"], places=12)
                spc = r.stragglers_per_cluster()
                if s["stragglers_per_cluster"] is None:
                    self.assertIsNone(spc)
                    continue
                counts, clustered = spc
                series = [list(map(int, c)) if k else None for c, k in zip(counts, clustered)]
                self.assertEqual(series, s["stragglers_per_cluster"]["series"])
                self.assertAlmostEqual(
                    plots.even_fraction(counts, clustered), s["stragglers_per_cluster"]["even_fraction"], places=12
                )

    def test_figures_draw_the_data_with_labels(self):
        dc = plots.Trace(self.train["gc-dc"]).runs["gc-dc"][0]
        sc = plots.Trace(self.train["gc-sc"]).runs["gc-sc"][0]
        fig = plots.figure_cdf([("dc", [dc]), ("sc", [sc])])
        ax = fig.axes[0]
        self.assertIn("iteration time (", ax.get_xlabel())
        self.assertEqual(len(ax.get_legend().get_texts()), 2)
        fig = plots.figure_loss([("dc", dc), ("sc", sc)])
        ax = fig.axes[0]
        self.assertIn("wall-clock time", ax.get_xlabel())
        self.assertEqual(ax.get_ylabel(), "loss")
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        self.assertEqual(labels, ["dc: train", "dc: test", "dc: batch", "sc: train", "sc: test", "sc: batch"])
        # The last train-loss point is at the run's total time.
        line = ax.get_lines()[0]
        scale = 1.0 if "(s)" in ax.get_xlabel() else 1e3
        self.assertAlmostEqual(line.get_xdata()[-1], dc.duration_s.sum() * scale, places=6)
        fig = plots.figure_heatmap("dc", dc)
        image = fig.axes[0].get_images()[0].get_array()
        self.assertTrue(np.array_equal(np.asarray(image), dc.straggling.T.astype(int)))
        self.assertEqual(fig.axes[0].get_ylabel(), "worker")
        fig = plots.figure_clusters("dc", dc)
        image = np.asarray(fig.axes[0].get_images()[0].get_array())
        p = dc.clusters()
        self.assertEqual(p, 4)
        want = np.where(dc.straggling, dc.cluster + p, dc.cluster).T
        self.assertTrue(np.array_equal(image, want))
        counts = np.asarray(fig.axes[1].get_images()[0].get_array())
        self.assertTrue(np.array_equal(counts, dc.stragglers_per_cluster()[0].T))

    def test_loss_and_accuracy_are_drawn_against_iterations_and_wall_clock_time(self):
        net = plots.Trace(self.net["gc-dc"]).run()
        self.assertTrue(net.has_accuracy())
        fig = plots.figure_training([("net", net)])
        (loss_steps, loss_wall), (acc_steps, acc_wall) = np.reshape(fig.axes[:4], (2, 2))
        for ax in (loss_steps, acc_steps):
            self.assertEqual(ax.get_xlabel(), "iteration")
        for ax in (loss_wall, acc_wall):
            self.assertIn("wall-clock time", ax.get_xlabel())
        self.assertEqual((loss_steps.get_ylabel(), acc_steps.get_ylabel()), ("loss", "test accuracy (%)"))
        steps = np.arange(1, net.iterations + 1)
        ok = np.isfinite(net.test_accuracy)
        (line,) = acc_steps.get_lines()
        np.testing.assert_array_equal(line.get_xdata(), steps[ok])
        np.testing.assert_allclose(line.get_ydata(), 100 * net.test_accuracy[ok])
        self.assertEqual(line.get_label(), "net: test accuracy")
        # Against wall-clock time: the running sum of duration_s at each recorded iteration.
        (line,) = acc_wall.get_lines()
        scale = 1.0 if "(s)" in acc_wall.get_xlabel() else 1e3
        np.testing.assert_allclose(line.get_xdata(), np.cumsum(net.duration_s)[ok] * scale, rtol=1e-12)
        np.testing.assert_allclose(line.get_ydata(), 100 * net.test_accuracy[ok])
        train = loss_steps.get_lines()[0]
        drawn = np.asarray(train.get_xdata(), dtype=float)
        np.testing.assert_array_equal(drawn[np.isfinite(drawn)], steps[np.isfinite(net.train_loss)])
        self.assertEqual(train.get_label(), "net: train")
        # The loss against wall-clock time is the loss figure's.
        ref = plots.figure_loss([("net", net)]).axes[0]
        for a, b in zip(loss_wall.get_lines(), ref.get_lines()):
            np.testing.assert_array_equal(a.get_xdata(), b.get_xdata())
        # A linear model's run has no accuracy: nothing drawn, said so.
        lin = plots.Trace(self.train["gc-sc"]).run()
        self.assertFalse(lin.has_accuracy())
        ax = plots.figure_training([("lin", lin)]).axes[2]
        self.assertEqual(ax.get_lines(), [])
        self.assertIn("no test accuracy recorded", [t.get_text() for t in ax.texts])

    def test_the_overview_adds_the_accuracy_panels_only_when_a_trace_has_a_test_accuracy(self):
        def titles(run):
            return [ax.get_title() for ax in plots.figure_overview("x", run).axes]

        net = titles(plots.Trace(self.net["gc-sc"]).run())
        for title in ("Loss against wall-clock time", "Loss against iterations", "Test accuracy against iterations",
                      "Test accuracy against wall-clock time"):
            self.assertIn(title, net)
        # Without a test accuracy (a linear model's run), the page is the one it was: no new panel.
        lin = titles(plots.Trace(self.train["gc-sc"]).run())
        self.assertEqual(len(lin), len(net) - 3)
        self.assertIn("Loss against wall-clock time", lin)
        self.assertFalse([t for t in lin if "accuracy" in t or "against iterations" in t], lin)

    def test_the_accuracy_command_and_the_report_of_networks_runs(self):
        out = self.tmp / "acc-cmd"
        r = run(sys.executable, HERE / "plots.py", "accuracy", *self.net.values(), "-o", out / "acc.png")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_png(out / "acc.png")
        for trace in (self.train["gc-sc"], self.sim):
            r = run(sys.executable, HERE / "plots.py", "accuracy", trace, "-o", out / "x.png")
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn("no test accuracy recorded", r.stderr)
        self.assertFalse((out / "x.png").exists())
        r = run(HERE / "report.sh", self.nn_results, env=dict(os.environ, GRADCODE=GRADCODE))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rep = self.nn_results / "report"
        names = {"net-gc-dc.png", "net-gc-sc.png", "linear.png", "all-cdf.png", "all-loss.png", "all-accuracy.png"}
        self.assertEqual({p.name for p in rep.glob("*.png")}, names)
        for n in names:
            self.assert_png(rep / n)
        self.assertIn("src='all-accuracy.png'", (rep / "index.html").read_text())
        # The table's accuracy columns are inspect's; none for the linear model.
        with (rep / "compare.csv").open() as f:
            table = {row["file"]: row for row in csv.DictReader(f)}
        acc = self.inspect(self.net["gc-dc"])["summary"]["test_accuracy"]
        self.assertAlmostEqual(float(table["net-gc-dc.h5"]["best_test_accuracy"]), acc["best"], places=12)
        self.assertAlmostEqual(float(table["net-gc-dc.h5"]["final_test_accuracy"]), acc["final"], places=12)
        self.assertEqual(table["linear.h5"]["best_test_accuracy"], "")

    def test_unrecorded_stretches_are_gaps_and_long_legends_sit_outside(self):
        # Recorded at 1, 2, 3, then 10, 11: the stretch 4-9 is a gap (a NaN between 3 and 10), not a line.
        steps = np.array([0, 1, 2, 9, 10])
        xs, ys = plots.with_gaps(steps + 1, steps * 0.5, steps)
        np.testing.assert_array_equal(xs[:3], [1, 2, 3])
        self.assertTrue(np.isnan(xs[3]) and np.isnan(ys[3]))
        np.testing.assert_array_equal(xs[4:], [10, 11])
        # Evenly spaced records (every 10th iteration) are one line.
        even = np.arange(0, 100, 10)
        xs, _ = plots.with_gaps(even, even * 1.0, even)
        self.assertFalse(np.isnan(xs).any())
        # The batch loss, recorded at every step, is drawn beside the train loss.
        net = plots.Trace(self.net["gc-dc"]).run()
        fig = plots.figure_loss([("net", net)])
        labels = [line.get_label() for line in fig.axes[0].get_lines()]
        self.assertIn("net: batch", labels)
        # Seven loss curves: the legend leaves the axes (anchored right of them).
        runs = [(f"r{i}", net) for i in range(3)]
        fig = plots.figure_loss(runs)
        ax = fig.axes[0]
        self.assertGreater(len(ax.get_lines()), plots.LEGEND_INSIDE_MAX)
        box = ax.get_legend().get_bbox_to_anchor().transformed(ax.transAxes.inverted())
        self.assertGreater(box.x0, 1.0)
        fig = plots.figure_loss([("net", net)])
        self.assertLessEqual(len(fig.axes[0].get_lines()), plots.LEGEND_INSIDE_MAX)
        self.assertEqual(fig.axes[0].get_legend()._loc, 0)  # "best", inside

    def test_colours_follow_the_scheme_in_every_plot(self):
        dc = plots.Trace(self.train["gc-dc"]).run()
        sc = plots.Trace(self.train["gc-sc"]).run()
        want = {"gc-dc": plots.SCHEME_COLORS["gc-dc"], "gc-sc": plots.SCHEME_COLORS["gc-sc"]}
        # Whatever the order of the runs, and in the loss and the CDF plots alike.
        for order in ([("dc", dc), ("sc", sc)], [("sc", sc), ("dc", dc)]):
            ax = plots.figure_loss(order).axes[0]
            for line in ax.get_lines():
                kind = "gc-dc" if line.get_label().startswith("dc") else "gc-sc"
                self.assertEqual(to_hex(line.get_color()), want[kind].lower(), line.get_label())
            ax = plots.figure_cdf([(label, [r]) for label, r in order]).axes[0]
            for line in ax.get_lines():
                kind = "gc-dc" if line.get_label().startswith("dc") else "gc-sc"
                self.assertEqual(to_hex(line.get_color()), want[kind].lower(), line.get_label())
        # A simulation's schemes by their kind (gc is gc-cyclic's name in the paper figures).
        sel = plots.load_selection(str(self.sim))
        ax = plots.figure_cdf(sel).axes[0]
        colours = {line.get_label().split(":")[0]: to_hex(line.get_color()) for line in ax.get_lines()}
        self.assertEqual(colours, {k: plots.SCHEME_COLORS[k].lower() for k in ("gc", "gc-sc", "gc-dc")})
        # Two runs of one scheme in a plot: shades of its colour, told apart.
        ax = plots.figure_loss([("a", dc), ("b", dc)]).axes[0]
        a, b = (to_rgb(line.get_color()) for line in ax.get_lines()[::3])
        self.assertEqual(to_hex(a), want["gc-dc"].lower())
        self.assertNotEqual(a, b)
        self.assertTrue(np.allclose(np.array(b), 0.78 * np.array(a), atol=1e-12), "a darker shade of it")
        # Every registered scheme kind (reference.toml lists them) has its own colour.
        ref = (HERE.parent / "configs" / "reference.toml").read_text()
        kinds = next(line for line in ref.splitlines() if line.startswith("kind = \"gc-cyclic\""))
        kinds = [k.strip() for k in kinds.split("#", 1)[1].split("|")]
        self.assertEqual(len(kinds), 17, kinds)
        self.assertTrue(set(kinds) <= set(plots.SCHEME_COLORS), set(kinds) - set(plots.SCHEME_COLORS))
        self.assertEqual(len({plots.SCHEME_COLORS[k] for k in kinds}), len(kinds), "no two kinds share a colour")
        # A kind outside the table: a fixed colour of its own, the same in every call.
        self.assertEqual(plots.scheme_color("my-scheme"), plots.scheme_color("my-scheme"))
        self.assertNotIn(plots.scheme_color("my-scheme"), plots.SCHEME_COLORS.values())

    def test_legends_do_not_repeat_the_scheme(self):
        for name, scheme, want in (
            ("uncoded", "uncoded", "uncoded"),
            ("gc-dc-20261126T190312Z", "gc-dc", "gc-dc-20261126T190312Z"),
            ("gc-dc-20261126T190312Z-2", "gc-dc", "gc-dc-20261126T190312Z-2"),
            ("gc-dc-run", "gc-dc", "gc-dc-run (gc-dc)"),
            ("gc-dc-20261126T190312Z", "gc", "gc-dc-20261126T190312Z (gc)"),
            ("run", "gc-sc", "run (gc-sc)"),
        ):
            self.assertEqual(plots.run_name(name, scheme), want)
        cfg = self.tmp / "uncoded.toml"
        cfg.write_text(GE.format(kind="uncoded", seed=7, iterations=30))
        path = self.tmp / "legend" / "uncoded.h5"
        path.parent.mkdir(exist_ok=True)
        r = run(SYNTHETIC, path, cfg)
        self.assertEqual(r.returncode, 0, r.stderr)
        (label, runs), = plots.load_selection(str(path))
        self.assertEqual(label, "uncoded")
        ax = plots.figure_loss([(label, runs[0])]).axes[0]
        self.assertEqual([t.get_text() for t in ax.get_legend().get_texts()], ["uncoded: train", "uncoded: test",
                                                                           "uncoded: batch"])
        self.assertEqual(to_hex(ax.get_lines()[0].get_color()), plots.SCHEME_COLORS["uncoded"].lower())

    def test_wall_clock_axes_are_the_elapsed_time_or_say_they_are_not(self):
        dc = plots.Trace(self.train["gc-dc"]).run()
        self.assertTrue(dc.has_elapsed())
        ax = plots.figure_loss([("dc", dc)]).axes[0]
        scale = 1.0 if "(s)" in ax.get_xlabel() else 1e3
        ok = np.isfinite(dc.train_loss)
        np.testing.assert_allclose(ax.get_lines()[0].get_xdata(), dc.elapsed_s[ok] * scale, rtol=1e-12)
        self.assertNotIn("no elapsed_s", ax.get_xlabel())
        old = self.tmp / "legend" / "old.h5"
        old.parent.mkdir(exist_ok=True)
        shutil.copy(self.train["gc-dc"], old)
        with h5py.File(old, "r+") as f:
            del f["iteration/elapsed_s"]
        run_ = plots.Trace(old).run()
        self.assertFalse(run_.has_elapsed())
        ax = plots.figure_loss([("old", run_)]).axes[0]
        self.assertIn("old: sum of iteration times (no elapsed_s recorded)", ax.get_xlabel())
        np.testing.assert_allclose(ax.get_lines()[0].get_xdata(), np.cumsum(run_.duration_s)[ok] * scale, rtol=1e-12)

    def test_commands_write_pngs_and_reject_bad_input(self):
        out = self.tmp / "cmd"
        r = run(
            sys.executable, HERE / "plots.py", "cdf", self.train["gc-dc"], f"{self.sim}:gc-dc", self.sim, "-o", out / "cdf.png"
        )
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_png(out / "cdf.png")
        for cmd in ("heatmap", "clusters", "overview"):
            r = run(sys.executable, HERE / "plots.py", cmd, f"{self.sim}:gc-dc:2", "-o", out / f"{cmd}.png")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assert_png(out / f"{cmd}.png")
        r = run(sys.executable, HERE / "plots.py", "loss", *self.train.values(), "-o", out / "loss.png")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_png(out / "loss.png")
        for args, needle in (
            (["loss", self.sim], "no loss recorded"),
            (["heatmap", self.tmp / "missing.h5"], "missing.h5: no such file"),
            (["heatmap", f"{self.sim}:nope"], "no scheme nope"),
            (["heatmap", f"{self.sim}:gc:9"], "no trial 9"),
            (["cdf", self.tmp / "gc-dc.toml"], "not a readable HDF5 file"),
        ):
            r = run(sys.executable, HERE / "plots.py", *args, "-o", out / "x.png")
            self.assertEqual(r.returncode, 2, f"{args}: {r.stderr}")
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn(needle, r.stderr)
        self.assertFalse((out / "x.png").exists())

    def test_out_is_refused_unless_an_image_path_that_is_no_input(self):
        # Issue 38: `-o x.h5` ended in a traceback and `-o FIFO` printed a path it did not write (FIFO.png). -o is
        # refused, one line, exit 2, before anything is read or written: a FIFO, a folder, a device, an extension
        # that is no image format, one of the input traces (under any name).
        out = self.tmp / "bad-out"
        out.mkdir()
        fifo, fifo_png = out / "pipe", out / "pipe.png"
        os.mkfifo(fifo)
        os.mkfifo(fifo_png)
        as_png = out / "trace.png"  # a trace named like an image: the input rule, not the extension's
        shutil.copy(self.train["gc-sc"], as_png)
        os.symlink(as_png, out / "link.png")
        trace = self.train["gc-dc"]
        before = {p: p.read_bytes() for p in (trace, as_png)}
        for args, needle in (
            (["cdf", trace, "-o", out / "x.h5"], ".h5 is not an image format matplotlib writes (avif, eps, "),
            (["cdf", trace, "-o", out / "x"], "it has no extension"),
            (["cdf", trace, "-o", fifo], "is a FIFO (named pipe)"),
            (["heatmap", trace, "-o", fifo_png], "is a FIFO (named pipe)"),
            (["loss", trace, "-o", "/dev/null"], "is a character device"),
            (["overview", trace, "-o", out], "is a folder"),
            (["cdf", trace, "-o", trace], "is this command's trace"),
            (["overview", as_png, "-o", as_png], "is this command's trace"),
            (["loss", trace, as_png, "-o", out / "link.png"], "is this command's trace"),
            (["cdf", trace, "-o", trace / "x.png"], "is not a folder"),
            (["report", self.results, "-o", trace], "is not a folder"),
        ):
            r = run(sys.executable, HERE / "plots.py", *args, timeout=60)
            self.assertEqual(r.returncode, 2, f"{args}: {r.stderr}")
            self.assertNotIn("Traceback", r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertTrue(r.stderr.startswith("error: -o: "), r.stderr)
            self.assertIn(needle, r.stderr)
            self.assertEqual(r.stdout, "", args)
        self.assertEqual({p: p.read_bytes() for p in before}, before)
        self.assertEqual(sorted(p.name for p in out.iterdir()), ["link.png", "pipe", "pipe.png", "trace.png"])
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))
        # Another image format by its extension: the path printed is the file written.
        r = run(sys.executable, HERE / "plots.py", "cdf", trace, "-o", out / "cdf.pdf")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), str(out / "cdf.pdf"))
        self.assertEqual((out / "cdf.pdf").read_bytes()[:5], b"%PDF-")

    def test_report_renders_every_trace_of_a_results_folder(self):
        env = dict(os.environ, GRADCODE=GRADCODE)
        r = run(HERE / "report.sh", self.tmp / "results", env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rep = self.tmp / "results" / "report"
        names = {
            "gradcode-train-17-gc-dc-run.png",
            "gradcode-train-17-gc-sc-run.png",
            "gradcode-train-17-sim-compare-cdf.png",
            "gradcode-train-17-sim-compare-gc.png",
            "gradcode-train-17-sim-compare-gc-sc.png",
            "gradcode-train-17-sim-compare-gc-dc.png",
            "all-cdf.png",
            "all-loss.png",
        }
        self.assertEqual({p.name for p in rep.glob("*.png")}, names)
        for n in names:
            self.assert_png(rep / n)
        index = (rep / "index.html").read_text()
        for n in names:
            self.assertIn(f"src='{n}'", index)
        for h5 in ("gc-dc-run.h5", "gc-sc-run.h5", "compare.h5"):
            self.assertIn(h5, index)
            self.assertIn(h5, (rep / "index.md").read_text())
        summary = (rep / "gradcode-train-17-gc-dc-run.inspect.txt").read_text()
        self.assertIn("training trace", summary)
        # The index's even spread is inspect's.
        v = self.inspect(self.train["gc-dc"])
        self.assertIn(f"{100 * v['summary']['stragglers_per_cluster']['even_fraction']:.1f}%", index)
        # One table over every run leads the index: a row per training run and per simulated scheme.
        table = (rep / "compare.csv").read_text().splitlines()
        self.assertEqual(len(table), 1 + 2 + 3)
        self.assertIn("## Every run", (rep / "index.md").read_text())
        self.assertIn("<table id='compare'>", index)
        # A sweep run (run.txt beside its trace) is titled by its run line.
        (self.results / "run.txt").write_text("configs/x.toml --set scheme.kind=gc-dc\n")
        try:
            r = run(HERE / "report.sh", self.tmp / "results", env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            index = (rep / "index.html").read_text()
            self.assertIn("<h2>configs/x.toml --set scheme.kind=gc-dc (gradcode-train-17/gc-dc-run.h5)</h2>", index)
            self.assertIn("<td>configs/x.toml --set scheme.kind=gc-dc</td>", index)
        finally:
            (self.results / "run.txt").unlink()
        # A second run replaces the report and does not read its own output.
        r = run(HERE / "report.sh", self.tmp / "results", env=env)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_report_lists_unreadable_files_and_fails(self):
        bad = self.tmp / "bad-results"
        bad.mkdir()
        shutil.copy(self.train["gc-sc"], bad / "ok.h5")
        (bad / "broken.h5").write_text("not hdf5\n")
        r = run(HERE / "report.sh", bad, bad / "out")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        index = (bad / "out" / "index.md").read_text()
        self.assertIn("broken.h5", index)
        self.assertIn("Not rendered", index)
        self.assert_png(bad / "out" / "ok.png")


if __name__ == "__main__":
    unittest.main(verbosity=2)
