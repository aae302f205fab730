#!/usr/bin/env python3
"""Where one h5fz.write spends its time (issue 32's speed targets).

A profile, not a benchmark: the field of write_bench.py (1 GiB float32,
wmag91 mirrored, 4 MiB chunks, NOA 1e-3) is written once to warm up and once
under cProfile, from host memory or (--gpu, needs CuPy) from GPU memory.
Prints the wall time, then the calls that took the most time in the calling
thread (cumulative and own), where the ctypes call into the plugin is the
encoding, CuPy's calls the building of chunks on the GPU, and waiting on the
writer thread's future the storing (write_direct_chunk), which runs beside.

    python3 tools/bench/write_profile.py [--plugin-dir build/plugin] [--gib 1] [--chunk-mib 4]
        [--preset fzgpu] [--bound 1e-3] [--gpu] [--device auto] [--top 25] [--dir /tmp]
"""

import argparse
import cProfile
import io
import os
import pstats
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from h5py_bench import PLANE, tiled_field, find_plugin_dir  # noqa: E402
from write_bench import field_arguments, field_layout  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
field_arguments(parser)
parser.add_argument("--preset", default="fzgpu")
parser.add_argument("--gpu", action="store_true", help="write a CuPy array")
parser.add_argument("--device", default=None, help="h5fz.write's device= (default: where the data is)")
parser.add_argument("--top", type=int, default=25)


def main():
    args = parser.parse_args()
    os.environ["HDF5_PLUGIN_PATH"] = find_plugin_dir(args.plugin_dir)
    import h5py
    import h5fz
    plane_bytes, planes, chunk_planes = field_layout(args)
    array = np.ascontiguousarray(tiled_field(args.data, planes))
    if args.gpu:
        import cupy
        array = cupy.asarray(array)
        cupy.cuda.runtime.deviceSynchronize()
    folder = tempfile.mkdtemp(prefix="fz-profile-", dir=args.dir)
    path = os.path.join(folder, "w.h5")

    def write():
        """One write into a new file (the last one removed first, untimed:
        overwriting it would time the freeing of its pages too)."""
        if os.path.exists(path):
            os.remove(path)
        start = time.perf_counter()
        with h5py.File(path, "w") as f:
            d = f.create_dataset("field", shape=array.shape, dtype="f4", chunks=(chunk_planes,) + PLANE,
                                 **h5fz.FZ(preset=args.preset, noa=args.bound))
            h5fz.write(d, array, device=args.device)
        return time.perf_counter() - start

    warm = write()
    profile = cProfile.Profile()
    profile.enable()
    seconds = write()
    profile.disable()
    print("# %s, %.0f MB %s array, chunks of %d planes (%.1f MiB), device=%s: warm-up %.3f s, profiled %.3f s"
          % (args.preset, array.nbytes / 1e6, "GPU" if args.gpu else "host", chunk_planes,
             chunk_planes * plane_bytes / 2 ** 20, args.device, warm, seconds))
    for key in ("cumulative", "tottime"):
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats(key).print_stats(args.top)
        print("\n## by %s\n" % key)
        print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[:6000])
    os.remove(path)
    os.rmdir(folder)


if __name__ == "__main__":
    main()
