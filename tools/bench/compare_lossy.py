#!/usr/bin/env python3
"""Compare H5Z-FZ's lossy presets with SZ3 and ZFP through h5py, at NOA bounds.

A benchmark program, not a test (issue 3, "Performance"): for each real float
field at a value-range-relative (NOA) bound of 1e-2, 1e-3 and 1e-4 it measures
ratio, PSNR, max error against the bound, and write / read MB/s of

  - H5Z-FZ presets pfpl, fzgpu and cusz (or those --presets names, e.g.
    cuszhi-cr), mode noa (bound x the chunk's value range), with
    H5Z_FZ_THREADS=1 and with all cores;
  - SZ3 (hdf5plugin.SZ3(relative=bound): SZ3's REL mode, also relative to each
    chunk's value range);
  - ZFP (hdf5plugin.Zfp(accuracy=bound x the field's value range)): ZFP has no
    range-relative mode, so it gets the absolute bound the whole field's range
    gives. With small chunks that is looser than a per-chunk NOA bound.

in the same run, twice per field: the whole field as one chunk, and h5py's
default chunk shape (chunks=True). As in compare_filters.py (whose helpers this
reuses), files live in memory (driver='core', backing_store=False) with the chunk
cache off, MB = 1e6 uncompressed bytes both ways, each speed is the best of
--reps, and H5Z-FZ runs in child processes (the plugin reads H5Z_FZ_THREADS once
per process). hdf5plugin's SZ3 and ZFP are built without OpenMP here, so they run
on one thread: the speed target compares them with H5Z-FZ on one thread.

Every decoded array is checked against its codec's bound, element by element in
long double: NOA codecs against bound x (max - min) of each chunk's elements
inside the dataset (the count against the chunk as the filter receives it, where
an edge chunk includes HDF5's padding with the fill value, 0 by default, is
printed as a note when it differs), ZFP against its absolute bound. H5Z-FZ must have 0
elements outside; other codecs are reported as measured.

    python3 tools/bench/compare_lossy.py --plugin-dir build-lbench/plugin [--data DIR] [--reps N]
"""

import argparse
import itertools
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
import compare_filters as cf  # noqa: E402  (FIELDS, CHUNKINGS, load_fields, find_plugin_dir, machine_line)
import h5fz  # noqa: E402  (compression_opts)

BOUNDS = (1e-2, 1e-3, 1e-4)
FZ_PRESETS = ("pfpl", "fzgpu", "cusz")
# Peer GPU library's ratios, whole field as one chunk (../shared/data/README.md).
FZGPU_REF = {"wmag91.float": 6.26, "999x999.float": 6.11, "vorticity.128_128_41": 7.28}  # NOA 1e-3
CUSZ_REF = {"wmag91.float": 3.86, "999x999.float": 3.82, "vorticity.128_128_41": 4.54}  # NOA 1e-4


def float_fields(data_dir):
    return [(n, a) for n, a in cf.load_fields(data_dir) if a.dtype.kind == "f"]


def chunk_slices(shape, chunks):
    """Every chunk of a dataset as a tuple of slices, clipped to the dataset."""
    grids = [range(0, extent, c) for extent, c in zip(shape, chunks)]
    for corner in itertools.product(*grids):
        yield tuple(slice(o, min(o + c, extent)) for o, c, extent in zip(corner, chunks, shape))


def error_stats(original, decoded, chunks, bound, absolute, fill):
    """Errors of one round trip. NOA (absolute=None): allowed = bound x the range of
    each chunk's finite elements inside the dataset. violations_padded counts against
    the range of the chunk as the filter receives it, which for an edge chunk that
    sticks out of the dataset includes HDF5's padding (the dataset's fill value, 0 by
    default): looser there. Otherwise allowed = absolute.
    Non-finite originals must come back bit for bit."""
    x = original.astype(np.longdouble)
    y = decoded.astype(np.longdouble)
    finite = np.isfinite(x)
    err = np.where(finite, np.abs(x - y), 0)
    err = np.where(finite & ~np.isfinite(y), np.inf, err)
    nonfinite_bad = int(np.count_nonzero(~finite & (original.view(np.uint8).reshape(original.shape + (-1,))
                                                    != decoded.view(np.uint8).reshape(decoded.shape + (-1,))).any(-1)))
    violations = violations_padded = nonfinite_bad
    worst = 0.0  # max over elements of err / allowed
    for s in chunk_slices(original.shape, chunks):
        xs, es, fs = x[s], err[s], finite[s]
        if absolute is None:
            lo, hi = (xs[fs].min(), xs[fs].max()) if fs.any() else (None, None)
            allowed = bound * (hi - lo) if fs.any() else np.longdouble(0)
            if xs.shape != tuple(chunks) and fill is not None and np.isfinite(fill):
                lo = np.longdouble(fill) if lo is None else min(lo, np.longdouble(fill))
                hi = np.longdouble(fill) if hi is None else max(hi, np.longdouble(fill))
            allowed_padded = bound * (hi - lo) if lo is not None else np.longdouble(0)
        else:
            allowed = allowed_padded = np.longdouble(absolute)
        violations += int(np.count_nonzero(es > allowed))
        violations_padded += int(np.count_nonzero(es > allowed_padded))
        m = es.max() if es.size else 0
        worst = max(worst, float(m / allowed) if allowed > 0 else (0.0 if m == 0 else float("inf")))
    vr = x[finite].max() - x[finite].min()
    mse = float(np.mean(err[finite] ** 2))
    psnr = float("inf") if mse == 0 else float(20 * np.log10(float(vr)) - 10 * np.log10(mse))
    return {"max_err": float(err.max()), "err_over_bound": worst, "violations": violations,
            "violations_padded": violations_padded, "psnr": psnr}


def measure(h5py, array, kwargs, chunking, reps, bound, absolute):
    row, out, fill, chunk_shape = cf.time_codec(h5py, array, kwargs, chunking, reps)
    row.update(error_stats(array, out, chunk_shape, bound, absolute, fill))
    return row


def run_codecs(make_codecs, data_dir, reps):
    """make_codecs(array, bound) -> [(label, h5py kwargs, absolute bound or None for NOA)]."""
    import h5py

    rows = []
    for name, array in float_fields(data_dir):
        for bound in BOUNDS:
            for chunking in cf.CHUNKINGS:
                for label, kwargs, absolute in make_codecs(array, bound):
                    row = {"field": name, "dtype": array.dtype.name, "bound": bound, "chunking": chunking,
                           "codec": label}
                    try:
                        row.update(measure(h5py, array, kwargs, chunking, reps, bound, absolute))
                    except Exception as e:  # one failing codec must not hide the others
                        row["error"] = str(e)
                    rows.append(row)
    return rows


def fz_label(preset, threads):
    return "FZ %s %s" % (preset, "1T" if threads == 1 else "%dT" % os.cpu_count())


def fz_worker(args):
    import h5py

    if not h5py.h5z.filter_avail(cf.FZ_FILTER_ID):
        print(json.dumps({"fatal": "H5Z-FZ plugin not found in HDF5_PLUGIN_PATH=%s"
                          % os.environ.get("HDF5_PLUGIN_PATH")}))
        return
    threads = int(os.environ.get("H5Z_FZ_THREADS", "0")) or None

    def codecs(array, bound):
        return [(fz_label(p, threads), {"compression": cf.FZ_FILTER_ID,
                                        "compression_opts": h5fz.compression_opts(p, "noa", bound)}, None)
                for p in args.presets]

    print(json.dumps(run_codecs(codecs, args.data, args.reps)))


def fz_in_child(args, plugin_dir, threads):
    env = dict(os.environ)
    env["HDF5_PLUGIN_PATH"] = plugin_dir
    env.pop("H5Z_FZ_THREADS", None)
    if threads is not None:
        env["H5Z_FZ_THREADS"] = str(threads)
    command = [sys.executable, os.path.abspath(__file__), "--worker", "--data", args.data, "--reps", str(args.reps),
               "--presets", ",".join(args.presets)]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("compare_lossy: H5Z-FZ worker failed:\n" + done.stderr)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if isinstance(result, dict) and "fatal" in result:
        sys.exit("compare_lossy: " + result["fatal"])
    return result


def fmt_psnr(p):
    return "inf" if p == float("inf") else "%.1f" % p


def print_tables(rows, labels):
    index = {(r["field"], r["bound"], r["chunking"], r["codec"]): r for r in rows}
    fields = [f for f, _, _ in cf.FIELDS if any(r["field"] == f for r in rows)]
    quality_labels = [l for l in labels if not (l.startswith("FZ ") and not l.endswith(" 1T"))]

    def cell(key, fn):
        r = index.get(key)
        if r is None:
            return "-"
        return "FAILED: %s" % r["error"] if "error" in r else fn(r)

    for chunking in cf.CHUNKINGS:
        print("#### Ratio (PSNR dB), %s\n" % ("whole field as one chunk" if chunking == "whole"
                                              else "h5py default chunks (chunks=True)"))
        print("| field | chunks | NOA | " + " | ".join(l.replace(" 1T", "") for l in quality_labels) + " |")
        print("|---|---|---:|" + "---:|" * len(quality_labels))
        for f in fields:
            for b in BOUNDS:
                some = next((index[k] for k in index if k[:3] == (f, b, chunking) and "chunks" in index[k]), None)
                print("| %s | %s | %g | %s |" % (f, some["chunks"] if some else "?", b, " | ".join(
                    cell((f, b, chunking, l), lambda r: "%.2f (%s)" % (r["ratio"], fmt_psnr(r["psnr"])))
                    for l in quality_labels)))
        print()
        print("#### Max error / bound (elements outside the bound), %s\n" % chunking)
        print("| field | NOA | " + " | ".join(labels) + " |")
        print("|---|---:|" + "---:|" * len(labels))
        for f in fields:
            for b in BOUNDS:
                print("| %s | %g | %s |" % (f, b, " | ".join(
                    cell((f, b, chunking, l), lambda r: "%.3f (%d)" % (r["err_over_bound"], r["violations"]))
                    for l in labels)))
        print()
        print("#### Write / read MB/s, %s\n" % chunking)
        print("| field | NOA | " + " | ".join(labels) + " |")
        print("|---|---:|" + "---:|" * len(labels))
        for f in fields:
            for b in BOUNDS:
                print("| %s | %g | %s |" % (f, b, " | ".join(
                    cell((f, b, chunking, l), lambda r: "%.0f / %.0f" % (r["write_mbs"], r["read_mbs"]))
                    for l in labels)))
        print()


def check_targets(rows, labels, sz3_label, presets):
    index = {(r["field"], r["bound"], r["chunking"], r["codec"]): r for r in rows}
    ok = True

    def get(field, bound, chunking, codec):
        r = index.get((field, bound, chunking, codec))
        return None if r is None or "error" in r else r

    for preset, bound, refs in (("fzgpu", 1e-3, FZGPU_REF), ("cusz", 1e-4, CUSZ_REF)):
        if preset not in presets:
            continue
        label = fz_label(preset, 1)
        parts, met, stretch = [], True, True
        for field, ref in refs.items():
            r = get(field, bound, "whole", label)
            if r is None:
                parts.append("%s: no result" % field)
                met = stretch = False
                continue
            met &= r["ratio"] >= 0.99 * ref
            stretch &= r["ratio"] >= 1.1 * ref
            parts.append("%s %.2f vs %.2f (%.3fx)" % (field, r["ratio"], ref, r["ratio"] / ref))
        ok &= met
        print("target: %s NOA %g ratio >= 0.99x peer, whole field: %s; stretch 1.1x: %s -- %s"
              % (preset, bound, "MET" if met else "NOT MET", "met" if stretch else "not met", "; ".join(parts)))

    # Speed: H5Z-FZ on 1 thread vs SZ3 (hdf5plugin without OpenMP: 1 thread).
    for preset in presets:
        label = fz_label(preset, 1)
        for what, key in (("compression (write)", "write_mbs"), ("decompression (read)", "read_mbs")):
            for chunking in cf.CHUNKINGS:
                factors = []
                for field, _, _ in cf.FIELDS:
                    for b in BOUNDS:
                        ours, ref = get(field, b, chunking, label), get(field, b, chunking, sz3_label)
                        if ours and ref:
                            factors.append((ours[key] / ref[key], field, b))
                if not factors:
                    continue
                low = min(factors)
                total_ours = sum(1 / get(f, b, chunking, label)[key] for _, f, b in factors)
                total_ref = sum(1 / get(f, b, chunking, sz3_label)[key] for _, f, b in factors)
                met = low[0] >= 2
                ok &= met
                print("target: %s %s >= 2x SZ3, 1 thread, %s: %s -- min %.2fx (%s NOA %g), max %.2fx, "
                      "all cases together %.2fx" % (preset, what, chunking, "MET" if met else "NOT MET", low[0],
                                                    low[1], low[2], max(factors)[0], total_ref / total_ours))

    for codec in sorted({r["codec"] for r in rows}):
        edge = [r for r in rows if r["codec"] == codec and r.get("violations_padded", 0)]
        if edge:
            print("note: %s, against the range of each chunk as the filter receives it (HDF5's edge-chunk "
                  "padding with the fill value included): %d element(s) outside in %d measurement(s): %s" % (
                      codec, sum(r["violations_padded"] for r in edge), len(edge),
                      ", ".join(sorted({"%s/%s" % (r["field"], r["chunking"]) for r in edge}))))
    fz_bad = [r for r in rows if r["codec"].startswith("FZ ") and r.get("violations", 0)]
    print("H5Z-FZ elements outside the bound: %d in %d measurement(s) -- %s"
          % (sum(r["violations"] for r in fz_bad), len(fz_bad), "MET (0)" if not fz_bad else "NOT MET"))
    ok &= not fz_bad
    for codec in sorted({r["codec"] for r in rows if not r["codec"].startswith("FZ ")}):
        bad = [r for r in rows if r["codec"] == codec and r.get("violations", 0)]
        print("%s elements outside the bound: %d in %d of %d measurement(s)%s" % (
            codec, sum(r["violations"] for r in bad), len(bad), sum(1 for r in rows if r["codec"] == codec),
            "" if not bad else " (" + "; ".join("%s NOA %g %s: %d, max err/bound %.3f" % (
                r["field"], r["bound"], r["chunking"], r["violations"], r["err_over_bound"]) for r in bad[:6])
            + ("; ..." if len(bad) > 6 else "") + ")"))
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.environ.get("FZ_DATA", os.path.join(cf.REPO, "..", "shared", "data")))
    parser.add_argument("--plugin-dir", help="folder holding libH5Zfz.so (default: <repo>/build*/plugin)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions; the best speed is reported")
    parser.add_argument("--presets", type=lambda s: [p for p in s.split(",") if p], default=list(FZ_PRESETS),
                        help="H5Z-FZ presets to run (default: %(default)s; cuszhi-tp and cuszhi-cr too)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.data = os.path.abspath(args.data)
    if args.worker:
        fz_worker(args)
        return 0

    plugin_dir = cf.find_plugin_dir(args.plugin_dir)
    import h5py
    import hdf5plugin

    sz3_label, zfp_label = "SZ3", "ZFP"

    def baselines(array, bound):
        finite = array[np.isfinite(array)]
        vr = float(finite.max()) - float(finite.min())
        return [(sz3_label, dict(hdf5plugin.SZ3(relative=bound)), None),
                (zfp_label, dict(hdf5plugin.Zfp(accuracy=bound * vr)), bound * vr)]

    load_before = os.getloadavg()
    print("compare_lossy: %s" % time.strftime("%Y-%m-%d %H:%M %Z"))
    print("machine: %s; load average before: %.2f %.2f %.2f" % ((cf.machine_line(),) + load_before))
    print("python %s, numpy %s, h5py %s (HDF5 %s), hdf5plugin %s (openmp=%s)" % (
        platform.python_version(), np.__version__, h5py.version.version, h5py.version.hdf5_version,
        hdf5plugin.version, hdf5plugin.get_config().build_config.openmp))
    print("plugin: %s/libH5Zfz.so; data: %s; best of %d; in-memory files, chunk cache off" % (
        plugin_dir, args.data, args.reps))
    print("codecs: FZ <preset> = H5Z-FZ mode noa (1T: H5Z_FZ_THREADS=1; %dT: all cores); "
          "SZ3 = hdf5plugin.SZ3(relative=bound); ZFP = hdf5plugin.Zfp(accuracy=bound x field range)\n"
          % os.cpu_count())

    rows = []
    for threads in (1, None):
        rows += fz_in_child(args, plugin_dir, threads)
    rows += run_codecs(baselines, args.data, args.reps)
    labels = [fz_label(p, 1) for p in args.presets] + [fz_label(p, None) for p in args.presets] + [sz3_label, zfp_label]

    # Same bytes whatever the thread count: the ratio must not depend on it.
    by_key = {(r["field"], r["bound"], r["chunking"], r["codec"]): r for r in rows}
    for (f, b, c, codec), r in by_key.items():
        if codec.startswith("FZ ") and codec.endswith(" 1T") and "ratio" in r:
            other = by_key.get((f, b, c, codec.replace(" 1T", " %dT" % os.cpu_count())))
            if other and "ratio" in other and other["stored"] != r["stored"]:
                r["error"] = "stored size differs with threads (%d vs %d)" % (r["stored"], other["stored"])

    print_tables(rows, labels)
    ok = check_targets(rows, labels, sz3_label, args.presets)
    failed = [r for r in rows if "error" in r]
    if failed:
        print("%d measurement(s) FAILED" % len(failed))
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())
    return 0 if ok and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
