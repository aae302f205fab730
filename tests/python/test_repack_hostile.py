"""h5fz repack on hostile and ordinary files (issue 28, items 2, 3, 4, 6, 8,
12, 14, 15): it never removes or truncates a file it did not create (its
input, another run's partial file), keeps the user block's bytes, leaves an
existing OUT as it was when --verify fails, copies netCDF-4 files with user
types and committed datatypes without crashing (h5dump -H the same), stops
cleanly on a full disk or a file size limit, rechunks with a chunk cache,
keeps datasets of object references pointing at the same objects and
compressed datasets on their committed type, and refuses an OUT that is a
directory before any work. No partial file is left behind on any failure,
a crash included."""

import os
import re
import resource
import shutil
import signal
import subprocess
import time

import numpy as np
import pytest
import h5py

import fz_samples
from test_repack import repack

pytestmark = pytest.mark.usefixtures("plugin")


def partials(folder):
    return sorted(p.name for p in folder.iterdir() if "h5fz-partial" in p.name)


def header(path):
    """h5dump -H without the file name line and object addresses."""
    r = subprocess.run(["h5dump", "-H", str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return re.sub(r"(DATASET|GROUP|DATATYPE) \d+ ", r"\1 ", r.stdout.split("\n", 1)[1])


def small_input(path):
    with h5py.File(path, "w") as f:
        f.create_dataset("w", data=fz_samples.load_real("wmag91.float"), chunks=(8, 91, 91))


def big_input(path, copies):
    """The real wmag field repeated along the slowest axis, contiguous."""
    w = fz_samples.load_real("wmag91.float")
    with h5py.File(path, "w") as f:
        d = f.create_dataset("w", shape=(91 * copies, 91, 91), dtype="f4")
        for i in range(copies):
            d[i * 91:(i + 1) * 91] = w
        return d.id.get_offset(), d.id.get_storage_size()


def wait_for(stream, needle, limit=120):
    """Reads `stream` (bytes, blocking) until `needle` shows; returns what was read."""
    seen = b""
    end = time.time() + limit
    while needle not in seen and time.time() < end:
        chunk = os.read(stream.fileno(), 4096)
        if not chunk:
            break
        seen += chunk
    return seen


# ---- item 2: only what this run created is removed --------------------------------


def test_input_named_like_the_partial_file_survives(h5fz_tool, tmp_path):
    """`h5fz repack data.h5fz-partial data` used to create its partial file
    over its own input (and remove it)."""
    src, out = tmp_path / "data.h5fz-partial", tmp_path / "data"
    small_input(src)
    before = src.read_bytes()
    repack(h5fz_tool, src, out, "--preset", "lossless")
    assert src.read_bytes() == before
    with h5py.File(out, "r") as f:
        assert np.array_equal(f["w"][()], fz_samples.load_real("wmag91.float"))
    assert partials(tmp_path) == ["data.h5fz-partial"]            # the input, nothing else


def test_a_failing_run_keeps_another_runs_partial_file(h5fz_tool, tmp_path):
    """A file that looks like a partial output of OUT but was not created by
    this run (another run's, in progress) is never touched."""
    src, out = tmp_path / "in.h5", tmp_path / "out.h5"
    small_input(src)
    theirs = tmp_path / "out.h5.h5fz-partial"
    theirs.write_bytes(b"another run is writing this")
    # A run that fails while writing: a dataset no installed filter can read.
    bad = tmp_path / "bad.h5"
    with h5py.File(bad, "w") as f:
        f.create_dataset("good", data=np.ones((10, 10), np.float32))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((10,))
        dcpl.set_filter(32099, h5py.h5z.FLAG_OPTIONAL, (1,))
        h5py.h5d.create(f.id, b"odd", h5py.h5t.NATIVE_FLOAT, h5py.h5s.create_simple((100,)), dcpl=dcpl)
    with h5py.File(bad, "a") as f:
        f["odd"].id.write_direct_chunk((0,), b"\0" * 40, filter_mask=0)
    r = repack(h5fz_tool, bad, out, "--preset", "lossless", check=False)
    assert r.returncode == 1 and "/odd" in r.stderr, r.stderr
    assert theirs.read_bytes() == b"another run is writing this"
    assert partials(tmp_path) == ["out.h5.h5fz-partial"]
    r = repack(h5fz_tool, src, out, "--preset", "lossless")
    assert theirs.read_bytes() == b"another run is writing this"
    assert out.exists()


def test_two_runs_to_the_same_out(h5fz_tool, tmp_path):
    """A second run to the same OUT while the first is writing: both finish,
    neither touches the other's partial file."""
    src, out = tmp_path / "big.h5", tmp_path / "out.h5"
    big_input(src, 8)
    first = subprocess.Popen([h5fz_tool, "repack", str(src), str(out), "--preset", "lossless", "--batch-mib", "1",
                              "--progress", "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        os.set_blocking(first.stderr.fileno(), True)
        # --quiet hides the progress line: wait for the partial file instead.
        end = time.time() + 60
        while not partials(tmp_path) and time.time() < end:
            time.sleep(0.01)
        first.send_signal(signal.SIGSTOP)
        assert len(partials(tmp_path)) == 1
        second = repack(h5fz_tool, src, out, "--preset", "lossless", "--quiet")
        assert second.returncode == 0
        assert len(partials(tmp_path)) == 1                        # the first run's, still there
    finally:
        first.send_signal(signal.SIGCONT)
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert partials(tmp_path) == []
    with h5py.File(out, "r") as f:
        w = fz_samples.load_real("wmag91.float")
        assert np.array_equal(f["w"][-91:], w)


def test_out_is_in_through_links(h5fz_tool, tmp_path):
    src = tmp_path / "in.h5"
    small_input(src)
    before = src.read_bytes()
    (tmp_path / "sym.h5").symlink_to(src)
    os.link(src, tmp_path / "hard.h5")
    for out in ["sym.h5", "hard.h5"]:
        r = repack(h5fz_tool, src, tmp_path / out, check=False)
        assert r.returncode == 2 and "OUT is IN" in r.stderr, r.stderr
    assert src.read_bytes() == before
    assert partials(tmp_path) == []


# ---- item 3: the user block ------------------------------------------------------------


def matlab_header():
    """A MATLAB v7.3 MAT-file header: 116 bytes of text, 8 of subsystem
    offset, the version 0x0200 and the endian indicator, then zeros."""
    text = b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Sat Nov 28 01:00:00 2026 HDF5 schema 1.00 ."
    head = text.ljust(116, b" ") + b"\0" * 8 + b"\x00\x02" + b"IM"
    return head.ljust(512, b"\0")


def test_user_block_bytes_are_copied(h5fz_tool, tmp_path):
    src, out = tmp_path / "in.mat", tmp_path / "out.mat"
    w = fz_samples.load_real("wmag91.float")
    with h5py.File(src, "w", userblock_size=512) as f:
        f.create_dataset("w", data=w, chunks=(8, 91, 91))
    with open(src, "r+b") as fh:
        fh.write(matlab_header())
    repack(h5fz_tool, src, out, "--preset", "fzgpu", "--mode", "abs", "--bound", "1e-3")
    assert out.read_bytes()[:512] == matlab_header()
    with h5py.File(out, "r") as f:
        assert f.userblock_size == 512
        assert np.abs(f["w"][()].astype(np.float64) - w).max() <= 1e-3


# ---- item 4: a failed --verify leaves OUT as it was ------------------------------------------


def test_failed_verify_leaves_out_untouched(h5fz_tool, tmp_path):
    """The input changes while --verify reads it back (a real way for a
    verify to fail): exit 1, the previous OUT kept, the partial file gone."""
    src, out = tmp_path / "big.h5", tmp_path / "out.h5"
    offset, size = big_input(src, 24)
    out.write_bytes(b"previous")
    p = subprocess.Popen([h5fz_tool, "repack", str(src), str(out), "--preset", "lossless", "--verify",
                          "--batch-mib", "1", "--progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen = wait_for(p.stderr, b"(verify)")
    p.send_signal(signal.SIGSTOP)
    try:
        assert b"(verify)" in seen, seen[-300:]
        # The last 4 MiB of the input (not verified yet) change under it.
        with open(src, "r+b") as fh:
            fh.seek(offset + size - (4 << 20))
            fh.write(np.full(1 << 20, 1234.5, np.float32).tobytes())
    finally:
        p.send_signal(signal.SIGCONT)
    stdout, err = p.communicate(timeout=300)
    err = seen + err
    assert p.returncode == 1, err
    assert out.read_bytes() == b"previous"
    assert partials(tmp_path) == []
    assert b"FAILED" in stdout
    assert b"out.h5 was not written" in err, err[-500:]


# ---- item 6: netCDF-4 user types and committed datatypes --------------------------------------


ENUM_CDL = """netcdf enumtest {
dimensions:
  x = 4 ;
variables:
  float a(x) ;
data:
  a = 1, 2, 3, 4 ;
group: g2 {
  types:
    byte enum cloud_t { clear = 0, cloudy = 1 } ;
  variables:
    cloud_t c(x) ;
    float t(x) ;
  data:
    c = clear, cloudy, clear, cloudy ;
    t = 5, 6, 7, 8 ;
  }
}
"""


def write_tracked_with_type(path, variant):
    """Root and a group with tracked creation order, a dataset in the group
    and a committed datatype (and datasets using it)."""
    w = fz_samples.load_real("vorticity.128_128_41")
    with h5py.File(path, "w", track_order=True) as f:
        if variant == "type-first":
            f["t"] = np.dtype("<f4")
        g = f.create_group("g", track_order=True)
        g.create_dataset("d", data=w[0], chunks=(64, 64))
        if variant != "type-first":
            f["t"] = np.dtype("<f4")
        if variant == "users":
            f.create_dataset("u", data=w[1], dtype=f["t"], chunks=(64, 64))
            g.create_dataset("v", data=w[2], dtype=f["t"], chunks=(64, 64))
            g["h"] = g["v"]                                   # a second hard link


@pytest.mark.parametrize("variant", ["plain", "type-first", "users", "netcdf-enum"])
def test_user_types_and_committed_types_copy_without_crash(h5fz_tool, tmp_path, variant):
    src, out = tmp_path / "in.nc", tmp_path / "out.nc"
    if variant == "netcdf-enum":
        if not shutil.which("ncgen"):
            pytest.skip("ncgen (netcdf-bin) not installed")
        (tmp_path / "e.cdl").write_text(ENUM_CDL)
        subprocess.run(["ncgen", "-k", "nc4", "-o", str(src), str(tmp_path / "e.cdl")], check=True, timeout=60)
    else:
        write_tracked_with_type(src, variant)
    for preset in (["lossless"], ["fzgpu", "--mode", "noa", "--bound", "1e-3"]):
        r = repack(h5fz_tool, src, out, "--preset", *preset, check=False)
        assert r.returncode == 0, (r.returncode, r.stderr)
        assert header(src) == header(out)                   # the structure, committed types named
        assert partials(tmp_path) == []
    if shutil.which("ncdump") and variant == "netcdf-enum":
        dumped = subprocess.run(["ncdump", str(out)], capture_output=True, text=True, check=True).stdout
        assert "c = clear, cloudy, clear, cloudy" in dumped


def test_a_crash_removes_the_partial_file(h5fz_tool, tmp_path):
    """Whatever kills the run from inside (SIGSEGV, SIGBUS, SIGABRT) removes
    the partial file first."""
    src, out = tmp_path / "big.h5", tmp_path / "out.h5"
    big_input(src, 8)
    def no_core():
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT):
        p = subprocess.Popen([h5fz_tool, "repack", str(src), str(out), "--preset", "lossless", "--batch-mib", "1",
                              "--progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path,
                             preexec_fn=no_core)
        os.set_blocking(p.stderr.fileno(), True)
        first = p.stderr.read(1)
        assert first, "no progress line"
        p.send_signal(sig)
        _, err = p.communicate(timeout=120)
        assert p.returncode == -sig, (p.returncode, err[-300:])
        assert b"removed the partial output" in err
        assert not out.exists()
        assert partials(tmp_path) == []


# ---- item 8: a full disk, a file size limit ----------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs (root only); skipped only where mounting is impossible."""
    mount = shutil.which("mount")
    where = tmp_path / "small"
    where.mkdir()
    if os.geteuid() != 0 or not mount:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    r = subprocess.run([mount, "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(where)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: " + r.stderr.strip())
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


def noise_input(path):
    """4 MiB that compress to about as much: random bits, one chunked
    dataset (compressed by repack) and one gzip dataset (copied)."""
    bits = fz_samples.mix64(1 << 19).view(np.float32)
    bits = np.where(np.isfinite(bits), bits, 0).reshape(1024, 1024)
    with h5py.File(path, "w") as f:
        f.create_dataset("noise", data=bits, chunks=(128, 1024))
        f.create_dataset("packed", data=bits.view(np.uint8).reshape(1024, 4096), chunks=(256, 4096),
                         compression="gzip")


@pytest.mark.parametrize("which", ["compressed", "copied"])
def test_full_disk_stops_cleanly(h5fz_tool, tmp_path, small_disk, which):
    src = tmp_path / "noise.h5"
    noise_input(src)
    out = small_disk / "out.h5"
    selected = "/noise" if which == "compressed" else "/none"
    r = repack(h5fz_tool, src, out, "--preset", "lossless", "--datasets", selected, check=False)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "not enough free space" in r.stderr or "No space left" in r.stderr, r.stderr
    assert os.listdir(small_disk) == []


def test_file_size_limit_stops_cleanly(h5fz_tool, tmp_path):
    """ulimit -f: a write past it fails (SIGXFSZ is ignored) and the run
    stops with a message instead of being killed."""
    src, out = tmp_path / "noise.h5", tmp_path / "out.h5"
    noise_input(src)

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
    r = repack(h5fz_tool, src, out, "--preset", "lossless", check=False, preexec_fn=limit)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "h5fz repack: " in r.stderr
    assert not out.exists()
    assert partials(tmp_path) == []


# ---- item 12: rechunking reads each input chunk once ---------------------------------------------


INFLATE_COUNTER = r"""
/* Counts zlib stream starts (one per gzip chunk HDF5 decompresses) and
   writes the count to $FZ_INFLATE_COUNT at exit. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
static long calls;
int inflateInit_(void* strm, const char* version, int size) {
  static int (*real)(void*, const char*, int);
  if (!real) real = (int (*)(void*, const char*, int))dlsym(RTLD_NEXT, "inflateInit_");
  ++calls;
  return real(strm, version, size);
}
__attribute__((destructor)) static void report(void) {
  const char* path = getenv("FZ_INFLATE_COUNT");
  FILE* f = path ? fopen(path, "w") : NULL;
  if (f) { fprintf(f, "%ld\n", calls); fclose(f); }
}
"""


def test_rechunking_reads_each_input_chunk_about_once(h5fz_tool, tmp_path):
    """Input chunks (48, 64, 64), gzip; --chunks auto writes (4, 512, 512):
    each input chunk is shared by 12 output chunks. Without a chunk cache
    sized for them HDF5 decompressed each input chunk for every output chunk
    it meets (12x the work: 15.3 s against h5repack's 0.8 s); with one, each
    is decompressed about once. Counted, not timed: an LD_PRELOAD counter of
    zlib's stream starts in the repack process."""
    v = fz_samples.load_real("vorticity.512_512")
    src = tmp_path / "v.h5"
    with h5py.File(src, "w") as f:
        d = f.create_dataset("v", shape=(48, 512, 512), dtype="f4", chunks=(48, 64, 64), compression="gzip",
                             compression_opts=1)
        for i in range(48):
            d[i] = v * np.float32(1 + 0.01 * i)
    if not shutil.which("cc"):
        pytest.fail("no C compiler (cc) for the zlib call counter")
    (tmp_path / "count.c").write_text(INFLATE_COUNTER)
    shim = tmp_path / "libcount.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(shim), str(tmp_path / "count.c"), "-ldl"], check=True)
    count_file = tmp_path / "inflates"
    input_chunks = 8 * 8

    def inflates(*args):
        env = dict(os.environ, LD_PRELOAD=str(shim), FZ_INFLATE_COUNT=str(count_file))
        repack(h5fz_tool, src, tmp_path / "out.h5", "--preset", "lossless", "--quiet", *args, env=env)
        return int(count_file.read_text())
    keep, auto = inflates(), inflates("--chunks", "auto")
    with h5py.File(tmp_path / "out.h5", "r") as f:
        assert f["v"].chunks == (4, 512, 512)
        assert np.array_equal(f["v"][7], v * np.float32(1.07))
    assert keep >= input_chunks, "the counter saw %d decompressions for %d chunks" % (keep, input_chunks)
    assert auto <= 2 * input_chunks, "rechunking decompressed %d times for %d input chunks (keeping: %d)" % (
        auto, input_chunks, keep)


# ---- item 14: references and committed datatypes ------------------------------------------------


def test_reference_datasets_and_committed_types(h5fz_tool, tmp_path):
    src, out = tmp_path / "in.h5", tmp_path / "out.h5"
    w = fz_samples.load_real("vorticity.128_128_41")
    with h5py.File(src, "w") as f:                  # no creation order: "/g/v" comes before "/t"
        f["t"] = np.dtype("<f4")
        f["t"].attrs["about"] = "a committed type"
        f.create_dataset("u", data=w[0], dtype=f["t"], chunks=(64, 64))
        g = f.create_group("g")
        g.create_dataset("v", data=w[1], dtype=f["t"], chunks=(64, 64))
        targets = [f["u"], g, g["v"], f, f["t"]]
        f.create_dataset("refs", data=np.array([t.ref for t in targets] + [h5py.Reference()],
                                               dtype=h5py.ref_dtype))
        f.create_dataset("grid", data=np.array([[f["u"].ref, g.ref], [g["v"].ref, f.ref]], dtype=h5py.ref_dtype))
    r = repack(h5fz_tool, src, out, "--preset", "fzgpu", "--mode", "abs", "--bound", "1e-3")
    assert "warning" not in r.stderr, r.stderr
    assert header(src) == header(out)               # /u and /g/v on "/t"
    with h5py.File(out, "r") as f:
        names = [f[x].name if x else None for x in f["refs"][()]]
        assert names == ["/u", "/g", "/g/v", "/", "/t", None]
        assert [[f[x].name for x in row] for row in f["grid"][()]] == [["/u", "/g"], ["/g/v", "/"]]
        assert f["u"].id.get_type().committed() and f["g/v"].id.get_type().committed()
        assert f["t"].attrs["about"] == "a committed type"
        assert np.abs(f["g/v"][()].astype(np.float64) - w[1]).max() <= 1e-3


# ---- item 15: OUT checked before any work ----------------------------------------------------------


def test_out_that_cannot_be_written_fails_first(h5fz_tool, tmp_path):
    src = tmp_path / "big.h5"
    big_input(src, 8)
    folder = tmp_path / "folder"
    folder.mkdir()
    t = time.perf_counter()
    r = repack(h5fz_tool, src, folder, "--preset", "cuszhi-cr", "--mode", "noa", "--bound", "1e-4", check=False)
    assert r.returncode == 2 and "is a directory" in r.stderr, r.stderr
    assert os.listdir(folder) == [] and partials(tmp_path) == []
    r = repack(h5fz_tool, src, tmp_path / "nowhere" / "out.h5", "--preset", "cuszhi-cr", "--mode", "noa", "--bound",
               "1e-4", check=False)
    assert r.returncode == 1 and "does not exist" in r.stderr, r.stderr
    assert time.perf_counter() - t < 5                 # refused before reading 24 MiB


def test_out_on_a_read_only_file_system(h5fz_tool, tmp_path):
    """Root may write into any folder, but not onto a read-only file system:
    refused before any work, naming the folder."""
    where = tmp_path / "ro"
    where.mkdir()
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(where)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: " + r.stderr.strip())
    try:
        src = tmp_path / "in.h5"
        small_input(src)
        r = repack(h5fz_tool, src, where / "out.h5", check=False)
        assert r.returncode == 1 and "is not writable" in r.stderr, r.stderr
    finally:
        subprocess.run(["umount", str(where)], check=False)


# ---- item 15: an input filter HDF5 cannot find is named ------------------------------------------


def test_unavailable_input_filter_is_named(h5fz_tool, tmp_path):
    """A dataset compressed with SZ3 (hdf5plugin) while HDF5_PLUGIN_PATH leads
    only to H5Z-FZ: repack stops naming the filter by id and name and where
    it comes from, and leaves no OUT or partial file."""
    hdf5plugin = pytest.importorskip("hdf5plugin")
    src, out = tmp_path / "in.h5", tmp_path / "out.h5"
    w = fz_samples.load_real("wmag91.float")
    with h5py.File(src, "w") as f:
        f.create_dataset("t", data=w, chunks=(16, 91, 91), **hdf5plugin.SZ3(absolute=1e-2))
    env = {k: v for k, v in os.environ.items() if k != "HDF5_PLUGIN_PATH"}
    r = repack(h5fz_tool, src, out, "--preset", "fzgpu", "--mode", "noa", "--bound", "1e-3", check=False, env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "/t" in r.stderr and "filter 32024" in r.stderr and "hdf5plugin" in r.stderr, r.stderr
    assert not out.exists() and partials(tmp_path) == []
