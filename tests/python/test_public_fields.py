"""tools/bench/public_fields.py (issue 30's held-out public fields): the
catalogue, the conversion rules (squeeze, integer to float32, fill value only
when an element holds it), extraction into a cache with its manifest, and
ratio_table.py's --sets public on one field.

The fields come from Debian and PyPI packages (libncarg-data, ferret-datasets,
iris-sample-data, matplotlib) that a CI machine need not have: a test of a
source that is absent skips with the reason, and nothing here installs or
downloads anything."""

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BENCH = os.path.join(REPO, "tools", "bench")
sys.path.insert(0, BENCH)

import public_fields  # noqa: E402


def need_source(source):
    """Skip unless the source's package is installed (and nccopy for NetCDF files)."""
    how, package, _ = public_fields.SOURCES[source]
    if public_fields.source_root(source) is None:
        pytest.skip("source %s absent: %s package %s not installed (public_fields.py extract --install)"
                    % (source, how, package))
    netcdf = any(not f[2].endswith(".npz") for f in public_fields.FIELDS if f[1] == source)
    if netcdf and shutil.which("nccopy") is None:
        pytest.skip("nccopy not found (Debian netcdf-bin) to read the %s NetCDF files" % source)


def test_catalogue_is_well_formed():
    names = [f[0] for f in public_fields.FIELDS]
    assert len(names) == len(set(names))
    assert len(names) >= 10
    assert {f[1] for f in public_fields.FIELDS} == set(public_fields.SOURCES)
    for name, source, filename, variable, index, kind, what in public_fields.FIELDS:
        assert name.replace("-", "").isalnum(), name          # a file name in the cache
        assert filename and variable and kind and what
        assert index is None or isinstance(index, int)


def test_to_field_squeezes_and_keeps_float():
    a = np.arange(24, dtype=">f4").reshape(1, 2, 1, 12)
    out, fill, count = public_fields.to_field(a, None, None)
    assert out.shape == (2, 12) and out.dtype == np.dtype("<f4") and out.flags.c_contiguous
    assert np.array_equal(out, a.reshape(2, 12)) and fill is None and count == 0
    out, _, _ = public_fields.to_field(np.zeros((3, 4, 5)), None, 1)   # index taken first
    assert out.shape == (4, 5) and out.dtype == np.float64


def test_to_field_integer_becomes_float32():
    out, fill, _ = public_fields.to_field(np.array([[1, -2], [300, 4]], dtype=np.int16), None, None)
    assert out.dtype == np.float32 and out.tolist() == [[1, -2], [300, 4]] and fill is None
    with pytest.raises(ValueError):
        public_fields.to_field(np.array(["a"]), None, None)


def test_to_field_fill_only_when_present():
    a = np.array([[1.0, 1e20], [2.0, 1e20]], dtype=np.float32)
    _, fill, count = public_fields.to_field(a, np.array([1e20], dtype=np.float32), None)
    assert fill == float(np.float32(1e20)) and count == 2
    _, fill, count = public_fields.to_field(a, np.float32(-999.0), None)   # declared, never used
    assert fill is None and count == 0


def test_absent_source_is_reported_not_fatal(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(public_fields.SOURCES, "ncl", ("apt", "libncarg-data", str(tmp_path / "nowhere")))
    entries = public_fields.extract(str(tmp_path / "cache"), sources=["ncl"], log=sys.stdout)
    assert entries == []
    assert "source ncl absent" in capsys.readouterr().out
    with open(tmp_path / "cache" / public_fields.MANIFEST) as f:
        assert json.load(f) == {"version": 1, "fields": []}


@pytest.mark.parametrize("source", sorted(public_fields.SOURCES))
def test_extract_source(source, tmp_path):
    need_source(source)
    cache = str(tmp_path)
    entries = public_fields.extract(cache, sources=[source])
    expected = [f for f in public_fields.FIELDS if f[1] == source]
    assert [e["name"] for e in entries] == [f[0] for f in expected]
    with open(os.path.join(cache, public_fields.MANIFEST)) as f:
        manifest = {e["name"]: e for e in json.load(f)["fields"]}
    for entry in entries:
        assert manifest[entry["name"]] == entry
        assert entry["package"] == public_fields.SOURCES[source][1] and entry["package_version"]
        assert entry["dtype"] in ("<f4", "<f8")
        path = os.path.join(cache, entry["raw"])
        data = open(path, "rb").read()
        assert len(data) == entry["bytes"] == int(np.prod(entry["shape"])) * np.dtype(entry["dtype"]).itemsize
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
        array = public_fields.load(entry, cache)
        assert array.shape == tuple(entry["shape"]) and 1 not in array.shape and array.ndim in (2, 3)
        if entry["fill"] is None:
            assert entry["fill_count"] == 0
        else:
            assert int(np.count_nonzero(array == np.asarray(entry["fill"], array.dtype))) == entry["fill_count"] > 0
        rest = array if entry["fill"] is None else array[array != np.asarray(entry["fill"], array.dtype)]
        assert np.isfinite(rest).all() and rest.max() > rest.min()
    # A second call finds the fields cached and rewrites none of them.
    stamps = {e["raw"]: os.stat(os.path.join(cache, e["raw"])).st_mtime_ns for e in entries}
    again = public_fields.extract(cache, sources=[source])
    assert again == entries
    assert stamps == {e["raw"]: os.stat(os.path.join(cache, e["raw"])).st_mtime_ns for e in again}


def test_ratio_table_public_set(plugin, tmp_path):
    """ratio_table.py --sets public on matplotlib's smallest elevation grid, H5Z-FZ beside SZ3."""
    need_source("matplotlib")
    if importlib.util.find_spec("hdf5plugin") is None:
        pytest.skip("hdf5plugin not installed for %s (ratio_table.py needs it)" % sys.executable)
    env = dict(os.environ, FZ_PUBLIC_FIELDS=str(tmp_path))
    out = subprocess.run([sys.executable, os.path.join(BENCH, "ratio_table.py"), "--sets", "public",
                          "--fields", "mpl-topobathy", "--bounds", "1e-2", "--chunkings", "whole",
                          "--compressors", "sz3,cuszhi-cr"], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "| mpl-topobathy | matplotlib " in out.stdout
    assert "2 measurement(s), 0 refused (n/a), 0 failed" in out.stdout
    assert os.path.exists(tmp_path / "mpl-topobathy.raw")
