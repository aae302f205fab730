#!/usr/bin/env python3
"""Host memory of h5fz.write from a host array by threads (issue 32's bound:
about three groups of frames and one group of chunks beyond the array): a
program's second write in a process (the first pays the CUDA context and the
plugin's start), its peak resident memory beyond what the process held just
before it (VmHWM reset through /proc/self/clear_refs), and its time, for
each preset and `threads` (the engine's workers, and so the chunks in flight
at once: on the GPU path one lane each).

A benchmark program, not a test: it prints a markdown table (recorded in
docs/PERFORMANCE.md). Each row runs in a fresh process.

    python3 tools/bench/write_memory.py [--plugin-dir build/plugin] [--gib 1] [--chunk-mib 4] [--bound 1e-3]
        [--dir /tmp] [--presets fzgpu,cuszhi-cr] [--threads 1,4,16] [--device auto]
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
from write_bench import field_arguments, field_layout, memory_kib  # noqa: E402  (it puts the clone's tools/python on the path)
from h5py_bench import PLANE, tiled_field, find_plugin_dir  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
field_arguments(parser)
parser.add_argument("--presets", default="fzgpu,cuszhi-cr")
parser.add_argument("--threads", default="1,4,16")
parser.add_argument("--device", default="auto")
parser.add_argument("--child", default=None, help=argparse.SUPPRESS)  # preset,threads,path


def child(args):
    import h5py
    import h5fz
    preset, threads, path = args.child.split(",", 2)
    plane_bytes, planes, chunk_planes = field_layout(args)
    array = np.ascontiguousarray(tiled_field(args.data, planes))

    def one_write():
        start = time.perf_counter()
        with h5py.File(path, "w") as f:
            d = f.create_dataset("field", shape=array.shape, dtype="f4", chunks=(chunk_planes,) + PLANE,
                                 **h5fz.FZ(preset=preset, noa=args.bound))
            h5fz.write(d, array, threads=int(threads), device=args.device)
        return time.perf_counter() - start

    one_write()
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # VmHWM back to the current RSS
    rss = memory_kib("VmRSS")
    seconds = one_write()
    print(json.dumps({"seconds": seconds, "extra_mib": (memory_kib("VmHWM") - rss) / 1024,
                      "rss_mib": rss / 1024}))


def main():
    args = parser.parse_args()
    os.environ["HDF5_PLUGIN_PATH"] = find_plugin_dir(args.plugin_dir)
    if args.child:
        return child(args)
    plane_bytes, _, chunk_planes = field_layout(args)
    chunk_mib = chunk_planes * plane_bytes / 2 ** 20
    folder = tempfile.mkdtemp(prefix="fz-write-memory-", dir=args.dir)
    path = os.path.join(folder, "w.h5")
    print("# h5fz.write of %.2f GiB float32 from host memory, %.1f MiB chunks, NOA %g, device %s; the second write "
          "in a fresh process" % (args.gib, chunk_mib, args.bound, args.device))
    print()
    print("| preset | threads | seconds | extra host memory, MiB | in chunks of %.1f MiB | process before it, MiB |"
          % chunk_mib)
    print("|---|---|---|---|---|---|")
    for preset in args.presets.split(","):
        for threads in args.threads.split(","):
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child",
                                  "%s,%s,%s" % (preset, threads, path), "--gib", str(args.gib), "--chunk-mib",
                                  str(args.chunk_mib), "--bound", str(args.bound), "--data", args.data,
                                  "--device", args.device], check=True, capture_output=True, text=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print("| %s | %s | %.3f | %.0f | %.1f | %.0f |" % (preset, threads, r["seconds"], r["extra_mib"],
                                                             r["extra_mib"] / chunk_mib, r["rss_mib"]))
    os.remove(path)
    os.rmdir(folder)


if __name__ == "__main__":
    main()
