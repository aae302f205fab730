"""A second set_local (create_dataset_like, h5repack -l on a filtered file)
must rewrite the stored cd_values idempotently: the data still reads and the
filter values still parse."""

import os
import subprocess

import pytest
import h5py

import fz_samples
import h5fz
from conftest import (assert_same, check_chunks_filtered, check_stored_values, filter_codes,
                      fz_filter_values, fz_kwargs)

pytestmark = pytest.mark.usefixtures("plugin")


def _write(path, arrays):
    with h5py.File(path, "w") as f:
        for name, (arr, chunks) in arrays.items():
            f.create_dataset(name, data=arr, chunks=chunks, **fz_kwargs())


ARRAYS = {
    "f4": (fz_samples.smooth((30, 41), "<f4", 1), (16, 16)),
    "i8be": (fz_samples.smooth((100,), ">i8", 2), (30,)),
    "cmpd": (fz_samples.compound(90, 3), (25,)),
}


def _copy_dcpl(f, name, src):
    """What create_dataset_like does inside HDF5: a new dataset from src's dcpl."""
    space = h5py.h5s.create_simple(src.shape)
    h5py.h5d.create(f.id, name.encode(), src.id.get_type(), space, dcpl=src.id.get_create_plist())
    return f[name]


def _same_but_fill(a, b):
    """Stored values equal apart from the fill words (create_dataset_like makes
    h5py pass the source's fill value explicitly, so it becomes user-defined)."""
    pa, pb = h5fz.parse_stored(a), h5fz.parse_stored(b)
    for k in ("fill_defined", "fill_low", "fill_high", "fill_bytes"):
        pa.pop(k), pb.pop(k)
    return pa == pb


def test_create_dataset_like(tmp_path):
    path = tmp_path / "like.h5"
    _write(path, ARRAYS)
    made = []
    with h5py.File(path, "a") as f:
        for name, (arr, chunks) in ARRAYS.items():
            src = f[name]
            _, values = fz_filter_values(src)
            # 1. the dcpl copied as is (the stored values go through set_local again)
            c1 = _copy_dcpl(f, name + "_dcpl", src)
            assert fz_filter_values(c1)[1] == values
            # 2. create_dataset_like given the stored values as compression_opts
            c2 = f.create_dataset_like(name + "_like", src, compression=h5fz.FILTER_ID,
                                       compression_opts=values)
            v2 = fz_filter_values(c2)[1]
            assert _same_but_fill(v2, values), (values, v2)
            # 3. a third generation, from the second
            c3 = _copy_dcpl(f, name + "_dcpl2", c2)
            assert fz_filter_values(c3)[1] == v2
            copies = [c1, c2, c3]
            # 4. plain create_dataset_like: h5py 3.16 calls a third-party filter
            #    "unknown" and refuses it; older h5py silently drops it
            try:
                c4 = f.create_dataset_like(name + "_plain", src)
            except ValueError as e:
                assert "unavailable" in str(e), e
            else:
                if h5fz.FILTER_ID in filter_codes(c4):
                    assert _same_but_fill(fz_filter_values(c4)[1], values)
                    copies.append(c4)
            for c in copies:
                c[...] = arr
                check_stored_values(c)
                made.append((c.name, arr, chunks))
    with h5py.File(path, "r") as f:
        for name, arr, chunks in made + [(n, a, c) for n, (a, c) in ARRAYS.items()]:
            d = f[name]
            assert d.chunks == chunks
            check_chunks_filtered(d)
            assert_same(d[()], arr)


def test_dataset_like_other_shape(tmp_path):
    # same dcpl, other dtype and chunk shape: set_local must relearn them
    path = tmp_path / "like2.h5"
    _write(path, {"f4": ARRAYS["f4"]})
    with h5py.File(path, "a") as f:
        dcpl = f["f4"].id.get_create_plist()
        dcpl.set_chunk((7, 9, 4))
        other = fz_samples.smooth((20, 20, 9), ">u2", 5)
        space = h5py.h5s.create_simple(other.shape)
        tid = h5py.h5t.py_create(other.dtype)
        h5py.h5d.create(f.id, b"u2", tid, space, dcpl=dcpl)
        f["u2"][...] = other
    with h5py.File(path, "r") as f:
        d = f["u2"]
        assert d.chunks == (7, 9, 4)
        check_chunks_filtered(d)
        check_stored_values(d)
        assert_same(d[()], other)
        assert_same(f["f4"][()], ARRAYS["f4"][0])


def _repack(hdf5_tools, args, src, dst):
    r = subprocess.run([hdf5_tools["h5repack"]] + args + [str(src), str(dst)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, "h5repack %s failed:\n%s\n%s" % (args, r.stdout, r.stderr)


def test_h5repack_layout_on_filtered_file(tmp_path, hdf5_tools):
    src = tmp_path / "filtered.h5"
    _write(src, ARRAYS)
    with h5py.File(src, "r") as f:
        before = {n: fz_filter_values(f[n]) for n in ARRAYS}

    # same chunk shapes: stored values must be identical
    same = tmp_path / "same.h5"
    _repack(hdf5_tools, ["-l", "f4:CHUNK=16x16", "-l", "i8be:CHUNK=30", "-l", "cmpd:CHUNK=25"], src, same)
    # new chunk shapes: set_local relearns the chunk dims
    other = tmp_path / "other.h5"
    _repack(hdf5_tools, ["-l", "f4:CHUNK=10x41", "-l", "i8be:CHUNK=64", "-l", "cmpd:CHUNK=7"], src, other)
    # plain repack (no options) of a filtered file
    plain = tmp_path / "plain.h5"
    _repack(hdf5_tools, [], src, plain)

    for path, expect_same_values in ((same, True), (other, False), (plain, True)):
        with h5py.File(path, "r") as f:
            for name, (arr, chunks) in ARRAYS.items():
                d = f[name]
                check_chunks_filtered(d)
                check_stored_values(d)
                assert_same(d[()], arr)
                flags, values = fz_filter_values(d)
                assert len(values) == len(before[name][1]), (path, name, values)
                if expect_same_values:
                    assert values == before[name][1], (path, name, before[name][1], values)
        # the repacked values must also survive yet another set_local
        again = tmp_path / ("again_" + os.path.basename(str(path)))
        _repack(hdf5_tools, [], path, again)
        with h5py.File(again, "r") as f:
            for name, (arr, chunks) in ARRAYS.items():
                check_chunks_filtered(f[name])
                assert_same(f[name][()], arr)
    # the h5diff view of it
    r = subprocess.run([hdf5_tools["h5diff"], str(src), str(other)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_h5repack_layout_then_write_more(tmp_path, hdf5_tools):
    # a dataset whose values went through two set_locals still compresses new writes
    src = tmp_path / "src.h5"
    _write(src, {"f4": ARRAYS["f4"]})
    dst = tmp_path / "dst.h5"
    _repack(hdf5_tools, ["-l", "f4:CHUNK=8x8"], src, dst)
    new = fz_samples.noisy((30, 41), "<f4", 11)
    with h5py.File(dst, "a") as f:
        f["f4"][...] = new
        assert f["f4"].chunks == (8, 8)
    with h5py.File(dst, "r") as f:
        check_chunks_filtered(f["f4"])
        assert_same(f["f4"][()], new)
