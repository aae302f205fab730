#!/usr/bin/env python3
"""h5py read MB/s of NOA and ABS datasets through several builds of the plugin.

What the filter's NOA frame check (filter/frame_check.cpp, a pass over every
decoded NOA chunk) costs a read: the same file is read through each plugin
folder given, one process per folder and round (HDF5 reads
HDF5_PLUGIN_PATH once), rounds interleaved so that a busy machine slows
every build alike. Prints the best and the median MB/s per dataset and
build. Datasets, 143 MB float32 each in 4 MiB chunks (16 x 256 x 256):
wmag91 tiled (positive values), at fzgpu NOA 1e-3, cuszhi-cr NOA 1e-3 and
fzgpu ABS 0.1 (no check: the control); vorticity.128_128_41 tiled (values
either side of 0) at fzgpu and cuszhi-cr NOA 1e-3.

  H5Z_FZ_THREADS=2 python3 tools/bench/noa_check_bench.py --data ../shared/data \\
      --rounds 10 /path/to/old/plugin /path/to/new/plugin

The file is written with the first folder's plugin.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def write(path, data_dir):
    import numpy as np
    import h5py
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    import h5fz

    w = np.fromfile(os.path.join(data_dir, "wmag91.float"), dtype="<f4").reshape(91, 91, 91)
    x = np.tile(w, (6, 3, 3))[:, :256, :256].copy()  # 546 x 256 x 256 = 143 MB
    v = np.fromfile(os.path.join(data_dir, "vorticity.128_128_41"), dtype="<f4").reshape(41, 128, 128)
    y = np.tile(v, (14, 2, 2))[:546].copy()
    with h5py.File(path, "w") as f:
        for name, preset, mode, bound, data in [("wmag-fzgpu-noa", "fzgpu", "noa", 1e-3, x),
                                                ("wmag-cuszhi-cr-noa", "cuszhi-cr", "noa", 1e-3, x),
                                                ("wmag-fzgpu-abs", "fzgpu", "abs", 0.1, x),
                                                ("vort-fzgpu-noa", "fzgpu", "noa", 1e-3, y),
                                                ("vort-cuszhi-cr-noa", "cuszhi-cr", "noa", 1e-3, y)]:
            f.create_dataset(name, data=data, chunks=(16, 256, 256), compression=32850,
                             compression_opts=h5fz.compression_opts(preset, mode, bound))


def read(path, reps):
    # No h5fz import here: importing it may register a plugin of its own.
    import h5py
    with h5py.File(path, "r") as f:
        for name in f:
            best = float("inf")
            for _ in range(reps):
                t = time.perf_counter()
                a = f[name][()]
                best = min(best, time.perf_counter() - t)
            print("%s %.1f" % (name, a.nbytes / best / 1e6))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("plugins", nargs="*", help="plugin folders to compare")
    ap.add_argument("--data", default=os.path.join(HERE, "..", "..", "..", "shared", "data"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5, help="reads per dataset and process (best kept)")
    ap.add_argument("--read", help=argparse.SUPPRESS)
    ap.add_argument("--write", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.write:
        write(args.write, args.data)
        return
    if args.read:
        read(args.read, args.reps)
        return
    if not args.plugins:
        ap.error("give at least one plugin folder")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "noa_check_bench.h5")
        env = dict(os.environ, HDF5_PLUGIN_PATH=args.plugins[0])
        subprocess.run([sys.executable, __file__, "--data", args.data, "--write", path], env=env, check=True)
        figures = {}
        for _ in range(args.rounds):
            for plugin in args.plugins:
                env = dict(os.environ, HDF5_PLUGIN_PATH=plugin)
                out = subprocess.run([sys.executable, __file__, "--read", path, "--reps", str(args.reps)], env=env,
                                     check=True, capture_output=True, text=True).stdout
                for line in out.splitlines():
                    name, mbs = line.split()
                    figures.setdefault(name, {}).setdefault(plugin, []).append(float(mbs))
    print("H5Z_FZ_THREADS=%s, %d rounds x best of %d reads; MB/s best (median)" %
          (os.environ.get("H5Z_FZ_THREADS", "unset"), args.rounds, args.reps))
    for i, plugin in enumerate(args.plugins):
        print("  [%d] %s" % (i, plugin))
    print("%-20s" % "dataset" + "".join("%18s" % ("[%d]" % i) for i in range(len(args.plugins))))
    for name, per in figures.items():
        print("%-20s" % name + "".join("%10.0f (%5.0f)" % (max(per[p]), statistics.median(per[p]))
                                       for p in args.plugins))


if __name__ == "__main__":
    main()
