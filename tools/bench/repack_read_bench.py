#!/usr/bin/env python3
"""The batched paths around HDF5's one-chunk-at-a-time filter (issue 15), in one run.

A benchmark program, not a test: it prints two markdown tables (recorded in
docs/PERFORMANCE.md).

1. Repack: a file holding one 1 GiB float32 dataset (wmag91 tiled by
   mirroring, as h5py_bench.py makes it, in 4 MiB chunks of whole planes) is
   converted by ``h5repack -f UD=32850,...`` (HDF5 calls the filter chunk by
   chunk) and by ``h5fz repack`` (batches through the engine, H5Dwrite_chunk)
   with the same preset, mode and bound, in the same run: seconds, MB/s of the
   uncompressed dataset, the speed-up, and whether the two files hold the
   same frames (every chunk compared as stored); each the best of
   --repack-reps. The input is read once
   before, so both read it from the page cache.
2. Reads of the repacked fzgpu dataset, warm (the file was just written):
   h5py reading the uncompressed input (the baseline), h5py reading through
   the filter, h5fz.read on all cores, and with --gpu, h5fz.read(device="cuda")
   into a CuPy array against h5py's uncompressed read plus its copy to the
   GPU (cupy.asarray, synchronised). Each figure is the best of --reps; every
   read is compared with the filter's values.

    python3 tools/bench/repack_read_bench.py --h5fz build/tools/h5fz --plugin-dir build/plugin \\
        [--gib 1] [--chunk-mib 4] [--presets fzgpu,cusz,cuszhi-cr] [--reps 3] [--repack-reps 1] [--gpu]
"""

import argparse
import os
import shutil
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


def best_of(reps, body):
    best = None
    for _ in range(reps):
        start = time.perf_counter()
        result = body()
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    return best, result


def same_frames(h5py, a_path, b_path, name):
    with h5py.File(a_path, "r") as a, h5py.File(b_path, "r") as b:
        da, db = a[name], b[name]
        if da._filters != db._filters or da.id.get_num_chunks() != db.id.get_num_chunks():
            return False
        for i in range(da.id.get_num_chunks()):
            offset = da.id.get_chunk_info(i).chunk_offset
            if da.id.read_direct_chunk(offset) != db.id.read_direct_chunk(offset):
                return False
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--h5fz", default=os.path.join(REPO, "build", "tools", "h5fz"))
    parser.add_argument("--plugin-dir")
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--chunk-mib", type=int, default=4)
    parser.add_argument("--presets", default="fzgpu,cusz,cuszhi-cr")
    parser.add_argument("--bound", type=float, default=1e-3, help="NOA bound (default 1e-3)")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of each read (the best is reported)")
    parser.add_argument("--repack-reps", type=int, default=1, help="repetitions of each repack (default 1)")
    parser.add_argument("--gpu", action="store_true", help="also read into GPU memory (needs CuPy)")
    parser.add_argument("--dir", help="folder for the files (default: a temporary folder)")
    parser.add_argument("--data", default=os.environ.get("FZ_DATA", os.path.join(REPO, "..", "shared", "data")))
    args = parser.parse_args()

    plugin = find_plugin_dir(args.plugin_dir)
    os.environ["HDF5_PLUGIN_PATH"] = plugin
    import h5py
    h5fz.register(h5py)
    folder = tempfile.mkdtemp(prefix="fz-repack-", dir=args.dir)
    plane_bytes = PLANE[0] * PLANE[1] * 4
    planes = int(args.gib * (1 << 30)) // plane_bytes
    chunk_planes = max(1, (args.chunk_mib << 20) // plane_bytes)
    array = tiled_field(args.data, planes)
    src = os.path.join(folder, "in.h5")
    with h5py.File(src, "w") as f:
        f.create_dataset("field", data=array, chunks=(chunk_planes,) + PLANE)
    raw = array.nbytes
    print("# repack and batched reads: %s float32 (%d x %d x %d), chunks %d x %d x %d (%.1f MiB), NOA %g"
          % (h5fz_size(raw), planes, PLANE[0], PLANE[1], chunk_planes, PLANE[0], PLANE[1],
             chunk_planes * plane_bytes / 2 ** 20, args.bound))
    print("# host: %s, %d cores; h5py %s, HDF5 %s (h5py), files in %s"
          % (cpu_model(), os.cpu_count(), h5py.version.version, h5py.version.hdf5_version, folder))
    print("# H5Z_FZ_DEVICE=%s" % os.environ.get("H5Z_FZ_DEVICE", "(unset: auto)"))
    with open(src, "rb") as f:   # into the page cache for both tools
        while f.read(64 << 20):
            pass

    print("\n| preset | ratio | h5repack s | h5fz repack s | h5repack MB/s | h5fz repack MB/s | speed-up | same frames |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    failures = 0
    for preset in [p for p in args.presets.split(",") if p]:
        ud = h5fz.h5repack_filter(preset, "noa", args.bound)
        ours, theirs = os.path.join(folder, "ours-%s.h5" % preset), os.path.join(folder, "theirs-%s.h5" % preset)

        def run_h5repack():
            subprocess.run(["h5repack", "-f", "field:" + ud, src, theirs], check=True)

        def run_h5fz():
            subprocess.run([args.h5fz, "repack", src, ours, "--preset", preset, "--mode", "noa",
                            "--bound", repr(args.bound), "--quiet"], check=True)
        t_theirs, _ = best_of(args.repack_reps, run_h5repack)
        t_ours, _ = best_of(args.repack_reps, run_h5fz)
        same = same_frames(h5py, ours, theirs, "field")
        failures += not same
        with h5py.File(ours, "r") as f:
            stored = f["field"].id.get_storage_size()
        print("| %s | %.2f | %.3f | %.3f | %.0f | %.0f | %.2fx | %s |"
              % (preset, raw / stored, t_theirs, t_ours, raw / t_theirs / 1e6, raw / t_ours / 1e6, t_theirs / t_ours,
                 "yes" if same else "NO"))

    reads = os.path.join(folder, "ours-fzgpu.h5")
    if not os.path.exists(reads):
        subprocess.run([args.h5fz, "repack", src, reads, "--preset", "fzgpu", "--mode", "noa", "--bound",
                        repr(args.bound), "--quiet"], check=True)
    print("\n| read (warm, best of %d) | seconds | GB/s | vs uncompressed h5py |" % args.reps)
    print("|---|---:|---:|---:|")
    with h5py.File(src, "r") as f_in, h5py.File(reads, "r") as f_z:
        plain, packed = f_in["field"], f_z["field"]
        t_plain, _ = best_of(args.reps, lambda: plain[()])
        t_filter, through = best_of(args.reps, lambda: packed[()])
        t_read, batched = best_of(args.reps, lambda: h5fz.read(packed))
        failures += not np.array_equal(batched, through)
        rows = [("h5py, uncompressed dataset", t_plain), ("h5py through the filter", t_filter),
                ("h5fz.read (all cores)", t_read)]
        if args.gpu:
            import cupy

            def plain_to_gpu():
                a = cupy.asarray(plain[()])
                cupy.cuda.Device().synchronize()
                return a

            def batched_to_gpu():
                a = h5fz.read(packed, device="cuda")
                cupy.cuda.Device().synchronize()
                return a
            t_plain_gpu, _ = best_of(args.reps, plain_to_gpu)
            t_gpu, on_gpu = best_of(args.reps, batched_to_gpu)
            failures += not np.array_equal(cupy.asnumpy(on_gpu), through)
            rows += [("h5py uncompressed + copy to the GPU", t_plain_gpu),
                     ("h5fz.read(device=\"cuda\")", t_gpu)]
        for label, t in rows:
            print("| %s | %.3f | %.2f | %.2fx |" % (label, t, raw / t / 1e9, t_plain / t))
        if args.gpu:
            print("\nGPU read against h5py's uncompressed read plus its copy to the GPU: %.2fx"
                  % (t_plain_gpu / t_gpu))
    shutil.rmtree(folder, ignore_errors=True)
    if failures:
        print("FAILED: %d check(s)" % failures)
        sys.exit(1)


def h5fz_size(n):
    return "%.2f GiB" % (n / 2 ** 30)


if __name__ == "__main__":
    main()
