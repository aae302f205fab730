"""h5fz.FZCodec (issue 33): the HDF5 filter's frames as a numcodecs codec for
Zarr v2. A chunk encoded by the codec is byte for byte the frame the filter
writes for the same chunk of an HDF5 dataset with the same compression_opts,
element type and fill value (every preset, lossy modes, float32, float64 and
integers, edge chunks padded as both formats pad them); Zarr arrays written
with it come back within the bound on the real fields; the configuration
round-trips through numcodecs; bad choices are refused at construction and
bad frames at decoding, with messages."""

import numpy as np
import pytest
import h5py

import h5fz
import fz_samples

numcodecs = pytest.importorskip("numcodecs")

pytestmark = pytest.mark.usefixtures("plugin")

PRESETS = [name for name, pid in sorted(h5fz.PRESETS.items(), key=lambda kv: kv[1])
           if pid in h5fz.AVAILABLE_PRESETS and name != "default"]


def codec_and_opts(preset, mode="noa", bound=1e-3, fill_value=None):
    if h5fz.PRESETS[preset] in h5fz.LOSSY_PRESETS:
        opts = h5fz.compression_opts(preset, mode, bound)
    else:
        opts = h5fz.compression_opts(preset)
    return h5fz.FZCodec(compression_opts=opts, fill_value=fill_value), opts


def filter_frames(tmp_path, data, chunks, opts, fillvalue=None):
    """{chunk offset: frame} as the HDF5 filter stores them for `data`."""
    with h5py.File(tmp_path / "filtered.h5", "w") as f:
        d = f.create_dataset("x", data=data, chunks=chunks, compression=h5fz.FILTER_ID,
                             compression_opts=tuple(opts), fillvalue=fillvalue)
        frames = {}
        for i in range(d.id.get_num_chunks()):
            info = d.id.get_chunk_info(i)
            mask, frame = d.id.read_direct_chunk(info.chunk_offset)
            assert mask == 0
            frames[info.chunk_offset] = frame
    return frames


def codec_frames(codec, data, chunks, fill):
    """{chunk offset: frame} from the codec, each chunk padded to the chunk
    shape with the fill value (as Zarr v2 and HDF5 pad edge chunks)."""
    frames = {}
    grid = [range(0, n, c) for n, c in zip(data.shape, chunks)]
    for offset in np.ndindex(*[len(g) for g in grid]):
        start = tuple(g[i] for g, i in zip(grid, offset))
        chunk = np.full(chunks, fill, dtype=data.dtype)
        part = data[tuple(slice(s, s + c) for s, c in zip(start, chunks))]
        chunk[tuple(slice(0, n) for n in part.shape)] = part
        frames[start] = codec.encode(chunk)
    return frames


@pytest.mark.parametrize("preset", PRESETS)
def test_frames_equal_the_filters(tmp_path, preset):
    data = fz_samples.load_real("wmag91.float")[:40, :50, :60]
    chunks = (16, 24, 32)  # ragged edges on every axis
    codec, opts = codec_and_opts(preset)
    expected = filter_frames(tmp_path, data, chunks, opts)
    got = codec_frames(codec, data, chunks, 0)
    assert set(got) == set(expected)
    for offset in expected:
        assert got[offset] == expected[offset], "%s: chunk %s differs from the filter's frame" % (preset, offset)


@pytest.mark.parametrize("dtype, fill", [("<f8", None), ("<f4", -999.0), ("<i2", None), ("<u1", 7), ("<i4", -5),
                                         (">f4", None)])
def test_frames_equal_the_filters_for_types_and_fill_values(tmp_path, dtype, fill):
    data = fz_samples.smooth((30, 45), dtype)
    chunks = (16, 20)
    preset = "fzgpu" if np.dtype(dtype).kind in "fiu" else "lossless"
    opts = h5fz.compression_opts(preset, "abs", 0.5 if np.dtype(dtype).kind in "iu" else 1e-2)
    codec = h5fz.FZCodec(compression_opts=opts, fill_value=fill)
    expected = filter_frames(tmp_path, data, chunks, opts, fillvalue=fill)
    got = codec_frames(codec, data, chunks, 0 if fill is None else fill)
    assert got == expected
    # Decoded, every element within the bound, the fill value exact.
    for start, frame in got.items():
        chunk = np.frombuffer(codec.decode(frame), dtype=dtype).reshape(chunks)
        part = data[start[0]:start[0] + 16, start[1]:start[1] + 20]
        assert np.all(np.abs(chunk[:part.shape[0], :part.shape[1]].astype(np.float64) -
                             part.astype(np.float64)) <= opts_bound(opts))
        if fill is not None:
            assert np.all(chunk[part.shape[0]:, :] == np.array(fill, dtype=dtype))


def opts_bound(opts):
    return h5fz.join_bound(opts[2], opts[3])


@pytest.mark.parametrize("preset, mode, bound", [("fzgpu", "noa", 1e-2), ("fzgpu", "noa", 1e-4),
                                                 ("cuszhi-cr", "noa", 1e-3), ("pfpl", "rel", 1e-2),
                                                 ("cusz", "abs", 1e-3), ("lossless", None, None)])
def test_zarr_arrays_keep_the_bound_on_real_fields(tmp_path, preset, mode, bound):
    zarr = pytest.importorskip("zarr")
    if int(zarr.__version__.split(".")[0]) >= 3:
        pytest.skip("zarr 3 takes codecs through its own interface")
    if h5fz.PRESETS[preset] not in h5fz.AVAILABLE_PRESETS:
        pytest.skip("%s not built" % preset)
    kwargs = {} if mode is None else {mode: bound}
    for name in ("wmag91.float", "vorticity.128_128_41"):
        data = fz_samples.load_real(name)
        z = zarr.open_array(str(tmp_path / (name + ".zarr")), mode="w", shape=data.shape, chunks=(32, 64, 64),
                            dtype=data.dtype, compressor=h5fz.FZCodec(preset=preset, **kwargs))
        z[...] = data
        back = zarr.open_array(str(tmp_path / (name + ".zarr")), mode="r")[...]
        if mode is None:
            assert np.array_equal(back, data)
            continue
        err = np.abs(back.astype(np.float64) - data.astype(np.float64))
        if mode == "abs":
            limit = bound
        elif mode == "rel":
            limit = bound * np.abs(data.astype(np.float64))
        else:  # noa: each chunk's own range; the whole field's range bounds every chunk's
            limit = bound * (float(data.max()) - float(data.min()))
        assert np.all(err <= limit), "%s %s: %d elements over the bound" % (name, preset, int((err > limit).sum()))


def test_config_round_trips_through_numcodecs():
    codec = h5fz.FZCodec(preset="cuszhi-cr", noa=1e-3, tuning="quality-first", fill_value=-1.5)
    config = codec.get_config()
    assert config["id"] == "h5fz"
    assert config["compression_opts"] == list(h5fz.compression_opts("cuszhi-cr", "noa", 1e-3,
                                                                    tuning="quality-first"))
    again = numcodecs.get_codec(config)
    assert isinstance(again, h5fz.FZCodec)
    assert again.get_config() == config
    data = fz_samples.smooth((20, 30), "<f4")
    assert again.encode(data) == codec.encode(data)


def test_bad_choices_are_refused_at_construction():
    with pytest.raises(ValueError, match="preset"):
        h5fz.FZCodec(preset="no-such-preset", noa=1e-3)
    with pytest.raises(ValueError, match="one of"):
        h5fz.FZCodec(preset="fzgpu", noa=1e-3, abs=1e-3)
    with pytest.raises(ValueError, match="not both"):
        h5fz.FZCodec(preset="fzgpu", compression_opts=[0])
    with pytest.raises(ValueError):
        h5fz.FZCodec(compression_opts=[3, 1, 0, 0])  # lossy preset, bound 0
    with pytest.raises(ValueError, match="32-bit"):
        h5fz.FZCodec(compression_opts=[-1])
    with pytest.raises(TypeError, match="fill_value"):
        h5fz.FZCodec(preset="fzgpu", noa=1e-3, fill_value="zero")


def test_bad_chunks_and_frames_are_refused():
    codec = h5fz.FZCodec(preset="fzgpu", noa=1e-3)
    with pytest.raises(TypeError, match="numbers"):
        codec.encode(np.zeros((4, 4), dtype="complex64"))
    with pytest.raises(ValueError, match="not a uint8 value"):
        h5fz.FZCodec(preset="fzgpu", abs=1, fill_value=300).encode(np.zeros(8, dtype="u1"))
    frame = codec.encode(fz_samples.smooth((16, 16), "<f4"))
    with pytest.raises(ValueError, match="not a frame"):
        codec.decode(b"not a frame at all")
    with pytest.raises(ValueError, match="not a frame"):
        codec.decode(frame[:20])
    damaged = bytearray(frame)
    damaged[-3] ^= 0xFF  # the payload: its checksum no longer matches
    with pytest.raises(ValueError, match="decoding"):
        codec.decode(bytes(damaged))
    with pytest.raises(ValueError, match="output holds"):
        codec.decode(frame, out=np.empty(10, dtype="f4"))
    out = np.empty(256, dtype="f4")
    assert codec.decode(frame, out=out) is out


# ---- zarr-python 3 (h5fz.FZZarr3) ----------------------------------------------


def zarr3():
    zarr = pytest.importorskip("zarr")
    if int(zarr.__version__.split(".")[0]) < 3:
        pytest.skip("zarr %s: the zarr-python 3 codec needs zarr 3" % zarr.__version__)
    return zarr


@pytest.mark.parametrize("preset, dtype, fill", [(p, "<f4", 0.0) for p in PRESETS] +
                         [("fzgpu", "<f8", -999.0), ("pfpl", "<i2", 3), ("lossless", "<u1", 0)])
def test_zarr3_chunks_are_the_filters_frames(tmp_path, preset, dtype, fill):
    zarr = zarr3()
    data = fz_samples.load_real("wmag91.float")[:40, :50, :60].astype(dtype) if dtype[1] == "f" else \
        fz_samples.smooth((40, 50, 60), dtype)
    chunks = (16, 24, 32)
    if h5fz.PRESETS[preset] in h5fz.LOSSY_PRESETS:
        opts = h5fz.compression_opts(preset, "abs", 0.5) if dtype[1] in "iu" else \
            h5fz.compression_opts(preset, "noa", 1e-3)
    else:
        opts = h5fz.compression_opts(preset)
    z = zarr.create_array(str(tmp_path / "a.zarr"), shape=data.shape, chunks=chunks, dtype=dtype, fill_value=fill,
                          serializer=h5fz.FZZarr3(compression_opts=opts), compressors=None)
    z[...] = data
    expected = filter_frames(tmp_path, data, chunks, opts, fillvalue=fill)
    for offset, frame in expected.items():
        key = "c/" + "/".join(str(o // c) for o, c in zip(offset, chunks))
        with open(str(tmp_path / "a.zarr" / key), "rb") as f:
            assert f.read() == frame, "%s %s: chunk %s differs from the filter's frame" % (preset, dtype, key)
    back = zarr.open_array(str(tmp_path / "a.zarr"), mode="r")[...]
    err = np.abs(back.astype(np.float64) - data.astype(np.float64))
    if len(opts) == 1:  # lossless
        limit = 0.0
    elif opts[1] == h5fz.mode_id("noa"):  # each chunk's range; the whole array's bounds them all
        limit = h5fz.join_bound(opts[2], opts[3]) * (float(data.max()) - float(data.min()))
    else:
        limit = h5fz.join_bound(opts[2], opts[3])
    assert np.all(err <= limit), "%s %s: %d elements over the bound" % (preset, dtype, int((err > limit).sum()))


def test_zarr3_batches_chunks_and_keeps_the_bound_in_a_memory_store(monkeypatch):
    zarr = zarr3()
    from h5fz import _chunk_codec
    calls = []
    real = _chunk_codec.encode_chunks

    def counting(who, stored, chunks, device="auto", threads=0):
        calls.append(len(chunks))
        return real(who, stored, chunks, device, threads)

    monkeypatch.setattr(_chunk_codec, "encode_chunks", counting)
    data = fz_samples.load_real("vorticity.128_128_41")
    with zarr.config.set({"codec_pipeline.batch_size": 16}):
        store = zarr.storage.MemoryStore()
        z = zarr.create_array(store, shape=data.shape, chunks=(16, 64, 64), dtype=data.dtype,
                              serializer=h5fz.FZZarr3(preset="cuszhi-cr", noa=1e-3), compressors=None)
        z[...] = data
        back = zarr.open_array(store, mode="r")[...]
    assert max(calls) > 1, calls  # chunks handed over together went to the engine together
    assert sum(calls) == 3 * 2 * 2
    assert np.all(np.abs(back.astype(np.float64) - data) <= 1e-3 * (float(data.max()) - float(data.min())))


def test_zarr3_metadata_names_the_codec_and_refuses_bad_input(tmp_path):
    zarr = zarr3()
    codec = h5fz.FZZarr3(preset="fzgpu", abs=0.5)
    assert codec.to_dict() == {"name": "h5fz", "configuration": {"compression_opts":
                                                                 list(h5fz.compression_opts("fzgpu", "abs", 0.5))}}
    assert h5fz.FZZarr3.from_dict(codec.to_dict()) == codec
    with pytest.raises(TypeError, match="numbers"):
        zarr.create_array(str(tmp_path / "c.zarr"), shape=(8,), chunks=(4,), dtype="complex64",
                          serializer=codec, compressors=None)
    with pytest.raises(ValueError, match="one of"):
        h5fz.FZZarr3(preset="fzgpu", abs=1, noa=1)
    z = zarr.create_array(str(tmp_path / "d.zarr"), shape=(64,), chunks=(32,), dtype="f4", serializer=codec,
                          compressors=None)
    z[...] = np.arange(64, dtype="f4")
    with open(str(tmp_path / "d.zarr" / "c" / "1"), "r+b") as f:
        frame = bytearray(f.read())
        frame[-2] ^= 0xFF
        f.seek(0)
        f.write(frame)
    reopened = zarr.open_array(str(tmp_path / "d.zarr"), mode="r")
    assert np.all(np.abs(reopened[:32] - np.arange(32, dtype="f4")) <= 0.5)
    with pytest.raises(ValueError, match="decoding"):
        reopened[32:]


def test_the_plugins_chunk_calls_refuse_bad_input():
    """h5z_fz_chunk_cd_values and h5z_fz_frame_decoded_bytes, the plugin
    calls the codecs stand on: every bad argument is an error with a
    message, never a crash."""
    import ctypes
    from h5fz import _chunk_codec as core
    words = h5fz.compression_opts("fzgpu", "noa", 1e-3)
    f4 = np.dtype("<f4")
    with pytest.raises(ValueError, match="dimension 1"):
        core.stored_words("t", words, f4, (4, 0, 4), None)
    with pytest.raises(ValueError, match="dimension 0"):
        core.stored_words("t", words, f4, (1 << 32,), None)
    with pytest.raises(ValueError, match="rank 33"):
        core.stored_words("t", words, f4, (1,) * 33, None)
    with pytest.raises(TypeError, match="numbers"):
        core.stored_words("t", words, np.dtype("U4"), (4,), None)
    with pytest.raises(ValueError, match="preset"):
        core.stored_words("t", [99], f4, (4,), None)
    lib = core._library()
    error = ctypes.create_string_buffer(256)
    count = ctypes.c_size_t(7)
    user = (ctypes.c_uint * len(words))(*words)
    dims = (ctypes.c_ulonglong * 1)(16)
    room = (ctypes.c_uint * 64)()
    # An element kind or size the filter does not take as numbers.
    for kind, size in ((b"f", 3), (b"i", 16), (b"c", 8)):
        assert lib.h5z_fz_chunk_cd_values(len(words), user, kind, size, 0, 1, dims, None, room, 64,
                                          ctypes.byref(count), error, len(error)) == -1
        assert b"numbers" in error.value and count.value == 0
    # No room for the words, a null count, a rank without dims.
    assert lib.h5z_fz_chunk_cd_values(len(words), user, b"f", 4, 0, 1, dims, None, room, 3, ctypes.byref(count),
                                      error, len(error)) == -1
    assert b"room for 3" in error.value
    assert lib.h5z_fz_chunk_cd_values(len(words), user, b"f", 4, 0, 1, dims, None, room, 64, None, error,
                                      len(error)) == -1
    assert lib.h5z_fz_chunk_cd_values(len(words), user, b"f", 4, 0, 1, None, None, room, 64, ctypes.byref(count),
                                      error, len(error)) == -1
    # Good arguments: the stored layout, the chunk's dims in it.
    assert lib.h5z_fz_chunk_cd_values(len(words), user, b"f", 4, 0, 1, dims, None, room, 64, ctypes.byref(count),
                                      error, len(error)) == 0
    assert tuple(h5fz.parse_stored(list(room[:count.value]))["chunk_dims"]) == (16,)
    size = ctypes.c_ulonglong(5)
    assert lib.h5z_fz_frame_decoded_bytes(None, 10, ctypes.byref(size), error, len(error)) == -1
    assert b"null frame" in error.value and size.value == 0
    assert lib.h5z_fz_frame_decoded_bytes(b"FZM", 3, None, error, len(error)) == -1
