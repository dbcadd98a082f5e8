"""Read gradcode HDF5 traces into pandas and xarray.

    import gradcode_traces as gt
    t = gt.open_trace("results/gc-sc-20261126T190312Z.h5")  # training or simulation trace
    t.iterations()                            # DataFrame, a row per iteration
    t.workers_frame()                         # DataFrame, a row per (iteration, worker)
    t.to_xarray()                             # Dataset, dims iteration, worker (+ scheme, trial)
    t.config["scheme"]["kind"], t.status, t.provenance["git_commit"]
    gt.compare("results/gradcode-sweep-17/")  # one table over every run of a folder
    gt.compare_traces(["a.h5", "b.h5"], target_loss=0.1)  # `gradcode compare`: speedups over a baseline

See python/README.md.
"""

from .table import compare, markdown, run_label
from .speedup import compare_traces
from .summary import accuracy, distribution, even_fraction, reach, summarize
from .trace import PROVENANCE_KEYS, Run, Trace, TraceError, TraceWarning, open_trace

__all__ = [
    "PROVENANCE_KEYS", "Run", "Trace", "TraceError", "TraceWarning", "accuracy", "compare", "compare_traces",
    "distribution", "even_fraction", "markdown", "open_trace", "reach", "run_label", "summarize",
]
__version__ = "0.1.0"
