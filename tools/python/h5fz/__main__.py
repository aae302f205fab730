"""python -m h5fz compare A B [--plot out.png]: see h5fz.compare."""

import argparse
import sys

from ._compare import compare, format_table


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m h5fz", description="H5Z-FZ helpers")
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compare", help="per dataset: max abs and rel error, PSNR, ratio of two HDF5 files")
    c.add_argument("a", help="the original file")
    c.add_argument("b", help="the compressed (reconstructed) file")
    c.add_argument("--plot", help="write a PNG: a slice of A, of B, their difference, the error histogram")
    args = ap.parse_args(argv)
    try:
        results = compare(args.a, args.b, plot=args.plot)
    except (OSError, ValueError, RuntimeError) as e:
        print("h5fz compare: %s" % e, file=sys.stderr)
        return 1
    print(format_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
