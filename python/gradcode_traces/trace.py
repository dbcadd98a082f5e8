"""Reading gradcode HDF5 traces (the schema of src/trace/mod.rs).

`open_trace(path)` reads a training trace (`gradcode train --out`) or a
simulation trace (`gradcode simulate --out`) whole and returns a `Trace`:
root attributes decoded and parsed, each run (a training run, or one trial
of a simulated scheme) as a `Run` of numpy arrays, and the whole file as
pandas DataFrames (`Trace.iterations()`, `Trace.workers_frame()`,
`Trace.timing`) or as an xarray Dataset (`Trace.to_xarray()`) with named
dimensions and 1-based `iteration` and `worker` coordinates.
"""

import json
import pathlib
import tomllib
import warnings

import h5py
import numpy as np
import pandas as pd
import xarray as xr

#: Root attributes that record where and how a run was made (docs/traces.md, *The schema*).
PROVENANCE_KEYS = (
    "git_commit",
    "build_features",
    "mpi_library",
    "hdf5_library",
    "command_line",
    "hosts",
    "slurm_job_id",
    "slurm_array_job_id",
    "slurm_array_task_id",
    "started_at",
    "ended_at",
    "resumed",
)


class TraceError(Exception):
    """A file that is not a readable gradcode trace; the message names it."""


class TraceWarning(UserWarning):
    """A readable trace of a run that did not end cleanly; the message names it."""


TRACE_SCHEMA = 1
"""The trace schema this package reads (root attribute `trace_schema`; as
`gradcode::trace::TRACE_SCHEMA`). A trace without the attribute is schema 1
when its `gradcode_version` is 0.1.x (written before the attribute existed)."""


def check_schema(path, schema, version):
    """Raise TraceError unless a trace of this schema and version is one this package reads."""
    if schema is not None:
        if int(schema) != TRACE_SCHEMA:
            raise TraceError(f"{path}: trace schema {int(schema)} (written by gradcode {version}); this package reads schema {TRACE_SCHEMA}")
        return
    parts = version.split(".")
    if not (len(parts) == 3 and parts[:2] == ["0", "1"] and all(p.isdigit() for p in parts)):
        raise TraceError(f"{path}: written by gradcode {version!r} without a trace_schema attribute: not a trace this package reads")


def scheme_kind(config, name):
    """The scheme.kind of the simulate.compare entry `name` of a resolved config (a name, or a table with
    name and kind); the name itself when it is not such a table's."""
    for e in ((config or {}).get("simulate") or {}).get("compare", []):
        if isinstance(e, dict) and e.get("name") == name and "kind" in e:
            return e["kind"]
    return name


def decode(value):
    """An HDF5 attribute or dataset element as plain Python: bytes and numpy
    strings to str, numpy scalars to int/float/bool, arrays to lists."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.ndarray):
        if value.shape == ():
            return decode(value[()])
        return [decode(v) for v in value.tolist()] if value.dtype.kind in "OSU" else value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def decode_strings(values):
    """A dataset of HDF5 strings (variable-length UTF-8 or fixed ASCII) as a list of str."""
    return [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in np.asarray(values, dtype=object).ravel()]


class Run:
    """One trace of iterations: a training run, or one trial of a simulated scheme.

    Every dataset of the file's `iteration/` group is in `columns` (1-D,
    one value per iteration) and every one of `worker/` in `worker_columns`
    (iterations x workers; column k is worker k + 1); flags (u8) are bool.
    The schema's datasets are also attributes (`duration_s`, `decodable_s`, `decode_s`,
    `recovered_fraction`, `decode_error`, `messages_used`, `messages_received`,
    `stale_dropped`, `train_loss`, `batch_loss`, `batch_accuracy`, `test_loss`, `test_accuracy`,
    `elapsed_s`, `finish_s`, `straggling`, `cluster`, `used`, `overrun_s`,
    `message_bytes`, `compute_s`, `received_s`),
    None when the file lacks them (only `iteration/duration_s` is required;
    `batch_loss`, the objective over the samples each update used (the recovered
    partitions' mini-batches), recorded at every iteration, is absent from traces older than it;
    `batch_accuracy`, a network's share of those samples its training passes predicted
    correctly, likewise (NaN throughout for a linear model);
    `test_accuracy`, a network's share of test samples classified correctly,
    is absent from traces older than it and NaN throughout for a linear model;
    `elapsed_s`, the seconds since the run started at the end of each
    iteration, is absent from traces older than it; `decodable_s`, the time
    until the master held a decodable set (`duration_s` adds the decode and
    the update), is absent from traces older than it; `message_bytes`,
    `compute_s` and `received_s`, per worker the bytes of the results the
    master received, the compute their headers report and when their vectors
    had arrived, are absent from traces older than them and NaN in simulation).
    """

    ITERATION = ("duration_s", "decodable_s", "decode_s", "recovered_fraction", "decode_error", "messages_used",
                 "messages_received",
                 "stale_dropped", "train_loss", "batch_loss", "batch_accuracy", "test_loss", "test_accuracy",
                 "elapsed_s")
    WORKER = ("finish_s", "straggling", "cluster", "used", "overrun_s", "message_bytes", "compute_s", "received_s")

    def __init__(self, group, where, label, scheme=None, trial=None, workers=None, kind=None):
        # scheme: the root attribute (training) or the simulate.compare name (simulation);
        # kind: its scheme.kind (`dc-r4` -> `gc-dc`), what plots colour by.
        self.label, self.scheme, self.trial = label, scheme, trial
        self.kind = kind or scheme
        it, wk = group.get("iteration"), group.get("worker")
        if it is None or "duration_s" not in it:
            raise TraceError(f"{where}: no dataset iteration/duration_s, not a gradcode trace")
        n = it["duration_s"].shape[0] if it["duration_s"].ndim == 1 else -1
        self.columns, self.worker_columns, self.units, self.descriptions = {}, {}, {}, {}
        for g, per_worker, into in ((it, False, self.columns), (wk, True, self.worker_columns)):
            if g is None:
                continue
            for name, ds in g.items():
                if not isinstance(ds, h5py.Dataset) or name in ("iteration", "worker"):
                    continue  # the dimension scales (coordinates), not data
                want = 2 if per_worker else 1
                if ds.ndim != want or ds.shape[0] != n:
                    raise TraceError(
                        f"{where}: dataset {ds.name} has shape {ds.shape}, not one row per iteration ({n})"
                        + (" x workers" if per_worker else "")
                    )
                v = ds[...]
                into[name] = v.astype(bool) if v.dtype == np.uint8 else v
                self.units[name] = decode(ds.attrs.get("unit"))
                self.descriptions[name] = decode(ds.attrs.get("description"))
        # The writer numbers each row in the iteration scale after writing its
        # values: a row without its number was not written whole (a write that
        # failed part way, e.g. on a full disk), and its values are not data.
        if "iteration" in it and isinstance(it["iteration"], h5py.Dataset):
            numbers = np.asarray(it["iteration"][...]).reshape(-1)
            want = np.arange(1, n + 1)
            if len(numbers) != n or not np.array_equal(numbers, want):
                bad = next((i for i in range(min(len(numbers), n)) if numbers[i] != want[i]), min(len(numbers), n))
                raise TraceError(
                    f"{where}: row {bad + 1} of {n} is not numbered {bad + 1} in iteration/iteration: "
                    "the rows were not written whole (a write that failed, e.g. on a full disk)"
                )
        self.duration_s = np.asarray(self.columns["duration_s"], dtype=float)
        for name in self.ITERATION:
            if name != "duration_s":
                setattr(self, name, self.columns.get(name))
        for name in self.WORKER:
            setattr(self, name, self.worker_columns.get(name))
        shapes = {v.shape[1] for v in self.worker_columns.values()}
        if len(shapes) > 1:
            raise TraceError(f"{where}: the worker/ datasets disagree on the number of workers ({sorted(shapes)})")
        self.workers = shapes.pop() if shapes else int(workers or 0)

    @property
    def iterations(self):
        return len(self.duration_s)

    def has_elapsed(self):
        """The trace records elapsed_s at every iteration (not a trace older than the dataset)."""
        return self.elapsed_s is not None and bool(np.isfinite(self.elapsed_s).all())

    def wall_s(self):
        """Time at the end of each iteration: `elapsed_s` when recorded (a training run: the master's
        wall clock less its loss evaluations; a simulation: model time); otherwise the running sum of
        duration_s, which leaves evaluation waits out (see `has_elapsed`)."""
        if self.has_elapsed():
            return np.asarray(self.elapsed_s, dtype=float)
        return np.cumsum(np.nan_to_num(self.duration_s, nan=0.0))

    def has_losses(self):
        return any(v is not None and np.isfinite(v).any() for v in (self.train_loss, self.test_loss))

    def has_accuracy(self):
        """Some test accuracy is recorded (a network's run; not a linear model's, nor a trace older than the dataset)."""
        return self.test_accuracy is not None and bool(np.isfinite(self.test_accuracy).any())

    def clusters(self):
        """P, the largest cluster id (0: never clustered)."""
        if self.cluster is None or self.cluster.size == 0:
            return 0
        return max(int(self.cluster.max()), 0)

    def stragglers_per_cluster(self):
        """(counts, clustered): counts[i, p] = straggling workers in cluster p + 1 in
        iteration i + 1; clustered[i] = some worker is in a cluster. None without
        worker/cluster, worker/straggling or clusters."""
        p = self.clusters()
        if p == 0 or self.straggling is None:
            return None
        counts = np.zeros((self.iterations, p), dtype=int)
        for c in range(1, p + 1):
            counts[:, c - 1] = ((self.cluster == c) & self.straggling).sum(axis=1)
        return counts, (self.cluster >= 1).any(axis=1)

    def frame(self):
        """The iteration/ datasets as a DataFrame indexed by `iteration` (1-based)."""
        index = pd.RangeIndex(1, self.iterations + 1, name="iteration")
        return pd.DataFrame({k: v for k, v in self.columns.items()}, index=index)

    def worker_frame(self):
        """The worker/ datasets in long form: a row per (iteration, worker), both 1-based."""
        index = pd.MultiIndex.from_product(
            [range(1, self.iterations + 1), range(1, self.workers + 1)], names=["iteration", "worker"]
        )
        return pd.DataFrame({k: v.reshape(-1) for k, v in self.worker_columns.items()}, index=index)

    def to_xarray(self):
        """The run as an xarray Dataset: dimensions `iteration` and `worker`, 1-based coordinates."""
        data = {k: ("iteration", v, self._attrs(k)) for k, v in self.columns.items()}
        data.update({k: (("iteration", "worker"), v, self._attrs(k)) for k, v in self.worker_columns.items()})
        coords = {"iteration": np.arange(1, self.iterations + 1), "worker": np.arange(1, self.workers + 1)}
        return xr.Dataset(data, coords=coords)

    def _attrs(self, name):
        return {k: v for k, v in (("unit", self.units.get(name)), ("description", self.descriptions.get(name)))
                if v is not None}


class Trace:
    """A trace file, read whole.

    kind: 'train' or 'simulation'. runs: {scheme: [Run]}, for a training
    trace one scheme with one run, for a simulation every compared scheme in
    `simulate.compare` order with its trials (trial k at index k).
    attrs: every root attribute, decoded. config: the resolved config
    (`config_toml` parsed with tomllib), None when absent. provenance: the
    provenance attributes present (`resumed` as a list of lines).
    timing: train only, `/timing/` as a DataFrame (event, total_s, count),
    None when absent. theta: `/model/theta` (None when absent). final_losses:
    train only, `/model`'s attributes final_train_loss, final_test_loss,
    final_test_accuracy (the losses at theta; None when absent).
    layout: train only, theta's tensors as a list of {name, shape, offset}
    (the root attribute `model_layout`; None in a trace older than it);
    `named_theta()` cuts theta into them.
    scheme_attrs: simulation only, {scheme: attributes of /sim/<scheme>}.
    """

    def __init__(self, path):
        self.path = pathlib.Path(path)
        if not self.path.is_file():
            raise TraceError(f"{path}: no such file")
        try:
            f = h5py.File(self.path, "r")
        except OSError as e:
            if "unable to lock file" in str(e):
                raise TraceError(
                    f"{path}: locked by a process that has it open for writing (a running job?); "
                    "read it when that ends, or as it is with HDF5_USE_FILE_LOCKING=FALSE in the environment"
                ) from None
            raise TraceError(f"{path}: not a readable HDF5 file ({e})") from None
        try:
            with f:
                self._read(f, path)
        except TraceError:
            raise
        except (KeyError, OSError, ValueError, TypeError, RuntimeError, IndexError) as e:
            # A damaged file fails inside h5py in many ways: one error type, the file named.
            raise TraceError(f"{path}: damaged trace ({type(e).__name__}: {e})") from None

    def _read(self, f, path):
        """The attributes and runs of the open file `f`."""
        self.attrs = {k: decode(v) for k, v in f.attrs.items()}
        if "gradcode_version" not in self.attrs:
            raise TraceError(f"{path}: not a gradcode trace (no root attribute gradcode_version)")
        a = self.attrs
        check_schema(path, a.get("trace_schema"), str(a["gradcode_version"]))
        self.gradcode_version = a.get("gradcode_version")
        self.scheme = a.get("scheme")
        self.workers = int(a["workers"]) if "workers" in a else None
        self.seed = int(a["seed"]) if "seed" in a else None
        self.status = a.get("status") or None
        self.status_reason = a.get("status_reason") or None
        if self.status == "running":
            # Open for reading here, so no job writes it: the run died.
            warnings.warn(
                f"{path}: status running, but no job has it open (unless file locking is off): the run died without closing its "
                "trace (killed, crashed, or out of disk); it holds the iterations flushed before",
                TraceWarning,
                stacklevel=3,
            )
        self.config = None
        if a.get("config_toml"):
            try:
                self.config = tomllib.loads(a["config_toml"])
            except tomllib.TOMLDecodeError as e:
                raise TraceError(f"{path}: root attribute config_toml is not TOML ({e})") from None
        self.provenance = {k: a[k] for k in PROVENANCE_KEYS if k in a}
        if "resumed" in self.provenance:
            self.provenance["resumed"] = [x for x in str(self.provenance["resumed"]).splitlines() if x]
        self.runs, self.scheme_attrs = {}, {}
        self.timing, self.theta, self.final_losses = None, None, None
        self.layout = None
        if a.get("model_layout"):
            try:
                self.layout = json.loads(a["model_layout"])
            except json.JSONDecodeError as e:
                raise TraceError(f"{path}: root attribute model_layout is not JSON ({e})") from None
        if "sim" in f:
            self.kind = "simulation"
            order = [s.strip() for s in (self.scheme or "").split(",")]
            names = sorted(f["sim"].keys(), key=lambda n: (order.index(n) if n in order else len(order), n))
            for name in names:
                g = f["sim"][name]
                self.scheme_attrs[name] = {k: decode(v) for k, v in g.attrs.items()}
                trials = sorted(
                    (int(k[len("trial_"):]), k) for k in g.keys() if k.startswith("trial_") and k[6:].isdigit()
                )
                if [k for k, _ in trials] != list(range(len(trials))):
                    raise TraceError(f"{path}: /sim/{name} has trials {[k for k, _ in trials]}, not 0..{len(trials) - 1}")
                self.runs[name] = [
                    Run(g[key], f"{path}:/sim/{name}/{key}", f"{name} trial {k}", name, k, self.workers,
                        scheme_kind(self.config, name))
                    for k, key in trials
                ]
        elif "iteration" in f:
            self.kind = "train"
            label = self.scheme or self.path.stem
            self.runs[label] = [Run(f, str(path), label, self.scheme, None, self.workers)]
            if "timing" in f:
                t = f["timing"]
                self.timing = pd.DataFrame(
                    {
                        "event": decode_strings(t["event"][...]),
                        "total_s": np.asarray(t["total_s"][...], dtype=float),
                        "count": np.asarray(t["count"][...], dtype=np.int64),
                    }
                )
            if "model" in f and "theta" in f["model"]:
                self.theta = np.asarray(f["model"]["theta"][...], dtype=float)
            if "model" in f:
                m = f["model"].attrs
                self.final_losses = {
                    k: float(m[k]) for k in ("final_train_loss", "final_test_loss", "final_test_accuracy") if k in m
                } or None
        else:
            raise TraceError(f"{path}: not a gradcode trace (neither an /iteration nor a /sim group)")

    def named_theta(self):
        """theta as {name: array of its shape}, in theta's order, by `layout`. A TraceError when the trace has
        no theta or no layout, or the layout does not cover theta exactly."""
        if self.theta is None or self.layout is None:
            raise TraceError(f"{self.path}: no /model/theta or no model_layout (a trace older than the layout?)")
        named, end = {}, 0
        for t in self.layout:
            size = int(np.prod(t["shape"], dtype=np.int64))
            if t["offset"] != end or end + size > len(self.theta):
                raise TraceError(f"{self.path}: model_layout's {t['name']} at {t['offset']} does not follow {end}")
            named[t["name"]] = self.theta[end:end + size].reshape(t["shape"])
            end += size
        if end != len(self.theta):
            raise TraceError(f"{self.path}: model_layout covers {end} of the {len(self.theta)} parameters")
        return named

    @property
    def schemes(self):
        """The schemes of the trace, in order (a training trace: its one scheme)."""
        return list(self.runs)

    def model_time_unit_s(self, scheme=None):
        """Simulation: seconds per unit of model time (`straggler.time_unit_ms` / 1000)."""
        scheme = scheme or next(iter(self.scheme_attrs), None)
        v = self.scheme_attrs.get(scheme, {}).get("model_time_unit_s")
        return None if v is None else float(v)

    def run(self, scheme=None, trial=None):
        """One Run: the training run, or a trial (default 0) of a scheme (default the first)."""
        scheme = scheme or self.schemes[0]
        (_, runs), = self.select(scheme, 0 if trial is None and self.kind == "simulation" else trial)
        if not runs:
            raise TraceError(f"{self.path}: scheme {scheme} has no trial")
        return runs[0]

    def values_at(self, name, iteration, scheme=None):
        """The value of the iteration/ dataset `name` at the 1-based `iteration` in every
        run of `scheme` (default the first), as a float array: a simulation's trials in
        order (trial k at index k), a training trace's one run."""
        scheme = scheme or self.schemes[0]
        (_, runs), = self.select(scheme)
        values = []
        for r in runs:
            column = r.columns.get(name)
            if column is None:
                raise TraceError(f"{self.path}: scheme {scheme} has no dataset iteration/{name}")
            if not 1 <= iteration <= r.iterations:
                raise TraceError(f"{self.path}: scheme {scheme} has no iteration {iteration} (1..{r.iterations})")
            values.append(float(column[iteration - 1]))
        return np.array(values)

    def select(self, scheme=None, trial=None):
        """[(label, [runs])]: every scheme, or one scheme, or one trial of it."""
        if scheme is None:
            return list(self.runs.items())
        if scheme not in self.runs:
            raise TraceError(f"{self.path}: no scheme {scheme} (has {', '.join(self.runs)})")
        runs = self.runs[scheme]
        if trial is None:
            return [(scheme, runs)]
        if not 0 <= trial < len(runs):
            raise TraceError(f"{self.path}: scheme {scheme} has no trial {trial} (0..{len(runs) - 1})")
        return [(f"{scheme} trial {trial}", [runs[trial]])]

    def _all(self):
        return [r for runs in self.runs.values() for r in runs]

    def iterations(self):
        """The iteration/ datasets as one DataFrame. Index: `iteration`
        (1-based); a simulation: (`scheme`, `trial`, `iteration`)."""
        if self.kind == "train":
            return self._all()[0].frame()
        frames = [r.frame().assign(scheme=r.scheme, trial=r.trial) for r in self._all()]
        if not frames:
            return pd.DataFrame()
        return pd.concat(frames).reset_index().set_index(["scheme", "trial", "iteration"])

    def workers_frame(self):
        """The worker/ datasets in long form. Index: (`iteration`, `worker`),
        both 1-based; a simulation: (`scheme`, `trial`, `iteration`, `worker`)."""
        if self.kind == "train":
            return self._all()[0].worker_frame()
        frames = [r.worker_frame().assign(scheme=r.scheme, trial=r.trial) for r in self._all()]
        if not frames:
            return pd.DataFrame()
        return pd.concat(frames).reset_index().set_index(["scheme", "trial", "iteration", "worker"])

    def to_xarray(self):
        """The trace as an xarray Dataset.

        Training trace: dimensions `iteration` and `worker` (1-based
        coordinates), plus `event` (`/timing/`: `timing_total_s`,
        `timing_count`) and `parameter` (`theta`) when present.
        Simulation: dimensions `scheme` (names, in order), `trial` (0-based,
        as `trial_<k>`), `iteration`, `worker`; trials shorter than the
        longest are padded with NaN (their columns become float) and
        `iterations` (scheme, trial) says how many rows each has.
        Attributes: the root attributes (strings and numbers, as in the
        file); each variable has its `unit` and `description`.
        """
        attrs = {k: v for k, v in self.attrs.items() if isinstance(v, (str, int, float))}
        if self.kind == "train":
            ds = self._all()[0].to_xarray()
            if self.timing is not None:
                ds = ds.assign(
                    timing_total_s=("event", self.timing["total_s"].to_numpy(), {"unit": "s"}),
                    timing_count=("event", self.timing["count"].to_numpy(), {"unit": "count"}),
                ).assign_coords(event=self.timing["event"].to_numpy(dtype=object))
            if self.theta is not None:
                ds = ds.assign(theta=("parameter", self.theta, {"description": "/model/theta"}))
            ds.attrs.update(attrs)
            return ds
        runs = self._all()
        schemes = self.schemes
        trials = max((len(v) for v in self.runs.values()), default=0)
        n = max((r.iterations for r in runs), default=0)
        k = max((r.workers for r in runs), default=self.workers or 0)
        rows = np.zeros((len(schemes), trials), dtype=np.int64)
        for r in runs:
            rows[schemes.index(r.scheme), r.trial] = r.iterations
        padded = bool((rows != n).any())
        data = {}
        for attr, dims in (("columns", ("iteration",)), ("worker_columns", ("iteration", "worker"))):
            names = []
            for r in runs:
                names += [c for c in getattr(r, attr) if c not in names]
            for name in names:
                sample = next(getattr(r, attr)[name] for r in runs if name in getattr(r, attr))
                dtype = float if padded or any(name not in getattr(r, attr) for r in runs) else sample.dtype
                shape = (len(schemes), trials, n) + ((k,) if len(dims) == 2 else ())
                out = np.full(shape, np.nan) if dtype is float else np.zeros(shape, dtype=dtype)
                for r in runs:
                    if name in getattr(r, attr):
                        out[schemes.index(r.scheme), r.trial, : r.iterations] = getattr(r, attr)[name]
                unit_of = next(r for r in runs if name in getattr(r, attr))
                data[name] = (("scheme", "trial") + dims, out, unit_of._attrs(name))
        data["iterations"] = (("scheme", "trial"), rows, {"description": "rows of each trial"})
        data["model_time_unit_s"] = (
            "scheme",
            np.array([self.model_time_unit_s(s) or np.nan for s in schemes], dtype=float),
            {"unit": "s", "description": "seconds per unit of model time"},
        )
        coords = {
            "scheme": np.array(schemes, dtype=object),
            "trial": np.arange(trials),
            "iteration": np.arange(1, n + 1),
            "worker": np.arange(1, k + 1),
        }
        ds = xr.Dataset(data, coords=coords)
        ds.attrs.update(attrs)
        return ds


def open_trace(path):
    """Read a gradcode trace file (training or simulation) into a `Trace`."""
    return Trace(path)
