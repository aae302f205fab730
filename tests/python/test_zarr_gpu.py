"""h5fz.FZZarr3 with zarr's GPU buffers (issue 33 item 2): under
zarr.config.enable_gpu() a CuPy array is written and read back through the
codec with its chunks in GPU memory, the frames in the store byte for byte
those the CPU buffers give (and so the HDF5 filter's), the chunks read back
exactly as the CPU decodes them, one chunk or many a batch; fill values and
other element types too. Needs a GPU, CuPy and zarr 3 (the device machine);
skipped elsewhere."""

import asyncio

import numpy as np
import pytest

import h5fz
import fz_samples

zarr = pytest.importorskip("zarr")
if int(zarr.__version__.split(".")[0]) < 3:
    pytest.skip("zarr %s: the zarr-python 3 codec needs zarr 3" % zarr.__version__, allow_module_level=True)
cp = pytest.importorskip("cupy")
try:
    _GPUS = cp.cuda.runtime.getDeviceCount()
except Exception:  # no driver
    _GPUS = 0
if _GPUS == 0:
    pytest.skip("no CUDA device", allow_module_level=True)

pytestmark = pytest.mark.usefixtures("plugin")


def stored_frames(store, gpu):
    """Every chunk key's bytes in a MemoryStore (its buffers are where the
    codec's frames were put: GPU buffers under enable_gpu)."""
    from zarr.core.buffer import cpu, gpu as gpu_buffers
    prototype = gpu_buffers.buffer_prototype if gpu else cpu.buffer_prototype

    async def collect():
        keys = [k async for k in store.list() if not k.endswith("zarr.json")]
        return {k: (await store.get(k, prototype=prototype)).as_numpy_array().tobytes() for k in keys}
    return asyncio.run(collect())


def write_and_read(data, chunks, codec, fill, gpu, batch):
    store = zarr.storage.MemoryStore()
    with zarr.config.set({"codec_pipeline.batch_size": batch}):
        if gpu:
            with zarr.config.enable_gpu():
                z = zarr.create_array(store, shape=data.shape, chunks=chunks, dtype=data.dtype, fill_value=fill,
                                      serializer=codec, compressors=None)
                z[...] = cp.asarray(data)
                back = zarr.open_array(store)[...]
                assert isinstance(back, cp.ndarray), type(back)
                back = cp.asnumpy(back)
        else:
            z = zarr.create_array(store, shape=data.shape, chunks=chunks, dtype=data.dtype, fill_value=fill,
                                  serializer=codec, compressors=None)
            z[...] = data
            back = zarr.open_array(store)[...]
    return stored_frames(store, gpu), back


@pytest.mark.parametrize("preset", ["fzgpu", "cuszhi-cr", "pfpl", "lossless"])
@pytest.mark.parametrize("batch", [1, 16])
def test_gpu_buffers_give_the_cpus_frames_and_values(preset, batch):
    field = fz_samples.load_real("vorticity.128_128_41")  # (41, 128, 128)
    codec = h5fz.FZZarr3(preset=preset, noa=1e-3) if preset != "lossless" else h5fz.FZZarr3()
    chunks = (8, 64, 128)  # ragged in z: an edge chunk of one plane
    gpu_frames, gpu_back = write_and_read(field, chunks, codec, 0.0, True, batch)
    cpu_frames, cpu_back = write_and_read(field, chunks, codec, 0.0, False, batch)
    assert len(gpu_frames) == 12 and gpu_frames.keys() == cpu_frames.keys()
    for key in cpu_frames:
        assert gpu_frames[key] == cpu_frames[key], key
    assert np.array_equal(gpu_back, cpu_back)
    if preset == "lossless":
        assert np.array_equal(gpu_back, field)
    else:
        for z in range(0, 41, 8):
            for y in (0, 64):
                part = field[z:z + 8, y:y + 64]
                err = np.abs(gpu_back[z:z + 8, y:y + 64].astype(np.float64) - part)
                assert err.max() <= 1e-3 * (float(part.max()) - float(part.min()))


def test_gpu_buffers_other_types_and_the_fill_value():
    rng = np.random.default_rng(33)
    cases = [(np.cumsum(rng.normal(size=(20, 30, 40)), axis=2), "<f8", -999.0, h5fz.FZZarr3(preset="cusz", abs=1e-2)),
             (rng.integers(-500, 500, size=(20, 30, 40)), "<i2", 3, h5fz.FZZarr3(preset="pfpl", abs=2)),
             (rng.integers(0, 255, size=(20, 30, 40)), "<u1", 0, h5fz.FZZarr3())]
    for values, dtype, fill, codec in cases:
        data = values.astype(dtype)
        data[0, :3, :5] = fill
        gpu_frames, gpu_back = write_and_read(data, (10, 30, 20), codec, fill, True, 8)
        cpu_frames, cpu_back = write_and_read(data, (10, 30, 20), codec, fill, False, 8)
        assert gpu_frames == cpu_frames, dtype
        assert np.array_equal(gpu_back, cpu_back), dtype
        assert np.all(gpu_back[0, :3, :5] == fill), dtype


def test_a_partial_write_on_the_gpu_merges_with_what_is_stored():
    """zarr reads, merges and writes again a chunk a selection covers in part:
    both ways through the GPU."""
    field = fz_samples.load_real("vorticity.128_128_41")[:16]
    store = zarr.storage.MemoryStore()
    with zarr.config.enable_gpu():
        z = zarr.create_array(store, shape=field.shape, chunks=(8, 64, 64), dtype=field.dtype, fill_value=0.0,
                              serializer=h5fz.FZZarr3(preset="fzgpu", abs=1e-3), compressors=None)
        z[...] = cp.asarray(field)
        before = cp.asnumpy(z[...])
        z[3:5, 10:100, 20:30] = cp.full((2, 90, 10), 7.5, dtype=cp.float32)
        back = cp.asnumpy(zarr.open_array(store)[...])
    assert np.max(np.abs(before.astype(np.float64) - field)) <= 1e-3
    expected = before.copy()  # (the chunks merged were decoded, then encoded again: within the bound of that)
    expected[3:5, 10:100, 20:30] = 7.5
    assert np.max(np.abs(back.astype(np.float64) - expected)) <= 1e-3
    untouched = np.ones(field.shape, bool)
    untouched[0:8, 0:128, 0:64] = False  # the chunks the selection touched
    assert np.array_equal(back[untouched], before[untouched])
