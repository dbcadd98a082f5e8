#!/usr/bin/env python3
"""Tests of the peer of scripts/bench-peer.sh (scripts/bench_peer.py):

- its cyclic code (Tandon et al.'s Algorithm 2) decodes the full gradient
  from every arrival set of K − s workers, on partition gradients drawn at
  random, and B has the cyclic support; too few workers do not decode;
- its partitions cover the rows once and each worker holds s + 1 of them;
- (when Debian's /usr/bin/python3 has mpi4py, as bench-peer.sh installs it)
  the peer under mpirun reaches the θ of plain gradient descent computed here
  in one process, for naive and cyclic, on a small dense and a small sparse
  file; skipped, and said so, otherwise.

Run by scripts/test-plots.sh (numpy is all the first two need).
"""

import itertools
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_peer  # noqa: E402

SYSTEM_PYTHON = "/usr/bin/python3"


class CyclicCodeTest(unittest.TestCase):
    def test_every_set_of_k_minus_s_workers_decodes_the_full_gradient(self):
        rng = np.random.default_rng(7)
        for k, s in [(4, 1), (5, 2), (6, 3), (10, 1)]:
            b = bench_peer.cyclic_code(k, s, np.random.default_rng(k * 10 + s))
            partition_gradients = rng.standard_normal((k, 5))
            full = partition_gradients.sum(axis=0)
            messages = b @ partition_gradients  # worker i sends Σ_j B[i, j] g_j
            sets = list(itertools.combinations(range(k), k - s))
            for arrived in sets:
                a = bench_peer.decoding_vector(b, list(arrived))
                decoded = a @ messages[sorted(arrived)]
                np.testing.assert_allclose(decoded, full, rtol=1e-9, atol=1e-9, err_msg=f"K={k} s={s} {arrived}")
            # Every straggler set of size s was covered.
            self.assertEqual(len(sets), len(list(itertools.combinations(range(k), s))))

    def test_b_has_the_cyclic_support_and_a_unit_diagonal(self):
        k, s = 7, 2
        b = bench_peer.cyclic_code(k, s, np.random.default_rng(3))
        for i in range(k):
            support = {(i + j) % k for j in range(s + 1)}
            self.assertEqual(b[i, i], 1.0)
            for j in range(k):
                if j not in support:
                    self.assertEqual(b[i, j], 0.0, f"B[{i}, {j}] outside the support")
                else:
                    self.assertNotEqual(b[i, j], 0.0)

    def test_fewer_than_k_minus_s_workers_do_not_decode(self):
        k, s = 6, 2
        b = bench_peer.cyclic_code(k, s, np.random.default_rng(5))
        with self.assertRaisesRegex(ValueError, "do not decode"):
            bench_peer.decoding_vector(b, [0, 1, 2])

    def test_partitions_cover_every_row_once_and_workers_hold_load_of_them(self):
        n, k, load = 103, 10, 3
        rows = [r for p in range(k) for r in bench_peer.partition_rows(n, k, p)]
        self.assertEqual(rows, list(range(n)))
        held = [0] * k
        for w in range(1, k + 1):
            parts = bench_peer.worker_partitions("cyclic", k, load, w)
            self.assertEqual(len(set(parts)), load)
            for p in parts:
                held[p] += 1
        self.assertEqual(held, [load] * k)


def has_mpi4py():
    if not os.path.exists(SYSTEM_PYTHON) or shutil.which("mpirun") is None:
        return False
    probe = [SYSTEM_PYTHON, "-c", "import numpy, scipy.sparse; from mpi4py import MPI"]
    return subprocess.run(probe, capture_output=True).returncode == 0


def gradient_descent(x, y, iterations, rate):
    """Plain full-batch gradient descent on the mean logistic loss, θ_0 = 0."""
    theta = np.zeros(x.shape[1])
    for _ in range(iterations):
        m = y * (x @ theta)
        theta = theta - rate * (x.T @ (-y / (1.0 + np.exp(m)))) / len(y)
    return theta


@unittest.skipUnless(has_mpi4py(), "mpi4py (Debian's python3-mpi4py) or mpirun missing")
class PeerUnderMpiTest(unittest.TestCase):
    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="gradcode-peer-"))
        self.env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        if os.getuid() == 0:
            self.env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def python(self, *args):
        r = subprocess.run([SYSTEM_PYTHON, *map(str, args)], capture_output=True, text=True, env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)

    def peer(self, data, *args):
        out = self.dir / "peer.json"
        command = ["mpirun", "--oversubscribe", "-n", "4", SYSTEM_PYTHON, HERE / "bench_peer.py", "run",
                   "--data", data, "--iterations", 15, "--out", out, *args]
        r = subprocess.run(list(map(str, command)), capture_output=True, text=True, env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            return np.array(json.load(f)["theta"])

    def check(self, kind, ext, extra, rate, dense_matrix, schemes):
        train, test = self.dir / f"train.{ext}", self.dir / f"test.{ext}"
        self.python(HERE / "bench_peer_data.py", kind, "--samples", 90, "--test-samples", 9, *extra,
                    "--train", train, "--test", test)
        data = self.dir / "cache"
        self.python(HERE / "bench_peer.py", "cache", "--kind", "csv" if ext == "csv" else "libsvm",
                    "--train", train, "--test", test, "--out", data)
        x, y = dense_matrix(train)
        expected = gradient_descent(x, y, 15, rate)
        for scheme in schemes:
            theta = self.peer(data, "--learning-rate", rate, *scheme)
            err = np.linalg.norm(theta - expected) / np.linalg.norm(expected)
            self.assertLess(err, 1e-9, f"{kind} {scheme}")

    def test_dense_csv(self):
        def read(path):
            t = np.loadtxt(path, delimiter=",", skiprows=1)
            return t[:, 1:], t[:, 0]

        schemes = [["--scheme", "naive"], ["--scheme", "cyclic", "--load", "2"]]
        self.check("dense", "csv", ["--features", 6], 0.1, read, schemes)

    def test_onehot_libsvm(self):
        def read(path):
            y, indptr, indices, values = bench_peer.parse_libsvm(path)
            x = np.zeros((len(y), 40))
            for i in range(len(y)):
                x[i, indices[indptr[i] : indptr[i + 1]]] = values[indptr[i] : indptr[i + 1]]
            return x, y

        self.check("onehot", "svm", ["--features", 40, "--nonzeros", 4], 1.0, read, [["--scheme", "cyclic", "--load", "3"]])


if __name__ == "__main__":
    if not has_mpi4py():
        print("test_bench_peer.py: SKIPPED the peer under mpirun: /usr/bin/python3 has no mpi4py "
              "(apt-get install python3-mpi4py python3-scipy)", file=sys.stderr)
    unittest.main()
