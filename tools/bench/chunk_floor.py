#!/usr/bin/env python3
"""What one small chunk costs through h5py, with no filter, trivial filters and real codecs.

A benchmark program, not a test (issue 30: "CPU one thread >= 2x SZ3's write and
read speed through h5py"). In h5py's default chunks (chunks=True: 48x48 f64 =
18 KB, 12x23x23 f32 = 25 KB) a chunk takes some tens of microseconds either
way, and part of that is HDF5's and h5py's own (chunk lookup, B-tree or index
insert, filter pipeline calls, buffer allocation), paid by every filter. This
program measures that floor beside the codecs, per chunk, so that what is the
codec's can be told from what is not:

  - none: no filter at all (HDF5 still copies each chunk through its pipeline);
  - noop: a filter that returns every chunk as it came (tools/bench/noop_filter.c,
    compiled here with the system C compiler, id 400): HDF5's whole filter
    pipeline around a codec that costs nothing, the floor of any filter;
  - shuffle, fletcher32, gzip level 0: HDF5's own filters that do little
    (a byte transpose, a checksum, deflate's stored blocks);
  - FZ lossless and FZ cuszhi-cr at NOA 1e-2 / 1e-3 / 1e-4 (H5Z_FZ_THREADS=1,
    the plugin from HDF5_PLUGIN_PATH);
  - SZ3 (hdf5plugin.SZ3(relative=bound)), one thread as hdf5plugin builds it.

Files live in memory (driver='core', backing_store=False), chunk cache off, as
in compare_filters.py; each figure is the best of --reps of a whole-dataset
write or read, divided by the number of chunks (us per chunk), and MB/s counts
the field's bytes (1e6).

    H5Z_FZ_THREADS=1 HDF5_PLUGIN_PATH=build/plugin python3 tools/bench/chunk_floor.py [--reps 15]
        [--fields pressure.384_384.f64,wmag91.float] [--whole] [--codecs LABEL,...] [--data DIR]
"""

import argparse
import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

os.environ.setdefault("H5Z_FZ_THREADS", "1")  # read once by the plugin, before h5py loads it
HERE = os.path.dirname(os.path.abspath(__file__))
NOOP_FILTER_ID = 400  # tools/bench/noop_filter.c


def build_noop_plugin():
    """Compiles noop_filter.c into a temporary plugin directory; returns it, or None without a C compiler."""
    out = tempfile.mkdtemp(prefix="fz-noop-")
    atexit.register(shutil.rmtree, out, True)
    cc = os.environ.get("CC", "cc")
    try:
        subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", os.path.join(out, "libH5Znoop.so"),
                        os.path.join(HERE, "noop_filter.c")], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print("chunk_floor: no noop filter (%s)" % e, file=sys.stderr)
        return None
    return out


# Before anything imports h5py (h5fz does, to register the plugin): HDF5
# reads HDF5_PLUGIN_PATH once.
NOOP_DIR = build_noop_plugin() if __name__ == "__main__" else None
if NOOP_DIR:
    os.environ["HDF5_PLUGIN_PATH"] = ":".join(p for p in (NOOP_DIR, os.environ.get("HDF5_PLUGIN_PATH")) if p)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
import compare_filters as cf  # noqa: E402  (REPO, load_fields, machine_line, FZ_FILTER_ID)
import h5fz  # noqa: E402  (compression_opts)

BOUNDS = (1e-2, 1e-3, 1e-4)


def codecs(with_sz3):
    """(label, h5py create_dataset kwargs) in the order printed."""
    rows = [("none", {}), ("noop", {"compression": NOOP_FILTER_ID}), ("shuffle", {"shuffle": True}),
            ("fletcher32", {"fletcher32": True}),
            ("gzip 0", {"compression": "gzip", "compression_opts": 0}),
            ("FZ lossless", {"compression": cf.FZ_FILTER_ID, "compression_opts": h5fz.compression_opts("lossless")})]
    for b in BOUNDS:
        rows.append(("FZ cuszhi-cr %g" % b, {"compression": cf.FZ_FILTER_ID,
                                             "compression_opts": h5fz.compression_opts("cuszhi-cr", "noa", b)}))
        if with_sz3:
            import hdf5plugin
            rows.append(("SZ3 %g" % b, dict(hdf5plugin.SZ3(relative=b))))
    return rows


def per_chunk(h5py, array, kwargs, reps, whole):
    """Best write and read seconds of the whole dataset, its chunk count and stored bytes."""
    best_w = best_r = float("inf")
    out = np.empty_like(array)
    for rep in range(reps):
        with h5py.File("floor-%d.h5" % rep, "w", driver="core", backing_store=False, rdcc_nbytes=0) as f:
            ds = f.create_dataset("x", shape=array.shape, dtype=array.dtype, chunks=array.shape if whole else True,
                                  **kwargs)
            start = time.perf_counter()
            ds.write_direct(array)
            f.flush()
            best_w = min(best_w, time.perf_counter() - start)
            n = ds.id.get_num_chunks()
            if any(ds.id.get_chunk_info(i).filter_mask for i in range(n)):
                raise RuntimeError("a filter was skipped: chunks stored unfiltered")
            stored = ds.id.get_storage_size()
            start = time.perf_counter()
            ds.read_direct(out)
            best_r = min(best_r, time.perf_counter() - start)
            chunks = ds.chunks
    return best_w, best_r, n, stored, chunks


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.environ.get("FZ_DATA", os.path.join(cf.REPO, "..", "shared", "data")))
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--fields", default="pressure.384_384.f64,wmag91.float")
    parser.add_argument("--whole", action="store_true", help="the whole field as one chunk (default: chunks=True)")
    parser.add_argument("--codecs", help="only these rows, by label, comma-separated (e.g. 'noop,FZ cuszhi-cr 0.01')")
    args = parser.parse_args()
    import h5py

    data = args.data
    try:
        import hdf5plugin  # noqa: F401
        with_sz3 = True
    except ImportError:
        with_sz3 = False
    if not h5py.h5z.filter_avail(cf.FZ_FILTER_ID):
        sys.exit("chunk_floor: H5Z-FZ plugin not found (set HDF5_PLUGIN_PATH)")
    print("chunk_floor: %s" % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    print(cf.machine_line())
    print("load average before: %.2f %.2f %.2f" % os.getloadavg())
    print("h5py %s (HDF5 %s), H5Z_FZ_THREADS=%s, best of %d, us per chunk = best whole-dataset time / chunks\n"
          % (h5py.__version__, h5py.version.hdf5_version, os.environ["H5Z_FZ_THREADS"], args.reps))
    wanted = args.fields.split(",")
    for name, array in cf.load_fields(data):
        if name not in wanted:
            continue
        table = [c for c in codecs(with_sz3) if NOOP_DIR or c[0] != "noop"]
        if args.codecs:
            table = [c for c in table if c[0] in args.codecs.split(",")]
        print("#### %s %s, %s\n" % (name, "x".join(map(str, array.shape)),
                                     "whole field as one chunk" if args.whole else "h5py default chunks"))
        print("| codec | chunks | ratio | write us/chunk | read us/chunk | write MB/s | read MB/s |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for label, kwargs in table:
            w, r, n, stored, chunks = per_chunk(h5py, array, kwargs, args.reps, args.whole)
            print("| %s | %d x %s | %.2f | %.1f | %.1f | %.0f | %.0f |"
                  % (label, n, "x".join(map(str, chunks)), array.nbytes / stored, 1e6 * w / n, 1e6 * r / n,
                     array.nbytes / 1e6 / w, array.nbytes / 1e6 / r))
        print()
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
