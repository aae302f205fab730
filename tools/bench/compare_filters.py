#!/usr/bin/env python3
"""Compare H5Z-FZ (lossless) with common HDF5 compression filters through h5py.

A benchmark program, not a test: it prints markdown tables (recorded in
docs/PERFORMANCE.md) and checks the issue's two targets:

  1. H5Z-FZ's ratio is not below bitshuffle+LZ4's on any float field;
  2. H5Z-FZ's CPU decompression (read) is faster than gzip's.

Every codec runs on the same real fields in the same run, twice per field: the
whole field as one chunk, and h5py's default chunk shape (chunks=True). Files
live in memory (driver='core', backing_store=False) with the chunk cache off
(rdcc_nbytes=0), so writes and reads go through the filters every time rather
than through the cache. Write MB/s and read MB/s count uncompressed bytes
(MB = 1e6); each figure is the best of --reps runs, and every read is checked
bit for bit against the original.

H5Z-FZ runs in child processes, once with H5Z_FZ_THREADS=1 and once without it
(all cores): the plugin reads the variable once per process, and HDF5 reads
HDF5_PLUGIN_PATH once, so each setting needs a fresh interpreter.

    python3 tools/bench/compare_filters.py --plugin-dir build-tools/plugin [--data DIR] [--reps N]
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FZ_FILTER_ID = 32850

# The real fields of ../shared/data/README.md: name, numpy dtype, shape (slow..fast).
FIELDS = [
    ("vorticity.128_128_41", "<f4", (41, 128, 128)),
    ("vorticity.512_512", "<f4", (512, 512)),
    ("wmag91.float", "<f4", (91, 91, 91)),
    ("999x999.float", "<f4", (999, 999)),
    ("const32x32x59.float", "<f4", (59, 32, 32)),
    ("pressure.384_384.f64", "<f8", (384, 384)),
]
CHUNKINGS = ("whole", "h5py-default")


def load_fields(data_dir):
    fields = []
    for name, dtype, shape in FIELDS:
        path = os.path.join(data_dir, name)
        if not os.path.exists(path):
            sys.exit("compare_filters: missing real field %s (set --data or FZ_DATA)" % path)
        array = np.fromfile(path, dtype=dtype)
        if array.size != int(np.prod(shape)):
            sys.exit("compare_filters: %s has %d elements, expected shape %s" % (path, array.size, shape))
        fields.append((name, array.reshape(shape)))
    return fields


def time_codec(h5py, array, codec_kwargs, chunking, reps):
    """Best write and read of one codec through h5py (in-memory file, chunk cache
    off, so every write and read runs the filter).

    Returns (row, decoded, fill, chunk_shape): row holds ratio, write/read MB/s,
    stored bytes and the chunk shape as text; decoded is the last read back;
    fill the dataset's fill value."""
    chunks = array.shape if chunking == "whole" else True
    best_write = best_read = float("inf")
    stored = None
    chunk_shape = None
    fill = None
    out = np.empty_like(array)
    for rep in range(reps):
        with h5py.File("bench-%d.h5" % rep, "w", driver="core", backing_store=False, rdcc_nbytes=0) as f:
            ds = f.create_dataset("x", shape=array.shape, dtype=array.dtype, chunks=chunks, **codec_kwargs)
            chunk_shape = ds.chunks
            fill = ds.fillvalue
            start = time.perf_counter()
            ds.write_direct(array)
            f.flush()
            best_write = min(best_write, time.perf_counter() - start)
            stored = ds.id.get_storage_size()
            # An optional filter that fails is skipped silently by HDF5: a
            # benchmark of unfiltered chunks would look fast and say nothing.
            skipped = sum(1 for i in range(ds.id.get_num_chunks()) if ds.id.get_chunk_info(i).filter_mask)
            if skipped:
                raise RuntimeError("filter skipped on %d chunk(s): stored uncompressed" % skipped)
            out.fill(0)
            start = time.perf_counter()
            ds.read_direct(out)
            best_read = min(best_read, time.perf_counter() - start)
    row = {
        "ratio": array.nbytes / stored,
        "write_mbs": array.nbytes / 1e6 / best_write,
        "read_mbs": array.nbytes / 1e6 / best_read,
        "stored": stored,
        "chunks": "x".join(str(c) for c in chunk_shape),
    }
    return row, out, fill, chunk_shape


def measure(h5py, array, codec_kwargs, chunking, reps):
    """time_codec for a lossless codec: the read back must be bit-exact."""
    row, out, _fill, _chunks = time_codec(h5py, array, codec_kwargs, chunking, reps)
    if not np.array_equal(out.view(np.uint8), array.view(np.uint8)):
        raise RuntimeError("read back differs from the original")
    return row


def run_codecs(codecs, data_dir, reps):
    """[(codec label, h5py kwargs)] on every field and chunking -> result rows."""
    import h5py  # after the caller set HDF5_PLUGIN_PATH

    rows = []
    for name, array in load_fields(data_dir):
        for chunking in CHUNKINGS:
            for label, kwargs in codecs:
                row = {"field": name, "dtype": array.dtype.name, "chunking": chunking, "codec": label}
                try:
                    row.update(measure(h5py, array, kwargs, chunking, reps))
                except Exception as e:  # one failing codec must not hide the others
                    row["error"] = str(e)
                rows.append(row)
    return rows


def fz_worker(args):
    import h5py

    if not h5py.h5z.filter_avail(FZ_FILTER_ID):
        print(json.dumps({"fatal": "H5Z-FZ plugin not found in HDF5_PLUGIN_PATH=%s"
                          % os.environ.get("HDF5_PLUGIN_PATH")}))
        return
    # No compression_opts: the filter's default, the lossless preset.
    codecs = [(args.label, {"compression": FZ_FILTER_ID})]
    print(json.dumps(run_codecs(codecs, args.data, args.reps)))


def fz_in_child(args, plugin_dir, threads):
    env = dict(os.environ)
    env["HDF5_PLUGIN_PATH"] = plugin_dir
    env.pop("H5Z_FZ_THREADS", None)
    if threads is not None:
        env["H5Z_FZ_THREADS"] = str(threads)
    label = "H5Z-FZ lossless, %s" % ("1 thread" if threads == 1 else "all %d cores" % os.cpu_count())
    command = [sys.executable, os.path.abspath(__file__), "--worker", "--label", label,
               "--data", args.data, "--reps", str(args.reps)]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("compare_filters: H5Z-FZ worker failed:\n" + done.stderr)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if isinstance(result, dict) and "fatal" in result:
        sys.exit("compare_filters: " + result["fatal"])
    return label, result


def find_plugin_dir(explicit):
    candidates = [explicit] if explicit else []
    if os.environ.get("FZ_PLUGIN_DIR"):
        candidates.append(os.environ["FZ_PLUGIN_DIR"])
    candidates += [os.path.join(REPO, d, "plugin") for d in ("build", "build-tools", "build-release")]
    for candidate in candidates:
        if os.path.exists(os.path.join(candidate, "libH5Zfz.so")):
            return os.path.abspath(candidate)
    sys.exit("compare_filters: libH5Zfz.so not found in %s (build the plugin, pass --plugin-dir)"
             % ", ".join(candidates))


def machine_line():
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "%s, %d logical CPUs" % (model, os.cpu_count())


def print_table(rows):
    print("| field | chunks | codec | ratio | write MB/s | read MB/s |")
    print("|---|---|---|---:|---:|---:|")
    for r in rows:
        if "error" in r:
            print("| %s | %s | %s | FAILED: %s | | |" % (r["field"], r["chunking"], r["codec"], r["error"]))
        else:
            print("| %s | %s (%s) | %s | %.3f | %.1f | %.1f |" % (
                r["field"], r["chunking"], r["chunks"], r["codec"], r["ratio"], r["write_mbs"], r["read_mbs"]))


def check_targets(rows, fz_labels, bitshuffle_label, gzip_label):
    index = {(r["field"], r["chunking"], r["codec"]): r for r in rows}
    cases = sorted({(r["field"], r["chunking"], r["dtype"]) for r in rows},
                   key=lambda c: ([f[0] for f in FIELDS].index(c[0]), c[1]))
    all_met = True

    def get(field, chunking, codec):
        r = index.get((field, chunking, codec))
        return None if r is None or "error" in r else r

    misses = []
    for field, chunking, dtype in cases:
        if not dtype.startswith("float"):
            continue
        ref = get(field, chunking, bitshuffle_label)
        for label in fz_labels:
            ours = get(field, chunking, label)
            if ours is None or ref is None:
                misses.append("%s/%s: no result" % (field, chunking))
            elif ours["ratio"] < ref["ratio"]:
                misses.append("%s/%s: %.3f < %.3f" % (field, chunking, ours["ratio"], ref["ratio"]))
    met = not misses
    all_met &= met
    print("target 1 (ratio >= bitshuffle+LZ4 on every float field, both chunkings): %s%s"
          % ("MET" if met else "NOT MET", "" if met else " -- " + "; ".join(sorted(set(misses)))))

    for label in fz_labels:
        misses = []
        for field, chunking, _ in cases:
            ours, ref = get(field, chunking, label), get(field, chunking, gzip_label)
            if ours is None or ref is None:
                misses.append("%s/%s: no result" % (field, chunking))
            elif ours["read_mbs"] <= ref["read_mbs"]:
                misses.append("%s/%s: %.1f <= %.1f MB/s" % (field, chunking, ours["read_mbs"], ref["read_mbs"]))
        met = not misses
        all_met &= met
        print("target 2 (read faster than gzip -1, %s, every field and chunking): %s%s"
              % (label, "MET" if met else "NOT MET", "" if met else " -- " + "; ".join(misses)))
        # Also over all fields together (total bytes / total best read time),
        # where a tiny, extremely compressible field weighs what its size says.
        totals = {}
        for codec in (label, gzip_label):
            done = [get(f, c, codec) for f, c, _ in cases]
            if all(done):
                seconds = sum(r["stored"] * r["ratio"] / 1e6 / r["read_mbs"] for r in done)
                totals[codec] = sum(r["stored"] * r["ratio"] for r in done) / 1e6 / seconds
        if len(totals) == 2:
            print("          all fields together: %.1f MB/s vs gzip -1 %.1f MB/s: %s"
                  % (totals[label], totals[gzip_label], "faster" if totals[label] > totals[gzip_label] else "NOT faster"))
    return all_met


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.environ.get("FZ_DATA", os.path.join(REPO, "..", "shared", "data")))
    parser.add_argument("--plugin-dir", help="folder holding libH5Zfz.so (default: <repo>/build*/plugin)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions; the best is reported")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--label", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.data = os.path.abspath(args.data)
    if args.worker:
        fz_worker(args)
        return 0

    plugin_dir = find_plugin_dir(args.plugin_dir)
    import h5py
    import hdf5plugin

    gzip_label, zstd_label, bitshuffle_label = "gzip -1", "Zstd (hdf5plugin, level 3)", "bitshuffle+LZ4 (hdf5plugin)"
    baselines = [
        (gzip_label, {"compression": "gzip", "compression_opts": 1}),
        (zstd_label, dict(hdf5plugin.Zstd(clevel=3))),
        (bitshuffle_label, dict(hdf5plugin.Bitshuffle(cname="lz4"))),
    ]
    print("compare_filters: %s" % time.strftime("%Y-%m-%d %H:%M %Z"))
    print("machine: %s" % machine_line())
    print("python %s, numpy %s, h5py %s (HDF5 %s), hdf5plugin %s (openmp=%s)" % (
        platform.python_version(), np.__version__, h5py.version.version, h5py.version.hdf5_version,
        hdf5plugin.version, hdf5plugin.get_config().build_config.openmp))
    print("plugin: %s/libH5Zfz.so; data: %s; best of %d; in-memory files, chunk cache off\n"
          % (plugin_dir, args.data, args.reps))

    fz_rows = []
    fz_labels = []
    for threads in (1, None):
        label, rows = fz_in_child(args, plugin_dir, threads)
        fz_labels.append(label)
        fz_rows += rows
    base_rows = run_codecs(baselines, args.data, args.reps)

    # One table ordered by field, chunking, then codec.
    order = fz_labels + [b[0] for b in baselines]
    field_order = [f[0] for f in FIELDS]
    rows = sorted(fz_rows + base_rows, key=lambda r: (field_order.index(r["field"]),
                                                      CHUNKINGS.index(r["chunking"]), order.index(r["codec"])))
    print_table(rows)
    print()
    ok = check_targets(rows, fz_labels, bitshuffle_label, gzip_label)
    failed = [r for r in rows if "error" in r]
    if failed:
        print("%d measurement(s) FAILED" % len(failed))
    return 0 if ok and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
