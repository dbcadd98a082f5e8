"""python -m gradcode_traces compare RESULTS_DIR [--csv OUT.csv]: the comparison table of a results folder."""

import argparse
import sys

from .table import compare, markdown
from .trace import TraceError


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m gradcode_traces", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compare", help="one table over every run (*.h5) below a results folder")
    c.add_argument("results", metavar="RESULTS_DIR")
    c.add_argument("--csv", metavar="OUT", help="also write the table as CSV")
    args = ap.parse_args(argv)
    errors = []
    try:
        table = compare(args.results, errors=errors)
    except TraceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(markdown(table))
    if args.csv:
        table.to_csv(args.csv, index=False)
    for e in errors:
        print(f"unreadable: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
