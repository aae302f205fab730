#!/usr/bin/env python3
"""Peak memory of writing and reading one large chunk through h5py, per preset.

A benchmark program, not a test: it prints a markdown table (recorded in
docs/PERFORMANCE.md). Each case runs in a child process of its own, which
measures its own peak resident memory (VmHWM) over its resident memory just
before the write or read, once the data array (or the output array, written
once) already exists; the read runs in a new process, on the file the write
left. The same is
measured for an uncompressed dataset of the same shape and chunking (HDF5's
own buffers for a chunked write), and the table gives the filter's extra
memory: for a write (H5Z-FZ peak - uncompressed peak) / chunk, for a read
(peak - stored chunk - decoded chunk) / chunk, the two buffers HDF5 holds for
any filtered read.

Data: float32, one chunk of --mib MiB holding the real field wmag91 (91^3)
repeated along the slowest axis; with --noise, random bits of exponent 0
(incompressible: every preset stores a raw frame). Reads are checked (lossless
bit for bit, lossy within the bound).

    python3 tools/bench/h5py_memory.py --plugin-dir build/plugin [--mib 1024] [--noise] [--presets cuszhi-tp,cuszhi-cr]
    python3 tools/bench/h5py_memory.py --plugin-dir build/plugin --one pfpl write 256   (one case, prints JSON)
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

PRESETS = [("uncompressed", None, None, None), ("lossless", "lossless", None, None),
           ("pfpl", "pfpl", "noa", 1e-3), ("fzgpu", "fzgpu", "noa", 1e-3), ("cusz", "cusz", "noa", 1e-4),
           ("cusz-1e-3", "cusz", "noa", 1e-3), ("cuszhi-tp", "cuszhi-tp", "noa", 1e-3),
           ("cuszhi-cr", "cuszhi-cr", "noa", 1e-3)]


def status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    return -1


def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def data_dir():
    return os.environ.get("FZ_DATA") or os.path.join(os.path.dirname(REPO), "shared", "data")


def make_chunk(mib, noise):
    import numpy as np
    plane = 91 * 91
    planes = (mib << 20) // (plane * 4)
    if noise:
        rng = np.random.default_rng(1)
        bits = rng.integers(0x3F800000, 0x40000000, size=(planes, 91, 91), dtype=np.uint32)
        return bits.view(np.float32)
    field = np.fromfile(os.path.join(data_dir(), "wmag91.float"), dtype="<f4").reshape(91, 91, 91)
    return np.ascontiguousarray(np.resize(field, (planes, 91, 91)))


def one_case(name, direction, mib, noise, folder):
    """Runs in the child: writes (or writes, then reads) one chunk, measures."""
    sys.path.insert(0, os.path.join(REPO, "tools", "python"))
    import numpy as np
    import h5fz
    h5fz.register()
    import h5py
    preset, mode, bound = next((p, m, b) for n, p, m, b in PRESETS if n == name)
    data = make_chunk(mib, noise)
    kwargs = {}
    if preset:
        kwargs = {"compression": h5fz.FILTER_ID,
                  "compression_opts": h5fz.compression_opts(preset, mode, bound) if mode
                  else h5fz.compression_opts(preset)}
    path = os.path.join(folder, "%s.h5" % name)
    result = {"chunk": data.nbytes}
    if direction == "write":
        before = status_kib("VmRSS:")
        reset_peak()
        with h5py.File(path, "w") as f:
            f.create_dataset("d", data=data, chunks=data.shape, **kwargs)
        result["extra"] = (status_kib("VmHWM:") - before) * 1024
        result["stored"] = os.path.getsize(path)
        return result
    # The file the write case left: this process has compressed nothing, so
    # no buffer the engine kept from writing serves the read.
    out = np.empty_like(data)
    out[...] = 0  # its pages resident before the read, so they are not counted as the read's
    before = status_kib("VmRSS:")
    reset_peak()
    with h5py.File(path, "r") as f:
        f["d"].read_direct(out)
    result["extra"] = (status_kib("VmHWM:") - before) * 1024
    if mode:
        lo, hi = float(data.min()), float(data.max())
        err = float(np.max(np.abs(out.astype(np.float64) - data.astype(np.float64))))
        result["ok"] = err <= bound * (hi - lo)
    else:
        result["ok"] = bool(np.array_equal(out.view(np.uint32), data.view(np.uint32)))
    return result


def run_child(args, name, direction, folder):
    cmd = [sys.executable, os.path.abspath(__file__), "--plugin-dir", args.plugin_dir, "--one", name, direction,
           str(args.mib), "--folder", folder] + (["--noise"] if args.noise else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("%s %s failed:\n%s" % (name, direction, r.stderr[-3000:]))
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plugin-dir", default=None)
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--noise", action="store_true", help="incompressible data (raw frames)")
    ap.add_argument("--one", nargs=3, metavar=("PRESET", "DIRECTION", "MIB"))
    ap.add_argument("--folder", default=None)
    ap.add_argument("--presets", default=None,
                    help="comma-separated dataset names to run (default: all; uncompressed always runs)")
    args = ap.parse_args()
    if args.plugin_dir is None:
        found = [os.path.dirname(p) for p in sorted(glob.glob(os.path.join(REPO, "build*", "plugin", "libH5Zfz.so")))]
        args.plugin_dir = found[0] if found else os.path.join(REPO, "build", "plugin")
    os.environ["HDF5_PLUGIN_PATH"] = os.path.abspath(args.plugin_dir)
    if args.one:
        name, direction, mib = args.one
        print(json.dumps(one_case(name, direction, int(mib), args.noise, args.folder)))
        return 0
    import h5py
    with tempfile.TemporaryDirectory(prefix="h5fz_mem_") as folder:
        rows = []
        chosen = None if args.presets is None else set(args.presets.split(",")) | {"uncompressed"}
        for name, _, _, _ in PRESETS:
            if chosen is not None and name not in chosen:
                continue
            rows.append((name, run_child(args, name, "write", folder), run_child(args, name, "read", folder)))
    base_w = rows[0][1]["extra"]
    print("h5py %s, HDF5 %s; one float32 chunk of %d MiB (%s); plugin %s, H5Z_FZ_DEVICE=%s" % (
        h5py.version.version, h5py.version.hdf5_version, args.mib, "random bits" if args.noise else "tiled wmag91",
        args.plugin_dir, os.environ.get("H5Z_FZ_DEVICE", "auto")))
    print()
    print("| dataset | stored MiB | write: peak over the array | filter's extra | read: peak over the output | "
          "filter's extra | read checked |")
    print("|---|---|---|---|---|---|---|")
    # Write: HDF5 holds a chunk buffer for any chunked write, so the filter's
    # extra is the peak over the uncompressed write's. Read: HDF5 holds the
    # stored chunk and the decoded chunk for any filtered read (an
    # uncompressed one reads straight into the array), so the filter's extra
    # is the peak over those two.
    failed = False
    mb = 1 << 20
    for name, w, r in rows:
        chunk = w["chunk"]
        ok = r.get("ok", True)
        failed |= not ok
        extra_w = "" if name == "uncompressed" else "%.2fx" % ((w["extra"] - base_w) / chunk)
        extra_r = "" if name == "uncompressed" else "%.2fx" % ((r["extra"] - w["stored"] - chunk) / chunk)
        print("| %s | %.1f | %.0f MiB | %s | %.0f MiB | %s | %s |" % (
            name, w["stored"] / mb, w["extra"] / mb, extra_w, r["extra"] / mb, extra_r, "yes" if ok else "FAILED"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
