#!/usr/bin/env python3
"""SZ3's ratios (through hdf5plugin, one chunk per field) on the real fields at
value-range-relative bounds 1e-2, 1e-3, 1e-4, and its largest error as a share
of the bound: the reference the spline presets (issue 14) are measured against.
Prints a markdown table. Usage: python3 tools/bench/sz3_ratios.py [--data DIR]
"""
import argparse
import io
import os

import h5py
import hdf5plugin
import numpy as np

FIELDS = [("wmag91.float", (91, 91, 91), "<f4"), ("999x999.float", (999, 999), "<f4"),
          ("vorticity.128_128_41", (41, 128, 128), "<f4"), ("vorticity.512_512", (512, 512), "<f4"),
          ("pressure.384_384.f64", (384, 384), "<f8")]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.environ.get("FZ_DATA", os.path.join(here, "..", "..", "..", "shared", "data")))
    args = parser.parse_args()
    print("hdf5plugin %s (SZ3), h5py %s; one chunk per field\n" % (hdf5plugin.version, h5py.__version__))
    print("| field | NOA | SZ3 ratio | max error / bound |\n|---|---:|---:|---:|")
    for name, shape, dtype in FIELDS:
        a = np.fromfile(os.path.join(args.data, name), dtype=dtype).reshape(shape)
        value_range = float(a.max()) - float(a.min())
        for rel in (1e-2, 1e-3, 1e-4):
            buffer = io.BytesIO()
            with h5py.File(buffer, "w") as f:
                d = f.create_dataset("x", data=a, chunks=a.shape, **hdf5plugin.SZ3(relative=rel))
                stored = d.id.get_storage_size()
            with h5py.File(buffer, "r") as f:
                b = f["x"][()]
            worst = float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max()) / (rel * value_range)
            print("| %s | %g | %.2f | %.3f |" % (name, rel, a.nbytes / stored, worst))


if __name__ == "__main__":
    main()
