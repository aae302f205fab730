"""HDF5's fill value and a missing value at once (issue 28, item 1).

HDF5 pads edge chunks and never-written elements with the dataset's fill
value; a netCDF variable (or a user, through FZ(missing=...)) may name a
different missing value. Both must come back bit for bit and both stay out of
NOA's value range, whatever the preset and mode: the missing value used to
displace the fill value, which then stretched the range (9.97e36 padding in a
field of range 2: the edge rows came back as ~0). Checked element by element
on real fields, through h5py and through `h5fz repack` of a netCDF-like file
with missing_value only."""

import subprocess

import numpy as np
import pytest
import h5py

import h5fz
import fz_samples

pytestmark = pytest.mark.usefixtures("plugin")

LOSSY = ["pfpl", "fzgpu", "cusz", "cuszhi-tp", "cuszhi-cr"]
NC_FILL32 = np.float32(9.96921e36)          # netCDF's default fill for float
NC_FILL64 = np.float64(9.969209968386869e36)  # ... and for double


def bits_equal(a, b):
    return a.view(np.uint32 if a.dtype.itemsize == 4 else np.uint64) == \
        b.view(np.uint32 if b.dtype.itemsize == 4 else np.uint64)


def check_elements(original, out, chunks, mode, bound, specials, what):
    """Every special value (HDF5's fill, the missing value) exact; every other
    element within the bound the filter guarantees: ABS, or NOA x the range of
    the chunk's own elements inside the extent, specials, +0.0 and non-finite
    values left out (docs/FORMAT.md section 0)."""
    special = np.zeros(original.shape, dtype=bool)
    for s in specials:
        special |= bits_equal(original, np.full(original.shape, s, dtype=original.dtype))
    exact = special | ~np.isfinite(original)
    assert np.array_equal(bits_equal(original, out)[exact], np.ones(int(exact.sum()), dtype=bool)), \
        "%s: %d special/non-finite elements changed" % (what, int((~bits_equal(original, out))[exact].sum()))
    err = np.abs(original.astype(np.float64) - out.astype(np.float64))
    for start in np.ndindex(*[-(-s // c) for s, c in zip(original.shape, chunks)]):
        sl = tuple(slice(i * c, (i + 1) * c) for i, c in zip(start, chunks))
        o = original[sl]
        keep = ~exact[sl] & ~bits_equal(o, np.zeros_like(o))
        if not keep.any():
            assert np.array_equal(o.tobytes(), out[sl].tobytes()), (what, sl)
            continue
        if mode == "abs":
            allowed = bound
        else:
            v = o[keep].astype(np.float64)
            allowed = bound * (v.max() - v.min())
        worst = err[sl][~exact[sl]].max()
        assert worst <= allowed, "%s chunk %s: error %g > bound %g" % (what, sl, worst, allowed)


def field_with_gaps(dtype):
    """A real field, some 'land' set to the missing value later, and where
    the never-written columns will be (they read back as the fill value)."""
    if dtype == np.float32:
        a = fz_samples.load_real("wmag91.float")[:, :, :].copy()   # 91^3: ragged in every axis
        chunks = (16, 40, 40)
    else:
        a = fz_samples.load_real("pressure.384_384.f64").copy()    # 384^2
        chunks = (100, 70)
    land = np.zeros(a.shape, dtype=bool)
    land[..., 30:50, 10:25] = True
    return a, chunks, land


def write_partially(dset, a, missing_mask, missing):
    """Writes `a` with `missing` on the land, leaving columns 70..79 of the
    fastest axis unwritten; every chunk is written once."""
    b = a.copy()
    b[missing_mask] = missing
    dset[..., :70] = b[..., :70]
    dset[..., 80:] = b[..., 80:]
    expected = b.copy()
    expected[..., 70:80] = dset.fillvalue
    return expected


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("mode,bound", [("noa", 1e-3), ("abs", 1e-2)])
@pytest.mark.parametrize("preset", LOSSY)
def test_fill_and_missing_through_h5py(tmp_path, preset, mode, bound, dtype):
    a, chunks, land = field_with_gaps(dtype)
    fill = NC_FILL32 if dtype == np.float32 else NC_FILL64
    missing = dtype(-1e30)
    if mode == "abs":
        bound = bound * (float(a.max()) - float(a.min()))
    path = tmp_path / "t.h5"
    kw = {mode: bound}
    with h5py.File(path, "w") as f:
        d = f.create_dataset("v", shape=a.shape, dtype=dtype, chunks=chunks, fillvalue=fill,
                             **h5fz.FZ(preset=preset, missing=float(missing), dtype=np.dtype(dtype).name, **kw))
        expected = write_partially(d, a, land, missing)
    with h5py.File(path, "r") as f:
        out = f["v"][()]
        stored = h5fz.parse_stored(f["v"]._filters[str(h5fz.FILTER_ID)])
    check_elements(expected, out, chunks, mode, bound, [fill, missing], "%s %s %g" % (preset, mode, bound))
    # Both kept: HDF5's fill value in its own words, the missing value in cd[4..5].
    assert stored["fill_bytes"] == np.array(fill, dtype=dtype).tobytes()
    assert stored["missing"] == float(missing)


@pytest.mark.parametrize("preset", ["fzgpu", "cuszhi-cr"])
def test_fill_equal_to_missing_and_missing_alone(tmp_path, preset):
    """One special value in a chunk gives today's frame: the missing value
    equal to the fill value, or only one of them present."""
    a, chunks, land = field_with_gaps(np.float32)
    for fill, missing in [(np.float32(-1e30), np.float32(-1e30)), (np.float32(0), np.float32(-1e30))]:
        path = tmp_path / "t.h5"
        with h5py.File(path, "w") as f:
            d = f.create_dataset("v", shape=a.shape, dtype=np.float32, chunks=chunks, fillvalue=fill,
                                 **h5fz.FZ(preset=preset, noa=1e-3, missing=float(missing), dtype="float32"))
            expected = write_partially(d, a, land, missing)
        with h5py.File(path, "r") as f:
            out = f["v"][()]
        check_elements(expected, out, chunks, "noa", 1e-3, [fill, missing], "%s fill %g" % (preset, fill))


def netcdf_like(path, a, chunks, land, missing, fill):
    """A netCDF-4-like variable with a missing_value attribute and no
    _FillValue: HDF5's fill value is netCDF's default, 9.96921e36, which pads
    the ragged edge chunks and the never-written columns."""
    with h5py.File(path, "w") as f:
        d = f.create_dataset("v", shape=a.shape, dtype=a.dtype, chunks=chunks, fillvalue=fill)
        d.attrs["missing_value"] = missing
        d.attrs["long_name"] = "vorticity magnitude"
        return write_partially(d, a, land, missing)


@pytest.mark.parametrize("preset", LOSSY)
def test_repack_netcdf_missing_value_without_fill_value(h5fz_tool, tmp_path, preset):
    a, chunks, land = field_with_gaps(np.float32)
    missing = np.float32(-999.0)
    src = tmp_path / "in.nc"
    expected = netcdf_like(src, a, chunks, land, missing, NC_FILL32)
    for mode in ["noa", "noa-global", "abs"]:
        dst = tmp_path / ("out-%s.nc" % mode)
        bound = 1e-3 if mode != "abs" else 0.05
        r = subprocess.run([h5fz_tool, "repack", str(src), str(dst), "--preset", preset, "--mode", mode,
                            "--bound", repr(bound), "--verify"], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr
        with h5py.File(dst, "r") as g:
            out = g["v"][()]
            stored = h5fz.parse_stored(g["v"]._filters[str(h5fz.FILTER_ID)])
            assert g["v"].fillvalue.tobytes() == NC_FILL32.tobytes()
        if mode == "noa-global":
            data = expected[~bits_equal(expected, np.full_like(expected, NC_FILL32)) & (expected != missing)]
            glob = 1e-3 * (float(data.max()) - float(data.min()))
            check_elements(expected, out, chunks, "abs", glob, [NC_FILL32, missing], "%s %s" % (preset, mode))
        else:
            check_elements(expected, out, chunks, mode, bound, [NC_FILL32, missing], "%s %s" % (preset, mode))
        assert stored["fill_bytes"] == NC_FILL32.tobytes() and stored["missing"] == float(missing), stored


def test_noa_global_bound_leaves_out_the_datasets_fill_value(tmp_path):
    """h5fz.global_abs_bound (FZ(noa_global=..., data=dataset)) over an h5py
    dataset leaves its fill value out, as the filter does, besides the
    missing value: never-written elements (9.97e36) made the bound 9.97e33."""
    a, chunks, land = field_with_gaps(np.float32)
    src = tmp_path / "in.nc"
    expected = netcdf_like(src, a, chunks, land, np.float32(-999.0), NC_FILL32)
    data = expected[(expected != NC_FILL32) & (expected != np.float32(-999.0))]
    with h5py.File(src, "r") as f:
        bound = h5fz.global_abs_bound(f["v"], 1e-3, missing=-999.0)
        opts = h5fz.FZ(preset="fzgpu", noa_global=1e-3, data=f["v"], missing=-999.0, dtype="float32")
    assert bound == pytest.approx(1e-3 * (float(data.max()) - float(data.min())), rel=1e-12)
    assert h5fz.parse_opts(opts["compression_opts"])["bound"] == bound


def test_repack_netcdf_fill_value_and_missing_value_both(h5fz_tool, tmp_path):
    """A variable with _FillValue (= HDF5's fill value, as netCDF-4 writes it)
    and a different missing_value: the missing value takes the filter's
    second slot, so both are exact and both stay out of the range."""
    a, chunks, land = field_with_gaps(np.float32)
    fill, missing = np.float32(-1e34), np.float32(-999.0)
    src, dst = tmp_path / "in.nc", tmp_path / "out.nc"
    expected = netcdf_like(src, a, chunks, land, missing, fill)
    with h5py.File(src, "a") as f:
        f["v"].attrs["_FillValue"] = fill
    r = subprocess.run([h5fz_tool, "repack", str(src), str(dst), "--preset", "cuszhi-cr", "--mode", "noa",
                        "--bound", "1e-3", "--verify"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    with h5py.File(dst, "r") as g:
        out = g["v"][()]
        stored = h5fz.parse_stored(g["v"]._filters[str(h5fz.FILTER_ID)])
    assert stored["fill_bytes"] == fill.tobytes() and stored["missing"] == float(missing), stored
    check_elements(expected, out, chunks, "noa", 1e-3, [fill, missing], "cuszhi-cr _FillValue and missing_value")
