"""tools/python/h5fz itself (no plugin needed; the preset table's check
runs the h5fz tool)."""

import os
import struct
import subprocess

import pytest

import h5fz


def test_ids_are_stable():
    assert h5fz.FILTER_ID == 32850
    assert [h5fz.PRESETS[n] for n in ("lossless", "pfpl", "fzgpu", "cusz", "cuszhi-tp", "cuszhi-cr")] \
        == [1, 2, 3, 4, 5, 6]
    assert (h5fz.MODES["abs"], h5fz.MODES["noa"], h5fz.MODES["rel"]) == (0, 1, 2)


def test_preset_table_is_the_engines():
    """tools/python/h5fz/presets_table.py is exactly what `h5fz presets --python`
    prints from the engine's preset table, so the helper cannot drift from it.
    On a difference, regenerate it: h5fz presets --python > tools/python/h5fz/presets_table.py"""
    tool = os.environ.get("FZ_H5FZ") or os.path.join(os.path.dirname(h5fz.plugin_dir()), "tools", "h5fz")
    assert os.access(tool, os.X_OK), "h5fz not built: %s (set FZ_H5FZ)" % tool
    r = subprocess.run([tool, "presets", "--python"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    path = os.path.join(os.path.dirname(os.path.abspath(h5fz.__file__)), "presets_table.py")
    with open(path) as f:
        committed = f.read()
    assert committed == r.stdout, "%s differs from `%s presets --python`: regenerate it" % (path, tool)


def test_cd_values_doc_presets_are_the_table():
    """docs/CD_VALUES.md's preset table lists the engine's presets: id, name,
    lossy, and the modes each honours."""
    import re
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(repo, "docs", "CD_VALUES.md")) as f:
        doc = f.read()
    section = doc[doc.index("### Presets"):doc.index("### Error-bound modes")]
    rows = re.findall(r"^\| (\d+) \| ([\w-]+) \| (yes|no) \| ([^|]+) \|", section, re.M)
    documented = [(int(pid), name, lossy == "yes", modes.strip()) for pid, name, lossy, modes in rows]
    expected = [(pid, name, lossy, ", ".join(m for m in h5fz.MODES if m in modes) if lossy else "any (exact)")
                for pid, name, lossy, _available, modes in h5fz.PRESET_TABLE]
    assert documented == expected


def test_preset_lookups_follow_the_table():
    for pid, name, lossy, available, modes in h5fz.PRESET_TABLE:
        assert h5fz.preset_id(name) == pid and h5fz.PRESET_NAMES[pid] == name
        assert (pid in h5fz.LOSSY_PRESETS) == lossy and (pid in h5fz.AVAILABLE_PRESETS) == available
        assert h5fz.PRESET_MODES[pid] == frozenset(modes) and set(modes) <= set(h5fz.MODES)


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


def test_missing_value_words():
    lo, hi = h5fz.split_bound(1e-3)
    f32 = struct.unpack("<f", struct.pack("<f", -1e34))[0]      # float(numpy.float32(-1e34))
    f32_lo, f32_hi = h5fz.split_bound(f32)
    d_lo, d_hi = h5fz.split_bound(-1e34)
    # float32: the decimal is rounded to the float32 the filter compares with
    assert h5fz.compression_opts("pfpl", "noa", 1e-3, missing=-1e34, dtype="float32") == \
        (2, 1, lo, hi, f32_lo, f32_hi)
    assert h5fz.compression_opts("cusz", "abs", 1e-3, -1e34, "f4") == (4, 0, lo, hi, f32_lo, f32_hi)
    # float64: kept as given
    assert h5fz.compression_opts("pfpl", "noa", 1e-3, missing=-1e34, dtype="float64") == (2, 1, lo, hi, d_lo, d_hi)
    opts = h5fz.compression_opts("pfpl", "noa", 1e-3, missing=f32, dtype="float32")
    assert h5fz.join_bound(opts[4], opts[5]) == f32
    parsed = h5fz.parse_opts(opts)
    assert parsed["missing"] == f32 and parsed["bound"] == 1e-3
    assert h5fz.parse_opts(h5fz.compression_opts("pfpl", "noa", 1e-3))["missing"] is None
    nan_opts = h5fz.compression_opts("pfpl", "abs", 1.0, missing=float("nan"), dtype="float32")
    assert len(nan_opts) == 6 and nan_opts[5] & 0x7FF00000 == 0x7FF00000
    assert h5fz.h5repack_filter("pfpl", "noa", 1e-3, dataset="SST", missing=-1e34, dtype="float32") == \
        "SST:UD=32850,0,6,2,1,%d,%d,%d,%d" % (lo, hi, f32_lo, f32_hi)
    with pytest.raises(ValueError):
        h5fz.compression_opts("lossless", missing=-1e34)
    with pytest.raises(ValueError):
        h5fz.compression_opts("lossless", "abs", 1.0, missing=-1e34)
    with pytest.raises(ValueError):                                  # beyond float32
        h5fz.compression_opts("pfpl", "abs", 1.0, missing=1e40, dtype="float32")
    with pytest.raises(ValueError):
        h5fz.compression_opts("pfpl", "abs", 1.0, missing=-1, dtype="int32")


def test_missing_value_dtype_assumed_or_taken_from_numpy():
    np = pytest.importorskip("numpy")
    f32 = float(np.float32(-1e34))
    with pytest.warns(UserWarning, match="float32"):
        opts = h5fz.compression_opts("pfpl", "noa", 1e-3, missing=-1e34)
    assert h5fz.join_bound(opts[4], opts[5]) == f32
    for value, expect in ((np.float32(-1e34), f32), (np.float64(-1e34), -1e34)):
        opts = h5fz.compression_opts("pfpl", "noa", 1e-3, missing=value)   # no warning: numpy says the type
        assert h5fz.join_bound(opts[4], opts[5]) == expect
    assert h5fz.missing_value_for(-1e34, np.dtype(">f4")) == f32
    assert h5fz.missing_value_for(-1e34, np.float64) == -1e34


def test_register_fails_without_plugin(tmp_path, monkeypatch):
    empty = tmp_path / "no_plugin_here"
    empty.mkdir()
    monkeypatch.setenv("HDF5_PLUGIN_PATH", str(empty))
    monkeypatch.setattr(h5fz._register, "_REPO", str(tmp_path / "repo"))  # where plugin_dir looks
    with pytest.raises(FileNotFoundError) as exc:
        h5fz.register()
    text = str(exc.value)
    assert str(empty) in text and os.path.join(str(tmp_path / "repo"), "build", "plugin") in text, text
    assert h5fz.PLUGIN_FILE in text, text


def test_plugin_dir_prefers_env(tmp_path, monkeypatch):
    (tmp_path / "libH5Zfz.so").write_bytes(b"")
    monkeypatch.setenv("HDF5_PLUGIN_PATH", os.pathsep.join(["/nonexistent", str(tmp_path)]))
    assert h5fz.plugin_dir() == str(tmp_path)
    assert h5fz.plugin_path() == str(tmp_path / "libH5Zfz.so")


# The words tests/filter/cd_values_test.cpp pins (WordPositionsArePinned):
# pfpl, NOA 1e-3, big-endian float64, fill bytes 1..8, chunk 7x91x300.
PINNED_STORED = (0x5A46CD01, 0x03000102, 0xD2F1A9FC, 0x3F50624D, 0x00000153, 8,
                 0x000B343F, 0x0003FF34, 0x04030201, 0x08070605, 7, 91, 300)


def test_parse_stored_pinned_words():
    assert h5fz.is_stored_layout(PINNED_STORED)
    p = h5fz.parse_stored(PINNED_STORED)
    assert (p["layout_version"], p["preset_name"], p["mode_name"], p["bound"]) == (1, "pfpl", "noa", 1e-3)
    assert (p["rank"], p["tuning_count"], p["chunk_dims"], p["tuning"]) == (3, 0, (7, 91, 300), ())
    assert (p["element_class_name"], p["element_size"], p["byte_order_name"]) == ("float", 8, "big")
    assert (p["hdf5_class"], p["hdf5_sign"], p["fill_defined"]) == (1, 0, 1)
    assert (p["float_sign_pos"], p["float_exp_pos"], p["float_exp_size"], p["float_mant_pos"],
            p["float_mant_size"], p["float_exp_bias"]) == (63, 52, 11, 0, 52, 1023)
    assert p["fill_bytes"] == bytes(range(1, 9))


def _damaged(word, value):
    values = list(PINNED_STORED)
    values[word] = value
    return values


@pytest.mark.parametrize("values", [
    PINNED_STORED[:9],                               # truncated
    PINNED_STORED[:-1],                              # one chunk dim missing
    PINNED_STORED + (0,),                            # one word too many
    _damaged(0, 0x5A46CD02),                         # layout version 2
    _damaged(1, 0x03010102),                         # tuning count 1, no tuning word
    _damaged(4, 0x00000153 | 0x10000),               # reserved bits 16-31
    _damaged(4, 0x00000153 | 0x80000000),
], ids=["truncated", "short", "long", "version", "tuning", "reserved16", "reserved31"])
def test_parse_stored_refuses(values):
    with pytest.raises(ValueError):
        h5fz.parse_stored(values)


def test_user_layout_is_not_stored():
    assert not h5fz.is_stored_layout((1, 0, 0, 0))
    assert not h5fz.is_stored_layout(())
