"""python -m gradcode_traces compare RESULTS_DIR [--csv OUT.csv]: the comparison table of a results folder."""

import argparse
import os
import pathlib
import stat
import sys
import tempfile

import h5py

from .table import compare, file_id, file_kind, markdown
from .trace import TraceError


def inputs(results_dir):
    """Every file `compare` reads below results_dir, as (what, path): the traces (each name of a file),
    the run.txt beside them and the summary.json of sweep runs."""
    root = pathlib.Path(results_dir)
    traces, summaries = sorted(root.rglob("*.h5")), sorted(root.rglob("summary.json"))
    return ([("trace", p) for p in traces] + [("sweep summary", p) for p in summaries]
            + [("run label", p.parent / "run.txt") for p in traces + summaries])


def check_csv(out, read):
    """Why the table may not be written to `out`, in words (None when it may): `out` is one of
    `read` ((what, path): the inputs; the same file: device and inode, so a hard or symbolic link counts),
    an existing HDF5 file, anything but a regular file, or in a folder that does not exist.
    Nothing is created."""
    path = pathlib.Path(out)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        folder = path.parent
        if folder.is_dir():
            return None
        return f"cannot create {out}: the folder {folder} does not exist (it is not created)"
    except OSError as e:
        return f"{out}: {e.strerror}"
    if not stat.S_ISREG(st.st_mode):
        return f"{out} is {file_kind(st.st_mode)}: the table is written only over a regular file; it was not touched"
    for what, p in read:
        if file_id(p) == (st.st_dev, st.st_ino):
            return f"{out} is this command's {what} ({p}): an output never replaces an input; it was not touched"
    if h5py.is_hdf5(path):
        return f"{out} is an HDF5 file (a trace?): the table never replaces one; it was not touched"
    return None


def write_replacing(out, text):
    """Write `text` to a new file beside `out`, then rename it over `out`: a run killed in the middle, or a
    full disk, leaves the old `out` (or none) as it was, never half a table."""
    path = pathlib.Path(out)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temporary, 0o666 & ~current_umask())
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def current_umask():
    """The process's umask (read by setting it and setting it back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m gradcode_traces", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compare", help="one table over every run (*.h5) below a results folder")
    c.add_argument("results", metavar="RESULTS_DIR")
    c.add_argument("--csv", metavar="OUT", help="also write the table as CSV (never over a trace)")
    args = ap.parse_args(argv)
    # Every check first: nothing is written on a refusal.
    if args.csv and pathlib.Path(args.results).is_dir():
        why = check_csv(args.csv, inputs(args.results))
        if why:
            print(f"error: --csv: {why}", file=sys.stderr)
            return 2
    errors, same = [], []
    try:
        table = compare(args.results, errors=errors, same=same)
    except TraceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.csv:
        try:
            write_replacing(args.csv, table.to_csv(index=False))
        except OSError as e:
            print(f"error: --csv: cannot write {args.csv}: {e.strerror}", file=sys.stderr)
            return 2
    print(markdown(table))
    for first, repeat in same:
        print(f"same file: {repeat} is {first} (the same device and inode): counted once", file=sys.stderr)
    for e in errors:
        print(f"unreadable: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
