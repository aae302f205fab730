"""Writes real fields through h5py with the H5Z-FZ filter, repacks a file with
h5repack, and prints a table: dataset, preset, raw bytes, stored bytes, ratio,
max abs error, write and read MB/s.

    HDF5_PLUGIN_PATH=build/plugin python3 tools/python/h5fz_report.py \
        [--data ../shared/data] [--fields wmag91.float,...] \
        [--presets lossless,pfpl:noa:1e-3,...] [--repeat 3]

A preset is NAME[:MODE:BOUND[:TUNING[:ALPHA:BETA]]]; TUNING (cuszhi-tp and
cuszhi-cr only) is off, ratio-first, quality-first or manual (with ALPHA and
BETA), e.g. cuszhi-cr:noa:1e-3:quality-first, cuszhi-tp:noa:1e-3:manual:1.5:4.
A preset the plugin refuses (lossy presets before they exist) gets a row
saying so instead of numbers.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import h5fz  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))

# name, dtype, shape (slowest first): see shared/data/README.md
FIELDS = {
    "wmag91.float": ("<f4", (91, 91, 91)),
    "vorticity.128_128_41": ("<f4", (41, 128, 128)),
    "vorticity.512_512": ("<f4", (512, 512)),
    "999x999.float": ("<f4", (999, 999)),
    "const32x32x59.float": ("<f4", (59, 32, 32)),
    "pressure.384_384.f64": ("<f8", (384, 384)),
}

# Today only the lossless preset exists; lossy ones join this list as they land.
DEFAULT_PRESETS = "lossless"


def parse_preset(spec):
    """NAME[:MODE:BOUND[:TUNING[:ALPHA:BETA]]] -> (spec, name, mode, bound, tuning keywords)."""
    parts = spec.split(":")
    name = parts[0]
    mode = parts[1] if len(parts) > 1 else "abs"
    bound = float(parts[2]) if len(parts) > 2 else None
    tuning = {}
    if len(parts) > 3:
        tuning["tuning"] = parts[3]
    if len(parts) > 4:
        if len(parts) != 6:
            raise SystemExit("preset %r: give both ALPHA and BETA after manual" % spec)
        tuning["alpha"], tuning["beta"] = float(parts[4]), float(parts[5])
    return spec, name, mode, bound, tuning


def chunks_for(shape, itemsize, target=1 << 20):
    """Chunks of about `target` bytes, splitting the slowest axes first."""
    chunks = list(shape)
    for axis in range(len(shape)):
        rest = itemsize
        for s in chunks[axis + 1:]:
            rest *= s
        if rest * chunks[axis] <= target:
            break
        chunks[axis] = max(1, target // rest)
        if chunks[axis] > 1 or rest <= target:
            break
    return tuple(int(c) for c in chunks)


def max_abs_error(a, b, np):
    if a.dtype.kind != "f":
        return 0.0 if a.tobytes() == b.tobytes() else float("nan")
    a64 = a.astype(np.float64)
    b64 = b.astype(np.float64)
    same = (a64 == b64) | (np.isnan(a64) & np.isnan(b64))
    if same.all():
        return 0.0
    return float(np.max(np.abs(a64[~same] - b64[~same])))


def short_error(text):
    """The filter's own message out of h5py's or h5repack's text."""
    m = re.search(r"H5Z-FZ: (.*?)\)?\s*$", str(text).strip().splitlines()[-1] if str(text).strip() else "")
    return (m.group(1) if m else str(text).strip().splitlines()[-1] if str(text).strip() else "?")[:70]


def best_time(fn, repeat):
    best = None
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        best = dt if best is None or dt < best else best
    return best, out


def mbps(nbytes, seconds):
    return nbytes / seconds / 1e6 if seconds and seconds > 0 else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=os.environ.get("FZ_DATA") or
                    os.path.join(os.path.dirname(REPO), "shared", "data"))
    ap.add_argument("--fields", default=",".join(FIELDS))
    ap.add_argument("--presets", default=os.environ.get("FZ_PRESETS", DEFAULT_PRESETS))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--h5repack", default=shutil.which("h5repack"))
    args = ap.parse_args()

    h5fz.register()
    import numpy as np
    import h5py

    if not h5fz.is_available(h5py):
        sys.exit("h5fz_report: HDF5 cannot load filter %d from %s" % (h5fz.FILTER_ID, h5fz.plugin_dir()))

    fields = {}
    for name in [f for f in args.fields.split(",") if f]:
        dt, shape = FIELDS[name]
        path = os.path.join(args.data, name)
        if not os.path.isfile(path):
            sys.exit("h5fz_report: real field missing: %s (set FZ_DATA)" % path)
        fields[name] = np.fromfile(path, dtype=dt).reshape(shape)
    presets = [parse_preset(p) for p in args.presets.split(",") if p]

    work = args.workdir or tempfile.mkdtemp(prefix="h5fz_report_")
    os.makedirs(work, exist_ok=True)
    rows = []

    print("h5py %s, HDF5 %s, plugin %s" % (h5py.version.version, h5py.version.hdf5_version,
                                            h5fz.plugin_path()))
    print("best of %d runs; MB = 1e6 bytes of raw data; work files in %s" % (args.repeat, work))
    print()

    # ---- h5py: each field x each preset --------------------------------------------
    for spec, pname, mode, bound, tuning in presets:
        try:
            opts = h5fz.compression_opts(pname, mode, bound, **tuning)
        except ValueError as e:
            rows.append(("*", spec, "", "", "", "", "", "", "refused: %s" % e))
            continue
        refused = False
        for name, arr in fields.items():
            if refused:
                break
            path = os.path.join(work, "h5py_%s_%s.h5" % (pname, name))
            chunks = chunks_for(arr.shape, arr.itemsize)

            def write():
                with h5py.File(path, "w") as f:
                    f.create_dataset("field", data=arr, chunks=chunks,
                                     compression=h5fz.FILTER_ID, compression_opts=opts)
            try:
                t_write, _ = best_time(write, args.repeat)
            except Exception as e:  # the plugin refused these options
                rows.append(("(every field)", spec, "", "", "", "", "", "",
                             "refused: %s" % short_error(e)))
                refused = True
                continue

            def read():
                with h5py.File(path, "r") as f:
                    return f["field"][()]
            t_read, back = best_time(read, args.repeat)
            with h5py.File(path, "r") as f:
                stored = f["field"].id.get_storage_size()
            rows.append((name, spec, arr.nbytes, stored, arr.nbytes / stored,
                         max_abs_error(arr, back, np), mbps(arr.nbytes, t_write),
                         mbps(arr.nbytes, t_read), "chunks %s" % "x".join(map(str, chunks))))

    # ---- h5repack: one file holding every field, converted per preset ----------------
    if args.h5repack:
        src = os.path.join(work, "repack_src.h5")
        with h5py.File(src, "w") as f:
            for name, arr in fields.items():
                f.create_dataset(name, data=arr)
        raw_total = sum(a.nbytes for a in fields.values())
        for spec, pname, mode, bound, tuning in presets:
            try:
                filt = h5fz.h5repack_filter(pname, mode, bound, **tuning)
            except ValueError as e:
                rows.append(("h5repack", spec, raw_total, "", "", "", "", "", "refused: %s" % e))
                continue
            dst = os.path.join(work, "repack_%s.h5" % pname)
            cmd = [args.h5repack, "-f", filt, src, dst]
            t0 = time.perf_counter()
            r = subprocess.run(cmd, capture_output=True, text=True)
            t_repack = time.perf_counter() - t0
            if r.returncode != 0:
                rows.append(("h5repack", spec, raw_total, "", "", "", "", "",
                             "failed: %s" % (r.stderr.strip().splitlines() or ["?"])[-1][:60]))
                continue
            with h5py.File(dst, "r") as f:
                unfiltered = [n for n in fields if f[n].id.get_create_plist().get_nfilters() == 0]
            if unfiltered:
                # h5repack copies a dataset unfiltered when set_local refuses the filter
                err = subprocess.run([args.h5repack, "--enable-error-stack", "-f", filt, src,
                                      dst + ".tmp"], capture_output=True, text=True)
                msg = [ln for ln in (err.stdout + err.stderr).splitlines() if "H5Z-FZ: " in ln]
                rows.append(("h5repack", spec, raw_total, "", "", "", "", "",
                             "refused, copied unfiltered: %s" % short_error(msg[-1] if msg else "?")))
                continue
            stored_total = 0
            for name, arr in fields.items():
                def read():
                    with h5py.File(dst, "r") as f:
                        return f[name][()]
                t_read, back = best_time(read, args.repeat)
                with h5py.File(dst, "r") as f:
                    d = f[name]
                    stored = d.id.get_storage_size()
                    chunks = d.chunks
                stored_total += stored
                rows.append(("repack:" + name, spec, arr.nbytes, stored, arr.nbytes / stored,
                             max_abs_error(arr, back, np), "", mbps(arr.nbytes, t_read),
                             "chunks %s" % "x".join(map(str, chunks or ()))))
            rows.append(("repack:(file)", spec, raw_total, stored_total, raw_total / stored_total,
                         "", mbps(raw_total, t_repack), "", " ".join(["h5repack", "-f", filt])))

    print_table(rows)
    return 0


def print_table(rows):
    head = ("dataset", "preset", "raw bytes", "stored bytes", "ratio", "max abs err",
            "write MB/s", "read MB/s", "notes")

    def fmt(i, v):
        if v == "" or v is None:
            return "-"
        if i == 4:
            return "%.3f" % v
        if i == 5:
            return "%.3g" % v if v else "0"
        if i in (6, 7):
            return "%.1f" % v
        return str(v)

    cells = [head] + [tuple(fmt(i, v) for i, v in enumerate(r)) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    right = {2, 3, 4, 5, 6, 7}
    for n, c in enumerate(cells):
        line = "  ".join(c[i].rjust(widths[i]) if i in right else c[i].ljust(widths[i])
                         for i in range(len(head)))
        print(line.rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))


if __name__ == "__main__":
    sys.exit(main())
