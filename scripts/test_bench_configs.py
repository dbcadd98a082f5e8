#!/usr/bin/env python3
"""The benchmark configs of configs/bench/ and scripts/lib.sh's write_config:

- every configs/bench/*.toml is a config `gradcode check` accepts (peer.toml
  with data files of its shape, as scripts/bench-peer.sh sets them);
- write_config BASE OUT KEY=VALUE... (through `gradcode check --print-config`)
  writes the config that `--config BASE --set KEY=VALUE...` gives: `gradcode
  check --json` says the same of both but for the file it names (origin), for
  the settings the scripts pass it; a refused setting writes no OUT.

Run by scripts/test-plots.sh: GRADCODE names the binary.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parent.parent
GRADCODE = os.environ.get("GRADCODE", str(ROOT / "target/release/gradcode"))
BENCH = ROOT / "configs" / "bench"


def check(*args):
    """`gradcode check --json` of ARGS as a dict, its origin left out."""
    r = subprocess.run([GRADCODE, "check", "--samples", "10", "--json", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"gradcode check {' '.join(args)}: {r.stderr}")
    out = json.loads(r.stdout)
    out.pop("origin", None)
    return out


class BenchConfigsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = pathlib.Path(tempfile.mkdtemp(prefix="gradcode-bench-configs-"))
        r = subprocess.run(
            [sys.executable, ROOT / "scripts" / "bench_peer_data.py", "dense", "--samples", "60", "--test-samples", "10",
             "--features", "5", "--seed", "1", "--train", cls.tmp / "d.csv", "--test", cls.tmp / "d-test.csv"],
            capture_output=True, text=True)
        assert r.returncode == 0, r.stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def write_config(self, base, out, *settings, ok=True):
        r = subprocess.run(["bash", "-c", 'bin=$1; shift; source "$0"; write_config "$@"', ROOT / "scripts" / "lib.sh",
                            GRADCODE, base, out, *settings], capture_output=True, text=True)
        self.assertEqual(r.returncode == 0, ok, r.stderr)
        return r.stderr

    def test_every_bench_config_is_accepted(self):
        configs = sorted(BENCH.glob("*.toml"))
        self.assertIn(BENCH / "aggregate.toml", configs)
        for path in configs:
            with self.subTest(config=path.name):
                data = []
                if path.name == "peer.toml":
                    data = ["--set", f'data.path="{self.tmp / "d.csv"}"', "--set",
                            f'data.test_path="{self.tmp / "d-test.csv"}"']
                check("--config", str(path), *data)

    def test_write_config_is_the_config_of_the_same_settings(self):
        cases = [
            ("runtime", ["workers=10", "data.train_samples=10000", "data.features=1000", 'scheme.kind="gc-cyclic"',
                         "scheme.load=2"]),
            ("runtime", ["workers=1", "data.train_samples=10000", "data.features=100", 'scheme.kind="uncoded"']),
            ("sparse", ["train.iterations=7"]),
            ("network", ['scheme.kind="gc-cyclic"', "scheme.load=2", "data.features=1000", "train.iterations=3",
                         "train.eval_every=3", 'runtime.aggregate="reduce"']),
            # A bare string, a float and a new section, as --set takes them.
            ("aggregate", ["runtime.aggregate=gather", "train.learning_rate=1.0", "output.progress_every=5"]),
        ]
        for name, settings in cases:
            with self.subTest(config=name, settings=settings):
                base = BENCH / f"{name}.toml"
                out = self.tmp / f"{name}.toml"
                self.write_config(base, out, *settings)
                sets = [w for s in settings for w in ("--set", s)]
                self.assertEqual(check("--config", str(out)), check("--config", str(base), *sets))

    def test_write_config_refuses_what_check_refuses_and_writes_nothing(self):
        out = self.tmp / "refused.toml"
        err = self.write_config(BENCH / "runtime.toml", out, "workers=0", ok=False)
        self.assertIn("workers", err)
        self.assertFalse(out.exists())
        self.assertFalse((self.tmp / "refused.toml.partial").exists())


if __name__ == "__main__":
    unittest.main(verbosity=2)
