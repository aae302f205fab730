#!/usr/bin/env python3
"""Writes of a dataset through HDF5's one-chunk-at-a-time filter against
h5fz.write (issue 32), in one run.

A benchmark program, not a test: it prints a markdown table (recorded in
docs/PERFORMANCE.md). A 1 GiB float32 field (wmag91 tiled by mirroring, as
h5py_bench.py makes it) is written, per preset, into a new file in 4 MiB
chunks of whole planes:

- h5py, uncompressed (the floor: HDF5 and the page cache alone);
- h5py through the filter (``dataset[...] = x``: HDF5 calls the filter chunk
  by chunk, threads as H5Z_FZ_THREADS says);
- h5fz.write (chunks encoded many at once, stored with write_direct_chunk;
  on all cores, or under the default device "auto" on the GPU where one is
  usable);
- with --gpu (needs CuPy and a GPU), the field in GPU memory first: h5py
  through the filter of ``cupy.asnumpy(x)`` (the copy timed with it), and
  h5fz.write of the CuPy array (encoded on the GPU, only frames to the host);
- HDF5 alone: the filter's frames of the same chunks, read into memory
  before the clock starts, stored with write_direct_chunk into a new file.
  No write around the filter can be faster than storing its frames, so this
  row is the ceiling on h5fz.write's speed-up.

Each is timed from creating the file to closing it, in a child process of
its own, twice, each time into a new file (removing the first, untimed,
before the second): the first write in the process (it pays the start-up:
the CUDA context, the plugin's and CuPy's first use) and a second one (what
each further write of a long-running program costs); best of --reps for
each. The
peak memory the writes added to the process (VmHWM after them, its peak
reset just before, minus VmRSS then) is the child's too. The two compressed
files are compared chunk by chunk (the same frames) and their values read
back.

    python3 tools/bench/write_bench.py [--plugin-dir build/plugin] [--gib 1] [--chunk-mib 4]
        [--presets fzgpu,cuszhi-cr] [--bound 1e-3] [--reps 3] [--dir /tmp] [--gpu]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tools", "python"))
sys.path.insert(0, HERE)
import h5fz  # noqa: E402
from h5py_bench import PLANE, tiled_field, find_plugin_dir, cpu_model  # noqa: E402



def field_arguments(parser):
    """The written field's options (write_profile.py takes them too)."""
    parser.add_argument("--plugin-dir", default=None)
    parser.add_argument("--data", default=os.environ.get("FZ_DATA", os.path.join(REPO, "..", "shared", "data")))
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--chunk-mib", type=int, default=4)
    parser.add_argument("--bound", type=float, default=1e-3)
    parser.add_argument("--dir", default=None)


def field_layout(args):
    """(bytes of a plane, planes of the field, planes of a chunk) for the options of field_arguments."""
    plane_bytes = PLANE[0] * PLANE[1] * 4
    planes = int(args.gib * (1 << 30)) // plane_bytes
    return plane_bytes, planes, max(1, (args.chunk_mib << 20) // plane_bytes)


parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
field_arguments(parser)
parser.add_argument("--presets", default="fzgpu,cuszhi-cr")
parser.add_argument("--reps", type=int, default=3)
parser.add_argument("--gpu", action="store_true", help="also write from GPU memory (CuPy)")
parser.add_argument("--child", default=None, help=argparse.SUPPRESS)   # method,preset,path
parser.add_argument("--source", default=None, help=argparse.SUPPRESS)  # the frames' file (method "frames")


def memory_kib(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def child(args):
    """One write in this process: prints {"seconds", "extra_mib"} as JSON."""
    import h5py
    method, preset, path = args.child.split(",", 2)
    plane_bytes, planes, chunk_planes = field_layout(args)
    array = np.ascontiguousarray(tiled_field(args.data, planes))
    if method.startswith("gpu-"):
        import cupy
        array = cupy.asarray(array)
        cupy.cuda.runtime.deviceSynchronize()
    kwargs = {} if method == "plain" else dict(h5fz.FZ(preset=preset, noa=args.bound))
    frames = []
    if method == "frames":  # the filter's frames, in memory before the clock starts
        with h5py.File(args.source, "r") as source:
            d = source["field"]
            for i in range(d.id.get_num_chunks()):
                offset = d.id.get_chunk_info(i).chunk_offset
                frames.append((offset, d.id.read_direct_chunk(offset)[1]))
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")  # resets VmHWM to the current RSS
    except OSError:
        pass
    rss = memory_kib("VmRSS")

    def one_write(target):
        start = time.perf_counter()
        with h5py.File(target, "w") as f:
            d = f.create_dataset("field", shape=array.shape, dtype="f4", chunks=(chunk_planes,) + PLANE, **kwargs)
            if method == "frames":
                for offset, frame in frames:
                    d.id.write_direct_chunk(offset, frame, filter_mask=0)
            elif method in ("write", "gpu-write"):
                h5fz.write(d, array)
            elif method == "gpu-filter":
                import cupy
                d[...] = cupy.asnumpy(array)
            else:
                d[...] = array
        return time.perf_counter() - start

    # The first write in a process pays its start-up (the CUDA context, the
    # plugin's and CuPy's first use); the second is what each further write
    # of a long-running program costs.
    cold = one_write(path + ".first")
    os.remove(path + ".first")
    warm = one_write(path)
    print(json.dumps({"seconds": cold, "warm": warm, "extra_mib": (memory_kib("VmHWM") - rss) / 1024}))


def run_child(args, method, preset, path, source=None):
    best = None
    for _ in range(args.reps):
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "%s,%s,%s" % (method, preset, path),
                              "--gib", str(args.gib), "--chunk-mib", str(args.chunk_mib), "--bound", str(args.bound),
                              "--data", args.data] + (["--source", source] if source else []),
                             check=True, capture_output=True, text=True)
        result = json.loads(out.stdout.strip().splitlines()[-1])
        if best is None:
            best = result
        else:
            best = {key: min(best[key], result[key]) for key in best}
    return best


def same_frames(h5py, a_path, b_path):
    with h5py.File(a_path, "r") as a, h5py.File(b_path, "r") as b:
        da, db = a["field"], b["field"]
        if da.id.get_num_chunks() != db.id.get_num_chunks():
            return False
        for i in range(da.id.get_num_chunks()):
            offset = da.id.get_chunk_info(i).chunk_offset
            if da.id.read_direct_chunk(offset) != db.id.read_direct_chunk(offset):
                return False
        return bool((da[()] == db[()]).all())


def main():
    args = parser.parse_args()
    plugin = find_plugin_dir(args.plugin_dir)
    os.environ["HDF5_PLUGIN_PATH"] = plugin
    if args.child:
        return child(args)
    import h5py
    folder = tempfile.mkdtemp(prefix="fz-write-", dir=args.dir)
    plane_bytes, planes, chunk_planes = field_layout(args)
    raw_mb = planes * plane_bytes / 1e6
    print("# writes: %.0f MB float32 (%d x %d x %d), chunks %d x %d x %d (%.1f MiB), NOA %g; best of %d"
          % (raw_mb, planes, PLANE[0], PLANE[1], chunk_planes, PLANE[0], PLANE[1],
             chunk_planes * plane_bytes / 2 ** 20, args.bound, args.reps))
    print("# host: %s, %d cores; h5py %s, HDF5 %s; H5Z_FZ_DEVICE=%s, files in %s"
          % (cpu_model(), os.cpu_count(), h5py.version.version, h5py.version.hdf5_version,
             os.environ.get("H5Z_FZ_DEVICE", "(unset: auto)"), folder))
    print()
    print("| preset | write | seconds, first / second in a process | MB/s, second | vs h5py through the filter, "
          "first / second | extra memory, MiB | same frames |")
    print("|---|---|---|---|---|---|---|")
    plain = run_child(args, "plain", "none", os.path.join(folder, "plain.h5"))
    print("| (none) | h5py, uncompressed | %.2f / %.2f | %.0f | | %.0f | |"
          % (plain["seconds"], plain["warm"], raw_mb / plain["warm"], plain["extra_mib"]))
    def compare(preset, filtered_method, written_method, filtered_label, written_label):
        """One pair of writes, filter then h5fz.write, and their rows."""
        filtered_path = os.path.join(folder, preset + "-filter.h5")
        written_path = os.path.join(folder, preset + "-write.h5")
        filtered = run_child(args, filtered_method, preset, filtered_path)
        written = run_child(args, written_method, preset, written_path)
        same = same_frames(h5py, filtered_path, written_path)
        print("| %s | %s | %.2f / %.2f | %.0f | 1.00x | %.0f | |"
              % (preset, filtered_label, filtered["seconds"], filtered["warm"], raw_mb / filtered["warm"],
                 filtered["extra_mib"]))
        print("| %s | %s | %.2f / %.2f | %.0f | %.2fx / %.2fx | %.0f | %s |"
              % (preset, written_label, written["seconds"], written["warm"], raw_mb / written["warm"],
                 filtered["seconds"] / written["seconds"], filtered["warm"] / written["warm"],
                 written["extra_mib"], "yes" if same else "**no**"))
        if filtered_method == "filter":
            floor_path = os.path.join(folder, preset + "-frames.h5")
            floor = run_child(args, "frames", preset, floor_path, source=filtered_path)
            print("| %s | HDF5 alone: write_direct_chunk of the filter's frames, held in memory | %.2f / %.2f | %.0f "
                  "| %.2fx / %.2fx (the ceiling) | %.0f | |"
                  % (preset, floor["seconds"], floor["warm"], raw_mb / floor["warm"],
                     filtered["seconds"] / floor["seconds"], filtered["warm"] / floor["warm"], floor["extra_mib"]))
            os.remove(floor_path)
        for p in (filtered_path, written_path):
            os.remove(p)

    for preset in args.presets.split(","):
        compare(preset, "filter", "write", "h5py through the filter", "h5fz.write")
        if args.gpu:
            compare(preset, "gpu-filter", "gpu-write", "GPU array: h5py through the filter of cupy.asnumpy(x)",
                    "GPU array: h5fz.write(x)")
    os.remove(os.path.join(folder, "plain.h5"))
    os.rmdir(folder)


if __name__ == "__main__":
    main()
