"""Tests of the replay study's statistics: scripts/replay_study.py's 95%
intervals use the t quantile gradcode uses (scipy's against statrs', through
`gradcode simulate`), it reads a trace CSV as gradcode does (`gradcode
check`), and scripts/estimate_compute_share.py's Theil-Sen line ignores
outliers. Run by scripts/test-plots.sh; GRADCODE names the binary."""

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

import h5py
import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import estimate_compute_share  # noqa: E402
import replay_study  # noqa: E402

GRADCODE = os.environ.get("GRADCODE", str(HERE.parent / "target/release/gradcode"))

SIM = """workers = 6
seed = 11
[scheme]
kind = "gc-sc"
load = 2
clusters = 3
[straggler]
model = "shifted-exponential"
alpha = 1.0
mu = 0.5
[simulate]
compare = ["uncoded", "gc-sc"]
"""

# Quoted cells (a header name with a comma), CRLF line ends, a blank line.
TRACE = '"worker, 1",worker 2,"w3"\r\n"1.5",2,3\r\n\r\n4," 0.25 ",6.5\r\n7,8,"9"\r\n'


def run(*args):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True)


class ReplayStudyTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="gradcode-replay-study-")
        self.dir = pathlib.Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def test_intervals_use_the_t_quantile_of_gradcode(self):
        cfg = self.dir / "sim.toml"
        cfg.write_text(SIM)
        # trials - 1 degrees of freedom: 1, 2, 6 and 30.
        for trials in (2, 3, 7, 31):
            out = self.dir / f"sim-{trials}.h5"
            r = run(GRADCODE, "simulate", "--config", cfg, "--trials", trials, "--iterations", 20,
                    "--json", "--out", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            schemes = json.loads(r.stdout)["schemes"]
            self.assertEqual(len(schemes), 2)
            with h5py.File(out, "r") as f:
                for s in schemes:
                    g = f[f"sim/{s['name']}"]
                    means = [float(np.mean(g[f"trial_{k}/iteration/duration_s"][()])) for k in range(trials)]
                    m, h = replay_study.interval(means)
                    # The trace may store seconds and the JSON model time: compare h / mean.
                    self.assertGreater(h, 0)
                    self.assertAlmostEqual(h / m / (s["ci95"] / s["mean_iteration_time"]), 1.0, delta=1e-9,
                                           msg=f"{s['name']}, {trials} trials")

    def test_a_trace_csv_is_read_as_gradcode_reads_it(self):
        trace = self.dir / "trace.csv"
        trace.write_bytes(TRACE.encode())
        values = replay_study.read_csv(trace)
        self.assertEqual(values.tolist(), [[1.5, 2, 3], [4, 0.25, 6.5], [7, 8, 9]])
        cfg = self.dir / "trace.toml"
        cfg.write_text(f'workers = 3\n[scheme]\nkind = "uncoded"\n[straggler]\nmodel = "trace"\n'
                       f'trace_file = "{trace}"\n')
        r = run(GRADCODE, "check", "--config", cfg, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        summary = json.loads(r.stdout)["straggler_trace"]
        self.assertEqual((summary["rows"], summary["columns"]), values.shape)
        self.assertEqual(summary["median"], float(np.median(values)))
        self.assertEqual((summary["min"], summary["max"]), (values.min(), values.max()))

    def test_the_theil_sen_line_ignores_outliers(self):
        # Loads as the campaigns have them (two files at one load), on the
        # line 2 + 3x, with one file 40 times slower than the line.
        x = [0.0, 0.25, 0.5, 0.5, 0.75, 1.0]
        y = [2 + 3 * v for v in x]
        y[4] *= 40
        slope, intercept = estimate_compute_share.theil_sen(x, y)
        self.assertAlmostEqual(slope, 3.0, places=12)
        self.assertAlmostEqual(intercept, 2.0, places=12)


if __name__ == "__main__":
    unittest.main()
