#!/usr/bin/env python3
"""Tests of the gradcode_traces package on traces the binary writes: a real
training run under mpirun (`gradcode train --out`), synthetic training traces
(examples/synthetic_trace, written through TraceWriter; one with a
classifier's test accuracy, `--accuracy`, and a copy of another without the
dataset, as an older gradcode wrote it) and a simulation (`gradcode simulate
--out`). Every DataFrame, Dataset and summary value is checked against
`gradcode inspect --json`. Run by scripts/test-plots.sh: GRADCODE and
SYNTHETIC_TRACE name the binaries.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import tomllib
import unittest

import h5py
import numpy as np
import pandas as pd

import gradcode_traces as gt

ROOT = pathlib.Path(__file__).resolve().parents[2]
GRADCODE = os.environ.get("GRADCODE", str(ROOT / "target/release/gradcode"))
SYNTHETIC = os.environ.get("SYNTHETIC_TRACE", str(ROOT / "target/release/examples/synthetic_trace"))

GE = """workers = 8
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
initial_stragglers = 3
state_info = "imperfect"
time_unit_ms = 10
[simulate]
trials = 3
iterations = {iterations}
compare = ["gc", "gc-sc", {{ name = "dc-r4", kind = "gc-dc", set = {{ load = 4, clusters = 2 }} }}]
"""


def run(*args, **kw):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, **kw)


def inspect(path):
    r = run(GRADCODE, "inspect", path, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


class TracesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = pathlib.Path(tempfile.mkdtemp(prefix="gradcode-traces-"))
        # A sweep's results folder, as jobs/sweep.sbatch leaves it: <task>/{run.txt, trace.h5, summary.json}.
        cls.results = cls.tmp / "results" / "gradcode-sweep-7"
        cls.lines = {}
        for task, (kind, seed) in enumerate((("gc-dc", 1), ("gc-sc", 2))):
            d = cls.results / str(task)
            d.mkdir(parents=True)
            (d / "config.toml").write_text(GE.format(kind=kind, seed=seed, iterations=60))
            r = run(SYNTHETIC, d / "trace.h5", d / "config.toml")
            assert r.returncode == 0, r.stderr
            cls.lines[task] = f"configs/x.toml --set scheme.kind={kind} --set seed={seed}"
            (d / "run.txt").write_text(cls.lines[task] + "\n")
            (d / "summary.json").write_text('{"status": "completed"}\n')
        # A sweep run that failed before writing a trace.
        (cls.results / "2").mkdir()
        (cls.results / "2" / "run.txt").write_text("configs/bad.toml --set workers=0\n")
        (cls.results / "2" / "summary.json").write_text('{"status": "failed", "error": "workers must be positive"}\n')
        cls.train = cls.results / "0" / "trace.h5"
        cfg = cls.tmp / "sim.toml"
        cfg.write_text(GE.format(kind="gc-sc", seed=3, iterations=50))
        cls.sim = cls.results / "sim.h5"
        r = run(GRADCODE, "simulate", "--config", cfg, "--out", cls.sim)
        assert r.returncode == 0, r.stderr
        # A network's run (a test accuracy with the test loss), a linear model's (NaN accuracy),
        # and that one as a gradcode before /iteration/test_accuracy wrote it (no dataset).
        cls.accuracy_results = cls.tmp / "accuracy-results"
        cls.accuracy_results.mkdir()
        cls.net = cls.accuracy_results / "net.h5"
        r = run(SYNTHETIC, cls.net, cls.results / "0" / "config.toml", "--accuracy")
        assert r.returncode == 0, r.stderr
        cls.linear = cls.accuracy_results / "linear.h5"
        shutil.copy(cls.train, cls.linear)
        cls.old = cls.tmp / "old.h5"
        shutil.copy(cls.train, cls.old)
        with h5py.File(cls.old, "r+") as f:
            del f["iteration/test_accuracy"]
        # Two schemes, two seeds each (`gradcode compare` groups and pairs them), and one of them as a
        # gradcode before /iteration/elapsed_s wrote it.
        cls.cmp = []
        for kind in ("uncoded", "gc-dc"):
            for seed in (1, 2):
                cfg = cls.tmp / f"cmp-{kind}-{seed}.toml"
                cfg.write_text(GE.format(kind=kind, seed=seed, iterations=40))
                path = cls.tmp / f"cmp-{kind}-{seed}.h5"
                r = run(SYNTHETIC, path, cfg)
                assert r.returncode == 0, r.stderr
                cls.cmp.append(path)
        cls.no_elapsed = cls.tmp / "no-elapsed.h5"
        shutil.copy(cls.cmp[0], cls.no_elapsed)
        with h5py.File(cls.no_elapsed, "r+") as f:
            del f["iteration/elapsed_s"]
        # A trace older than /worker/{message_bytes, compute_s, received_s}.
        cls.old_network = cls.tmp / "old-network.h5"
        shutil.copy(cls.train, cls.old_network)
        with h5py.File(cls.old_network, "r+") as f:
            for name in ("message_bytes", "compute_s", "received_s"):
                del f[f"worker/{name}"]
        # A real training run: /timing/, /model/theta and the provenance of the MPI runtime.
        cls.mpi = cls.tmp / "mpi.h5"
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        r = run(
            "mpirun", "--oversubscribe", "-n", "5", GRADCODE, "train", "--config", "configs/demo.toml", "--quiet",
            "--out", cls.mpi, "--set", "workers=4", "--set", "scheme.clusters=2", "--set", "train.iterations=12",
            "--set", "straggler.time_unit_ms=2", "--set", "data.train_samples=200", "--set", "data.features=20",
            cwd=ROOT, env=env,
        )
        assert r.returncode == 0, r.stdout + r.stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def assert_close(self, a, b, msg=None):
        if b is None:
            self.assertIsNone(a, msg)
            return
        self.assertIsNotNone(a, msg)
        self.assertTrue(np.isclose(a, b, rtol=1e-12, atol=1e-15), f"{msg}: {a} != {b}")

    def check_summary(self, s, want, where):
        """A gradcode_traces summary, and frame/Dataset statistics, against inspect's."""
        for key in ("iterations",):
            self.assertEqual(s[key], want[key], where)
        self.assert_close(s["total_time_s"], want["total_time_s"], where)
        self.assert_close(s["elapsed_s"], want["elapsed_s"], f"{where}: elapsed_s")
        for block in ("iteration_time_s", "decode_time_s", "recovered_fraction", "train_loss", "test_loss",
                      "test_accuracy"):
            if want[block] is None:
                self.assertIsNone(s[block], f"{where}: {block}")
                continue
            for k, v in want[block].items():
                self.assert_close(s[block][k], v, f"{where}: {block}.{k}")
        for key in ("messages_received_per_iteration", "messages_used_per_iteration",
                    "workers_received_per_iteration", "workers_used_per_iteration"):
            self.assert_close(s[key], want[key], f"{where}: {key}")
        self.assert_close(s["stragglers_mean_per_iteration"], want["stragglers"]["mean_per_iteration"], where)

    def test_theta_is_named_by_the_model_layout(self):
        t = gt.open_trace(self.mpi)
        # A linear model: one tensor, every parameter.
        self.assertEqual(t.layout, [{"name": "weights", "shape": [len(t.theta)], "offset": 0}])
        named = t.named_theta()
        self.assertEqual(list(named), ["weights"])
        np.testing.assert_array_equal(named["weights"], t.theta)
        # A layout of several tensors cuts theta in order; one that does not cover it is refused.
        d = len(t.theta)
        edited = self.tmp / "layout.h5"
        shutil.copy(self.mpi, edited)
        layouts = {
            "fits": [{"name": "w", "shape": [2, (d - 1) // 2], "offset": 0},
                     {"name": "b", "shape": [d - 2 * ((d - 1) // 2)], "offset": 2 * ((d - 1) // 2)}],
            "short": [{"name": "w", "shape": [d - 1], "offset": 0}],
            "gap": [{"name": "w", "shape": [1], "offset": 1}],
        }
        for name, layout in layouts.items():
            with h5py.File(edited, "r+") as f:
                f.attrs["model_layout"] = json.dumps(layout)
            e = gt.open_trace(edited)
            if name == "fits":
                n = e.named_theta()
                self.assertEqual([a.shape for a in n.values()], [(2, (d - 1) // 2), (d - 2 * ((d - 1) // 2),)])
                np.testing.assert_array_equal(np.concatenate([a.ravel() for a in n.values()]), t.theta)
            else:
                with self.assertRaises(gt.TraceError, msg=name):
                    e.named_theta()

    def test_training_trace_as_frames_and_dataset_equals_inspect(self):
        for path in (self.train, self.mpi):
            t = gt.open_trace(path)
            v = inspect(path)
            s = v["summary"]
            self.assertEqual((t.kind, t.workers, t.seed, t.scheme), ("train", v["workers"], v["seed"], v["scheme"]))
            self.assertEqual((t.status, t.status_reason), (v["status"], v["status_reason"]))
            self.assertEqual(t.gradcode_version, v["gradcode_version"])
            # The resolved config, parsed: the same TOML as the root attribute, with inspect's K and scheme.
            with h5py.File(path) as f:
                self.assertEqual(t.config, tomllib.loads(f.attrs["config_toml"]))
            self.assertEqual((t.config["workers"], t.config["scheme"]["kind"]), (v["workers"], v["scheme"]))
            prov = dict(t.provenance)
            if "resumed" in prov:
                prov["resumed"] = "\n".join(prov["resumed"])
            self.assertEqual(prov, {k: x for k, x in v["provenance"].items()})
            self.assertIn("git_commit", t.provenance)
            self.assertIsInstance(t.provenance["started_at"], str)

            df = t.iterations()
            self.assertEqual(df.index.name, "iteration")
            self.assertEqual(list(df.index), list(range(1, s["iterations"] + 1)))
            d = df["duration_s"]
            self.assert_close(d.mean(), s["iteration_time_s"]["mean"], "mean")
            self.assert_close(d.median(), s["iteration_time_s"]["p50"], "p50")
            self.assert_close(d.quantile(0.99), s["iteration_time_s"]["p99"], "p99")
            self.assert_close(df["recovered_fraction"].mean(), s["recovered_fraction"]["mean"], "recovered")
            self.assert_close(df["messages_received"].mean(), s["messages_received_per_iteration"], "messages")
            tl = df["train_loss"].dropna()
            self.assertEqual(len(tl), s["train_loss"]["evaluated"])
            self.assertEqual((tl.index[-1], tl.iloc[-1]), (s["train_loss"]["final_iteration"], s["train_loss"]["final"]))
            self.assertEqual((tl.idxmin(), tl.min()), (s["train_loss"]["min_iteration"], s["train_loss"]["min"]))

            w = t.workers_frame()
            self.assertEqual(w.index.names, ["iteration", "worker"])
            self.assertEqual(len(w), s["iterations"] * t.workers)
            self.assertEqual(w["straggling"].dtype, bool)
            share = w["straggling"].groupby(level="worker").mean()
            self.assertEqual(list(share.index), list(range(1, t.workers + 1)))
            np.testing.assert_allclose(share.to_numpy(), s["stragglers"]["per_worker_fraction"], rtol=1e-12)
            received = w["finish_s"].notna().groupby(level="iteration").sum().mean()
            self.assert_close(received, s["workers_received_per_iteration"], "workers received")

            ds = t.to_xarray()
            self.assertEqual((ds.sizes["iteration"], ds.sizes["worker"]), (s["iterations"], t.workers))
            self.assertEqual(ds["finish_s"].dims, ("iteration", "worker"))
            self.assertEqual(ds["iteration"].values[0], 1)
            self.assertEqual(ds["worker"].values[-1], t.workers)
            np.testing.assert_array_equal(ds["duration_s"].values, d.to_numpy())
            np.testing.assert_allclose(ds["straggling"].mean("iteration").values,
                                       s["stragglers"]["per_worker_fraction"], rtol=1e-12)
            self.assertEqual(ds["duration_s"].attrs["unit"], "s")
            self.assertEqual(ds.attrs["status"], v["status"])
            # Worker 1 is column 0 of the file.
            with h5py.File(path) as f:
                np.testing.assert_array_equal(ds["cluster"].sel(worker=1).values, f["worker/cluster"][:, 0])
            self.check_summary(gt.summarize(t.run()), s, str(path))
            spc = t.run().stragglers_per_cluster()
            if spc is not None:
                self.assert_close(gt.even_fraction(*spc), s["stragglers_per_cluster"]["even_fraction"], "even")

    def test_test_accuracy_is_read_like_test_loss_and_none_when_absent(self):
        t = gt.open_trace(self.net)
        r = t.run()
        v = inspect(self.net)
        with h5py.File(self.net) as f:
            np.testing.assert_array_equal(r.test_accuracy, f["iteration/test_accuracy"][...])
        acc = r.test_accuracy
        self.assertTrue(r.has_accuracy())
        # Recorded with the test loss, NaN between.
        np.testing.assert_array_equal(np.isfinite(acc), np.isfinite(r.test_loss))
        self.assertTrue(((acc[np.isfinite(acc)] > 0) & (acc[np.isfinite(acc)] < 1)).all())
        df = t.iterations()
        np.testing.assert_array_equal(df["test_accuracy"].to_numpy(), acc)
        self.assertEqual(t.to_xarray()["test_accuracy"].attrs["unit"], "1")
        s = gt.summarize(r)
        self.assertIsNotNone(v["summary"]["test_accuracy"])
        self.assertEqual(s["test_accuracy"], v["summary"]["test_accuracy"])
        self.check_summary(s, v["summary"], "net")
        ok = df["test_accuracy"].dropna()
        self.assertEqual((ok.idxmax(), ok.max()), (s["test_accuracy"]["best_iteration"], s["test_accuracy"]["best"]))
        self.assertEqual((ok.index[-1], ok.iloc[-1]), (s["test_accuracy"]["final_iteration"], s["test_accuracy"]["final"]))
        self.assertNotEqual(s["test_accuracy"]["best_iteration"], s["test_accuracy"]["final_iteration"],
                            "the made-up accuracy wiggles: best and final differ, so both are checked")
        # Pooled (a list of runs), as inspect pools a simulation's trials: none.
        self.assertIsNone(gt.summarize([r, r])["test_accuracy"])
        # A linear model's run: the dataset, all NaN. A trace older than the dataset: None.
        lin = gt.open_trace(self.linear).run()
        self.assertTrue(np.isnan(lin.test_accuracy).all())
        old = gt.open_trace(self.old)
        self.assertIsNone(old.run().test_accuracy)
        self.assertNotIn("test_accuracy", old.iterations().columns)
        for path, run_ in ((self.linear, lin), (self.old, old.run())):
            self.assertFalse(run_.has_accuracy())
            self.assertIsNone(gt.summarize(run_)["test_accuracy"])
            self.assertIsNone(inspect(path)["summary"]["test_accuracy"])
            self.check_summary(gt.summarize(run_), inspect(path)["summary"], str(path))

    def test_reach_is_inspects_target_loss_and_target_accuracy(self):
        r = gt.open_trace(self.net).run()
        acc = r.test_accuracy[np.isfinite(r.test_accuracy)]
        loss = r.train_loss[np.isfinite(r.train_loss)]
        cases = [("--target-loss", {"loss": x}) for x in (float(np.median(loss)), float(loss.min()), -1.0)]
        cases += [("--target-accuracy", {"accuracy": a}) for a in (float(np.median(acc)), float(acc.max()), 1.0)]
        reached = 0
        for flag, kw in cases:
            target = next(iter(kw.values()))
            out = run(GRADCODE, "inspect", self.net, "--json", f"{flag}={target!r}")
            self.assertEqual(out.returncode, 0, out.stderr)
            key = "target_loss" if "loss" in kw else "target_accuracy"
            want = json.loads(out.stdout)["summary"][key]
            got = gt.reach(r, **kw)
            self.assertEqual({k: v for k, v in got.items() if k != "time_s"}, {k: v for k, v in want.items() if k != "time_s"},
                             f"{flag} {target}")
            self.assert_close(got["time_s"], want["time_s"], f"{flag} {target}")
            reached += got["reached"]
        self.assertEqual(reached, 4, "the medians and the least loss / best accuracy are reached, -1 and 1 not")
        # Nothing recorded: not reached, evaluated 0, as inspect says.
        got = gt.reach(gt.open_trace(self.old).run(), accuracy=0.5)
        self.assertEqual((got["reached"], got["evaluated"], got["iteration"]), (False, 0, None))
        with self.assertRaises(ValueError):
            gt.reach(r)
        # Issue 38: a target outside its domain is refused, naming the argument and the rule, as inspect refuses
        # it (accuracy=-1 was "reached at iteration 1").
        for kw, rule in (({"accuracy": -1}, r"accuracy = -1 must be in \(0, 1\]"),
                         ({"accuracy": 1.5}, r"accuracy = 1.5 must be in \(0, 1\]"),
                         ({"accuracy": 0}, r"accuracy = 0 must be in \(0, 1\]"),
                         ({"accuracy": float("nan")}, r"accuracy = nan must be in \(0, 1\]"),
                         ({"loss": float("nan")}, "loss = nan must be a finite number"),
                         ({"loss": float("inf")}, "loss = inf must be a finite number")):
            with self.assertRaisesRegex(ValueError, rule):
                gt.reach(r, **kw)
            (name, value), = kw.items()
            out = run(GRADCODE, "inspect", self.net, f"--target-{name}={value}")
            self.assertEqual(out.returncode, 2, f"{kw}: inspect refuses it too: {out.stderr}")

    def test_a_real_run_records_its_message_bytes_compute_and_receive_times(self):
        # Issue 26, item 2: per worker the bytes of the results the master received, as the protocol
        # sends them (a header of 8 values and a loss per computation, gc-sc load 2; a vector of d + 1).
        r = gt.open_trace(self.mpi).run()
        with h5py.File(self.mpi) as f:
            d = f["model/theta"].shape[0]
        got = np.isfinite(r.finish_s)
        self.assertTrue(got.any())
        np.testing.assert_array_equal(r.message_bytes[got], 8 * (8 + 2 + d + 1))
        self.assertTrue(np.isnan(r.message_bytes[~got]).all())
        self.assertTrue((r.compute_s[got] > 0).all())
        self.assertTrue(np.isnan(r.compute_s[~got]).all())
        # The vector's last byte comes after the header.
        self.assertTrue((r.received_s[got] >= r.finish_s[got]).all())
        self.assertEqual(r.units["message_bytes"], "bytes")
        # A simulation records none of them; a trace older than them has none (None).
        for run_ in gt.open_trace(self.sim)._all():
            for name in ("message_bytes", "compute_s", "received_s"):
                self.assertTrue(np.isnan(getattr(run_, name)).all(), name)
        self.assertIsNone(gt.open_trace(self.old_network).run().message_bytes)

    def test_elapsed_time_is_read_and_wall_s_falls_back_to_iteration_times(self):
        r = gt.open_trace(self.mpi).run()
        with h5py.File(self.mpi) as f:
            np.testing.assert_array_equal(r.elapsed_s, f["iteration/elapsed_s"][...])
        self.assertTrue(r.has_elapsed())
        np.testing.assert_array_equal(r.wall_s(), r.elapsed_s)
        self.assertTrue((np.diff(r.elapsed_s) > 0).all())
        self.assertTrue((r.elapsed_s >= np.cumsum(r.duration_s)).all(), "waits and evaluation included")
        old = gt.open_trace(self.no_elapsed).run()
        self.assertIsNone(old.elapsed_s)
        self.assertFalse(old.has_elapsed())
        np.testing.assert_allclose(old.wall_s(), np.cumsum(old.duration_s), rtol=1e-12)
        self.assertIsNone(gt.summarize(old)["elapsed_s"])
        self.assertIsNone(inspect(self.no_elapsed)["summary"]["elapsed_s"])

    def check_compare(self, df, want, where):
        """gt.compare_traces's table against `gradcode compare --json`."""
        self.assertEqual(list(df.columns), gt.speedup.COLUMNS)
        self.assertEqual(df.attrs["baseline"], want["baseline"], where)
        self.assertEqual(df.attrs["time_basis"], want["time_basis"], where)
        self.assertEqual(df.attrs["time_basis_reason"], want["time_basis_reason"], where)
        self.assertEqual(len(df), len(want["rows"]), where)
        try:
            import scipy  # noqa: F401
            intervals = True
        except ImportError:
            intervals = False
        for (_, got), row in zip(df.iterrows(), want["rows"]):
            at = f"{where}: {row['label']}"
            self.assertEqual((got["label"], got["scheme"], bool(got["baseline"]), got["runs"]),
                             (row["label"], row["scheme"], row["baseline"], len(row["runs"])), at)
            self.assertEqual(got["files"], ";".join(r["file"] for r in row["runs"]), at)
            for key in ("iterations", "mean_s", "p50_s", "p99_s", "elapsed_s"):
                self.assert_close(None if pd.isna(got[key]) else got[key], row[key], f"{at}: {key}")
            sp = row["speedup"]
            self.assert_close(got["speedup"], sp["value"], f"{at}: speedup")
            if sp["ci95"] is None or not intervals:
                self.assertTrue(pd.isna(got["speedup_low"]) and pd.isna(got["speedup_high"]), at)
            else:
                self.assertTrue(np.isclose(got["speedup_low"], sp["ci95"][0], rtol=1e-9), at)
                self.assertTrue(np.isclose(got["speedup_high"], sp["ci95"][1], rtol=1e-9), at)
            t = row.get("target_loss")
            if t is None:
                self.assertTrue(pd.isna(got["target_loss"]), at)
                continue
            self.assertEqual(got["loss_reached"], t["reached"], at)
            for key, col in (("iterations", "loss_iteration"), ("time_s", "loss_time_s")):
                self.assert_close(None if pd.isna(got[col]) else got[col], t[key], f"{at}: {col}")
            self.assert_close(None if pd.isna(got["loss_speedup"]) else got["loss_speedup"],
                              None if t["speedup"] is None else t["speedup"]["value"], f"{at}: loss_speedup")

    def test_compare_traces_is_gradcode_compare(self):
        loss = gt.open_trace(self.cmp[0]).run().train_loss
        target = float(np.median(loss[np.isfinite(loss)]))
        files = [str(p) for p in self.cmp]
        cases = [
            ("two seeds per scheme", files, {}),
            ("with a target loss", files[2:] + files[:2], {"target_loss": target}),
            ("gc-dc's seed 1 as the baseline", files, {"baseline": files[2]}),
            ("unpaired", files[:3], {"target_loss": target}),
            ("a trace without elapsed_s", [str(self.no_elapsed)] + files[2:], {"target_loss": target}),
            ("a simulation", [str(self.sim)], {}),
        ]
        for where, paths, kw in cases:
            args = [GRADCODE, "compare", "--json", *paths]
            if "target_loss" in kw:
                args.append(f"--target-loss={kw['target_loss']!r}")
            if "baseline" in kw:
                args += ["--baseline", kw["baseline"]]
            out = run(*args)
            self.assertEqual(out.returncode, 0, f"{where}: {out.stderr}")
            want = json.loads(out.stdout)
            df = gt.compare_traces(paths, **kw)
            self.check_compare(df, want, where)
        # Grouped and paired: the gc-dc row pairs seeds 1 and 2 with uncoded's.
        want = json.loads(run(GRADCODE, "compare", "--json", *files).stdout)
        self.assertEqual([len(r["runs"]) for r in want["rows"]], [2, 2])
        self.assertEqual(want["rows"][1]["speedup"]["method"], "paired geometric mean")
        # The CSV of the binary is the same table.
        out_csv = self.tmp / "compare.csv"
        r = run(GRADCODE, "compare", *files, f"--target-loss={target!r}", "--csv", out_csv)
        self.assertEqual(r.returncode, 0, r.stderr)
        csv = pd.read_csv(out_csv, keep_default_na=True)
        df = gt.compare_traces(files, target_loss=target)
        self.assertEqual(list(csv.columns), list(df.columns))
        for col in ("label", "scheme", "files", "runs", "loss_reached"):
            self.assertEqual(list(csv[col]), list(df[col]), col)
        for col in ("mean_s", "p50_s", "p99_s", "elapsed_s", "speedup", "loss_time_s", "loss_speedup"):
            np.testing.assert_allclose(csv[col].to_numpy(dtype=float), df[col].to_numpy(dtype=float), rtol=1e-12,
                                       err_msg=col)
        # The decode error, pooled alike (0 to rounding for these exact schemes).
        np.testing.assert_allclose(csv["mean_decode_error"].to_numpy(dtype=float),
                                   df["mean_decode_error"].to_numpy(dtype=float), rtol=1e-12, atol=1e-15)
        # Bad input: errors naming the file.
        with self.assertRaisesRegex(gt.TraceError, "simulation trace"):
            gt.compare_traces([files[0], str(self.sim)])
        with self.assertRaisesRegex(ValueError, "names neither a trace nor a row"):
            gt.compare_traces(files, baseline="gc")

    def test_one_file_under_several_names_is_one_run(self):
        # Issue 38: a hard link, a symbolic link or the same path twice is one run, counted once
        # (the same device and inode), and stderr says which names were the same file.
        d = self.tmp / "same-file"
        d.mkdir()
        a = d / "a.h5"
        shutil.copy(self.cmp[0], a)
        os.link(a, d / "b-hard.h5")
        os.symlink("a.h5", d / "c-sym.h5")
        shutil.copy(self.cmp[2], d / "d-other.h5")  # gc-dc: a row of its own beside uncoded's
        table = gt.compare(d)
        self.assertEqual(list(table["file"]), ["a.h5", "d-other.h5"])
        r = run(sys.executable, "-m", "gradcode_traces", "compare", d)
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = [line for line in r.stdout.splitlines() if line.startswith("| ")][1:]
        self.assertEqual(len(rows), 2, r.stdout)
        self.assertNotIn("b-hard.h5", r.stdout)
        self.assertNotIn("c-sym.h5", r.stdout)
        same = [line for line in r.stderr.splitlines() if line.startswith("same file: ")]
        self.assertEqual(len(same), 2, r.stderr)
        self.assertIn("b-hard.h5 is", same[0])
        self.assertIn("c-sym.h5 is", same[1])
        self.assertTrue(all(str(a) in line and "counted once" in line for line in same), r.stderr)
        # compare_traces: one run in the row, the repeat named in a TraceWarning.
        for twice in (a, d / "b-hard.h5", d / "c-sym.h5"):
            with self.assertWarns(gt.TraceWarning) as w:
                df = gt.compare_traces([a, twice, d / "d-other.h5"])
            self.assertEqual(list(df["runs"]), [1, 1], twice)
            self.assertEqual(list(df["files"]), [str(a), str(d / "d-other.h5")], twice)
            self.assertIn(f"{twice}: is the same file as {a}", str(w.warning))
        # A baseline given as another name of one of the traces is that trace, not one more run.
        os.link(d / "d-other.h5", self.tmp / "other-hard.h5")
        df = gt.compare_traces([a, d / "d-other.h5"], baseline=self.tmp / "other-hard.h5")
        self.assertEqual(list(df["runs"]), [1, 1])
        self.assertEqual(list(df["baseline"]), [False, True])

    def test_compare_command_never_writes_its_csv_over_a_trace(self):
        # Issue 38: `compare DIR --csv DIR/base.h5` wrote the CSV over the trace. Refused, exit 2, one line naming
        # --csv, nothing created or changed: an input (under any name), any HDF5 file, a FIFO, a folder.
        d = self.tmp / "csv-out"
        d.mkdir()
        base = d / "base.h5"
        shutil.copy(self.cmp[0], base)
        os.link(base, d / "hard.h5")
        os.symlink("base.h5", d / "sym.h5")
        (d / "run.txt").write_text("configs/x.toml --set seed=1\n")
        elsewhere = self.tmp / "csv-out-trace.h5"
        shutil.copy(self.cmp[1], elsewhere)
        fifo = self.tmp / "csv-out.fifo"
        os.mkfifo(fifo)
        before = {p: p.read_bytes() for p in (base, elsewhere, d / "run.txt")}
        listing = sorted(os.listdir(d))
        for out, needle in ((base, "is this command's trace"), (d / "hard.h5", "is this command's trace"),
                            (d / "sym.h5", "is this command's trace"), (d / "run.txt", "is this command's run label"),
                            (elsewhere, "is an HDF5 file"), (fifo, "is a FIFO"), (d, "is a folder"),
                            (self.tmp / "no-such-folder" / "t.csv", "does not exist")):
            r = run(sys.executable, "-m", "gradcode_traces", "compare", d, "--csv", out, timeout=60)
            self.assertEqual(r.returncode, 2, f"{out}: {r.stderr}")
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertTrue(r.stderr.startswith("error: --csv: "), r.stderr)
            self.assertIn(needle, r.stderr)
            self.assertEqual(r.stdout, "", out)
            self.assertEqual({p: p.read_bytes() for p in before}, before, out)
            self.assertEqual(sorted(os.listdir(d)), listing, out)
        self.assertFalse((self.tmp / "no-such-folder").exists())
        # A CSV beside the traces is written (over an older CSV too).
        for _ in range(2):
            r = run(sys.executable, "-m", "gradcode_traces", "compare", d, "--csv", d / "table.csv")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(list(pd.read_csv(d / "table.csv")["file"]), ["base.h5"])
        # Written beside and renamed over, never in place: a second name of the old CSV keeps the old
        # table (an interrupted write leaves the old file whole), and no temporary file is left.
        kept = self.tmp / "csv-out-old-table.csv"
        kept.unlink(missing_ok=True)
        (d / "table.csv").write_text("old table\n")
        os.link(d / "table.csv", kept)
        r = run(sys.executable, "-m", "gradcode_traces", "compare", d, "--csv", d / "table.csv")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(kept.read_text(), "old table\n")
        self.assertEqual(list(pd.read_csv(d / "table.csv")["file"]), ["base.h5"])
        self.assertEqual([p.name for p in d.iterdir() if p.name.endswith(".partial")], [])

    def test_compare_table_has_the_final_and_best_test_accuracy(self):
        table = gt.compare(self.accuracy_results).set_index("file")
        s = inspect(self.net)["summary"]["test_accuracy"]
        self.assert_close(table.loc["net.h5", "final_test_accuracy"], s["final"])
        self.assert_close(table.loc["net.h5", "best_test_accuracy"], s["best"])
        self.assertTrue(pd.isna(table.loc["linear.h5", "best_test_accuracy"]))
        self.assertTrue(pd.isna(table.loc["linear.h5", "final_test_accuracy"]))
        md = gt.markdown(gt.compare(self.accuracy_results))
        self.assertIn("| final test accuracy | best test accuracy |", md)
        self.assertIn(f"| {100 * s['final']:.1f}% | {100 * s['best']:.1f}% |", md)

    def test_timing_events_are_decoded_strings_and_theta_is_read(self):
        t = gt.open_trace(self.mpi)
        v = inspect(self.mpi)
        self.assertIsInstance(t.timing, pd.DataFrame)
        self.assertGreater(len(t.timing), 0)
        self.assertEqual(t.timing.to_dict("records"), v["timing"])
        self.assertTrue(all(isinstance(e, str) for e in t.timing["event"]))
        ds = t.to_xarray()
        self.assertEqual(list(ds["event"].values), [e["event"] for e in v["timing"]])
        self.assertEqual(ds["timing_count"].sel(event=v["timing"][0]["event"]).item(), v["timing"][0]["count"])
        self.assertEqual(len(t.theta), v["model"]["parameters"])
        self.assert_close(float(np.linalg.norm(t.theta)), v["model"]["norm"], "norm of theta")
        self.assertEqual(ds.sizes["parameter"], v["model"]["parameters"])
        self.assertEqual(t.status, "completed")
        self.assertIn("ranks", t.provenance["hosts"])

    def test_simulation_as_frames_and_dataset_equals_inspect(self):
        t = gt.open_trace(self.sim)
        v = inspect(self.sim)
        names = [s["name"] for s in v["schemes"]]
        self.assertEqual(t.kind, "simulation")
        self.assertEqual(t.schemes, names)
        self.assertEqual(names, ["gc", "gc-sc", "dc-r4"])
        ds = t.to_xarray()
        self.assertEqual(ds["duration_s"].dims, ("scheme", "trial", "iteration"))
        self.assertEqual(ds["straggling"].dims, ("scheme", "trial", "iteration", "worker"))
        self.assertEqual(list(ds["scheme"].values), names)
        self.assertEqual(list(ds["trial"].values), [0, 1, 2])
        self.assertEqual(list(ds["iteration"].values), list(range(1, 51)))
        self.assertEqual(list(ds["worker"].values), list(range(1, 9)))
        df = t.iterations()
        self.assertEqual(df.index.names, ["scheme", "trial", "iteration"])
        pooled = df["duration_s"].groupby(level="scheme", sort=False)
        for s in v["schemes"]:
            name = s["name"]
            self.assertEqual(len(t.runs[name]), s["trials"])
            self.assert_close(ds["model_time_unit_s"].sel(scheme=name).item(), s["model_time_unit_s"])
            want = s["summary"]
            d = ds["duration_s"].sel(scheme=name)
            self.assert_close(float(d.mean()), want["iteration_time_s"]["mean"], name)
            self.assert_close(float(d.quantile(0.99)), want["iteration_time_s"]["p99"], name)
            self.assert_close(pooled.get_group(name).mean(), want["iteration_time_s"]["mean"], name)
            self.assert_close(float(ds["recovered_fraction"].sel(scheme=name).mean()),
                              want["recovered_fraction"]["mean"], name)
            self.check_summary(gt.summarize(t.runs[name]), want, name)
            for tr in s["per_trial"]:
                run_ = t.run(name, tr["trial"])
                self.check_summary(gt.summarize(run_), tr["summary"], f"{name} trial {tr['trial']}")
                np.testing.assert_array_equal(
                    ds["duration_s"].sel(scheme=name, trial=tr["trial"]).values,
                    df.xs((name, tr["trial"]), level=("scheme", "trial"))["duration_s"].to_numpy(),
                )
        w = t.workers_frame()
        self.assertEqual(w.index.names, ["scheme", "trial", "iteration", "worker"])
        self.assertEqual(len(w), 3 * 3 * 50 * 8)

    def test_values_at_an_iteration_are_each_trials_in_order(self):
        # What scripts/replay_study.py reads: one iteration's value in every trial of a scheme.
        t = gt.open_trace(self.sim)
        for scheme in t.schemes:
            runs = t.runs[scheme]
            got = t.values_at("duration_s", 2, scheme)
            np.testing.assert_array_equal(got, [r.duration_s[1] for r in runs])
            with h5py.File(self.sim, "r") as f:
                raw = [f[f"sim/{scheme}/trial_{k}/iteration/recovered_fraction"][1] for k in range(len(runs))]
            np.testing.assert_array_equal(t.values_at("recovered_fraction", 2, scheme), raw)
        train = gt.open_trace(self.train)
        self.assertEqual(train.values_at("duration_s", 1).tolist(), [float(train.run().duration_s[0])])
        with self.assertRaisesRegex(gt.TraceError, "no iteration 0"):
            t.values_at("duration_s", 0)
        with self.assertRaisesRegex(gt.TraceError, "no dataset iteration/no_such"):
            t.values_at("no_such", 1)
        with self.assertRaisesRegex(gt.TraceError, "no scheme nothing"):
            t.values_at("duration_s", 1, "nothing")

    def test_compare_table_has_a_row_per_run_equal_to_inspect(self):
        table = gt.compare(self.results)
        by_run = table.set_index("run")
        # Sweep runs are labelled by their line of the runs file.
        for task, line in self.lines.items():
            row = by_run.loc[line]
            path = self.results / str(task) / "trace.h5"
            self.assertEqual(row["file"], f"{task}/trace.h5")
            s = inspect(path)["summary"]
            self.assertEqual(row["kind"], "train")
            self.assertEqual(row["iterations"], s["iterations"])
            for col, want in (("mean_s", s["iteration_time_s"]["mean"]), ("p50_s", s["iteration_time_s"]["p50"]),
                              ("p99_s", s["iteration_time_s"]["p99"]),
                              ("recovered_mean", s["recovered_fraction"]["mean"]),
                              ("recovered_full", s["recovered_fraction"]["full_fraction"]),
                              ("messages_received", s["messages_received_per_iteration"]),
                              ("messages_used", s["messages_used_per_iteration"]),
                              ("final_train_loss", s["train_loss"]["final"]),
                              ("min_test_loss", s["test_loss"]["min"])):
                self.assert_close(row[col], want, f"{line}: {col}")
            self.assertEqual(row["status"], "completed")
            self.assertEqual((row["K"], row["r"], row["P"]), (8, 2, 4))
        # The simulation: a row per scheme, trials pooled; dc-r4's r and P are its own.
        v = inspect(self.sim)
        for s in v["schemes"]:
            row = by_run.loc[f"sim.h5: {s['name']}"]
            self.assertEqual((row["kind"], row["trials"]), ("simulation", 3))
            self.assert_close(row["p99_s"], s["summary"]["iteration_time_s"]["p99"], s["name"])
            self.assert_close(row["recovered_mean"], s["summary"]["recovered_fraction"]["mean"], s["name"])
            self.assertTrue(pd.isna(row["final_train_loss"]))
        self.assertEqual(by_run.loc["sim.h5: dc-r4", "r"], 4)
        self.assertEqual(by_run.loc["sim.h5: dc-r4", "P"], 2)
        self.assertEqual(by_run.loc["sim.h5: gc-sc", "r"], 2)
        self.assertTrue(pd.isna(by_run.loc["sim.h5: gc", "P"]))  # GC is unclustered whatever scheme.clusters says
        self.assertEqual(by_run.loc["configs/bad.toml --set workers=0", "status"], "failed (no trace)")
        self.assertEqual(len(table), 2 + 3 + 1)
        md = gt.markdown(table)
        self.assertIn("| recovered |", md)
        self.assertIn(f"| {self.lines[0]} |", md)

    def test_compare_command_lists_unreadable_files_and_fails(self):
        bad = self.tmp / "bad"
        bad.mkdir()
        shutil.copy(self.train, bad / "ok.h5")
        (bad / "broken.h5").write_text("not hdf5\n")
        r = run(sys.executable, "-m", "gradcode_traces", "compare", bad, "--csv", bad / "t.csv")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("broken.h5", r.stderr)
        table = pd.read_csv(bad / "t.csv")
        self.assertEqual(list(table["run"]), ["broken.h5", "ok.h5"])
        self.assertTrue(table["status"][0].startswith("unreadable: "))
        self.assert_close(table["mean_s"][1], inspect(self.train)["summary"]["iteration_time_s"]["mean"])
        r = run(sys.executable, "-m", "gradcode_traces", "compare", bad / "nope")
        self.assertEqual(r.returncode, 2)
        self.assertIn("not a directory", r.stderr)

    def test_the_files_carry_dimension_scales_that_xarray_reads_without_the_package(self):
        import xarray as xr

        groups = [(self.train, ""), (self.mpi, "")]
        groups += [(self.sim, f"sim/{s}/trial_{k}/") for s in ("gc", "dc-r4") for k in (0, 2)]
        for path, g in groups:
            where = f"{path.name}:{g}"
            with h5py.File(path) as f:
                n, k = f[g + "iteration/duration_s"].shape[0], f[g + "worker/finish_s"].shape[1]
                for name in f[g + "iteration"]:
                    if name != "iteration":
                        d = f[g + "iteration"][name]
                        self.assertEqual(d.dims[0].label, "iteration", where + name)
                        np.testing.assert_array_equal(d.dims[0][0][:], np.arange(1, n + 1))
                for name in f[g + "worker"]:
                    if name not in ("iteration", "worker"):
                        d = f[g + "worker"][name]
                        self.assertEqual((d.dims[0].label, d.dims[1].label), ("iteration", "worker"), where + name)
                        np.testing.assert_array_equal(d.dims[0][0][:], np.arange(1, n + 1))
                        np.testing.assert_array_equal(d.dims[1][0][:], np.arange(1, k + 1))
            # xarray through h5netcdf (no gradcode_traces): named dimensions, 1-based coordinates, the same values.
            t = gt.open_trace(path)
            ours = t.to_xarray()
            if t.kind == "simulation":
                scheme, trial = g.split("/")[1], int(g.split("_")[-1].rstrip("/"))
                ours = ours.sel(scheme=scheme, trial=trial)
            with xr.open_dataset(path, group=g + "worker", engine="h5netcdf") as w:
                self.assertEqual(w["straggling"].dims, ("iteration", "worker"), where)
                self.assertEqual(list(w["worker"].values), list(range(1, k + 1)))
                np.testing.assert_array_equal(w["finish_s"].values, ours["finish_s"].values)
            with xr.open_dataset(path, group=g + "iteration", engine="h5netcdf") as it:
                self.assertEqual(it["duration_s"].dims, ("iteration",), where)
                self.assertEqual(list(it["iteration"].values), list(range(1, n + 1)))
                np.testing.assert_array_equal(it["duration_s"].values, ours["duration_s"].values)
        # Not data: the package leaves the scales out of the frames.
        self.assertNotIn("iteration", gt.open_trace(self.train).iterations().columns)
        self.assertNotIn("worker", gt.open_trace(self.train).workers_frame().columns)

    def test_bad_files_are_errors_naming_the_file(self):
        (self.tmp / "plain.h5").write_text("x")
        for path, needle in ((self.tmp / "missing.h5", "no such file"), (self.tmp / "plain.h5", "not a readable HDF5")):
            with self.assertRaises(gt.TraceError) as e:
                gt.open_trace(path)
            self.assertIn(path.name, str(e.exception))
            self.assertIn(needle, str(e.exception))
        odd = self.tmp / "odd.h5"
        with h5py.File(odd, "w") as f:
            f.attrs["gradcode_version"] = "0.1.0"
            f.attrs["trace_schema"] = np.uint64(1)
            f["iteration/duration_s"] = np.ones(3)
            f["iteration/decode_s"] = np.ones(2)
        with self.assertRaises(gt.TraceError) as e:
            gt.open_trace(odd)
        self.assertIn("/iteration/decode_s has shape (2,)", str(e.exception))

    def test_traces_of_another_schema_or_version_are_refused(self):
        edited = self.tmp / "version.h5"
        for version, schema, needle in (("0.1.0", 2, "trace schema 2"), ("9.0.0", None, "'9.0.0'"), ("x", None, "'x'")):
            shutil.copy(self.train, edited)
            with h5py.File(edited, "r+") as f:
                f.attrs["gradcode_version"] = version
                if "trace_schema" in f.attrs:
                    del f.attrs["trace_schema"]
                if schema is not None:
                    f.attrs["trace_schema"] = np.uint64(schema)
            with self.assertRaises(gt.TraceError) as e:
                gt.open_trace(edited)
            self.assertIn(needle, str(e.exception))
            self.assertIn(edited.name, str(e.exception))
        # A 0.1 trace from before the attribute is read.
        shutil.copy(self.train, edited)
        with h5py.File(edited, "r+") as f:
            del f.attrs["trace_schema"]
        self.assertEqual(gt.open_trace(edited).kind, "train")

    def test_damaged_and_locked_traces_raise_trace_error_naming_the_file(self):
        # Zeroed runs of 4000 bytes (the damage of issue 27): every failure
        # inside h5py is a TraceError that names the file, never a KeyError.
        original = self.train.read_bytes()
        damaged = self.tmp / "damaged.h5"
        refused = 0
        for at in range(0, 1500, 250):
            data = bytearray(original)
            data[at : at + 4000] = bytes(4000)
            damaged.write_bytes(bytes(data))
            try:
                gt.open_trace(damaged)
            except gt.TraceError as e:
                refused += 1
                self.assertIn(damaged.name, str(e))
        self.assertGreater(refused, 0)
        # A trace a running job writes (HDF5's exclusive lock).
        live = self.tmp / "live.h5"
        shutil.copy(self.train, live)
        with h5py.File(live, "r+"):
            r = run(sys.executable, "-c", f"import gradcode_traces as gt; gt.open_trace({str(live)!r})",
                    env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
        self.assertIn("TraceError", r.stderr)
        self.assertIn("locked by a process that has it open for writing", r.stderr)

    def test_rows_not_written_whole_raise_and_a_died_run_warns(self):
        # A row without its number in iteration/iteration was not written
        # whole (a write that failed on a full disk): refused, not read as data.
        torn = self.tmp / "torn.h5"
        shutil.copy(self.train, torn)
        with h5py.File(torn, "r+") as f:
            f["iteration/iteration"][5] = 0
        with self.assertRaises(gt.TraceError) as e:
            gt.open_trace(torn)
        self.assertIn("torn.h5", str(e.exception))
        self.assertIn("row 6 of 60 is not numbered 6", str(e.exception))
        # A run that died without closing its trace: read, with a warning.
        died = self.tmp / "died.h5"
        shutil.copy(self.train, died)
        with h5py.File(died, "r+") as f:
            f.attrs["status"] = "running"
        with self.assertWarns(gt.TraceWarning) as w:
            t = gt.open_trace(died)
        self.assertIn("the run died", str(w.warning))
        self.assertEqual(t.run().iterations, 60)

    def test_final_losses_are_those_at_theta(self):
        t = gt.open_trace(self.mpi)
        self.assertEqual(set(t.final_losses), {"final_train_loss", "final_test_loss", "final_test_accuracy"})
        self.assertTrue(np.isfinite(t.final_losses["final_train_loss"]))
        self.assertIsNone(gt.open_trace(self.train).final_losses)


if __name__ == "__main__":
    unittest.main(verbosity=2)
