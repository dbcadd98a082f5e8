#!/usr/bin/env python3
"""The peer of scripts/bench-peer.sh (issue 28, item 4): distributed logistic
regression by gradient descent in the style of Tandon et al.'s public mpi4py
code (001, §5): rank 0 is the master, ranks 1..K the workers; the master sends
θ with Isend, posts one Irecv per worker and takes results with
MPI.Request.Waitany; the workers compute with numpy (scipy.sparse for sparse
data). Three schemes:

- naive: uncoded, worker k holds partition k, the master waits for all K;
- cyclic: Tandon et al.'s cyclic repetition code (001 §3.2, Algorithm 2):
  worker k holds partitions k, k+1, ..., k+s (mod K) and sends the
  combination of their gradients with the coefficients of row k of B; the
  master waits for the fastest K − s and decodes with the vector a that
  solves a·B_S = 1 (numpy's lstsq);
- ignore: uncoded, the master waits for the fastest `wait_for` workers and
  steps with the mean gradient over the partitions that arrived.

The objective is gradcode's (docs/papers.md, crates/core/src/learn/optim.rs):
F(θ) = (1/N) Σ log(1 + exp(−y·x·θ)), labels ±1, θ_0 = 0, the step
θ ← θ − η · (gradient sum over the recovered samples) / (their number).
Partition p holds training rows [p·N/K, (p+1)·N/K) in file order, as
gradcode splits a file given with data.test_path.

Subcommands:
  cache   parse a CSV (a header row, then the target and the features) or
          LIBSVM file once into numpy
          files (run before mpirun: the workers load their rows from it);
  run     the training, under `mpirun -n K+1`; rank 0 writes a JSON with the
          final θ and the mean iteration time (the send of θ to the updated
          θ, the span of gradcode's mean_iteration_s).

`run --replay-used F.json` (ignore only; a check, not a benchmark): the
master waits for every worker and uses, in iteration t, the workers listed in
F's row t (gradcode's trace /worker/used), so that its θ can be compared with
gradcode's run that chose those sets.

mpi4py is imported by `run` alone: the code and the decode (`cyclic_code`,
`decoding_vector`) need only numpy (scripts/test_bench_peer.py tests them).
"""

import argparse
import json
import os
import sys
import time

import numpy as np


# ---------------------------------------------------------------- the code


def fail(field, rule):
    """A bad argument: one line naming it and the rule, exit status 2."""
    print(f"bench_peer.py: {field}: {rule}", file=sys.stderr)
    sys.exit(2)


def cyclic_code(workers, stragglers, rng):
    """Tandon et al.'s Algorithm 2: B (K × K) with row i supported on
    columns i, i+1, ..., i+s (mod K), B[i, i] = 1, and every row in the null
    space of a random s × K matrix H whose rows sum to zero, so that the
    all-ones vector lies in the span of any K − s rows."""
    k, s = workers, stragglers
    b = np.zeros((k, k))
    if s == 0:
        np.fill_diagonal(b, 1.0)
        return b
    h = rng.standard_normal((s, k))
    h[:, k - 1] = -h[:, : k - 1].sum(axis=1)
    for i in range(k):
        support = [(i + j) % k for j in range(s + 1)]
        b[i, support[0]] = 1.0
        b[i, support[1:]] = -np.linalg.solve(h[:, support[1:]], h[:, support[0]])
    return b


def decoding_vector(b, arrived):
    """a with a·B[arrived] = 1 (least squares, as Tandon et al.'s code);
    raises ValueError when the arrived rows do not span the ones vector."""
    rows = b[sorted(arrived)]
    a, *_ = np.linalg.lstsq(rows.T, np.ones(b.shape[1]), rcond=None)
    if np.max(np.abs(a @ rows - 1.0)) > 1e-8:
        raise ValueError(f"workers {sorted(arrived)} do not decode")
    return a


def partition_rows(samples, partitions, p):
    """Rows of partition p (gradcode's split: [p·N/K, (p+1)·N/K))."""
    return range(p * samples // partitions, (p + 1) * samples // partitions)


def worker_partitions(scheme, workers, load, worker):
    """0-based partitions of 1-based `worker`."""
    if scheme == "cyclic":
        return [(worker - 1 + j) % workers for j in range(load)]
    return [worker - 1]


def logistic_gradient_sum(x, y, theta):
    """Σ_i ∇ log(1 + exp(−y_i x_i·θ)) over the rows of x (dense or CSR)."""
    m = y * (x @ theta)
    e = np.exp(-np.abs(m))
    sigma = np.where(m > 0, e / (1.0 + e), 1.0 / (1.0 + e))  # σ(−m), stable
    return x.T @ (-y * sigma)


# ---------------------------------------------------------------- the data


def parse_libsvm(path):
    labels, indptr, indices = [], [0], []
    values = []
    with open(path) as f:
        for line in f:
            tokens = line.split()
            if not tokens:
                continue
            labels.append(float(tokens[0]))
            for t in tokens[1:]:
                j, v = t.split(":")
                indices.append(int(j) - 1)
                values.append(float(v))
            indptr.append(len(indices))
    return np.array(labels), np.array(indptr), np.array(indices, dtype=np.int64), np.array(values)


def binary(labels, path):
    """gradcode's logistic labels: 1 → +1, 0 or −1 → −1."""
    ok = (labels == 1.0) | (labels == 0.0) | (labels == -1.0)
    if not ok.all():
        fail(path, f"label {labels[~ok][0]} is not binary (-1/+1 or 0/1)")
    return np.where(labels == 1.0, 1.0, -1.0)


def cache(args):
    """Parse the training file once into args.out/: y.npy and x.npy (dense)
    or x-{indptr,indices,values}.npy (CSR), and meta.json with d (the widest
    row of the training and test files, as gradcode counts features)."""
    os.makedirs(args.out, exist_ok=True)
    if args.kind == "csv":
        table = np.loadtxt(args.train, delimiter=",", ndmin=2, skiprows=1)  # row 1: the header
        np.save(f"{args.out}/x.npy", np.ascontiguousarray(table[:, 1:]))
        np.save(f"{args.out}/y.npy", binary(table[:, 0], args.train))
        features = table.shape[1] - 1
        meta = {"format": "dense", "samples": table.shape[0], "features": features}
    else:
        labels, indptr, indices, values = parse_libsvm(args.train)
        _, _, test_indices, _ = parse_libsvm(args.test)
        features = int(max(indices.max(initial=-1), test_indices.max(initial=-1))) + 1
        for name, a in (("indptr", indptr), ("indices", indices), ("values", values)):
            np.save(f"{args.out}/x-{name}.npy", a)
        np.save(f"{args.out}/y.npy", binary(labels, args.train))
        meta = {"format": "sparse", "samples": len(labels), "features": features}
    with open(f"{args.out}/meta.json", "w") as f:
        json.dump(meta, f)


def load_partition(directory, meta, rows):
    y = np.load(f"{directory}/y.npy", mmap_mode="r")[rows.start : rows.stop].copy()
    if meta["format"] == "dense":
        x = np.load(f"{directory}/x.npy", mmap_mode="r")[rows.start : rows.stop].copy()
        return x, y
    import scipy.sparse

    indptr = np.load(f"{directory}/x-indptr.npy", mmap_mode="r")
    lo, hi = indptr[rows.start], indptr[rows.stop]
    indices = np.load(f"{directory}/x-indices.npy", mmap_mode="r")[lo:hi]
    values = np.load(f"{directory}/x-values.npy", mmap_mode="r")[lo:hi]
    x = scipy.sparse.csr_matrix(
        (np.array(values), np.array(indices), np.array(indptr[rows.start : rows.stop + 1]) - lo),
        shape=(len(rows), meta["features"]),
    )
    return x, y


# ---------------------------------------------------------------- training


def run(args):
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, workers = comm.Get_rank(), comm.Get_size() - 1
    if workers < 1:
        fail("ranks", "run needs at least 2 (a master and a worker)")
    if args.scheme == "cyclic" and not 1 <= args.load <= workers:
        fail("--load", f"{args.load} must be in 1..={workers} (the workers)")
    if args.scheme == "ignore" and not 1 <= args.wait_for <= workers:
        fail("--wait-for", f"{args.wait_for} must be in 1..={workers} (the workers)")
    with open(f"{args.data}/meta.json") as f:
        meta = json.load(f)
    n, d = meta["samples"], meta["features"]
    load = args.load if args.scheme == "cyclic" else 1
    stragglers = {"naive": 0, "cyclic": load - 1, "ignore": workers - (args.wait_for or workers)}[args.scheme]
    # Every rank draws the same B from the same seed (Tandon et al. build it
    # on every rank too).
    b = cyclic_code(workers, stragglers, np.random.default_rng(args.seed)) if args.scheme == "cyclic" else None
    if rank == 0:
        master(comm, MPI, args, workers, n, d, stragglers, b)
    else:
        worker(comm, args, workers, n, d, load, b, meta, rank)


def worker(comm, args, workers, n, d, load, b, meta, rank):
    mine = worker_partitions(args.scheme, workers, load, rank)
    parts = [load_partition(args.data, meta, partition_rows(n, workers, p)) for p in mine]
    coefficients = [b[rank - 1, p] for p in mine] if b is not None else [1.0]
    theta = np.empty(d)
    sending = None
    comm.Barrier()
    for t in range(args.iterations):
        comm.Irecv([theta, "d"], source=0, tag=t).Wait()
        g = np.zeros(d)
        for (x, y), c in zip(parts, coefficients):
            g += c * logistic_gradient_sum(x, y, theta)
        if sending is not None:
            sending.Wait()
        sending = comm.Isend([g, "d"], dest=0, tag=t)
    if sending is not None:
        sending.Wait()


def master(comm, MPI, args, workers, n, d, stragglers, b):
    sizes = [len(partition_rows(n, workers, p)) for p in range(workers)]
    replay = None
    if args.replay_used:
        with open(args.replay_used) as f:
            replay = json.load(f)
        if len(replay) < args.iterations:
            fail(args.replay_used, f"has {len(replay)} rows, fewer than the {args.iterations} iterations")
    need = workers if args.scheme == "naive" or replay is not None else workers - stragglers
    theta = np.zeros(d)
    free = [[] for _ in range(workers)]  # result buffers per worker, reused
    stale = []  # (request, worker, buffer) of results that came too late
    sends = []  # (request, θ it reads)
    durations = []
    decodings = {}
    comm.Barrier()
    for t in range(args.iterations):
        start = time.perf_counter()
        for w in range(workers):
            sends.append((comm.Isend([theta, "d"], dest=w + 1, tag=t), theta))
        bufs = [free[w].pop() if free[w] else np.empty(d) for w in range(workers)]
        reqs = [comm.Irecv([bufs[w], "d"], source=w + 1, tag=t) for w in range(workers)]
        arrived = []
        g = np.zeros(d)
        while len(arrived) < need:
            w = MPI.Request.Waitany(reqs)
            arrived.append(w)
            if args.scheme != "cyclic" and replay is None:
                g += bufs[w]  # uncoded: added as it arrives
        if replay is not None:
            used = [w - 1 for w in replay[t]]
            for w in used:
                g += bufs[w]
            recovered = sum(sizes[w] for w in used)
        elif args.scheme == "cyclic":
            key = frozenset(arrived)
            if key not in decodings:
                decodings[key] = decoding_vector(b, arrived)
            a = decodings[key]
            for coefficient, w in zip(a, sorted(arrived)):
                g += coefficient * bufs[w]
            recovered = n
        else:
            recovered = sum(sizes[w] for w in arrived)
        theta = theta - args.learning_rate * (g / recovered)
        durations.append(time.perf_counter() - start)
        for w in range(workers):
            if w in arrived:
                free[w].append(bufs[w])
            else:
                stale.append((reqs[w], w, bufs[w]))
        # Results that came after their iteration: dropped, buffers reused.
        still = []
        for req, w, buf in stale:
            if req.Test():
                free[w].append(buf)
            else:
                still.append((req, w, buf))
        stale = still
        sends = [(req, buf) for req, buf in sends if not req.Test()]
    MPI.Request.Waitall([req for req, _, _ in stale])
    MPI.Request.Waitall([req for req, _ in sends])
    with open(args.out, "w") as f:
        json.dump(
            {
                "scheme": args.scheme,
                "workers": workers,
                "iterations": args.iterations,
                "mean_iteration_s": float(np.mean(durations)),
                "median_iteration_s": float(np.median(durations)),
                "theta": theta.tolist(),
            },
            f,
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("cache", help="parse a data file once into numpy files")
    c.add_argument("--kind", choices=["csv", "libsvm"], required=True)
    c.add_argument("--train", required=True)
    c.add_argument("--test", required=True, help="the test file (its width counts, as in gradcode)")
    c.add_argument("--out", required=True)
    r = sub.add_parser("run", help="train under mpirun -n K+1")
    r.add_argument("--data", required=True, help="a directory written by `cache`")
    r.add_argument("--scheme", choices=["naive", "cyclic", "ignore"], required=True)
    r.add_argument("--iterations", type=int, required=True)
    r.add_argument("--learning-rate", type=float, required=True)
    r.add_argument("--load", type=int, default=2, help="cyclic: partitions per worker, s + 1")
    r.add_argument("--wait-for", type=int, help="ignore: the fastest workers used")
    r.add_argument("--seed", type=int, default=1, help="cyclic: the seed of B")
    r.add_argument("--replay-used", help="ignore: JSON rows of 1-based workers to use per iteration (a check)")
    r.add_argument("--out", required=True, help="rank 0's JSON")
    args = parser.parse_args()
    if args.command == "cache":
        cache(args)
        return
    if args.iterations < 1:
        fail("--iterations", f"{args.iterations} must be at least 1")
    if not args.learning_rate > 0:
        fail("--learning-rate", f"{args.learning_rate} must be positive")
    if args.scheme == "ignore" and args.wait_for is None:
        fail("--wait-for", "is required with --scheme ignore")
    if args.replay_used and args.scheme != "ignore":
        fail("--replay-used", "only with --scheme ignore")
    run(args)


if __name__ == "__main__":
    sys.exit(main())
