"""h5fz.write (issue 32): chunks encoded many at once by the plugin's C
encoding interface (h5z_fz_encode_dataset_batch; from GPU memory
h5z_fz_encode_dataset_batch_from_device, tested where CuPy and a GPU are)
and stored with write_direct_chunk are byte for byte the frames the filter
writes for the same writes: every preset, lossy modes, float32, float64 and integers,
ragged edge chunks padded with the fill value; selections of whole chunks
and of parts of chunks merged into what they hold (never written, written,
stored unfiltered), one after another; refusals that write nothing."""

import ctypes

import numpy as np
import pytest
import h5py

import h5fz
import fz_samples

pytestmark = pytest.mark.usefixtures("plugin")

PRESETS = [name for name, pid in sorted(h5fz.PRESETS.items(), key=lambda kv: kv[1])
           if pid in h5fz.AVAILABLE_PRESETS and name != "default"]


def options_for(preset, mode="noa", bound=1e-3):
    if h5fz.PRESETS[preset] in h5fz.LOSSY_PRESETS:
        return h5fz.compression_opts(preset, mode, bound)
    return h5fz.compression_opts(preset)


def stored_chunks(dataset):
    """{offset: (filter mask, stored bytes)} of every chunk written."""
    out = {}
    for i in range(dataset.id.get_num_chunks()):
        info = dataset.id.get_chunk_info(i)
        out[info.chunk_offset] = dataset.id.read_direct_chunk(info.chunk_offset)
    return out


def same_as_filter(f, name, data, chunks, opts, fillvalue=None, selection=None, then=(), writer=None,
                   dtype=None):
    """Writes data through the filter (h5py) and with h5fz.write (or
    `writer(dataset, data, selection)`) into two datasets of the same
    creation properties (element type `dtype`, else the data's), at
    `selection` and then at each selection of `then` in turn; asserts the
    same chunks, the same frames and the same values."""
    writer = writer or h5fz.write
    dtype = data.dtype if dtype is None else dtype
    kw = {} if fillvalue is None else {"fillvalue": fillvalue}
    a = f.create_dataset(name + "_filter", shape=data.shape, dtype=dtype, chunks=chunks,
                         compression=h5fz.FILTER_ID, compression_opts=opts, **kw)
    b = f.create_dataset(name + "_write", shape=data.shape, dtype=dtype, chunks=chunks,
                         compression=h5fz.FILTER_ID, compression_opts=opts, **kw)
    for step, sel in enumerate((selection,) + tuple(then)):
        source = data if step % 2 == 0 else data[::-1].copy()   # later steps change what is there
        a[np.s_[...] if sel is None else sel] = source[np.s_[...] if sel is None else sel]
        writer(b, source[np.s_[...] if sel is None else sel], sel)
        ca, cb = stored_chunks(a), stored_chunks(b)
        assert sorted(ca) == sorted(cb), (name, sel)
        for offset in ca:
            assert ca[offset][0] == cb[offset][0], (name, sel, offset)
            assert ca[offset][1] == cb[offset][1], (name, sel, offset, len(ca[offset][1]), len(cb[offset][1]))
        assert a[()].tobytes() == b[()].tobytes(), (name, sel)
    return a, b


@pytest.fixture(scope="module")
def wmag():
    w = fz_samples.load_real("wmag91.float").copy()
    w[0, 0, :4] = [np.nan, np.inf, -np.inf, -0.0]
    return w


@pytest.mark.parametrize("preset", PRESETS)
def test_frames_equal_the_filters(tmp_path, wmag, preset):
    with h5py.File(tmp_path / "w.h5", "w") as f:
        # (10, 40, 91): edge chunks on two axes, padded with HDF5's fill value.
        same_as_filter(f, preset, wmag, (10, 40, 91), options_for(preset))
        same_as_filter(f, preset + "_fill", wmag, (10, 40, 91), options_for(preset), fillvalue=-5.0)


@pytest.mark.parametrize("mode,bound", [("abs", 0.01), ("rel", 1e-3)])
def test_frames_equal_the_filters_other_modes(tmp_path, wmag, mode, bound):
    with h5py.File(tmp_path / "m.h5", "w") as f:
        for preset in PRESETS:
            pid = h5fz.PRESETS[preset]
            if pid in h5fz.LOSSY_PRESETS and mode in h5fz.PRESET_MODES[pid]:
                same_as_filter(f, preset + "_" + mode, wmag, (16, 91, 91), options_for(preset, mode, bound))


def test_frames_equal_the_filters_float64_and_integers(tmp_path):
    p = fz_samples.load_real("pressure.384_384.f64")
    ints = (np.arange(91 ** 3) % 1000).astype(np.int16).reshape(91, 91, 91)
    with h5py.File(tmp_path / "t.h5", "w") as f:
        same_as_filter(f, "f64_cr", p, (100, 384), options_for("cuszhi-cr", "abs", 1e-6))
        same_as_filter(f, "f64_fzgpu", p, (100, 100), options_for("fzgpu", "noa", 1e-4))
        same_as_filter(f, "ints", ints, (7, 91, 50), options_for("fzgpu", "abs", 1))
        same_as_filter(f, "ints_lossless", ints, (7, 91, 50), options_for("lossless"))
        big = fz_samples.load_real("wmag91.float").astype(">f4")            # stored big-endian
        same_as_filter(f, "big_endian", big, (10, 40, 91), options_for("fzgpu", "noa", 1e-3))


def test_selections_of_whole_chunks(tmp_path, wmag):
    with h5py.File(tmp_path / "s.h5", "w") as f:
        # Chunks from the middle, a block ending at the dataset's edge, one
        # plane of chunks through an integer index's chunk.
        same_as_filter(f, "middle", wmag, (10, 40, 91), options_for("fzgpu"), selection=np.s_[10:30, 40:80, :])
        same_as_filter(f, "edge", wmag, (10, 40, 91), options_for("cusz"), selection=np.s_[80:, 40:, ...])
        d = f.create_dataset("scalar", shape=(20, 20), dtype="f4", chunks=(10, 10), compression=h5fz.FILTER_ID,
                             compression_opts=options_for("lossless"))
        h5fz.write(d, 2.5)
        assert (d[()] == 2.5).all()
        h5fz.write(d, np.arange(100, dtype="f8").reshape(10, 10), np.s_[10:, :10])   # converted as h5py does
        assert (d[10:, :10] == np.arange(100, dtype="f4").reshape(10, 10)).all() and (d[:10] == 2.5).all()


PARTS = [np.s_[5:30, 3:50, 7:], np.s_[10, :, 5:60], np.s_[..., 90], np.s_[85:, 85:, 85:], np.s_[:, 39:41, :]]


@pytest.mark.parametrize("preset", ["lossless", "fzgpu", "cusz", "cuszhi-cr"])
def test_parts_of_chunks_merge_as_hdf5_merges(tmp_path, wmag, preset):
    if h5fz.PRESETS[preset] not in h5fz.AVAILABLE_PRESETS:
        pytest.skip("preset not built")
    with h5py.File(tmp_path / "p.h5", "w") as f:
        # Into chunks never written (the fill value around the part), then into
        # chunks written before (decoded whole, lossy values included, and
        # encoded again), one selection after another.
        same_as_filter(f, "fresh", wmag, (10, 40, 91), options_for(preset), fillvalue=-5.0,
                       selection=PARTS[0], then=PARTS[1:])
        same_as_filter(f, "over", wmag, (10, 40, 91), options_for(preset), selection=None, then=PARTS)


def test_part_of_a_chunk_hdf5_stored_unfiltered(tmp_path, wmag):
    # HDF5 stores a chunk unfiltered (mask bit 0) when the filter fails on
    # it. Its own partial write then fails in the filter (it decodes the raw
    # bytes as a frame); h5fz.write takes the stored bytes as the chunk, as a
    # read does, merges and stores a frame.
    path = tmp_path / "u.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("u", data=wmag, chunks=(10, 40, 91), compression=h5fz.FILTER_ID,
                             compression_opts=options_for("lossless"))
    raw = np.ascontiguousarray(wmag[10:20, 0:40] + 1)
    with h5py.File(path, "a") as f:
        f["u"].id.write_direct_chunk((10, 0, 0), raw.tobytes(), filter_mask=1)
    with h5py.File(path, "a") as f:
        expected = f["u"][()]
        assert (expected[10:20, 0:40] == raw).all()
        expected[12:14, 5:9, :] = 7.0
        h5fz.write(f["u"], 7.0, np.s_[12:14, 5:9, :])
    with h5py.File(path, "r") as f:
        mask, frame = f["u"].id.read_direct_chunk((10, 0, 0))
        assert mask == 0 and frame[:4] == b"FZM\x00"
        assert f["u"][()].tobytes() == expected.tobytes()


def test_refusals_write_nothing(tmp_path, wmag):
    with h5py.File(tmp_path / "r.h5", "w") as f:
        d = f.create_dataset("d", shape=wmag.shape, dtype="f4", chunks=(10, 40, 91), compression=h5fz.FILTER_ID,
                             compression_opts=options_for("fzgpu"))
        with pytest.raises(ValueError, match="does not fit"):
            h5fz.write(d, wmag[:10])
        with pytest.raises(ValueError, match="device is"):
            h5fz.write(d, wmag, device="gpu")
        with pytest.raises(TypeError, match="step 1"):
            h5fz.write(d, wmag[::2], np.s_[::2])
        assert d.id.get_num_chunks() == 0
        plain = f.create_dataset("plain", data=wmag[:10])
        with pytest.raises(TypeError, match="only filter"):
            h5fz.write(plain, wmag[:10])
        gz = f.create_dataset("gz", data=wmag[:10], chunks=(10, 40, 91), compression="gzip")
        with pytest.raises(TypeError, match="only filter"):
            h5fz.write(gz, wmag[:10])


def test_c_interface_refuses_bad_arguments(tmp_path, wmag):
    from h5fz import _write
    lib = _write._library()
    error = ctypes.create_string_buffer(512)
    chunk = np.ascontiguousarray(wmag[:10, :40])
    frame = ctypes.create_string_buffer(lib.h5z_fz_max_frame_bytes(chunk.nbytes, 3))
    args = lambda cd, nbytes: (len(cd), (ctypes.c_uint * len(cd))(*cd), 1,  # noqa: E731
                               (ctypes.c_void_p * 1)(chunk.ctypes.data), (ctypes.c_size_t * 1)(nbytes),
                               (ctypes.c_void_p * 1)(ctypes.addressof(frame)), (ctypes.c_size_t * 1)(len(frame)),
                               (ctypes.c_size_t * 1)(), b"cpu", 0, error, len(error))
    user = h5fz.compression_opts("fzgpu", "noa", 1e-3)
    assert lib.h5z_fz_encode_dataset_batch(*args(user, chunk.nbytes)) == -1
    assert b"stored parameters" in error.value
    with h5py.File(tmp_path / "c.h5", "w") as f:
        d = f.create_dataset("d", shape=wmag.shape, dtype="f4", chunks=(10, 40, 91), compression=h5fz.FILTER_ID,
                             compression_opts=user)
        stored = d.id.get_create_plist().get_filter(0)[2]
        assert lib.h5z_fz_encode_dataset_batch(*args(stored, chunk.nbytes - 4)) == -1
        assert b"this dataset's chunks are" in error.value
        assert lib.h5z_fz_encode_dataset_batch(*args(stored, chunk.nbytes)) == 0
        # The device variant refuses host memory (or, without a GPU, says there is none).
        device_args = args(stored, chunk.nbytes)[:8] + (error, len(error))
        assert lib.h5z_fz_encode_dataset_batch_from_device(*device_args) == -1
        assert b"not device memory" in error.value or b"no usable CUDA device" in error.value


class _FakeGpuArray:
    """An object that says it lives in GPU memory (the CUDA array interface)."""
    __cuda_array_interface__ = {"shape": (2,), "typestr": "<f4", "data": (0, False), "version": 3}


def test_host_data_on_any_device_gives_the_filters_frames(tmp_path, wmag):
    """device="cuda" / "auto" for host data: the engine encodes on the GPU where
    one is usable (on the CPU here otherwise); the frames are the filter's."""
    with h5py.File(tmp_path / "d.h5", "w") as f:
        for device in ("cuda", "auto"):
            same_as_filter(f, "host_" + device, wmag, (10, 40, 91), options_for("fzgpu"),
                           writer=lambda d, x, sel, device=device: h5fz.write(d, x, sel, device=device))
        d = f.create_dataset("g", shape=(2,), dtype="f4", chunks=(2,), compression=h5fz.FILTER_ID,
                             compression_opts=options_for("fzgpu"))
        try:
            import cupy  # noqa: F401
        except ImportError:
            with pytest.raises(ImportError, match="CuPy"):
                h5fz.write(d, _FakeGpuArray())
            assert d.id.get_num_chunks() == 0


@pytest.fixture(scope="module")
def cupy_gpu():
    """CuPy with a CUDA device (the device machine), else the test is skipped."""
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return cupy
    except Exception:
        pass
    pytest.skip("no CUDA device with CuPy here")


def device_encodes(monkeypatch):
    """A list that grows by one on each call of the plugin's device encoder."""
    from h5fz import _write
    lib = _write._library()
    calls = []
    real = lib.h5z_fz_encode_dataset_batch_from_device
    monkeypatch.setattr(lib, "h5z_fz_encode_dataset_batch_from_device", lambda *a: calls.append(1) or real(*a))
    return calls


@pytest.mark.parametrize("preset", PRESETS)
def test_gpu_arrays_give_the_filters_frames(tmp_path, wmag, cupy_gpu, monkeypatch, preset):
    """A CuPy array: chunks built in GPU memory and encoded by the GPU (the
    device encoder is called), only frames to the host; the filter's frames
    for whole, edge and padded chunks, and for parts of chunks merged into
    what is stored (decoded on the GPU)."""
    cp = cupy_gpu
    calls = device_encodes(monkeypatch)
    on_gpu = lambda d, x, sel: h5fz.write(d, cp.asarray(x), sel)  # noqa: E731
    with h5py.File(tmp_path / "g.h5", "w") as f:
        same_as_filter(f, preset, wmag, (10, 40, 91), options_for(preset), writer=on_gpu)
        same_as_filter(f, preset + "_fill", wmag, (10, 40, 91), options_for(preset), fillvalue=-5.0,
                       writer=on_gpu)
        if preset in ("fzgpu", "cusz", "cuszhi-cr", "lossless"):
            same_as_filter(f, preset + "_parts", wmag, (10, 40, 91), options_for(preset), fillvalue=-5.0,
                           selection=PARTS[0], then=PARTS[1:], writer=on_gpu)
    assert calls, "a GPU array went through the host"


def test_gpu_arrays_other_types_and_routes(tmp_path, wmag, cupy_gpu, monkeypatch):
    """float64 and integers from the GPU; a big-endian dataset (built on the
    host: CuPy has no such arrays) and device="cpu" (copied to the host a
    group at a time); a float64 array into a float32 dataset (converted a
    chunk at a time); a GPU array through DLPack."""
    cp = cupy_gpu
    p = fz_samples.load_real("pressure.384_384.f64")
    ints = (np.arange(91 ** 3) % 1000).astype(np.int16).reshape(91, 91, 91)
    on_gpu = lambda d, x, sel: h5fz.write(d, cp.asarray(x), sel)  # noqa: E731
    with h5py.File(tmp_path / "t.h5", "w") as f:
        same_as_filter(f, "f64", p, (100, 100), options_for("fzgpu", "noa", 1e-4), writer=on_gpu)
        same_as_filter(f, "ints", ints, (7, 91, 50), options_for("fzgpu", "abs", 1), writer=on_gpu)
        big = wmag.astype(">f4")
        same_as_filter(f, "big", big, (10, 40, 91), options_for("fzgpu"), writer=lambda d, x, sel: h5fz.write(
            d, cp.asarray(np.ascontiguousarray(x).astype("<f4")), sel))
        calls = device_encodes(monkeypatch)
        same_as_filter(f, "cpu", wmag, (10, 40, 91), options_for("cusz"),
                       writer=lambda d, x, sel: h5fz.write(d, cp.asarray(x), sel, device="cpu"))
        assert not calls, "device='cpu' encoded on the GPU"
        same_as_filter(f, "narrowed", wmag.astype("f8"), (10, 40, 91), options_for("fzgpu"), dtype="f4",
                       writer=on_gpu)
        same_as_filter(f, "dlpack", wmag, (10, 40, 91), options_for("fzgpu"),
                       writer=lambda d, x, sel: h5fz.write(d, _DLPackOnly(cp.asarray(x)), sel))


class _DLPackOnly:
    """A GPU array seen only through DLPack (as a PyTorch or JAX array is)."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, *args, **kwargs):
        return self._array.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


@pytest.mark.parametrize("preset", ["lossless", "fzgpu", "cuszhi-cr"])
def test_cpp_writer_matches(h5fz_tool, tmp_path, wmag, preset):
    """`h5fz write` (chunk_writer.cpp, the C++ counterpart): the filter's frames
    for the whole dataset, then for boxes over parts of chunks, one after
    another, in a file closed between the writes."""
    import subprocess
    path = tmp_path / "cpp.h5"
    with h5py.File(path, "w") as f:
        for name in ("filter", "tool"):
            f.create_dataset(name, shape=wmag.shape, dtype="f4", chunks=(10, 40, 91), fillvalue=-5.0,
                             compression=h5fz.FILTER_ID, compression_opts=options_for(preset))
    boxes = [None, ((5, 3, 7), (25, 47, 84)), ((90, 0, 0), (1, 91, 91)), ((0, 39, 0), (91, 2, 91))]
    for step, box in enumerate(boxes):
        source = wmag if step % 2 == 0 else wmag[::-1].copy()
        sel = np.s_[...] if box is None else tuple(slice(a, a + c) for a, c in zip(*box))
        raw = tmp_path / "box.raw"
        raw.write_bytes(np.ascontiguousarray(source[sel]).tobytes())
        with h5py.File(path, "a") as f:
            f["filter"][sel] = source[sel]
        args = [h5fz_tool, "write", str(path), "tool", "--input", str(raw)]
        if box is not None:
            args += ["--start", ",".join(map(str, box[0])), "--count", ",".join(map(str, box[1]))]
        r = subprocess.run(args, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "wrote tool" in r.stdout
        with h5py.File(path, "r") as f:
            ca, cb = stored_chunks(f["filter"]), stored_chunks(f["tool"])
            assert sorted(ca) == sorted(cb), (preset, box)
            for offset in ca:
                assert ca[offset] == cb[offset], (preset, box, offset)
            assert f["filter"][()].tobytes() == f["tool"][()].tobytes()
    bad = tmp_path / "bad.raw"
    bad.write_bytes(b"\0" * 12)
    r = subprocess.run([h5fz_tool, "write", str(path), "tool", "--input", str(bad)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode != 0 and "holds 12 bytes" in r.stderr
