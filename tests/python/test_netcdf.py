"""netCDF-4 with the filter (issue 15, item 5): nccopy -F applies it to a
variable of a netCDF file (Debian's netcdf-bin, through Debian's HDF5), and
xarray writes and reads filtered variables through h5netcdf; every value
within the bound, the filter in the variable's pipeline."""

import os
import shutil
import subprocess

import numpy as np
import pytest
import h5py

import h5fz
from conftest import check_chunks_filtered

pytestmark = pytest.mark.usefixtures("plugin")

BOUND = 0.01  # absolute


@pytest.fixture(scope="module")
def field(data_dir):
    return np.fromfile(os.path.join(data_dir, "999x999.float"), dtype="<f4").reshape(999, 999)[:120, :160].copy()


def plain_netcdf(path, field):
    """A netCDF-4 file with variable t(y, x), written by ncgen from CDL."""
    ncgen = shutil.which("ncgen")
    if not ncgen:
        pytest.skip("ncgen not installed (apt-get install netcdf-bin)")
    values = ", ".join("%.9g" % v for v in field.ravel())
    cdl = ("netcdf plain {\ndimensions:\n  y = %d ;\n  x = %d ;\nvariables:\n  float t(y, x) ;\n"
           "    t:units = \"K\" ;\ndata:\n  t = %s ;\n}\n" % (field.shape[0], field.shape[1], values))
    with open(str(path) + ".cdl", "w") as f:
        f.write(cdl)
    subprocess.run([ncgen, "-k", "nc4", "-o", str(path), str(path) + ".cdl"], check=True, timeout=120)


def check_filtered(path, field, name="t"):
    with h5py.File(path, "r") as f:
        d = f[name]
        check_chunks_filtered(d)
        assert h5fz.parse_stored(h5fz.filter_values(d)[1])["preset_name"] == "fzgpu"
        assert np.max(np.abs(d[()].astype(np.float64) - field)) <= BOUND


def test_nccopy_applies_the_filter(tmp_path, field):
    nccopy, ncdump = shutil.which("nccopy"), shutil.which("ncdump")
    if not nccopy or not ncdump:
        pytest.skip("nccopy/ncdump not installed (apt-get install netcdf-bin)")
    src, dst = tmp_path / "plain.nc", tmp_path / "filtered.nc"
    plain_netcdf(src, field)
    words = ",".join(str(w) for w in h5fz.compression_opts("fzgpu", "abs", BOUND))
    env = dict(os.environ, HDF5_PLUGIN_PATH=h5fz.plugin_dir())
    r = subprocess.run([nccopy, "-F", "t,%d,%s" % (h5fz.FILTER_ID, words), str(src), str(dst)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    check_filtered(str(dst), field)
    r = subprocess.run([ncdump, "-s", "-h", str(dst)], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "t:_Filter = \"%d," % h5fz.FILTER_ID in r.stdout, r.stdout + r.stderr
    r = subprocess.run([ncdump, "-v", "t", str(dst)], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr  # netCDF's own reader decodes every chunk through the plugin


def test_xarray_through_h5netcdf(tmp_path, field):
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    h5fz.register()
    ds = xr.Dataset({"t": (("y", "x"), field, {"units": "K"})})
    path = str(tmp_path / "xr.nc")
    ds.to_netcdf(path, engine="h5netcdf", encoding={"t": {"chunksizes": (60, 160), **h5fz.FZ(preset="fzgpu",
                                                                                              abs=BOUND)}})
    check_filtered(path, field)
    with xr.open_dataset(path, engine="h5netcdf") as back:
        assert back.t.attrs["units"] == "K"
        assert np.max(np.abs(back.t.values.astype(np.float64) - field)) <= BOUND
    # and a file nccopy filtered
    if shutil.which("nccopy") and shutil.which("ncgen"):
        src, dst = tmp_path / "plain.nc", tmp_path / "nccopied.nc"
        plain_netcdf(src, field)
        words = ",".join(str(w) for w in h5fz.compression_opts("fzgpu", "abs", BOUND))
        subprocess.run([shutil.which("nccopy"), "-F", "t,%d,%s" % (h5fz.FILTER_ID, words), str(src), str(dst)],
                       env=dict(os.environ, HDF5_PLUGIN_PATH=h5fz.plugin_dir()), check=True, timeout=300)
        with xr.open_dataset(str(dst), engine="h5netcdf") as back:
            assert np.max(np.abs(back.t.values.astype(np.float64) - field)) <= BOUND
