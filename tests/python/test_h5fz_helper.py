"""tools/python/h5fz.py itself (no plugin needed)."""

import os
import struct

import pytest

import h5fz


def test_ids_are_stable():
    assert h5fz.FILTER_ID == 32850
    assert [h5fz.PRESETS[n] for n in ("lossless", "pfpl", "fzgpu", "cusz", "cuszhi-tp", "cuszhi-cr")] \
        == [1, 2, 3, 4, 5, 6]
    assert (h5fz.MODES["abs"], h5fz.MODES["noa"], h5fz.MODES["rel"]) == (0, 1, 2)


@pytest.mark.parametrize("bound", [1e-3, 0.5, 1.0, 3.0e-7, 1234.5678, 5e-324, 1.7976931348623157e308])
def test_bound_words(bound):
    low, high = h5fz.split_bound(bound)
    (bits,) = struct.unpack("<Q", struct.pack("<d", bound))
    assert low == bits & 0xFFFFFFFF and high == bits >> 32
    assert 0 <= low < 2**32 and 0 <= high < 2**32
    assert h5fz.join_bound(low, high) == bound


def test_compression_opts():
    assert h5fz.compression_opts() == (1,)
    assert h5fz.compression_opts("lossless") == (1,)
    assert h5fz.compression_opts(1) == (1,)
    lo, hi = h5fz.split_bound(1e-3)
    assert h5fz.compression_opts("pfpl", "noa", 1e-3) == (2, 1, lo, hi)
    assert h5fz.compression_opts("CuSZHi_TP", "REL", 1e-3) == (5, 2, lo, hi)
    assert h5fz.compression_opts(4, 0, 1e-3) == (4, 0, lo, hi)
    # 1.0 = 0x3FF0000000000000: high word carries it all
    assert h5fz.compression_opts("cusz", "abs", 1.0) == (4, 0, 0, 0x3FF00000)
    parsed = h5fz.parse_opts(h5fz.compression_opts("fzgpu", "rel", 0.25))
    assert (parsed["preset_name"], parsed["mode_name"], parsed["bound"]) == ("fzgpu", "rel", 0.25)


@pytest.mark.parametrize("args", [
    ("nonsense",), ("lossless", "bogus"), ("pfpl",), ("cusz", "abs", 0.0), ("cusz", "abs", -1.0),
    ("cusz", "abs", float("nan")), ("cusz", "abs", float("inf")), (99,),
])
def test_compression_opts_refuses(args):
    with pytest.raises(ValueError):
        h5fz.compression_opts(*args)


def test_h5repack_filter():
    assert h5fz.h5repack_filter() == "UD=32850,0,1,1"
    lo, hi = h5fz.split_bound(1e-2)
    assert h5fz.h5repack_filter("pfpl", "abs", 1e-2, dataset="/g/t") == \
        "/g/t:UD=32850,0,4,2,0,%d,%d" % (lo, hi)


def test_plugin_dir_prefers_env(tmp_path, monkeypatch):
    (tmp_path / "libH5Zfz.so").write_bytes(b"")
    monkeypatch.setenv("HDF5_PLUGIN_PATH", os.pathsep.join(["/nonexistent", str(tmp_path)]))
    assert h5fz.plugin_dir() == str(tmp_path)
    assert h5fz.plugin_path() == str(tmp_path / "libH5Zfz.so")
