#!/usr/bin/env python3
"""Write and read a large float32 dataset through h5py: uncompressed, gzip and H5Z-FZ, in one run.

A benchmark program, not a test: it prints a markdown table (recorded in
docs/PERFORMANCE.md) and the issue's h5py target: H5Z-FZ (fzgpu, NOA 1e-3,
16 MiB chunks) writes and reads at no less than 80% of the uncompressed speed
measured in the same run.

Data: the real field wmag91 (91^3 float32) tiled by mirroring, as
fz_chunk_bench does (its header says why this layout): value (z, y, x) =
wmag91[m(z), m(y), m(x)] with m(i) = i mod 182 below 91, else 181 - i mod 182,
so the joins stay smooth. The dataset is (Z, 64, 64) float32 (Z = size / 16
KiB) in chunks of whole planes (chunk MiB * 64, 64, 64): 1 GiB as (65536, 64,
64) in 64 chunks (1024, 64, 64) of 16 MiB by default.

Each codec writes the whole dataset into a new file on local disk (a temporary
folder, printed; --dir chooses where), closes it, then the file is opened again
and the whole dataset read back; each direction's figure is the best of --reps
(gzip, about 50x slower, runs --slow-reps times). GB/s counts 1e9 bytes of the
uncompressed dataset per second. Writes end at close(), without fsync (the
bytes reach the page cache, not necessarily the disk; --fsync adds it). By
default nothing is dropped from the page cache before a read: the file was
just written, so reads are warm-cache reads unless it does not fit in memory
(the header says how much memory is available), and an uncompressed read is
then little more than a copy out of memory. With --cold-reads the file is
written out and dropped from the page cache before each read (fsync, then
posix_fadvise DONTNEED, which needs no root), so reads come from the disk,
as they do for files larger than memory or not read since boot; the script
checks with mincore how much of the file was still cached. Chunks of 16 MiB
are larger than h5py's 1 MiB chunk cache, so every chunk goes through the
filter on each write and read. Every read is checked: bit for bit for
lossless codecs, element by element against each chunk's bound for lossy
H5Z-FZ (NOA: bound x the chunk's value range, as the filter applies it per
chunk); exit 1 on any failure.

H5Z-FZ is found through HDF5_PLUGIN_PATH, which this script sets to
--plugin-dir (default: the first of $HDF5_PLUGIN_PATH, <repo>/build*/plugin
holding libH5Zfz.so) before importing h5py. H5Z_FZ_DEVICE (auto|cpu|cuda)
chooses the plugin's backend; it is printed, not set.

    python3 tools/bench/h5py_bench.py --plugin-dir build/plugin [--gib 1] [--chunk-mib 16] [--reps 3] [--cold-reads]
"""

import argparse
import ctypes
import glob
import mmap
import os
import platform
import shutil
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools", "python"))
import h5fz  # noqa: E402  (tools/python, standard library only)

SIDE = 91
PLANE = (64, 64)
TARGET_PERCENT = 80.0


def codecs():
    """(label, h5py create_dataset keyword arguments, lossy bound or None, slow)."""
    fz = h5fz.FILTER_ID
    # Uncompressed first (the others are shown as a share of it), gzip last
    # (slowest by far).
    return [
        ("uncompressed", {}, None, False),
        ("H5Z-FZ fzgpu NOA 1e-3", {"compression": fz, "compression_opts": h5fz.compression_opts("fzgpu", "noa", 1e-3)},
         1e-3, False),
        ("H5Z-FZ pfpl NOA 1e-3", {"compression": fz, "compression_opts": h5fz.compression_opts("pfpl", "noa", 1e-3)},
         1e-3, False),
        ("H5Z-FZ lossless", {"compression": fz, "compression_opts": h5fz.compression_opts("lossless")}, None, False),
        ("H5Z-FZ cusz NOA 1e-3", {"compression": fz, "compression_opts": h5fz.compression_opts("cusz", "noa", 1e-3)},
         1e-3, False),
        ("H5Z-FZ cuszhi-tp NOA 1e-3",
         {"compression": fz, "compression_opts": h5fz.compression_opts("cuszhi-tp", "noa", 1e-3)}, 1e-3, False),
        ("H5Z-FZ cuszhi-cr NOA 1e-3",
         {"compression": fz, "compression_opts": h5fz.compression_opts("cuszhi-cr", "noa", 1e-3)}, 1e-3, False),
    ] + peer_codecs() + [
        ("gzip 1", {"compression": "gzip", "compression_opts": 1}, None, True),
        ("gzip 4 (h5py's default level)", {"compression": "gzip", "compression_opts": 4}, None, True),
    ]


def peer_codecs():
    """SZ3 and ZFP through hdf5plugin, when it is installed: the lossy peers a
    user can install today, at the same value-range bound (SZ3's "relative"
    bound is taken over each chunk, as NOA is). Their reads are checked like
    H5Z-FZ's; ZFP's accuracy mode takes one absolute tolerance, so it gets
    1e-3 of the smallest chunk range (zfp_kwargs), which holds every chunk's
    NOA bound."""
    try:
        import hdf5plugin
    except ImportError:
        return []
    return [("SZ3 NOA 1e-3 (hdf5plugin %s)" % hdf5plugin.version, dict(hdf5plugin.SZ3(relative=1e-3)), 1e-3, False),
            ("ZFP accuracy 1e-3 x range (hdf5plugin)", "zfp", 1e-3, False)]


def zfp_kwargs(array, bound, chunk_planes):
    import hdf5plugin
    ranges = [float(array[z:z + chunk_planes].max()) - float(array[z:z + chunk_planes].min())
              for z in range(0, array.shape[0], chunk_planes)]
    return dict(hdf5plugin.Zfp(accuracy=bound * min(ranges)))


def mirrored(n):
    """Indices 0..90, 90..0, 0..90, ... (n of them)."""
    period = np.concatenate([np.arange(SIDE), np.arange(SIDE - 1, -1, -1)])
    return period[np.arange(n) % (2 * SIDE)]


def tiled_field(data_dir, planes):
    path = os.path.join(data_dir, "wmag91.float")
    if not os.path.exists(path):
        sys.exit("h5py_bench: missing real field %s (set --data or FZ_DATA)" % path)
    cube = np.fromfile(path, dtype="<f4")
    if cube.size != SIDE ** 3:
        sys.exit("h5py_bench: %s has %d elements, expected 91^3" % (path, cube.size))
    cube = cube.reshape(SIDE, SIDE, SIDE)
    return cube[np.ix_(mirrored(planes), mirrored(PLANE[0]), mirrored(PLANE[1]))]


def find_plugin_dir(explicit):
    candidates = [explicit] if explicit else []
    candidates += [p for p in os.environ.get("HDF5_PLUGIN_PATH", "").split(os.pathsep) if p]
    candidates += sorted(glob.glob(os.path.join(REPO, "build*", "plugin")))
    for candidate in candidates:
        if os.path.exists(os.path.join(candidate, h5fz.PLUGIN_FILE)):
            return os.path.abspath(candidate)
    sys.exit("h5py_bench: %s not found in %s (build the plugin: cmake --build <build> --target H5Zfz; "
             "pass --plugin-dir)" % (h5fz.PLUGIN_FILE, ", ".join(candidates) or "(no candidates)"))


def check_read(label, original, decoded, bound, chunk_planes):
    """Max abs error over the dataset; raises if lossless is not exact or a
    chunk breaks its NOA bound."""
    if bound is None:
        if not np.array_equal(original.view(np.uint32), decoded.view(np.uint32)):
            raise RuntimeError("%s: read back differs from the original" % label)
        return 0.0
    worst = 0.0
    for z in range(0, original.shape[0], chunk_planes):
        a = original[z:z + chunk_planes].astype(np.float64)
        b = decoded[z:z + chunk_planes].astype(np.float64)
        error = float(np.max(np.abs(a - b)))
        finite = a[np.isfinite(a)]
        allowed = bound * (float(finite.max()) - float(finite.min())) if finite.size else 0.0
        if not error <= allowed:  # NaN counts as broken
            raise RuntimeError("%s: planes %d..: max abs error %.6g > allowed %.6g"
                               % (label, z, error, allowed))
        worst = max(worst, error)
    return worst


def sync_file(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def resident_fraction(path):
    """The fraction of the file's pages in the page cache (Linux mincore over
    a read-only mapping made through libc), or None where that cannot be asked."""
    size = os.path.getsize(path)
    if size == 0:
        return 0.0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                              ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
        pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
        status = (ctypes.c_ubyte * pages)()
        fd = os.open(path, os.O_RDONLY)
        try:
            address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        finally:
            os.close(fd)
        if address is None or address == ctypes.c_void_p(-1).value:
            return None
        try:
            if libc.mincore(address, size, status) != 0:
                return None
        finally:
            libc.munmap(address, size)
        return sum(b & 1 for b in status) / pages
    except (OSError, AttributeError):
        return None


def drop_from_page_cache(path):
    """Writes the file's dirty pages and asks the kernel to drop its cached
    ones (posix_fadvise DONTNEED: no root needed; dirty pages would stay);
    returns the fraction still resident afterwards (None if unknown)."""
    sync_file(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return resident_fraction(path)


def measure(h5py, folder, label, kwargs, bound, array, chunk_shape, reps, fsync, cold):
    path = os.path.join(folder, "bench.h5")
    out = np.empty_like(array)
    best_write = best_read = float("inf")
    stored = 0
    resident = []  # with cold: the fraction of the file still cached when each read began
    for _ in range(reps):
        if os.path.exists(path):
            os.remove(path)
        start = time.perf_counter()
        with h5py.File(path, "w") as f:
            ds = f.create_dataset("x", shape=array.shape, dtype=array.dtype, chunks=chunk_shape, **kwargs)
            ds.write_direct(array)
        if fsync:
            sync_file(path)
        best_write = min(best_write, time.perf_counter() - start)
        out.fill(0)
        if cold:
            resident.append(drop_from_page_cache(path))
        start = time.perf_counter()
        with h5py.File(path, "r") as f:
            ds = f["x"]
            ds.read_direct(out)
        best_read = min(best_read, time.perf_counter() - start)
        with h5py.File(path, "r") as f:
            ds = f["x"]
            stored = ds.id.get_storage_size()
            # An optional filter that fails is skipped silently by HDF5: the
            # chunk is stored raw and the benchmark would measure nothing.
            skipped = sum(1 for i in range(ds.id.get_num_chunks()) if ds.id.get_chunk_info(i).filter_mask)
            if skipped:
                raise RuntimeError("%s: filter skipped on %d chunk(s), stored uncompressed" % (label, skipped))
    max_error = check_read(label, array, out, bound, chunk_shape[0])
    # (The floor is HDF5's work on cached chunks; with cold reads the disk
    # would be in it too, so it is not measured then.)
    floor = read_floor(h5py, path, out, chunk_shape[0], reps) if kwargs and not cold else None
    os.remove(path)
    return {
        "label": label,
        "ratio": array.nbytes / stored if stored else float("nan"),
        "write_gbs": array.nbytes / 1e9 / best_write,
        "read_gbs": array.nbytes / 1e9 / best_read,
        "max_error": max_error,
        "reps": reps,
        "floor_gbs": array.nbytes / 1e9 / floor if floor else None,
        "resident": None if not resident or None in resident else max(resident),
    }


def read_floor(h5py, path, out, chunk_planes, reps):
    """Seconds (best of reps) of what a filtered read costs besides the
    filter: HDF5 reads each stored chunk (read_direct_chunk) and then copies
    the decoded chunk from its own buffer into the caller's array (here: one
    warm chunk-sized buffer copied into `out`). A filter that took no time at
    all would read at this speed."""
    decoded = np.empty_like(out[:chunk_planes])
    decoded.fill(1)
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        with h5py.File(path, "r") as f:
            ds = f["x"]
            for i in range(ds.id.get_num_chunks()):
                z = ds.id.get_chunk_info(i).chunk_offset[0]
                ds.id.read_direct_chunk(ds.id.get_chunk_info(i).chunk_offset)
                np.copyto(out[z:z + chunk_planes], decoded)
        best = min(best, time.perf_counter() - start)
    return best


def mount_of(path):
    """(mount point, file system type) holding path, from /proc/mounts."""
    path = os.path.realpath(path)
    best = ("?", "?")
    try:
        with open("/proc/mounts") as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) >= 3 and (path == fields[1] or path.startswith(fields[1].rstrip("/") + "/")):
                    if len(fields[1]) >= len(best[0]) or best[0] == "?":
                        best = (fields[1], fields[2])
    except OSError:
        pass
    return best


def mem_available_gib():
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 2 ** 20
    except OSError:
        pass
    return float("nan")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gib", type=float, default=1.0, help="dataset size in GiB (default 1)")
    parser.add_argument("--chunk-mib", type=int, default=16, help="chunk size in MiB (default 16)")
    parser.add_argument("--reps", type=int, default=3, help="repetitions per codec; the best is reported")
    parser.add_argument("--slow-reps", type=int, help="repetitions for gzip (default: --reps)")
    parser.add_argument("--codecs", help="comma-separated substrings of the codec labels to run "
                        "(default: all; uncompressed always runs)")
    parser.add_argument("--dir", help="folder for the temporary files (default: the system's temp folder)")
    parser.add_argument("--fsync", action="store_true", help="include an fsync of the file in the write time")
    parser.add_argument("--cold-reads", action="store_true",
                        help="drop the file from the page cache before each read (fsync, then posix_fadvise "
                        "DONTNEED), so reads come from the disk; the default reads what the write left cached")
    parser.add_argument("--plugin-dir", help="folder holding libH5Zfz.so")
    parser.add_argument("--data", default=os.environ.get("FZ_DATA", os.path.join(REPO, "..", "shared", "data")))
    args = parser.parse_args()
    if args.reps < 1 or (args.slow_reps is not None and args.slow_reps < 1) or args.chunk_mib < 1:
        parser.error("--reps, --slow-reps and --chunk-mib must be >= 1")
    slow_reps = args.slow_reps if args.slow_reps is not None else args.reps

    chunk_planes = args.chunk_mib * 2 ** 20 // (4 * PLANE[0] * PLANE[1])
    if chunk_planes < 1 or args.chunk_mib * 2 ** 20 % (4 * PLANE[0] * PLANE[1]):
        parser.error("--chunk-mib must hold whole 64x64 float32 planes")
    planes = int(round(args.gib * 2 ** 30 / (4 * PLANE[0] * PLANE[1])))
    planes = max(chunk_planes, planes // chunk_planes * chunk_planes)  # whole chunks

    plugin_dir = find_plugin_dir(args.plugin_dir)
    os.environ["HDF5_PLUGIN_PATH"] = plugin_dir  # before h5py loads HDF5
    import h5py

    if not h5py.h5z.filter_avail(h5fz.FILTER_ID):
        sys.exit("h5py_bench: HDF5 cannot load %s from %s" % (h5fz.PLUGIN_FILE, plugin_dir))

    array = tiled_field(os.path.abspath(args.data), planes)
    chunk_shape = (chunk_planes,) + PLANE
    folder = tempfile.mkdtemp(prefix="h5py_bench-", dir=args.dir)
    mount, fstype = mount_of(folder)
    device = os.environ.get("H5Z_FZ_DEVICE") or "(unset: auto)"
    print("h5py_bench: %s" % time.strftime("%Y-%m-%d %H:%M %Z"))
    print("machine: %s, %d logical CPUs; %.1f GiB memory available" % (cpu_model(), os.cpu_count(), mem_available_gib()))
    print("python %s, numpy %s, h5py %s (HDF5 %s)" % (platform.python_version(), np.__version__, h5py.version.version,
                                                   h5py.version.hdf5_version))
    print("plugin: %s/%s, H5Z_FZ_DEVICE=%s" % (plugin_dir, h5fz.PLUGIN_FILE, device))
    print("dataset: wmag91 mirrored tiles, %s float32 = %.3f GiB, chunks %s = %.1f MiB (%d chunks)"
          % ("x".join(map(str, array.shape)), array.nbytes / 2 ** 30, "x".join(map(str, chunk_shape)),
             array.nbytes / 2 ** 20 / (planes // chunk_planes), planes // chunk_planes))
    reads = ("the file is dropped from the page cache before each read (fsync + posix_fadvise DONTNEED), so "
             "reads are cold, from the disk" if args.cold_reads else
             "page cache not dropped: reads follow the write, so they are warm-cache reads")
    print("files: %s (file system %s mounted at %s); writes end at close()%s; %s"
          % (folder, fstype, mount, " + fsync" if args.fsync else ", no fsync", reads))
    print("GB/s = 1e9 bytes of the uncompressed dataset per second, best of %d (gzip: best of %d)\n"
          % (args.reps, slow_reps))
    sys.stdout.flush()

    wanted = [w.strip() for w in args.codecs.split(",")] if args.codecs else None
    print("| codec | ratio | write GB/s | read GB/s | write % of uncompressed | read % of uncompressed | max abs error | reps |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    floors = []
    failures = 0
    base = None  # uncompressed, measured first
    try:
        for label, kwargs, bound, slow in codecs():
            if wanted and label != "uncompressed" and not any(w and w in label for w in wanted):
                continue
            try:
                if kwargs == "zfp":
                    kwargs = zfp_kwargs(array, bound, chunk_shape[0])
                r = measure(h5py, folder, label, kwargs, bound, array, chunk_shape, slow_reps if slow else args.reps,
                            args.fsync, args.cold_reads)
            except Exception as e:  # one failing codec must not hide the others
                r = {"label": label, "error": str(e)}
                failures += 1
            rows.append(r)
            if label == "uncompressed" and "error" not in r:
                base = r
            # Each row as soon as it is measured (a long run cut short keeps its rows).
            if "error" in r:
                print("| %s | FAILED: %s | | | | | | |" % (r["label"], r["error"]))
            else:
                wp = "%.0f%%" % (100 * r["write_gbs"] / base["write_gbs"]) if base else "?"
                rp = "%.0f%%" % (100 * r["read_gbs"] / base["read_gbs"]) if base else "?"
                print("| %s | %.3f | %.3f | %.3f | %s | %s | %.4g | %d |" % (
                    r["label"], r["ratio"], r["write_gbs"], r["read_gbs"], wp, rp, r["max_error"], r["reps"]))
                floors.append(r)
            sys.stdout.flush()
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    if args.cold_reads:
        cached = [r["resident"] for r in rows if "error" not in r]
        if cached and None not in cached:
            print("\nCold reads: at most %.1f%% of a file was still in the page cache when a read began."
                  % (100 * max(cached)))
        else:
            print("\nCold reads: whether the files left the page cache could not be checked (no mincore).")
    floors = [r for r in floors if r.get("floor_gbs")]
    if floors:
        print("\nRead floor: HDF5's own work in a filtered read, timed without the filter (each stored chunk read")
        print("with read_direct_chunk, then one chunk-sized copy into the array, as HDF5 does after the filter).")
        print("A filter that took no time would read at this speed; 'filter time' is what the measured read")
        print("spends on top of it, per chunk.\n")
        print("| codec | floor read GB/s | floor % of uncompressed | filter time per chunk, ms |")
        print("|---|---:|---:|---:|")
        chunks = array.nbytes // (chunk_planes * PLANE[0] * PLANE[1] * 4)
        for r in floors:
            fp = "%.0f%%" % (100 * r["floor_gbs"] / base["read_gbs"]) if base else "?"
            per_chunk = (array.nbytes / 1e9 / r["read_gbs"] - array.nbytes / 1e9 / r["floor_gbs"]) / chunks * 1e3
            print("| %s | %.3f | %s | %.2f |" % (r["label"], r["floor_gbs"], fp, per_chunk))
    target = next((r for r in rows if r["label"].startswith("H5Z-FZ fzgpu") and "error" not in r), None)
    if base and target:
        wp = 100 * target["write_gbs"] / base["write_gbs"]
        rp = 100 * target["read_gbs"] / base["read_gbs"]
        met = wp >= TARGET_PERCENT and rp >= TARGET_PERCENT
        print("\ntarget (issue 4: fzgpu NOA 1e-3, %d MiB chunks, >= %.0f%% of uncompressed both ways): write %.0f%%, "
              "read %.0f%% (%s reads): %s" % (args.chunk_mib, TARGET_PERCENT, wp, rp,
                                              "cold" if args.cold_reads else "warm-cache", "MET" if met else "NOT MET"))
    if failures:
        print("%d codec(s) FAILED" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
