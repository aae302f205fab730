"""h5fz.read (issue 15, item 2): the chunks a selection touches, read as
stored and decoded many at once through the plugin's C decoding interface,
give exactly what h5py reads through the filter: every preset, ragged edges,
chunks never written, chunks HDF5 stored unfiltered, other pipelines, and
on the GPU (into CuPy arrays) where there is one."""

import os

import numpy as np
import pytest
import h5py

import h5fz
import fz_samples

pytestmark = pytest.mark.usefixtures("plugin")

PRESETS = [name for name, pid in sorted(h5fz.PRESETS.items(), key=lambda kv: kv[1])
           if pid in h5fz.AVAILABLE_PRESETS and name != "default"]
SELECTIONS = [None, np.s_[...], np.s_[3:50, 7:, :33], np.s_[10], np.s_[..., 5], np.s_[-3:, 2, :],
              np.s_[0:0], np.s_[:, 40:41, 90], np.s_[90, 90, 90]]


def fits(d, sel):
    """Whether a selection of SELECTIONS applies to d's rank."""
    return sel is None or sel is Ellipsis or len([s for s in np.index_exp[sel] if s is not Ellipsis]) <= d.ndim


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """wmag91 under every preset in chunks with ragged edges, and special cases."""
    path = tmp_path_factory.mktemp("read") / "r.h5"
    w = fz_samples.load_real("wmag91.float")
    w = w.copy()
    w[0, 0, :4] = [np.nan, np.inf, -np.inf, -0.0]
    with h5py.File(path, "w") as f:
        for preset in PRESETS:
            opts = h5fz.compression_opts(preset, "noa", 1e-3) if h5fz.PRESETS[preset] in h5fz.LOSSY_PRESETS else \
                h5fz.compression_opts(preset)
            f.create_dataset(preset, data=w, chunks=(10, 40, 91), compression=h5fz.FILTER_ID, compression_opts=opts)
        p = fz_samples.load_real("pressure.384_384.f64")
        f.create_dataset("f64", data=p, chunks=(100, 384), compression=h5fz.FILTER_ID,
                         compression_opts=h5fz.compression_opts("cuszhi-cr", "abs", 1e-6))
        f.create_dataset("ints", data=np.arange(91 ** 3, dtype=np.int16).reshape(91, 91, 91), chunks=(7, 91, 50),
                         compression=h5fz.FILTER_ID, compression_opts=h5fz.compression_opts("fzgpu", "abs", 1))
        sparse = f.create_dataset("sparse", shape=(91, 91, 91), dtype="f4", chunks=(10, 91, 91), fillvalue=-5.0,
                                  compression=h5fz.FILTER_ID, compression_opts=h5fz.compression_opts("fzgpu", "abs",
                                                                                                      0.01))
        sparse[20:30] = w[20:30]                                          # the other chunks are never written
        f.create_dataset("gzip", data=w, chunks=(10, 40, 91), compression="gzip")
        f.create_dataset("plain", data=w)
        f.create_dataset("scalar", data=2.5)
        raw = f.create_dataset("raw", shape=(91, 91, 91), dtype="f4", chunks=(10, 91, 91),
                               compression=h5fz.FILTER_ID, compression_opts=h5fz.compression_opts("lossless"))
        raw[...] = w
        # HDF5 stores a chunk unfiltered (mask bit 0) when a filter fails on it.
        raw.id.write_direct_chunk((10, 0, 0), w[10:20].tobytes(), filter_mask=1)
    return path


@pytest.mark.parametrize("name", PRESETS +
                         ["f64", "ints", "sparse", "gzip", "plain", "raw"])
def test_values_equal_the_filters(written, name):
    with h5py.File(written, "r") as f:
        d = f[name]
        for sel in SELECTIONS:
            if not fits(d, sel):
                continue
            expected = d[()] if sel is None else d[sel]
            assert same(h5fz.read(d, sel), expected), (name, sel)
        assert same(h5fz.read(d, threads=1), d[()])


def test_scalar_and_errors(written):
    with h5py.File(written, "r") as f:
        assert h5fz.read(f["scalar"]) == 2.5
        d = f["fzgpu"]
        with pytest.raises(TypeError, match="step 1"):
            h5fz.read(d, np.s_[::2])
        with pytest.raises(IndexError):
            h5fz.read(d, np.s_[91])
        with pytest.raises(TypeError):
            h5fz.read(d, np.s_[[1, 2]])
        with pytest.raises(ValueError, match="device"):
            h5fz.read(d, device="gpu")


def test_corrupt_frame_is_an_error_naming_the_dataset(tmp_path):
    path = tmp_path / "c.h5"
    w = fz_samples.load_real("wmag91.float")
    with h5py.File(path, "w") as f:
        d = f.create_dataset("w", data=w, chunks=(10, 91, 91), compression=h5fz.FILTER_ID,
                             compression_opts=h5fz.compression_opts("fzgpu", "abs", 0.01))
        mask, frame = d.id.read_direct_chunk((20, 0, 0))
        bad = bytearray(frame)
        bad[len(bad) // 2] ^= 0xFF
        d.id.write_direct_chunk((20, 0, 0), bytes(bad), filter_mask=mask)
    with h5py.File(path, "r") as f:
        with pytest.raises(OSError, match="/w"):
            h5fz.read(f["w"])
        assert same(h5fz.read(f["w"], np.s_[:20]), f["w"][:20])      # the other chunks read fine


def test_gpu_reads_match(written):
    """device="cuda": decoded on the GPU into a CuPy array (on the device machine)."""
    try:
        import cupy
        has_gpu = cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        has_gpu = False
    if not has_gpu:
        try:
            import cupy  # noqa: F401
        except ImportError:
            with h5py.File(written, "r") as f:
                with pytest.raises(ImportError, match="CuPy"):
                    h5fz.read(f["fzgpu"], device="cuda")
        pytest.skip("no CUDA device with CuPy here")
    with h5py.File(written, "r") as f:
        for name in PRESETS + ["f64", "ints", "sparse", "raw", "gzip"]:
            d = f[name]
            for sel in SELECTIONS:
                if not fits(d, sel):
                    continue
                expected = d[()] if sel is None else d[sel]
                got = h5fz.read(d, sel, device="cuda")
                assert isinstance(got, cupy.ndarray)
                assert same(cupy.asnumpy(got), expected), (name, sel)


@pytest.mark.parametrize("name", ["fzgpu", "cuszhi-cr", "f64", "ints", "sparse", "raw", "gzip", "plain"])
def test_cpp_reader_matches(h5fz_tool, written, tmp_path, name):
    """`h5fz read` (chunk_reader.cpp, the C++ counterpart): the same bytes as
    h5py's read through the filter, for the whole dataset and inner boxes."""
    import subprocess
    with h5py.File(written, "r") as f:
        d = f[name]
        boxes = [None, (tuple(s // 3 for s in d.shape), tuple(max(1, s // 2) for s in d.shape)),
                 (tuple(s - 1 for s in d.shape), (1,) * d.ndim)]
        for box in boxes:
            raw = tmp_path / "box.raw"
            args = [h5fz_tool, "read", str(written), name, "--output", str(raw), "--compare"]
            if box is None:
                expected = d[()]
            else:
                start, count = box
                args += ["--start", ",".join(map(str, start)), "--count", ",".join(map(str, count))]
                expected = d[tuple(slice(a, a + c) for a, c in zip(start, count))]
            r = subprocess.run(args, capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, r.stdout + r.stderr
            assert "identical bytes" in r.stdout
            assert raw.read_bytes() == np.ascontiguousarray(expected).tobytes(), (name, box)
    r = subprocess.run([h5fz_tool, "read", str(written), "fzgpu", "--start", "0,0", "--count", "1,1"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--start needs 3 values" in r.stderr
