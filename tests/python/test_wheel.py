"""The one-step wheel (issue 33 item 1): the wheel `pip wheel .` builds from
the clone, repaired by auditwheel (tools/setup/wheel.sh), installed into
fresh venvs that hold nothing else (no system site packages; pip brings
numpy, then h5py, zarr and xarray as a user would), with no
HDF5_PLUGIN_PATH, run from a folder outside the clone:

- bare (the wheel and numpy): `import h5fz`, the version from CMakeLists.txt,
  the `h5fz` console command, the plugin and program it ships, the program's
  HDF5 found inside the wheel (h5fz.libs), none of it needing the clone;
- HDF5 2.0 (h5py 3.16) with zarr 3, xarray, Dask and h5netcdf: h5py round
  trips through the shipped plugin, `h5fz repack` then h5py, the zarr 3 codec
  by its entry point in a memory store and a zip store (frames equal to the
  HDF5 filter's), xarray's engine="h5fz" with Dask;
- HDF5 1.14 (h5py 3.13) with zarr 2: h5py round trips and the numcodecs
  codec by its entry point in a directory store and a zip store.

The wheel comes from FZ_WHEEL (tools/setup/test.sh's "wheel" step builds it
and runs this file); without it these tests skip. The venvs need PyPI
(pip's cache serves a second run)."""

import os
import re
import subprocess
import sys
import textwrap
import zipfile

import pytest

from conftest import REPO

WHEEL = os.environ.get("FZ_WHEEL", "")

pytestmark = pytest.mark.skipif(not WHEEL, reason="FZ_WHEEL not set (tools/setup/test.sh's wheel step sets it)")


def cmake_version():
    text = open(os.path.join(REPO, "CMakeLists.txt")).read()
    return re.search(r"project\(H5ZFZ VERSION ([0-9][0-9.]*)", text).group(1)


def clean_env():
    drop = ("HDF5_PLUGIN_PATH", "PYTHONPATH", "H5FZ_PYTHON", "FZ_PY_A", "FZ_PY_B", "FZ_PY_C", "VIRTUAL_ENV")
    return {k: v for k, v in os.environ.items() if k not in drop}


class Venv:
    def __init__(self, root, work):
        self.root = str(root)
        self.python = os.path.join(self.root, "bin", "python")
        self.work = str(work)
        os.makedirs(self.work, exist_ok=True)

    def pip(self, *args):
        r = subprocess.run([self.python, "-m", "pip", "install", "-q", "--disable-pip-version-check"] + list(args),
                           capture_output=True, text=True, env=clean_env(), timeout=1200)
        assert r.returncode == 0, r.stdout + r.stderr

    def run(self, script):
        r = subprocess.run([self.python, "-c", textwrap.dedent(script)], cwd=self.work, capture_output=True,
                           text=True, env=clean_env(), timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout.strip()

    def command(self, *args):
        """The console command as a user's shell finds it (the venv's bin on PATH)."""
        env = clean_env()
        env["PATH"] = os.path.join(self.root, "bin") + os.pathsep + env.get("PATH", "")
        return subprocess.run(["h5fz"] + list(args), cwd=self.work, capture_output=True, text=True, env=env,
                              timeout=600)

    def site_package(self):
        return self.run("import h5fz, os; print(os.path.dirname(h5fz.__file__))")


def make_venv(tmp_path_factory, name, *packages):
    base = tmp_path_factory.mktemp(name)
    subprocess.run([sys.executable, "-m", "venv", str(base / "venv")], check=True, timeout=300,
                   env=clean_env())
    venv = Venv(base / "venv", base / "elsewhere")
    venv.pip(WHEEL, *packages)
    return venv


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    return make_venv(tmp_path_factory, "bare")


@pytest.fixture(scope="module")
def hdf5_20(tmp_path_factory):
    zarr3 = ["zarr>=3,<4"] if sys.version_info >= (3, 11) else []
    return make_venv(tmp_path_factory, "hdf5_20", "h5py==3.16.*", "numcodecs", "xarray", "h5netcdf", "dask[array]",
                     *zarr3)


@pytest.fixture(scope="module")
def hdf5_114(tmp_path_factory):
    return make_venv(tmp_path_factory, "hdf5_114", "h5py==3.13.0", "numcodecs", "zarr>=2.18,<3")


def test_the_wheel_is_one_repaired_platform_wheel_with_the_projects_version():
    version = cmake_version()
    name = os.path.basename(WHEEL)
    assert re.fullmatch(r"h5fz-%s-py3-none-manylinux_\d+_\d+_x86_64\.whl" % re.escape(version), name), name
    with zipfile.ZipFile(WHEEL) as z:
        names = z.namelist()
        meta = z.read("h5fz-%s.dist-info/METADATA" % version).decode()
        wheel_info = z.read("h5fz-%s.dist-info/WHEEL" % version).decode()
        entry_points = z.read("h5fz-%s.dist-info/entry_points.txt" % version).decode()
        generated = z.read("h5fz/_version.py").decode()
    assert "Version: %s" % version in meta
    assert "Root-Is-Purelib: false" in wheel_info
    assert '__version__ = "%s"' % version in generated
    for needed in ("h5fz/plugin/libH5Zfz.so", "h5fz/bin/h5fz", "h5fz/__init__.py", "h5fz/_zarr3.py"):
        assert needed in names, needed
    # auditwheel put the program's HDF5 inside the wheel; nothing else went
    # into the plugin's folder (HDF5 tries to load every library there).
    assert any(re.match(r"h5fz\.libs/libhdf5[^/]*\.so", n) for n in names), [n for n in names if ".libs/" in n]
    assert [n for n in names if n.startswith("h5fz/plugin/") and not n.endswith("/")] == ["h5fz/plugin/libH5Zfz.so"]
    for group, target in (("console_scripts", "h5fz._command:main"), ("numcodecs.codecs", "h5fz._zarr:FZCodec"),
                          ("zarr.codecs", "h5fz._zarr3:FZZarr3"),
                          ("xarray.backends", "h5fz._xarray:H5FZBackendEntrypoint")):
        section = entry_points.split("[%s]" % group)[1].split("[")[0]
        assert "h5fz = %s" % target in section, (group, entry_points)


def test_bare_venv_imports_and_runs_the_command_with_nothing_set(bare):
    out = bare.run("""
        import os, sys, h5fz
        assert "site-packages" in h5fz.__file__, h5fz.__file__
        assert h5fz.plugin_dir() == os.path.join(os.path.dirname(h5fz.__file__), "plugin"), h5fz.plugin_dir()
        try:
            import h5py
            raise SystemExit("h5py is in the bare venv")
        except ImportError:
            pass
        print(h5fz.__version__)
    """)
    assert out == cmake_version()
    r = bare.command("--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("h5fz %s " % cmake_version()), r.stdout
    r = bare.command("presets")
    assert r.returncode == 0 and "cuszhi-cr" in r.stdout, r.stdout + r.stderr
    r = bare.command("no-such-command")
    assert r.returncode == 2 and "no-such-command" in r.stderr, (r.returncode, r.stderr)


def test_the_program_finds_hdf5_in_the_wheel_and_the_plugin_needs_none(bare):
    package = bare.site_package()
    ldd = subprocess.run(["ldd", os.path.join(package, "bin", "h5fz")], capture_output=True, text=True)
    assert ldd.returncode == 0, ldd.stderr
    hdf5 = [line for line in ldd.stdout.splitlines() if "libhdf5" in line]
    assert hdf5 and all(os.path.join(os.path.dirname(package), "h5fz.libs") in os.path.normpath(
        line.split("=>")[1].split("(")[0].strip()) for line in hdf5), ldd.stdout
    assert "not found" not in ldd.stdout, ldd.stdout
    plugin = subprocess.run(["ldd", os.path.join(package, "plugin", "libH5Zfz.so")], capture_output=True, text=True)
    assert plugin.returncode == 0 and "hdf5" not in plugin.stdout and "libstdc++" not in plugin.stdout, plugin.stdout


ROUND_TRIP = """
    import numpy as np, h5py, h5fz
    rng = np.random.default_rng(33)
    a = np.cumsum(rng.normal(size=(40, 64, 64)), axis=2).astype("f4")
    with h5py.File("w.h5", "w") as f:
        f.create_dataset("lossy", data=a, chunks=(20, 64, 64), **h5fz.FZ(preset="cuszhi-cr", noa=1e-3))
        f.create_dataset("exact", data=a, chunks=(10, 64, 64), **h5fz.FZ())
        f.create_dataset("plain", data=a)
    with h5py.File("w.h5", "r") as f:
        lossy = f["lossy"][()]
        assert np.array_equal(f["exact"][()], a)
        assert np.array_equal(h5fz.read(f["lossy"]), lossy)
        for c in range(2):
            part = a[20 * c:20 * (c + 1)]
            assert np.max(np.abs(lossy[20 * c:20 * (c + 1)].astype("f8") - part)) <= 1e-3 * (part.max() - part.min())
    print(h5py.version.hdf5_version)
"""


def test_h5py_with_hdf5_2_0_round_trips_through_the_shipped_plugin(hdf5_20):
    assert hdf5_20.run(ROUND_TRIP).startswith("2.")


def test_h5py_with_hdf5_1_14_round_trips_through_the_shipped_plugin(hdf5_114):
    assert hdf5_114.run(ROUND_TRIP).startswith("1.14.")


def test_the_command_repacks_and_h5py_reads_it(hdf5_20):
    hdf5_20.run(ROUND_TRIP)
    r = hdf5_20.command("repack", "w.h5", "r.h5", "--preset", "fzgpu", "--mode", "noa", "--bound", "1e-3")
    assert r.returncode == 0, r.stdout + r.stderr
    out = hdf5_20.run("""
        import numpy as np, h5py, h5fz
        with h5py.File("w.h5") as f, h5py.File("r.h5") as g:
            a, b = f["plain"][()], g["plain"][()]
            assert g["plain"].id.get_create_plist().get_filter(0)[0] == h5fz.FILTER_ID
            for c in range(0, a.shape[0], g["plain"].chunks[0]):
                part = a[c:c + g["plain"].chunks[0]]
                err = np.max(np.abs(b[c:c + g["plain"].chunks[0]].astype("f8") - part))
                assert err <= 1e-3 * (part.max() - part.min()), err
        print(h5fz.inspect("r.h5")[-1]["fz"]["preset_name"])
    """)
    assert out == "fzgpu"
    r = hdf5_20.command("compare", "w.h5", "r.h5")
    assert r.returncode == 0 and "/plain" in r.stdout, r.stdout + r.stderr


def test_zarr3_finds_the_codec_by_entry_point_in_memory_and_zip_stores(hdf5_20):
    if sys.version_info < (3, 11):
        pytest.skip("zarr 3 needs Python 3.11")
    out = hdf5_20.run("""
        import numpy as np, h5py, zarr
        from zarr.registry import get_codec_class
        rng = np.random.default_rng(7)
        a = np.cumsum(rng.normal(size=(32, 64, 64)), axis=1).astype("f4")
        opts = [6, 1, 3539053052, 1062232653]                           # cuszhi-cr, noa 1e-3
        codec = get_codec_class("h5fz")(compression_opts=opts)          # no import of h5fz here
        stores = [zarr.storage.MemoryStore(), zarr.storage.ZipStore("z.zip", mode="w")]
        for store in stores:
            z = zarr.create_array(store, shape=a.shape, chunks=(16, 64, 64), dtype="f4", serializer=codec,
                                  compressors=None)
            z[...] = a
            back = zarr.open_array(store)[...]                           # opened again: the codec from the metadata
            for c in range(2):
                part = a[16 * c:16 * (c + 1)]
                assert np.max(np.abs(back[16 * c:16 * (c + 1)].astype("f8") - part)) <= 1e-3 * (part.max() - part.min())
        frame = stores[0].get("c/1/0/0", prototype=zarr.core.buffer.default_buffer_prototype())
        import asyncio
        frame = asyncio.run(frame).to_bytes()
        with h5py.File("h.h5", "w") as f:
            f.create_dataset("a", data=a, chunks=(16, 64, 64), compression=32850, compression_opts=tuple(opts))
        with h5py.File("h.h5") as f:
            stored = f["a"].id.read_direct_chunk((16, 0, 0))[1]
        assert bytes(stored) == frame
        stores[1].close()
        print(type(codec).__module__)
    """)
    assert out == "h5fz._zarr3"


def test_zarr2_finds_the_codec_by_entry_point_in_directory_and_zip_stores(hdf5_114):
    out = hdf5_114.run("""
        import numpy as np, zarr, numcodecs
        rng = np.random.default_rng(8)
        a = np.cumsum(rng.normal(size=(32, 64, 64)), axis=2).astype("f4")
        config = {"id": "h5fz", "compression_opts": [3, 1, 3539053052, 1062232653]}
        codec = numcodecs.get_codec(config)                           # fzgpu, noa 1e-3, by entry point
        for store in (zarr.DirectoryStore("d.zarr"), zarr.ZipStore("z.zip", mode="w")):
            z = zarr.open_array(store, mode="w", shape=a.shape, chunks=(16, 64, 64), dtype="f4", compressor=codec)
            z[...] = a
            back = z[...]
            for c in range(2):
                part = a[16 * c:16 * (c + 1)]
                assert np.max(np.abs(back[16 * c:16 * (c + 1)].astype("f8") - part)) <= 1e-3 * (part.max() - part.min())
            store.close()
        print(type(codec).__module__)
    """)
    assert out == "h5fz._zarr"


def test_xarray_opens_with_engine_h5fz_and_dask(hdf5_20):
    out = hdf5_20.run("""
        import numpy as np, xarray as xr, h5fz
        rng = np.random.default_rng(9)
        w = np.cumsum(rng.normal(size=(24, 64, 96)), axis=2).astype("f4")
        ds = xr.Dataset({"w": (("z", "y", "x"), w)}, coords={"z": np.arange(24)})
        ds.to_netcdf("x.nc", engine="h5netcdf",
                     encoding={"w": {"chunksizes": (8, 64, 96), **h5fz.FZ(preset="fzgpu", noa=1e-3)}})
        ref = xr.open_dataset("x.nc", engine="h5netcdf")["w"].values
        got = xr.open_dataset("x.nc", engine="h5fz", chunks={})
        assert got["w"].chunks == ((8, 8, 8), (64,), (96,)), got["w"].chunks
        print(type(got["w"].data).__module__.split(".")[0])
        assert np.array_equal(got["w"].load().values, ref)
    """)
    assert out == "dask"
