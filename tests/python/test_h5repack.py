"""h5repack / h5dump / h5diff (Debian's hdf5-tools, HDF5 1.10) with the plugin:
convert a file holding float, integer and compound datasets, per file and per
dataset."""

import os
import re
import subprocess

import numpy as np
import pytest
import h5py

import fz_samples
import h5fz
from conftest import assert_same, check_chunks_filtered, check_stored_values, filter_codes

pytestmark = pytest.mark.usefixtures("plugin")


def _source(path):
    """An unfiltered file: float (real field), integer, compound, nested group."""
    arrays = {
        "/field": fz_samples.load_real("wmag91.float")[:30],
        "/ints": fz_samples.smooth((200, 150), "<i4", 1),
        "/table": fz_samples.compound(2000, 2),
        "/grp/pressure": fz_samples.load_real("pressure.384_384.f64"),
        "/grp/counts_be": fz_samples.smooth((64, 32, 8), ">u2", 3),
    }
    with h5py.File(path, "w") as f:
        for name, arr in arrays.items():
            f.create_dataset(name, data=arr)  # contiguous: h5repack picks chunks
        f["/field"].attrs["units"] = "1/s"
    return arrays


def _run(args, **kw):
    r = subprocess.run(args, capture_output=True, text=True, timeout=300, **kw)
    return r


def _ratios(h5dump_out):
    """dataset name -> compression ratio from `h5dump -pH`."""
    out = {}
    current = None
    for line in h5dump_out.splitlines():
        m = re.match(r'\s*DATASET "([^"]+)"', line)
        if m:
            current = m.group(1)
        m = re.search(r"SIZE\s+\d+\s+\(([\d.]+):1 COMPRESSION\)", line)
        if m and current:
            out[current] = float(m.group(1))
    return out


def test_h5repack_whole_file(tmp_path, hdf5_tools, data_dir):
    src, dst = tmp_path / "src.h5", tmp_path / "dst.h5"
    arrays = _source(src)
    spec = h5fz.h5repack_filter("lossless")
    assert spec == "UD=32850,0,1,1"
    r = _run([hdf5_tools["h5repack"], "-f", spec, str(src), str(dst)])
    assert r.returncode == 0, r.stdout + r.stderr

    with h5py.File(dst, "r") as f:
        for name, arr in arrays.items():
            d = f[name]
            assert d.chunks is not None
            check_chunks_filtered(d)
            check_stored_values(d)
            assert_same(d[()], arr)
        assert f["/field"].attrs["units"] == "1/s"

    dump = _run([hdf5_tools["h5dump"], "-pH", str(dst)])
    assert dump.returncode == 0, dump.stderr
    assert "32850" in dump.stdout
    assert dump.stdout.count("32850") >= len(arrays)
    ratios = _ratios(dump.stdout)
    assert set(ratios) == {"field", "ints", "table", "pressure", "counts_be"}, (ratios, dump.stdout)
    for name, ratio in ratios.items():
        assert ratio > 1.0, "%s: ratio %s\n%s" % (name, ratio, dump.stdout)

    diff = _run([hdf5_tools["h5diff"], str(src), str(dst)])
    assert diff.returncode == 0, diff.stdout + diff.stderr
    diff = _run([hdf5_tools["h5diff"], "-r", str(src), str(dst)])
    assert diff.returncode == 0 and "0 differences found" in diff.stdout, diff.stdout


def test_h5repack_per_dataset(tmp_path, hdf5_tools, data_dir):
    src, dst = tmp_path / "src.h5", tmp_path / "dst.h5"
    arrays = _source(src)
    r = _run([hdf5_tools["h5repack"],
              "-f", "field:" + h5fz.h5repack_filter(),
              "-f", "/grp/counts_be:UD=32850,0,1,1",
              "-l", "field:CHUNK=10x91x91",
              str(src), str(dst)])
    assert r.returncode == 0, r.stdout + r.stderr
    with h5py.File(dst, "r") as f:
        for name, arr in arrays.items():
            d = f[name]
            codes = filter_codes(d)
            if name in ("/field", "/grp/counts_be"):
                assert codes == [h5fz.FILTER_ID], (name, codes)
                check_chunks_filtered(d)
            else:
                assert codes == [], (name, codes)
            assert_same(d[()], arr)
        assert f["/field"].chunks == (10, 91, 91)
    dump = _run([hdf5_tools["h5dump"], "-pH", "-d", "/field", str(dst)])
    assert "32850" in dump.stdout and _ratios(dump.stdout)["/field"] > 1.0, dump.stdout
    diff = _run([hdf5_tools["h5diff"], str(src), str(dst)])
    assert diff.returncode == 0, diff.stdout + diff.stderr


def test_h5repack_back_to_unfiltered(tmp_path, hdf5_tools, data_dir):
    src, mid, back = tmp_path / "src.h5", tmp_path / "mid.h5", tmp_path / "back.h5"
    arrays = _source(src)
    assert _run([hdf5_tools["h5repack"], "-f", "UD=32850,0,1,1", str(src), str(mid)]).returncode == 0
    r = _run([hdf5_tools["h5repack"], "-f", "NONE", str(mid), str(back)])
    assert r.returncode == 0, r.stdout + r.stderr
    with h5py.File(back, "r") as f:
        for name, arr in arrays.items():
            assert f[name].id.get_create_plist().get_nfilters() == 0
            assert_same(f[name][()], arr)


def test_h5repack_bad_filter_values(tmp_path, hdf5_tools):
    """An unknown preset is refused by set_local, and the error stack says why.

    h5repack (1.10) then copies the dataset *without* filters and still exits
    0: the refusal is only visible with --enable-error-stack or in h5dump -pH.
    """
    src, dst = tmp_path / "src.h5", tmp_path / "dst.h5"
    data = np.arange(5000, dtype="<f4")
    with h5py.File(src, "w") as f:
        f.create_dataset("x", data=data)
    r = _run([hdf5_tools["h5repack"], "--enable-error-stack", "-f", "UD=32850,0,1,99",
              str(src), str(dst)])
    out = r.stdout + r.stderr
    assert "unknown preset 99" in out.lower() or ("preset" in out.lower() and "99" in out), out
    if r.returncode == 0:
        with h5py.File(dst, "r") as f:
            # never stored as if filtered: either absent or plainly unfiltered
            if "x" in f:
                assert f["x"].id.get_create_plist().get_nfilters() == 0
                assert_same(f["x"][()], data)


def test_h5repack_exits_cleanly(tmp_path, hdf5_tools, data_dir):
    """h5repack unloads the plugin (dlclose) at exit: nothing of the plugin may
    still run then (e.g. CPU worker threads parked inside its code). The crash
    this catches is intermittent, so the conversion is repeated."""
    src = tmp_path / "src.h5"
    _source(src)
    env = dict(os.environ)
    env.pop("H5Z_FZ_THREADS", None)
    codes = []
    for i in range(60):
        dst = tmp_path / ("dst%d.h5" % i)
        r = _run([hdf5_tools["h5repack"], "-f", "UD=32850,0,1,1", str(src), str(dst)], env=env)
        codes.append(r.returncode)
        dst.unlink()
    bad = [c for c in codes if c != 0]
    assert not bad, "h5repack failed %d of %d times (exit codes %s; -11 = SIGSEGV at exit)" % (
        len(bad), len(codes), sorted(set(bad)))
