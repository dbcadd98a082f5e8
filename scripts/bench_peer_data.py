#!/usr/bin/env python3
"""The data files of scripts/bench-peer.sh, which gradcode (data.kind = csv or
libsvm, data.test_path, data.standardize = false) and the peer
(scripts/bench_peer.py) both read:

  dense   CSV: a header row (gradcode reads the first row as one), then rows
          "label,x_1,...,x_d": Tandon et al.'s two-Gaussian mixture
          (001 §5, as gradcode's synthetic-logistic): y = ±1 with
          probability 1/2 each, x = y·μ + N(0, I), μ ~ N(0, I/d); values
          printed with 6 significant digits (both readers parse the same
          decimal text);
  onehot  LIBSVM rows of `nonzeros` one-hot categorical columns (Amazon
          shaped, as gradcode's synthetic-onehot): column c owns a block of
          the features, its level Zipf-distributed (p ∝ 1/rank^1.1) within
          the block; labels ±1 from a planted model θ* ~ N(0, I) through the
          logistic function. The last feature is set in the first training
          row, so the width is `features` exactly.

Usage: bench_peer_data.py dense|onehot --samples N --test-samples M
       --features D [--nonzeros Z] --seed S --train FILE --test FILE
"""

import argparse
import sys

import numpy as np


def dense(rng, samples, features, mu):
    y = np.where(rng.random(samples) < 0.5, 1.0, -1.0)
    x = y[:, None] * mu[None, :] + rng.standard_normal((samples, features))
    return y, x


def write_csv(path, y, x):
    with open(path, "w") as f:
        f.write("label," + ",".join(f"x{j + 1}" for j in range(x.shape[1])) + "\n")
        for label, row in zip(y, x):
            f.write(f"{label:g}," + ",".join(f"{v:.6g}" for v in row) + "\n")


def onehot(rng, samples, features, nonzeros, theta_star, force_last):
    bounds = [c * features // nonzeros for c in range(nonzeros + 1)]
    columns = []
    for c in range(nonzeros):
        width = bounds[c + 1] - bounds[c]
        p = 1.0 / np.arange(1, width + 1) ** 1.1
        columns.append(bounds[c] + rng.choice(width, size=samples, p=p / p.sum()))
    idx = np.stack(columns, axis=1)  # samples × nonzeros, increasing per row
    if force_last:
        idx[0, -1] = features - 1
    margin = theta_star[idx].sum(axis=1)
    y = np.where(rng.random(samples) < 1.0 / (1.0 + np.exp(-margin)), 1.0, -1.0)
    return y, idx


def write_libsvm(path, y, idx):
    with open(path, "w") as f:
        for label, row in zip(y, idx):
            f.write(f"{label:g} " + " ".join(f"{j + 1}:1" for j in row) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=["dense", "onehot"])
    parser.add_argument("--samples", type=int, required=True)
    parser.add_argument("--test-samples", type=int, required=True)
    parser.add_argument("--features", type=int, required=True)
    parser.add_argument("--nonzeros", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--train", required=True)
    parser.add_argument("--test", required=True)
    a = parser.parse_args()
    for name, value, low in (("--samples", a.samples, 1), ("--test-samples", a.test_samples, 1), ("--features", a.features, 1)):
        if value < low:
            print(f"bench_peer_data.py: {name}: {value} must be at least {low}", file=sys.stderr)
            sys.exit(2)
    if a.kind == "onehot" and not 1 <= a.nonzeros <= a.features:
        print(f"bench_peer_data.py: --nonzeros: {a.nonzeros} must be in 1..={a.features} (--features)", file=sys.stderr)
        sys.exit(2)
    rng = np.random.default_rng(a.seed)
    if a.kind == "dense":
        mu = rng.standard_normal(a.features) / np.sqrt(a.features)
        write_csv(a.train, *dense(rng, a.samples, a.features, mu))
        write_csv(a.test, *dense(rng, a.test_samples, a.features, mu))
    else:
        theta_star = rng.standard_normal(a.features)
        write_libsvm(a.train, *onehot(rng, a.samples, a.features, a.nonzeros, theta_star, True))
        write_libsvm(a.test, *onehot(rng, a.test_samples, a.features, a.nonzeros, theta_star, False))


if __name__ == "__main__":
    main()
