"""Bit-exact round trips through h5py with the lossless preset: every integer
and float dtype, both byte orders, compound, array and other fixed-size types,
ranks 1 to 4, ragged edge chunks; every chunk must be an FZM frame."""

import numpy as np
import pytest
import h5py

import fz_samples
import h5fz
from conftest import (assert_same, check_chunks_filtered, check_stored_values, filter_codes,
                      fz_filter_values, fz_kwargs)

pytestmark = pytest.mark.usefixtures("plugin")

NUMERIC = ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8"]
DTYPES = ["<" + t if t[1] != "1" else "|" + t for t in NUMERIC] + \
         [">" + t for t in NUMERIC if t[1] != "1"]

# rank -> (shape, chunks); every shape leaves ragged edge chunks
SHAPES = {
    1: ((1000,), (96,)),
    2: ((37, 53), (16, 10)),
    3: ((13, 17, 19), (8, 8, 5)),
    4: ((5, 6, 7, 9), (2, 4, 3, 4)),
}


def _roundtrip(tmp_path, arr, chunks, name="d", **kw):
    path = tmp_path / "rt.h5"
    kwargs = fz_kwargs()
    kwargs.update(kw)
    with h5py.File(path, "w") as f:
        f.create_dataset(name, data=arr, chunks=chunks, **kwargs)
    with h5py.File(path, "r") as f:
        d = f[name]
        assert d.dtype == arr.dtype
        got = d[()]
        check_chunks_filtered(d)
        check_stored_values(d)
    assert_same(got, arr)
    return path


@pytest.mark.parametrize("rank", sorted(SHAPES))
@pytest.mark.parametrize("dtype", DTYPES)
def test_smooth_roundtrip(tmp_path, dtype, rank):
    shape, chunks = SHAPES[rank]
    _roundtrip(tmp_path, fz_samples.smooth(shape, dtype, seed=rank), chunks)


@pytest.mark.parametrize("dtype", DTYPES)
def test_noisy_roundtrip(tmp_path, dtype):
    # random bit patterns: NaN payloads, infinities, denormals, incompressible chunks
    shape, chunks = SHAPES[3]
    _roundtrip(tmp_path, fz_samples.noisy(shape, dtype, seed=7), chunks)


def test_special_floats(tmp_path):
    a = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1.7976931348623157e308,
                  2.2250738585072014e-308, 1.0, -1.0] * 30, dtype="<f8")
    a[7::11] = np.frombuffer(np.uint64(0x7FF0000000000001).tobytes(), "<f8")[0]  # signalling NaN
    _roundtrip(tmp_path, a, (64,))
    with np.errstate(invalid="ignore", over="ignore"):
        a4 = a.astype(">f4")
    _roundtrip(tmp_path, a4, (50,))


def test_compound(tmp_path):
    _roundtrip(tmp_path, fz_samples.compound(777, seed=3), (100,))


def test_compound_2d_big_endian_members(tmp_path):
    dt = np.dtype([("a", ">i2"), ("b", "<f8"), ("c", ">f4"), ("d", "u1")])
    a = np.zeros((21, 13), dtype=dt)
    a["a"] = fz_samples.smooth((21, 13), ">i2", 1)
    a["b"] = fz_samples.noisy((21, 13), "<f8", 2)
    a["c"] = fz_samples.smooth((21, 13), ">f4", 3)
    a["d"] = fz_samples.smooth((21, 13), "u1", 4)
    _roundtrip(tmp_path, a, (8, 5))


@pytest.mark.parametrize("base", ["<f4", ">i8", "<u2"])
def test_array_dtype(tmp_path, base):
    # an HDF5 array type: numpy expands it into trailing axes on read
    dt = np.dtype((base, (3, 2)))
    a = fz_samples.smooth((150, 3, 2), base, seed=2)
    path = tmp_path / "arr.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("a", shape=(150,), dtype=dt, chunks=(32,), **fz_kwargs())
        d[...] = a
    with h5py.File(path, "r") as f:
        d = f["a"]
        assert d.shape == (150,)
        assert isinstance(d.id.get_type(), h5py.h5t.TypeArrayID)
        check_chunks_filtered(d)
        assert_same(d[()], a)


def test_complex(tmp_path):
    a = (fz_samples.smooth((40, 30), "<f8", 1) + 1j * fz_samples.smooth((40, 30), "<f8", 2))
    _roundtrip(tmp_path, a.astype("<c16"), (16, 16))
    _roundtrip(tmp_path, a.astype("<c8"), (7, 30))


def test_fixed_strings_opaque_enum(tmp_path):
    s = np.array([("s%05d" % i).encode() for i in range(500)], dtype="S7")
    _roundtrip(tmp_path, s, (64,), name="strings")
    v = np.frombuffer(fz_samples.noisy((1800,), "u1", 5).tobytes(), dtype="V6")
    _roundtrip(tmp_path, v, (50,), name="opaque")
    et = h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 42}, basetype="i2")
    e = np.array([0, 1, 42] * 100, dtype="i2")
    path = tmp_path / "enum.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("enum", data=e, dtype=et, chunks=(64,), **fz_kwargs())
    with h5py.File(path, "r") as f:
        assert h5py.check_enum_dtype(f["enum"].dtype) == {"RED": 0, "GREEN": 1, "BLUE": 42}
        check_chunks_filtered(f["enum"])
        assert_same(f["enum"][()], e)


def test_single_chunk_bigger_than_data(tmp_path):
    a = fz_samples.smooth((10, 3), "<i4")
    _roundtrip(tmp_path, a, (64, 64), maxshape=(None, None))


def test_one_element_chunks(tmp_path):
    a = fz_samples.smooth((4, 5), "<f8")
    _roundtrip(tmp_path, a, (1, 1))


def test_with_shuffle_and_fletcher32(tmp_path):
    # lossless after shuffle is fine; fletcher32 checksums the frame
    a = fz_samples.smooth((64, 50), "<f4", 3)
    path = _roundtrip(tmp_path, a, (16, 25), shuffle=True, fletcher32=True)
    with h5py.File(path, "r") as f:
        codes = filter_codes(f["d"])
        assert codes == [h5py.h5z.FILTER_SHUFFLE, h5fz.FILTER_ID, h5py.h5z.FILTER_FLETCHER32], codes


def test_partial_writes_fill_value_and_rewrites(tmp_path):
    path = tmp_path / "partial.h5"
    expect = np.full((70, 45), -1e34, dtype="<f4")
    with h5py.File(path, "w") as f:
        d = f.create_dataset("p", shape=expect.shape, dtype="<f4", chunks=(16, 16),
                             fillvalue=-1e34, **fz_kwargs())
        block = fz_samples.smooth((30, 20), "<f4", 4)
        d[10:40, 3:23] = block
        expect[10:40, 3:23] = block
        # rewrite part of already written chunks (decompress + recompress)
        patch = fz_samples.noisy((9, 9), "<f4", 5)
        d[20:29, 15:24] = patch
        expect[20:29, 15:24] = patch
    with h5py.File(path, "r") as f:
        d = f["p"]
        assert d.fillvalue == np.float32(-1e34)
        assert_same(d[()], expect)
        check_chunks_filtered(d, expect_all=False)
        assert d.id.get_num_chunks() < np.prod([-(-s // c) for s, c in zip(d.shape, d.chunks)])


def test_resizable_append(tmp_path):
    path = tmp_path / "grow.h5"
    parts = [fz_samples.smooth((n, 12), "<i8", n) for n in (7, 30, 1, 19)]
    with h5py.File(path, "w") as f:
        d = f.create_dataset("g", shape=(0, 12), maxshape=(None, 12), dtype="<i8",
                             chunks=(8, 12), **fz_kwargs())
        for p in parts:
            n = d.shape[0]
            d.resize(n + p.shape[0], axis=0)
            d[n:] = p
    with h5py.File(path, "r") as f:
        check_chunks_filtered(f["g"])
        assert_same(f["g"][()], np.concatenate(parts))


def test_hyperslab_reads(tmp_path):
    a = fz_samples.smooth((13, 17, 19), ">f8", 2)
    path = _roundtrip(tmp_path, a, (8, 8, 5))
    with h5py.File(path, "r") as f:
        d = f["d"]
        assert_same(d[3:11, ::3, 17:], a[3:11, ::3, 17:])
        assert_same(d[12, 16, 18], a[12, 16, 18])
        assert_same(d[:, 5, :], a[:, 5, :])


def test_filter_values_written(tmp_path):
    path = _roundtrip(tmp_path, fz_samples.smooth((30, 7), "<i4"), (8, 7))
    with h5py.File(path, "r") as f:
        flags, values = fz_filter_values(f["d"])
        # set_local rewrites the user values into the longer stored layout
        assert h5fz.is_stored_layout(values), values
        p = h5fz.parse_stored(values)
        assert (p["preset_name"], p["mode_name"], p["rank"], p["chunk_dims"]) == ("lossless", "abs", 2, (8, 7))
        assert (p["element_class_name"], p["element_size"], p["fill_defined"]) == ("signed", 4, 0)
        assert all(0 <= v < 2**32 for v in values)
        assert len(values) == 12, values  # 10 fixed words + rank 2
        assert values[0] == h5fz.STORED_MARKER | 1, values  # marker | layout version 1


@pytest.mark.parametrize("shape,chunks", [((9, 10, 11), (4, 5, 6)), ((2, 3, 2, 3, 2, 3), (1, 2, 2, 3, 1, 2))],
                         ids=["rank3", "rank6"])
def test_h5py_own_readers_see_every_stored_value(tmp_path, shape, chunks):
    """The stored layout takes 10 + rank words: up to rank 6 that is at most 16,
    which h5py before 3.16 reads correctly (get_filter_by_id, compression_opts)."""
    a = fz_samples.smooth(shape, "<f4", 1)
    path = tmp_path / "own.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=a, chunks=chunks, **fz_kwargs())
    with h5py.File(path, "r") as f:
        d = f["d"]
        _, values = fz_filter_values(d)
        assert len(values) == 10 + len(shape) <= 16, values
        fid, opts, _ = d.id.get_create_plist().get_filter_by_id(h5fz.FILTER_ID)
        assert tuple(int(v) for v in opts) == values
        assert tuple(int(v) for v in d.id.get_create_plist().get_filter(0)[2]) == values
        # compression_opts is None for third-party filters; _filters holds their values
        own = getattr(d, "_filters", {}).get(str(h5fz.FILTER_ID))
        if own is not None:
            assert tuple(int(v) for v in own) == values
        p = h5fz.parse_stored(opts)
        assert p["chunk_dims"] == chunks and p["element_class_name"] == "float", p
        assert (p["float_sign_pos"], p["float_exp_size"], p["float_mant_size"], p["float_exp_bias"]) == (31, 8, 23, 127)
        assert_same(d[()], a)


def test_fill_value_recorded(tmp_path):
    path = tmp_path / "fill.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("f", shape=(20,), dtype=">f8", chunks=(8,), fillvalue=-1e34, **fz_kwargs())
        f.create_dataset("i", shape=(20,), dtype="<i2", chunks=(8,), fillvalue=-999, **fz_kwargs())
    with h5py.File(path, "r") as f:
        pf = h5fz.parse_stored(fz_filter_values(f["f"])[1])
        pi = h5fz.parse_stored(fz_filter_values(f["i"])[1])
        assert pf["fill_defined"] == 1 and pf["fill_bytes"] == np.array(-1e34, ">f8").tobytes(), pf
        assert pi["fill_defined"] == 1 and pi["fill_bytes"] == np.array(-999, "<i2").tobytes(), pi
        assert_same(f["f"][()], np.full(20, -1e34, ">f8"))


@pytest.mark.parametrize("opts", [(), (0,), (1,), (1, 0), (0, 0, 0, 0)],
                         ids=["none", "default", "lossless", "lossless-abs", "default-4-values"])
def test_lossless_spellings(tmp_path, opts):
    """Every way of asking for lossless is accepted and stored as preset 0 or 1."""
    a = fz_samples.smooth((40, 3), "<u4", 3)
    path = tmp_path / "spell.h5"
    with h5py.File(path, "w") as f:
        kw = {"compression": h5fz.FILTER_ID}
        if opts:
            kw["compression_opts"] = opts
        f.create_dataset("d", data=a, chunks=(16, 3), **kw)
    with h5py.File(path, "r") as f:
        check_chunks_filtered(f["d"])
        p = h5fz.parse_stored(fz_filter_values(f["d"])[1])
        assert p["preset"] in (0, 1), p
        assert_same(f["d"][()], a)
