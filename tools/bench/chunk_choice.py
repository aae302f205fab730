#!/usr/bin/env python3
"""What the chunk shape costs: h5py's default chunks against h5fz.chunks().

A benchmark program, not a test: it prints a markdown table (recorded in
docs/PERFORMANCE.md and quoted in the README's "Choosing chunks"). Each real
field is written through h5py with H5Z-FZ twice, once with chunks=True
(h5py's own guess, the shape users get when they give a compression filter
and no chunks) and once with chunks=h5fz.chunks(shape, dtype) (the
project's rule, 4 MiB), into files in memory; ratio is the field's bytes over
the dataset's storage size; write and read figures are the best of --reps,
MB/s of uncompressed data (1e6 bytes), on this machine's CPU unless
H5Z_FZ_DEVICE says otherwise (printed). NOA bounds, so every chunk has its
own value range: the advice changes the ratio also through that. Every read
is checked against the bound (exit 1 if broken).

    python3 tools/bench/chunk_choice.py --plugin-dir build/plugin [--reps 3] [--fields a,b] [--presets p@b,...]
"""

import argparse
import io
import os
import platform
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools", "python"))
import h5fz  # noqa: E402

FIELDS = {  # file: (shape, dtype)
    "wmag91.float": ((91, 91, 91), "<f4"),
    "999x999.float": ((999, 999), "<f4"),
    "vorticity.512_512": ((512, 512), "<f4"),
    "vorticity.128_128_41": ((41, 128, 128), "<f4"),
    "pressure.384_384.f64": ((384, 384), "<f8"),
}
PRESETS = ["lossless", "fzgpu@1e-3", "cusz@1e-4", "cuszhi-cr@1e-3", "cuszhi-tp@1e-3"]


def opts(spec):
    name, _, bound = spec.partition("@")
    return h5fz.compression_opts(name, "noa", float(bound)) if bound else h5fz.compression_opts(name)


def run(h5py, field, spec, chunks, reps):
    best_w = best_r = float("inf")
    for _ in range(reps):
        buf = io.BytesIO()
        t0 = time.perf_counter()
        with h5py.File(buf, "w") as f:
            d = f.create_dataset("x", data=field, chunks=chunks, compression=h5fz.FILTER_ID,
                                 compression_opts=opts(spec))
            shape = d.chunks
        best_w = min(best_w, time.perf_counter() - t0)
        t0 = time.perf_counter()
        with h5py.File(buf, "r") as f:
            back = f["x"][()]
            stored = f["x"].id.get_storage_size()
        best_r = min(best_r, time.perf_counter() - t0)
    return shape, stored, best_w, best_r, back


def check(field, back, spec, shape):
    name, _, bound = spec.partition("@")
    if not bound:
        return np.array_equal(field.view(np.uint8), back.view(np.uint8))
    x = field.astype(np.float64)
    y = back.astype(np.float64)
    # NOA: the bound times each chunk's own finite range.
    grid = [range(0, n, c) for n, c in zip(field.shape, shape)]
    import itertools
    for corner in itertools.product(*grid):
        sl = tuple(slice(c, c + s) for c, s in zip(corner, shape))
        xc = x[sl]
        eb = float(bound) * (xc.max() - xc.min())
        if np.any(np.abs(xc - y[sl]) > eb):
            return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plugin-dir", help="folder holding libH5Zfz.so")
    ap.add_argument("--data", default=os.environ.get("FZ_DATA", os.path.join(REPO, "..", "shared", "data")))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--fields", default=",".join(FIELDS))
    ap.add_argument("--presets", default=",".join(PRESETS))
    a = ap.parse_args()
    if a.plugin_dir:
        os.environ["HDF5_PLUGIN_PATH"] = os.path.abspath(a.plugin_dir)
    import h5py
    h5fz.register(h5py)
    print("chunk_choice: %s, %d CPUs, h5py %s (HDF5 %s), H5Z_FZ_DEVICE=%s, best of %d" % (
        platform.machine(), os.cpu_count(), h5py.version.version, h5py.version.hdf5_version,
        os.environ.get("H5Z_FZ_DEVICE", "unset"), a.reps))
    print()
    print("| field | preset | h5py's chunks | ratio | write MB/s | read MB/s | h5fz.chunks | ratio | write MB/s | read MB/s |")
    print("|---|---|---|---:|---:|---:|---|---:|---:|---:|")
    failed = 0
    for name in a.fields.split(","):
        shape, dtype = FIELDS[name]
        field = np.fromfile(os.path.join(a.data, name), dtype=dtype).reshape(shape)
        mb = field.nbytes / 1e6
        for spec in a.presets.split(","):
            cells = []
            for chunks in (True, h5fz.chunks(shape, field.dtype)):
                got, stored, w, r, back = run(h5py, field, spec, chunks, a.reps)
                if not check(field, back, spec, got):
                    failed += 1
                    print("BOUND BROKEN: %s %s chunks %s" % (name, spec, got), file=sys.stderr)
                cells.append("%s | %.2f | %.0f | %.0f" % ("x".join(map(str, got)), field.nbytes / stored, mb / w,
                                                           mb / r))
            print("| %s | %s | %s | %s |" % (name, spec, cells[0], cells[1]))
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
