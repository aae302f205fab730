"""The batch readers (h5fz.read, `h5fz read`) against hostile and ordinary
files (issue 28 items 5, 7, 9, 10, 15): each frame is checked against the
dataset's stored parameters by the filter's own check (filter/frame_check.*),
so the readers refuse what the filter refuses with the filter's message;
sizes are overflow-checked; variable-length datasets are read through HDF5
or refused; `read --compare` finds the plugin beside the tool and names a
filter HDF5 cannot find."""

import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import fz_kwargs
import fz_samples
import h5fz
import h5py

pytestmark = pytest.mark.usefixtures("plugin")

READER = r"""
import sys
import h5py
try:
    h5py.File(sys.argv[1], "r")[sys.argv[2]][...]
    print("READ OK")
except Exception as e:
    print("EXCEPTION", type(e).__name__, e)
"""


def filter_message(path, name):
    """What HDF5 reading through the filter says (the filter's message goes
    to stderr), from a child so the message is captured."""
    r = subprocess.run([sys.executable, "-c", READER, str(path), name], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout + r.stderr


def tool(h5fz_tool, *args, env=None):
    return subprocess.run([h5fz_tool] + [str(a) for a in args], capture_output=True, text=True, timeout=300, env=env)


# ---- item 9: a frame the filter refuses -------------------------------------

def test_frame_of_other_element_type_same_bytes(tmp_path, h5fz_tool):
    """An int16 frame of 200 elements in a float32 chunk of 100 (400 bytes
    both): the filter refuses it; both batch readers must too, with its words."""
    path = tmp_path / "mixed.h5"
    with h5py.File(path, "w") as f:
        src = f.create_dataset("i", data=np.arange(200, dtype="<i2"), chunks=(200,), **fz_kwargs())
        d = f.create_dataset("f", shape=(100,), dtype="<f4", chunks=(100,), **fz_kwargs())
        d.id.write_direct_chunk((0,), bytes(src.id.read_direct_chunk((0,))[1]), 0)
    words = "frame holds 2-byte elements but the dataset's are 4 bytes"
    assert words in filter_message(path, "f")
    with h5py.File(path, "r") as f:
        with pytest.raises(OSError, match=words):
            h5fz.read(f["f"])
    r = tool(h5fz_tool, "read", path, "f", "--output", tmp_path / "out.raw")
    assert r.returncode == 1 and words in r.stderr, (r.returncode, r.stdout, r.stderr)


# ---- item 5: a chunk written with other parameters than the dataset stores ----

LOSSY = ["pfpl", "fzgpu", "cusz", "cuszhi-tp", "cuszhi-cr"]


def transplant(path, field, written, stored):
    """Dataset "d" stores `stored` (preset, mode, bound) while its chunks hold
    frames written with `written`: what a parallel write leaves when its
    ranks pass different parameters (each rank's filter codes with its own,
    the file keeps one rank's cd_values)."""
    chunks = (1,) * (field.ndim - 2) + field.shape[-2:]
    with h5py.File(path, "w") as f:
        src = f.create_dataset("src", data=field, chunks=chunks,
                               **fz_kwargs(preset=written[0], mode=written[1], bound=written[2]))
        d = f.create_dataset("d", shape=field.shape, dtype=field.dtype, chunks=chunks,
                             **fz_kwargs(preset=stored[0], mode=stored[1], bound=stored[2]))
        for info in (src.id.get_chunk_info(i) for i in range(src.id.get_num_chunks())):
            mask, frame = src.id.read_direct_chunk(info.chunk_offset)
            d.id.write_direct_chunk(info.chunk_offset, bytes(frame), mask)


def expect_refused(path, h5fz_tool, tmp_path):
    """The filter, h5fz.read and `h5fz read` all refuse "d", naming it."""
    words = "the chunk was written with other parameters than the dataset stores"
    assert words in filter_message(path, "d")
    with h5py.File(path, "r") as f:
        with pytest.raises(OSError, match=words):
            h5fz.read(f["d"])
    r = tool(h5fz_tool, "read", path, "d")
    assert r.returncode == 1 and words in r.stderr, (r.returncode, r.stdout, r.stderr)


@pytest.mark.parametrize("preset", LOSSY)
@pytest.mark.parametrize("written,stored", [(1e-2, 1e-5), (1e-5, 1e-2)], ids=["looser", "tighter"])
def test_noa_bound_disagreement_refused(tmp_path, h5fz_tool, preset, written, stored):
    field = fz_samples.load_real("vorticity.128_128_41")[:4]
    path = tmp_path / "noa.h5"
    transplant(path, field, (preset, "noa", written), (preset, "noa", stored))
    expect_refused(path, h5fz_tool, tmp_path)


@pytest.mark.parametrize("preset", LOSSY)
def test_noa_agreement_reads(tmp_path, h5fz_tool, preset):
    """The same parameters both sides: every reader reads, within the bound."""
    field = fz_samples.load_real("vorticity.128_128_41")[:4]
    path = tmp_path / "same.h5"
    transplant(path, field, (preset, "noa", 1e-3), (preset, "noa", 1e-3))
    with h5py.File(path, "r") as f:
        through = f["d"][...]
        np.testing.assert_array_equal(h5fz.read(f["d"]), through)
    for k in range(field.shape[0]):
        finite = field[k][np.isfinite(field[k])]
        assert np.all(np.abs(through[k].astype(np.float64) - field[k]) <= 1e-3 * (finite.max() - finite.min()))
    r = tool(h5fz_tool, "read", path, "d", "--compare")
    assert r.returncode == 0 and "identical bytes" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("written,stored", [
    (("fzgpu", "abs", 1e-2), ("fzgpu", "abs", 1e-3)),
    (("pfpl", "rel", 1e-2), ("pfpl", "rel", 1e-3)),
    (("pfpl", "abs", 1e-3), ("pfpl", "rel", 1e-3)),
    (("pfpl", "noa", 1e-3), ("fzgpu", "noa", 1e-3)),
    (("cusz", "abs", 1e-3), ("cusz", "noa", 1e-3)),
], ids=["abs-bound", "rel-bound", "mode", "preset", "abs-in-noa"])
def test_parameter_disagreement_refused(tmp_path, h5fz_tool, written, stored):
    field = fz_samples.load_real("pressure.384_384.f64")
    path = tmp_path / "other.h5"
    transplant(path, field, written, stored)
    expect_refused(path, h5fz_tool, tmp_path)


# ---- item 7: extreme shapes --------------------------------------------------

@pytest.mark.parametrize("shape,words", [
    ((2 ** 62 + 1, 4), "is over 2^64 bytes"),
    ((2 ** 40, 2 ** 24), "is over 2^64 bytes"),
    ((2 ** 40, 4), "more than this machine's memory"),
])
def test_huge_sparse_selection_refused(tmp_path, h5fz_tool, shape, words):
    """A valid sparse file whose element count wraps 64 bits (or passes the
    memory): a clear error, never a write out of bounds or "0 B"."""
    path = tmp_path / "sparse.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", shape=shape, dtype="<f4", chunks=(1, min(shape[1], 1 << 20)), **fz_kwargs())
    r = tool(h5fz_tool, "read", path, "d", "--output", tmp_path / "out.raw")
    assert r.returncode == 1 and words in r.stderr, (r.returncode, r.stdout, r.stderr)
    assert not (tmp_path / "out.raw").exists()
    with h5py.File(path, "r") as f:
        with pytest.raises(MemoryError, match="h5fz.read: /d: the selection"):
            h5fz.read(f["d"])
        # A small box of the same dataset reads: the fill value.
        np.testing.assert_array_equal(h5fz.read(f["d"], np.s_[-2:, :3]), np.zeros((2, 3), "<f4"))
    r = tool(h5fz_tool, "read", path, "d", "--start", "%d,0" % (shape[0] - 2), "--count", "2,3", "--compare")
    assert r.returncode == 0 and "identical bytes" in r.stdout, r.stdout + r.stderr


# ---- item 10: variable-length datasets --------------------------------------

def test_variable_length_dataset(tmp_path, h5fz_tool):
    path = tmp_path / "vlen.h5"
    words = ["a", "bb", "", "dddd" * 50]
    with h5py.File(path, "w") as f:
        f.create_dataset("s", data=words, dtype=h5py.string_dtype(), chunks=(4,), **fz_kwargs())
        v = np.empty(3, dtype=object)
        v[:] = [np.arange(3, dtype="<i4"), np.zeros(0, "<i4"), np.ones(1, "<i4")]
        f.create_dataset("v", data=v, dtype=h5py.vlen_dtype("<i4"), chunks=(3,), **fz_kwargs())
    with h5py.File(path, "r") as f:
        got = h5fz.read(f["s"])
        assert [x.decode() for x in got] == words
        assert [list(x) for x in h5fz.read(f["v"])] == [[0, 1, 2], [], [1]]
    for name in ("s", "v"):
        out = tmp_path / ("%s.raw" % name)
        r = tool(h5fz_tool, "read", path, name, "--output", out)
        assert r.returncode == 1 and "variable-length type" in r.stderr, (r.returncode, r.stdout, r.stderr)
        assert not out.exists()


# ---- item 15: the plugin beside the tool; a missing filter named -------------

def test_compare_finds_plugin_beside_tool(tmp_path, h5fz_tool):
    path = tmp_path / "c.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=np.arange(4096, dtype="<f4").reshape(64, 64), chunks=(16, 64),
                         **fz_kwargs(preset="fzgpu", mode="abs", bound=1e-3))
    env = {k: v for k, v in os.environ.items() if k != "HDF5_PLUGIN_PATH"}
    r = tool(h5fz_tool, "read", path, "d", "--compare", env=env)
    assert r.returncode == 0 and "identical bytes" in r.stdout, r.stdout + r.stderr


def test_missing_filter_named(tmp_path, h5fz_tool):
    """A dataset whose chunks went through a filter HDF5 cannot find (SZ3,
    id 32024, from hdf5plugin) is named by id and name, with where it comes
    from."""
    hdf5plugin = pytest.importorskip("hdf5plugin")
    path = tmp_path / "sz3.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=np.linspace(0, 1, 4096, dtype="<f4").reshape(64, 64), chunks=(16, 64),
                         **hdf5plugin.SZ3(absolute=1e-3))
    env = dict(os.environ, HDF5_PLUGIN_PATH=h5fz.plugin_dir())
    r = tool(h5fz_tool, "read", path, "d", env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "filter 32024" in r.stderr and "is not available" in r.stderr and "hdf5plugin" in r.stderr, r.stderr


def test_missing_filter_named_by_h5fz_read(tmp_path):
    """h5fz.read names the filter HDF5 cannot find, as `h5fz read` does."""
    hdf5plugin = pytest.importorskip("hdf5plugin")
    path = tmp_path / "sz3.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=np.linspace(0, 1, 4096, dtype="<f4").reshape(64, 64), chunks=(16, 64),
                         **hdf5plugin.SZ3(absolute=1e-3))
    code = ("import sys, h5py; sys.path.insert(0, %r); import h5fz\n"
            "try:\n    h5fz.read(h5py.File(sys.argv[1], 'r')['d']); print('READ OK')\n"
            "except OSError as e:\n    print('ERROR', e)\n") % os.path.join(os.path.dirname(h5fz.__file__), "..")
    env = dict(os.environ, HDF5_PLUGIN_PATH=h5fz.plugin_dir())
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=300, env=env)
    assert "ERROR h5fz.read: /d: filter 32024" in r.stdout and "hdf5plugin" in r.stdout, r.stdout + r.stderr
