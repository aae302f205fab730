"""xarray's engine="h5fz" (issue 33): a netCDF-4 file's H5Z-FZ variables read
through h5fz.read (many chunks at once) give exactly the values
engine="h5netcdf" gives, CF decoding included (scale and offset,
_FillValue masking), for whole variables and for every kind of basic and
outer selection; other variables are h5netcdf's own; chunks={} gives Dask
chunks aligned with the HDF5 chunks; a GPU device is refused with a
message."""

import numpy as np
import pytest

import h5fz
import fz_samples

xr = pytest.importorskip("xarray")
pytest.importorskip("h5netcdf")

pytestmark = pytest.mark.usefixtures("plugin")


def engine():
    from h5fz._xarray import H5FZBackendEntrypoint
    return H5FZBackendEntrypoint


@pytest.fixture(scope="module")
def netcdf_file(tmp_path_factory):
    """A file with a float32 field (fzgpu, NOA), a packed int16 variable with
    scale, offset and _FillValue (pfpl, ABS), and an unfiltered one."""
    path = tmp_path_factory.mktemp("xr") / "fz.nc"
    field = fz_samples.load_real("vorticity.128_128_41")  # (41, 128, 128)
    packed = np.round(field[:, :64, :64] * 100).astype("i2")
    packed[0, :3, :5] = -32767
    ds = xr.Dataset(
        {"w": (("z", "y", "x"), field),
         "p": (("z", "yy", "xx"), packed, {"scale_factor": 0.01, "add_offset": 1.5, "_FillValue": np.int16(-32767)}),
         "plain": (("z",), np.arange(41, dtype="f8"))},
        coords={"z": np.arange(41), "y": np.linspace(0, 1, 128)})
    ds.to_netcdf(str(path), engine="h5netcdf", encoding={
        "w": {"chunksizes": (8, 64, 128), **h5fz.FZ(preset="fzgpu", noa=1e-3)},
        "p": {"chunksizes": (16, 32, 64), "dtype": "i2", **h5fz.FZ(preset="pfpl", abs=1)}})
    return str(path)


def test_values_equal_h5netcdfs_and_go_through_h5fz_read(netcdf_file, monkeypatch):
    from h5fz import _read
    calls = []
    real = _read.read

    def counting(dataset, selection=None, device=None, threads=0):
        calls.append(dataset.name)
        return real(dataset, selection, device, threads)

    monkeypatch.setattr(_read, "read", counting)
    ref = xr.open_dataset(netcdf_file, engine="h5netcdf")
    got = xr.open_dataset(netcdf_file, engine=engine())
    assert set(got.variables) == set(ref.variables)
    for name in ref.variables:
        np.testing.assert_array_equal(got[name].values, ref[name].values)
        assert got[name].attrs == ref[name].attrs
        assert got[name].encoding.get("preferred_chunks") == ref[name].encoding.get("preferred_chunks")
    assert sorted(set(calls)) == ["/p", "/w"]  # the filtered ones, and only those
    assert np.isnan(got["p"].values[0, 0, 0])  # _FillValue masked as h5netcdf masks it


@pytest.mark.parametrize("selection", [
    dict(z=slice(3, 40, 5)),
    dict(z=slice(None, None, -3), x=5),
    dict(y=slice(120, 10, -7), z=[1, 30, 2]),
    dict(z=7, y=slice(60, 70), x=slice(0, 128, 2)),
    dict(z=slice(5, 5)),
    dict(x=[127, 0, 64], y=[3, 3, 100]),
])
def test_selections_equal_h5netcdfs(netcdf_file, selection):
    ref = xr.open_dataset(netcdf_file, engine="h5netcdf")
    got = xr.open_dataset(netcdf_file, engine=engine())
    np.testing.assert_array_equal(got["w"].isel(**selection).values, ref["w"].isel(**selection).values)


def test_dask_chunks_follow_the_hdf5_chunks(netcdf_file):
    pytest.importorskip("dask")
    got = xr.open_dataset(netcdf_file, engine=engine(), chunks={})
    assert got["w"].chunks == ((8, 8, 8, 8, 8, 1), (64, 64), (128,))
    ref = xr.open_dataset(netcdf_file, engine="h5netcdf")
    np.testing.assert_array_equal(got["w"].values, ref["w"].values)
    np.testing.assert_array_equal(got["p"].values, ref["p"].values)


def test_gpu_device_is_refused(netcdf_file):
    with pytest.raises(ValueError, match="h5fz.read"):
        xr.open_dataset(netcdf_file, engine=engine(), device="cuda")
