#!/usr/bin/env python3
"""xarray reads of an H5Z-FZ variable: engine="h5netcdf" (HDF5's
one-chunk-at-a-time filter) against engine="h5fz" (h5fz.read: many chunks
decoded at once), in one run (issue 33's xarray target: >= 2x).

A benchmark program, not a test: it prints a markdown table (recorded in
docs/PERFORMANCE.md). A float32 field (wmag91 tiled by mirroring, as
h5py_bench.py makes it; --gib of it) is written once per preset into a
netCDF-4 file with xarray (h5netcdf) in --chunk-mib chunks of whole planes,
then ``xr.open_dataset(path, engine=...).load()`` is timed in a child process
of its own per read (the file in the page cache: every read after the
first), best of --reps, and the values compared.

    python3 tools/bench/xarray_bench.py [--plugin-dir build/plugin] [--gib 1] [--chunk-mib 4]
        [--presets fzgpu,cuszhi-cr] [--bound 1e-3] [--reps 3] [--dir /tmp]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from write_bench import field_arguments, field_layout  # noqa: E402  (it puts the clone's tools/python on the path)
from h5py_bench import PLANE, tiled_field, find_plugin_dir, cpu_model  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
field_arguments(parser)
parser.add_argument("--presets", default="fzgpu,cuszhi-cr")
parser.add_argument("--reps", type=int, default=3)
parser.add_argument("--child", default=None, help=argparse.SUPPRESS)  # engine,path


def child(args):
    """One open_dataset(...).load() in this process: prints {"seconds", "sum"}."""
    import xarray as xr
    engine, path = args.child.split(",", 1)
    if engine == "h5fz":
        from h5fz._xarray import H5FZBackendEntrypoint  # (the clone's package, not an installed one)
        engine = H5FZBackendEntrypoint
    start = time.perf_counter()
    ds = xr.open_dataset(path, engine=engine).load()
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "sum": float(ds["t"].values.astype(np.float64).sum())}))


def timed(args, engine, path):
    best = None
    for _ in range(args.reps):
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "%s,%s" % (engine, path)],
                             check=True, capture_output=True, text=True)
        result = json.loads(out.stdout.strip().splitlines()[-1])
        best = result if best is None or result["seconds"] < best["seconds"] else best
    return best


def main():
    args = parser.parse_args()
    os.environ["HDF5_PLUGIN_PATH"] = find_plugin_dir(args.plugin_dir)
    if args.child:
        return child(args)
    import h5py
    import xarray as xr
    import h5fz
    plane_bytes, planes, chunk_planes = field_layout(args)
    field = np.ascontiguousarray(tiled_field(args.data, planes))
    raw_mb = field.nbytes / 1e6
    folder = tempfile.mkdtemp(prefix="fz-xarray-", dir=args.dir)
    print("# xarray open_dataset(...).load(): %.0f MB float32 (%d x %d x %d), chunks %d x %d x %d (%.1f MiB), "
          "NOA %g; best of %d, each in a child process, the file in the page cache"
          % (raw_mb, planes, PLANE[0], PLANE[1], chunk_planes, PLANE[0], PLANE[1],
             chunk_planes * plane_bytes / 2 ** 20, args.bound, args.reps))
    print("# host: %s, %d cores; xarray %s, h5py %s, HDF5 %s" % (cpu_model(), os.cpu_count(), xr.__version__,
                                                                 h5py.version.version, h5py.version.hdf5_version))
    print()
    print("| preset | engine | seconds | MB/s | vs h5netcdf | same values |")
    print("|---|---|---|---|---|---|")
    for preset in args.presets.split(","):
        path = os.path.join(folder, preset + ".nc")
        xr.Dataset({"t": (("z", "y", "x"), field)}).to_netcdf(path, engine="h5netcdf", encoding={
            "t": {"chunksizes": (chunk_planes,) + PLANE, **h5fz.FZ(preset=preset, noa=args.bound)}})
        timed(args, "h5netcdf", path)  # the file into the page cache
        ref = timed(args, "h5netcdf", path)
        got = timed(args, "h5fz", path)
        print("| %s | h5netcdf (HDF5's filter, a chunk at a time) | %.2f | %.0f | 1.00x | |"
              % (preset, ref["seconds"], raw_mb / ref["seconds"]))
        print("| %s | h5fz (h5fz.read) | %.2f | %.0f | **%.2fx** | %s |"
              % (preset, got["seconds"], raw_mb / got["seconds"], ref["seconds"] / got["seconds"],
                 "yes" if got["sum"] == ref["sum"] else "**no**"))
        os.remove(path)
    os.rmdir(folder)


if __name__ == "__main__":
    main()
