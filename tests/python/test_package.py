"""The h5fz Python package (issue 15, item 5): h5fz.FZ unpacks into h5py's
create_dataset as hdf5plugin's classes do, h5fz.inspect reports a file's
datasets, and `pip install tools/python` gives a package that ships the
plugin and works from anywhere with nothing set."""

import os
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import h5py

import h5fz
from conftest import REPO, check_chunks_filtered

pytestmark = pytest.mark.usefixtures("plugin")


def test_fz_unpacks_to_the_filter_and_its_words():
    cases = [
        (dict(), ("lossless", "abs", None, {})),
        (dict(preset="fzgpu", noa=1e-3), ("fzgpu", "noa", 1e-3, {})),
        (dict(preset="pfpl", rel=1e-2), ("pfpl", "rel", 1e-2, {})),
        (dict(preset="cusz", abs=0.5, missing=-1e10, dtype="float32"), ("cusz", "abs", 0.5,
                                                                       dict(missing=-1e10, dtype="float32"))),
        (dict(preset="cuszhi-cr", noa=1e-4, tuning="manual", alpha=1.5, beta=4),
         ("cuszhi-cr", "noa", 1e-4, dict(tuning="manual", alpha=1.5, beta=4))),
    ]
    for kwargs, (preset, mode, bound, extra) in cases:
        fz = h5fz.FZ(**kwargs)
        words = h5fz.compression_opts(preset, mode, bound, **extra)
        assert dict(fz) == {"compression": h5fz.FILTER_ID, "compression_opts": words}, kwargs
        assert fz.filter_id == h5fz.FILTER_ID and fz.filter_options == words
    with pytest.raises(ValueError):
        h5fz.FZ(preset="fzgpu", abs=1, noa=1e-3)
    with pytest.raises(ValueError):
        h5fz.FZ(preset="fzgpu")  # lossy without a bound: compression_opts refuses it
    assert "noa=0.001" in repr(h5fz.FZ(preset="fzgpu", noa=1e-3))


def test_fz_writes_through_h5py_and_inspect_reports_it(tmp_path, data_dir):
    field = np.fromfile(os.path.join(data_dir, "wmag91.float"), dtype="<f4").reshape(91, 91, 91)
    path = str(tmp_path / "fz.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("lossy", data=field, chunks=h5fz.chunks(field.shape, field.dtype),
                         **h5fz.FZ(preset="cuszhi-cr", noa=1e-3))
        g = f.create_group("g")
        g.create_dataset("lossless", data=field[:40], chunks=(20, 91, 91), **h5fz.FZ())
        g.create_dataset("plain", data=np.arange(10))
    with h5py.File(path, "r") as f:
        back = f["lossy"][()]
        check_chunks_filtered(f["lossy"])
        assert np.array_equal(f["g/lossless"][()], field[:40])
    assert np.max(np.abs(back.astype(np.float64) - field)) <= 1e-3 * (field.max() - field.min())
    found = {r["name"]: r for r in h5fz.inspect(path)}
    assert set(found) == {"/lossy", "/g/lossless", "/g/plain"}
    lossy = found["/lossy"]
    assert lossy["shape"] == (91, 91, 91) and lossy["chunks"] == (91, 91, 91) and lossy["dtype"] == "float32"
    assert lossy["fz"]["preset_name"] == "cuszhi-cr" and lossy["fz"]["mode_name"] == "noa"
    assert lossy["fz"]["bound"] == 1e-3 and lossy["fz"]["chunk_dims"] == (91, 91, 91)
    assert lossy["raw_bytes"] == field.nbytes and 5 < lossy["ratio"] < 20
    assert found["/g/lossless"]["fz"]["preset_name"] == "lossless"
    assert found["/g/lossless"]["ratio"] > 1
    assert found["/g/plain"]["fz"] is None


def test_versions_agree():
    pyproject = open(os.path.join(REPO, "tools", "python", "pyproject.toml")).read()
    cmake = open(os.path.join(REPO, "CMakeLists.txt")).read()
    assert re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1) == \
        re.search(r"project\(H5ZFZ VERSION (\S+)", cmake).group(1)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh venv with the package installed from a wheel built here with
    the build's plugin (one build for the tests below): (python, wheel path,
    environment without HDF5_PLUGIN_PATH). Built without a network
    (setuptools and wheel come from tools/setup/deps.sh)."""
    try:
        import setuptools  # noqa: F401
        import wheel  # noqa: F401
    except ImportError:
        pytest.skip("setuptools/wheel missing in this interpreter (tools/setup/deps.sh installs them for python A)")
    plugin = h5fz.plugin_path()
    assert os.path.isfile(plugin), plugin
    tmp_path = tmp_path_factory.mktemp("package")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=300)
    py = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("HDF5_PLUGIN_PATH", "PYTHONPATH")}
    env["H5FZ_PLUGIN"] = plugin
    # From a copy: pip builds in the source tree, which must stay clean.
    source = tmp_path / "source"
    shutil.copytree(os.path.join(REPO, "tools", "python"), str(source),
                    ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info", "plugin"))
    wheels = tmp_path / "wheels"
    r = subprocess.run([py, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index", "-q",
                        "-w", str(wheels), str(source)], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    built = sorted(os.listdir(str(wheels)))
    assert len(built) == 1, built
    wheel_path = str(wheels / built[0])
    r = subprocess.run([py, "-m", "pip", "install", "--no-deps", "--no-index", "-q", wheel_path],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    del env["H5FZ_PLUGIN"]
    work = tmp_path / "elsewhere"
    work.mkdir()
    return py, wheel_path, env, work


def run_installed(installed, script):
    py, _, env, work = installed
    r = subprocess.run([py, "-c", textwrap.dedent(script)], cwd=str(work), capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.strip()


def test_pip_install_ships_the_plugin_and_works_from_anywhere(installed):
    out = run_installed(installed, """
        import os, sys, numpy as np, h5py, h5fz
        assert "site-packages" in h5fz.__file__, h5fz.__file__
        assert h5fz.plugin_dir() == os.path.join(os.path.dirname(h5fz.__file__), "plugin"), h5fz.plugin_dir()
        a = np.linspace(0, 1, 64 * 64, dtype="f4").reshape(64, 64)
        with h5py.File("p.h5", "w") as f:
            f.create_dataset("a", data=a, chunks=h5fz.chunks(a.shape, a.dtype), **h5fz.FZ(preset="fzgpu", abs=1e-3))
        with h5py.File("p.h5", "r") as f:
            b = f["a"][()]
            assert np.array_equal(h5fz.read(f["a"]), b)     # the shipped plugin's decoder
        assert np.max(np.abs(b - a)) <= 1e-3
        print(h5fz.inspect("p.h5")[0]["fz"]["preset_name"])
    """)
    assert out == "fzgpu"


def test_the_wheel_is_a_platform_wheel(installed):
    """It ships a native library (issue 28 item 16): py3-none-<platform>, not py3-none-any."""
    import sysconfig
    _, wheel_path, _, _ = installed
    name = os.path.basename(wheel_path)
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    pyproject = open(os.path.join(REPO, "tools", "python", "pyproject.toml")).read()
    version = re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1)
    assert name == "h5fz-%s-py3-none-%s.whl" % (version, platform), name
    import zipfile
    with zipfile.ZipFile(wheel_path) as z:
        meta = z.read("h5fz-%s.dist-info/WHEEL" % version).decode()
        assert "Root-Is-Purelib: false" in meta, meta
        assert "h5fz/plugin/libH5Zfz.so" in z.namelist(), z.namelist()


def test_import_registers_the_shipped_plugin_for_h5py(installed, tmp_path):
    """With nothing set, `import h5fz` alone lets plain h5py read an H5Z-FZ
    dataset, and h5fz.read's fallback through HDF5 (a dataset with another
    filter before H5Z-FZ) works (issue 28 item 16)."""
    rng = np.random.default_rng(16)
    a = rng.normal(size=(50, 40)).astype("f4")
    path = str(tmp_path / "written_here.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("fz", data=a, chunks=(25, 40), **h5fz.FZ())
        f.create_dataset("shuffled", data=a, chunks=(25, 40), shuffle=True, **h5fz.FZ())
    with h5py.File(path, "r") as f:
        assert [fid for fid, *_ in (f["shuffled"].id.get_create_plist().get_filter(i)
                                    for i in range(f["shuffled"].id.get_create_plist().get_nfilters()))] == \
            [h5py.h5z.FILTER_SHUFFLE, h5fz.FILTER_ID]
    np.save(str(tmp_path / "expected.npy"), a)
    out = run_installed(installed, """
        import numpy as np, h5py, h5fz
        assert "site-packages" in h5fz.__file__, h5fz.__file__
        expected = np.load(%r)
        with h5py.File(%r, "r") as f:
            assert np.array_equal(f["fz"][()], expected)        # plain h5py, through the filter
            assert np.array_equal(h5fz.read(f["shuffled"]), expected)  # read's fallback through HDF5
            assert np.array_equal(h5fz.read(f["fz"]), expected)
        print("ok")
    """ % (str(tmp_path / "expected.npy"), path))
    assert out == "ok"


def test_global_abs_bound_is_the_whole_finite_range():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(37, 50)).astype("f4")
    a[3, 4], a[5, 6], a[7, 8] = np.nan, np.inf, -1e10
    finite = a[np.isfinite(a)]
    assert h5fz.global_abs_bound(a, 1e-3) == pytest.approx(1e-3 * (float(finite.max()) - float(finite.min())))
    sea = finite[finite != np.float32(-1e10)]
    expect = 1e-3 * (float(sea.max()) - float(sea.min()))
    assert h5fz.global_abs_bound(a, 1e-3, missing=-1e10) == pytest.approx(expect)
    assert h5fz.global_abs_bound(a, 1e-3, missing=-1e10, block_bytes=1) == pytest.approx(expect)  # row by row
    assert h5fz.global_abs_bound(np.full((4, 4), 2.5), 1e-2) == np.finfo(np.float64).tiny
    assert h5fz.global_abs_bound(np.arange(10, dtype="i2"), 0.1) == pytest.approx(0.9)
    with pytest.raises(ValueError):
        h5fz.global_abs_bound(a, 0)
    with pytest.raises(ValueError):
        h5fz.compression_opts("fzgpu", "noa-global", 1e-3)  # no data
    with pytest.raises(ValueError):
        h5fz.compression_opts("fzgpu", "noa", 1e-3, data=a)
    with pytest.raises(ValueError):
        h5fz.FZ(preset="fzgpu", noa=1e-3, noa_global=1e-3, data=a)


def test_noa_global_holds_one_bound_in_every_chunk(tmp_path, data_dir):
    field = np.fromfile(os.path.join(data_dir, "999x999.float"), dtype="<f4").reshape(999, 999)
    path = str(tmp_path / "global.h5")
    with h5py.File(path, "w") as f:
        src = f.create_dataset("src", data=field)
        eb = h5fz.global_abs_bound(src, 1e-3, block_bytes=1 << 16)  # read from the file in blocks
        assert eb == pytest.approx(1e-3 * (float(field.max()) - float(field.min())))
        f.create_dataset("global", data=field, chunks=(100, 999), **h5fz.FZ(preset="fzgpu", noa_global=1e-3,
                                                                             data=src))
        f.create_dataset("per_chunk", data=field, chunks=(100, 999), **h5fz.FZ(preset="fzgpu", noa=1e-3))
    found = {r["name"]: r for r in h5fz.inspect(path)}
    assert found["/global"]["fz"]["mode_name"] == "abs" and found["/global"]["fz"]["bound"] == eb
    with h5py.File(path, "r") as f:
        g = f["global"][()].astype(np.float64)
        c = f["per_chunk"][()].astype(np.float64)
    x = field.astype(np.float64)
    assert np.max(np.abs(g - x)) <= eb
    # Per chunk the NOA bound is each chunk's range x 1e-3: tighter in the chunks of small range.
    tightest = min(1e-3 * (x[i:i + 100].max() - x[i:i + 100].min()) for i in range(0, 999, 100))
    assert tightest < eb and np.max(np.abs(c - x)) <= eb


def test_numcodecs_finds_the_zarr_codec_of_the_installed_package(installed):
    """A Zarr v2 array's stored configuration ({"id": "h5fz", ...}) is
    resolved by numcodecs through the package's entry point, without h5fz
    imported first (issue 33)."""
    pytest.importorskip("numcodecs")
    out = run_installed(installed, """
        import sys, numpy as np, numcodecs
        codec = numcodecs.get_codec({"id": "h5fz", "compression_opts": [3, 1, 3539053052, 1062232653],
                                     "fill_value": None})
        assert "h5fz" in sys.modules and "site-packages" in sys.modules["h5fz"].__file__
        a = np.linspace(0, 1, 32 * 32, dtype="f4").reshape(32, 32)
        b = np.frombuffer(codec.decode(codec.encode(a)), dtype="f4").reshape(a.shape)
        assert np.max(np.abs(b - a)) <= 1e-3
        print(type(codec).__name__)
    """)
    assert out == "FZCodec"


def test_the_wheel_declares_both_zarr_entry_points(installed):
    """numcodecs (Zarr v2) and zarr-python 3 find the codecs by these names."""
    import zipfile
    _, wheel_path, _, _ = installed
    with zipfile.ZipFile(wheel_path) as z:
        name = [n for n in z.namelist() if n.endswith(".dist-info/entry_points.txt")]
        assert len(name) == 1, z.namelist()
        text = z.read(name[0]).decode()
    assert "[numcodecs.codecs]\nh5fz = h5fz._zarr:FZCodec" in text, text
    assert "[zarr.codecs]\nh5fz = h5fz._zarr3:FZZarr3" in text, text


def test_xarray_finds_the_h5fz_engine_of_the_installed_package(installed, tmp_path):
    """xarray.open_dataset(path, engine="h5fz") by name, through the
    package's xarray.backends entry point (issue 33)."""
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    a = np.linspace(0, 1, 20 * 30, dtype="f4").reshape(20, 30)
    path = str(tmp_path / "e.nc")
    xr.Dataset({"t": (("y", "x"), a)}).to_netcdf(path, engine="h5netcdf", encoding={
        "t": {"chunksizes": (10, 30), **h5fz.FZ(preset="fzgpu", abs=1e-3)}})
    out = run_installed(installed, """
        import numpy as np, xarray as xr
        ds = xr.open_dataset(%r, engine="h5fz")
        inner = ds.t.variable._data  # (lazy wrappers around the backend's array, before any loading)
        while hasattr(inner, "array"):
            inner = inner.array
        assert np.max(np.abs(ds.t.values - np.linspace(0, 1, 600, dtype="f4").reshape(20, 30))) <= 1e-3
        print(type(inner).__name__)
    """ % path)
    assert out == "FZArrayWrapper"
