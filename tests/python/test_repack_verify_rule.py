"""h5fz repack --verify checks exactly the bound the filter guarantees
(issue 28, item 4), and --mode noa-global falls back per dataset where no
global bound exists (item 13).

The filter takes NOA's range over a chunk's own elements: HDF5's padding of
an edge chunk (its fill value, or zeros without one), the fill and missing
values, +0.0 and non-finite values are left out (fz::chunk_bound, one rule).
--verify took the range over the padding too, so a +0.5 error in an edge
chunk, 500x the NOA bound, passed. A real violation is made here by handing
HDF5 another frame for one edge chunk as repack writes it (an LD_PRELOAD
wrapper of H5Dwrite_chunk): the frame of the same chunk with one element
moved by 0.5, at a tight bound. --verify must fail (exit 1) with a message
that names the dataset, under --quiet too."""

import os
import subprocess
import textwrap

import numpy as np
import pytest
import h5py

import h5fz
import fz_samples

pytestmark = pytest.mark.usefixtures("plugin")

SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int64_t hid_t;
typedef int herr_t;
typedef unsigned long long hsize_t;

/* Hands HDF5 the frame in $FZ_SHIM_FRAME instead of the one repack made for
   the chunk at $FZ_SHIM_OFFSET ("r,c"): a corrupted write, as a bad frame on
   disk would be. */
herr_t H5Dwrite_chunk(hid_t dset, hid_t dxpl, uint32_t filters, const hsize_t* offset, size_t size, const void* buf) {
  static herr_t (*real)(hid_t, hid_t, uint32_t, const hsize_t*, size_t, const void*) = 0;
  if (!real) real = (herr_t (*)(hid_t, hid_t, uint32_t, const hsize_t*, size_t, const void*))dlsym(RTLD_NEXT, "H5Dwrite_chunk");
  const char* want = getenv("FZ_SHIM_OFFSET");
  const char* path = getenv("FZ_SHIM_FRAME");
  unsigned long long r = 0, c = 0;
  if (want && path && sscanf(want, "%llu,%llu", &r, &c) == 2 && offset[0] == r && offset[1] == c) {
    FILE* f = fopen(path, "rb");
    if (f) {
      static char frame[1 << 24];
      size_t n = fread(frame, 1, sizeof frame, f);
      fclose(f);
      return real(dset, dxpl, filters, offset, n, frame);
    }
  }
  return real(dset, dxpl, filters, offset, size, buf);
}
"""


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    d = tmp_path_factory.mktemp("shim")
    (d / "shim.c").write_text(SHIM)
    lib = d / "libshim.so"
    r = subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(lib), str(d / "shim.c"), "-ldl"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("no C compiler for the H5Dwrite_chunk wrapper: " + r.stderr[-300:])
    return str(lib)


CHUNKS = (100, 100)
EDGE = (900, 900)   # the last chunk of 999 x 999: 99 x 99 inside the extent


def make_input(path, fill=None, missing=None):
    """999x999 real field + 1000 (no value near 0, so zero padding would
    widen the range 20x), as float32; a netCDF-like variant pads with the
    default fill 9.97e36 and marks land with missing_value."""
    a = fz_samples.load_real("999x999.float").astype(np.float32) + np.float32(1000)
    kw = {} if fill is None else {"fillvalue": fill}
    with h5py.File(path, "w") as f:
        d = f.create_dataset("v", data=a, chunks=CHUNKS, **kw)
        if missing is not None:
            a[950:960, 920:940] = missing
            d[950:960, 920:940] = missing
            d.attrs["missing_value"] = missing
    return a


def tampered_frame(tmp_path, a, fill, missing):
    """The frame of the edge chunk holding `a` with one element moved by
    +0.5, written through the filter at a tight ABS bound: it decodes to
    that element +0.5 and the rest within 1e-6."""
    b = a.copy()
    b[EDGE[0] + 40, EDGE[1] + 50] += np.float32(0.5)
    p = tmp_path / "frame.h5"
    kw = {} if fill is None else {"fillvalue": fill}
    with h5py.File(p, "w") as f:
        d = f.create_dataset("v", data=b, chunks=CHUNKS,
                             **h5fz.FZ(preset="fzgpu", abs=1e-6,
                                       **({} if missing is None else {"missing": float(missing), "dtype": "float32"})),
                             **kw)
        _, frame = d.id.read_direct_chunk(EDGE)
    out = tmp_path / "frame.bin"
    out.write_bytes(bytes(frame))
    return str(out)


def repack(tool, src, dst, *args, env=None):
    return subprocess.run([tool, "repack", str(src), str(dst)] + list(args), capture_output=True, text=True,
                          timeout=600, env=env)


@pytest.mark.parametrize("kind", ["zero-padding", "netcdf-fill-and-missing"])
@pytest.mark.parametrize("quiet", [False, True], ids=["table", "quiet"])
def test_verify_catches_an_edge_chunk_violation(h5fz_tool, tmp_path, shim, kind, quiet):
    fill, missing = (None, None) if kind == "zero-padding" else (np.float32(9.96921e36), np.float32(-999.0))
    src, dst = tmp_path / "in.h5", tmp_path / "out.h5"
    a = make_input(src, fill, missing)
    frame = tampered_frame(tmp_path, a, fill, missing)
    args = ["--preset", "fzgpu", "--mode", "noa", "--bound", "1e-3", "--verify"] + (["--quiet"] if quiet else [])
    # Untampered, the run is clean.
    r = repack(h5fz_tool, src, dst, *args)
    assert r.returncode == 0, r.stdout + r.stderr
    os.remove(dst)
    env = dict(os.environ, LD_PRELOAD=shim, FZ_SHIM_OFFSET="%d,%d" % EDGE, FZ_SHIM_FRAME=frame)
    r = repack(h5fz_tool, src, dst, *args, env=env)
    # The chunk's own range (the filter's) is ~50 wide: bound ~0.05, far
    # below 0.5; over the padding it was 1224 (zeros) or 1e37 (fill) wide.
    assert r.returncode == 1, r.stdout + r.stderr
    err = [line for line in r.stderr.splitlines() if line.startswith("h5fz repack: --verify failed")]
    assert len(err) == 1, r.stderr
    assert "/v 1 element(s)" in err[0] and "max error 0.5" in err[0], err[0]
    assert "was not written" in err[0], err[0]
    if quiet:
        assert r.stdout == ""
        assert "see the table" not in err[0]
    else:
        assert "FAILED (1)" in r.stdout


def test_verify_rule_is_the_filters_on_the_edge_chunks(h5fz_tool, tmp_path):
    """Every edge chunk of a clean run holds the bound over its own elements
    (so --verify's stricter rule never fails a good file)."""
    src, dst = tmp_path / "in.h5", tmp_path / "out.h5"
    a = make_input(src, np.float32(9.96921e36), np.float32(-999.0))
    r = repack(h5fz_tool, src, dst, "--preset", "cusz", "--mode", "noa", "--bound", "1e-3", "--verify", "--errors")
    assert r.returncode == 0, r.stdout + r.stderr
    with h5py.File(dst, "r") as g:
        out = g["v"][()]
    for i in range(0, 999, 100):
        for j in range(0, 999, 100):
            o = a[i:i + 100, j:j + 100].astype(np.float64)
            keep = o != -999.0
            assert np.all(out[i:i + 100, j:j + 100][~keep] == -999.0)
            v = o[keep]
            assert np.abs(out[i:i + 100, j:j + 100][keep] - v).max() <= 1e-3 * (v.max() - v.min())


def test_noa_global_falls_back_per_dataset_near_the_limits(h5fz_tool, tmp_path):
    """float64 at +-1.4e308 (the whole range overflows to inf) and denormals
    (bound x range rounds to 0): those datasets alone take per-chunk noa, with
    a message; an ordinary dataset beside them keeps noa-global; exit 0."""
    p = fz_samples.load_real("pressure.384_384.f64")
    cols = np.arange(384)[None, :]
    huge = np.where(cols < 192, 1.4e308 + p * 1e306, -1.4e308 + p * 1e306)   # each chunk on one side
    k = (np.arange(384 * 384) % 100 + 1).reshape(384, 384)
    tiny = k * np.float64(5e-324)                                             # 1..100 x the smallest denormal
    ordinary = fz_samples.load_real("999x999.float")
    src, dst = tmp_path / "in.h5", tmp_path / "out.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("huge", data=huge, chunks=(100, 96))
        f.create_dataset("tiny", data=tiny, chunks=(100, 96))
        f.create_dataset("ordinary", data=ordinary, chunks=(100, 100))
    r = repack(h5fz_tool, src, dst, "--preset", "fzgpu", "--mode", "noa-global", "--bound", "1e-3", "--verify")
    assert r.returncode == 0, r.stdout + r.stderr
    for name, why in [("/huge", "overflows a double"), ("/tiny", "is 0 in floating point")]:
        msg = [line for line in r.stderr.splitlines() if line.startswith("h5fz repack: warning: %s:" % name)]
        assert len(msg) == 1 and why in msg[0] and "compressed with noa" in msg[0], r.stderr
    rows = {line.split()[0]: line for line in r.stdout.splitlines() if line.startswith("/")}
    assert " noa 0.001" in rows["/huge"] and rows["/huge"].rstrip().endswith("ok"), r.stdout
    assert " noa 0.001" in rows["/tiny"] and rows["/tiny"].rstrip().endswith("ok"), r.stdout
    assert "noa-global 0.001 = abs" in rows["/ordinary"], r.stdout
    with h5py.File(dst, "r") as g:
        assert h5fz.parse_stored(g["huge"]._filters[str(h5fz.FILTER_ID)])["mode_name"] == "noa"
        assert h5fz.parse_stored(g["ordinary"]._filters[str(h5fz.FILTER_ID)])["mode_name"] == "abs"
        out_huge, out_tiny, out_ord = g["huge"][()], g["tiny"][()], g["ordinary"][()]
    assert np.array_equal(out_tiny, tiny)   # a range of denormals: stored exactly
    for i in range(0, 384, 100):
        for j in range(0, 384, 96):
            o = huge[i:i + 100, j:j + 96]
            assert np.abs(out_huge[i:i + 100, j:j + 96] - o).max() <= 1e-3 * (o.max() - o.min())
    glob = 1e-3 * (float(ordinary.max()) - float(ordinary.min()))
    assert np.abs(out_ord.astype(np.float64) - ordinary).max() <= glob


def test_decompress_compare_takes_the_filters_noa_range(h5fz_tool, tmp_path):
    """h5fz decompress --compare --mode noa checks NOA with the engine's rule
    too: zeros (HDF5's padding where no fill value is defined) do not widen
    the range. A frame one element of which is 0.5 off, checked against the
    original at NOA 1e-3: the range without the zeros is ~224 wide (bound
    0.22), with them ~1224 (1.2, which let the error pass)."""
    a = fz_samples.load_real("999x999.float").astype(np.float32) + np.float32(1000)
    a[:, 990:] = 0                                       # like zero padding
    b = a.copy()
    b[500, 500] += np.float32(0.5)
    orig, moved, frame, out = (tmp_path / n for n in ("a.raw", "b.raw", "b.fzm", "b.out"))
    a.tofile(orig)
    b.tofile(moved)
    subprocess.run([h5fz_tool, "compress", "--dtype", "f32", "--shape", "999,999", "--preset", "pfpl",
                    "--mode", "abs", "--bound", "1e-6", str(moved), str(frame)], check=True, capture_output=True)
    r = subprocess.run([h5fz_tool, "decompress", str(frame), str(out), "--compare", str(orig), "--mode", "noa",
                        "--bound", "1e-3"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "elements outside the bound: 1  <-- BOUND VIOLATED" in r.stdout, r.stdout
    kept = a[a != 0].astype(np.float64)
    assert "x range %.6g" % (kept.max() - kept.min()) in r.stdout, r.stdout
