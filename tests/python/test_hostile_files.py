"""Frames that decode to the wrong size for their dataset are read errors.

HDF5 copies a whole chunk out of whatever the filter hands back without asking
how long it is, so a frame with a valid checksum but the wrong decoded size
(put there with write_direct_chunk: a frame from another dataset, a forged
file) must be refused by the filter. Before the first-filter flag, datasets of
1-byte opaque elements (bool, S1, V1) skipped that check, and h5py read past
the filter's buffer (SIGSEGV). Every read runs in a child process, so a crash
fails the test instead of ending the run.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
import h5py

import fz_samples
import h5fz
from conftest import HERE, REPO, assert_same, fz_kwargs

pytestmark = pytest.mark.usefixtures("plugin")

# A child that reads one dataset whole and says what happened.
READER = r"""
import sys
sys.path[:0] = [%(tools)r]
import h5fz
h5fz.register()
import h5py
with h5py.File(sys.argv[1], "r") as f:
    try:
        f[sys.argv[2]][()]
        print("READ")
    except Exception as e:
        print("EXCEPTION %%s: %%s" %% (type(e).__name__, e))
"""


def read_in_child(path, name, env=None):
    r = subprocess.run([sys.executable, "-c", READER % {"tools": os.path.join(REPO, "tools", "python")},
                        str(path), name], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, "reader died (%d): %s" % (r.returncode, r.stderr[-2000:])
    return r.stdout + r.stderr


def small_frame(f, dtype, n=16):
    """A valid frame of n elements of `dtype`, from a dataset of its own."""
    data = np.zeros(n, dtype=dtype)
    d = f.create_dataset("small_%s" % np.dtype(dtype).str.replace("|", "").replace("<", ""), data=data,
                         chunks=(n,), **fz_kwargs())
    return bytes(d.id.read_direct_chunk((0,))[1])


# 1-byte element kinds whose frames look like the filter's byte fallback, and
# wider types for contrast. bool is h5py's enum of int8.
ONE_BYTE_KINDS = {"bool": np.bool_, "S1": "S1", "V1": "V1", "uint8": np.uint8, "int8": np.int8}


@pytest.mark.parametrize("kind", sorted(ONE_BYTE_KINDS))
def test_short_frame_in_a_big_one_byte_dataset_is_refused(tmp_path, kind):
    """The crash of issue 12: a 16-element frame in a 2^26-element chunk."""
    dtype = ONE_BYTE_KINDS[kind]
    path = tmp_path / "short.h5"
    n = 1 << 26
    with h5py.File(path, "w") as f:
        frame = small_frame(f, dtype)
        big = f.create_dataset("big", shape=(n,), dtype=dtype, chunks=(n,), **fz_kwargs())
        big.id.write_direct_chunk((0,), frame, 0)
    out = read_in_child(path, "big")
    assert "EXCEPTION" in out, out
    assert "decodes to 16 bytes but a chunk of this dataset is %d bytes" % n in out, out


def test_edge_chunk_frames_must_be_whole_chunks(tmp_path):
    """HDF5 hands the filter whole chunks at the ragged edge too: a frame holding
    only the edge's in-bounds part (or any other size) is refused."""
    path = tmp_path / "edge.h5"
    a = (np.arange(50 * 30) % 7).astype(np.uint8).reshape(50, 30).view("V1")
    with h5py.File(path, "w") as f:
        d = f.create_dataset("d", data=a, chunks=(32, 16), **fz_kwargs())
        part = f.create_dataset("part", data=np.zeros((18, 14), np.uint8).view("V1"), chunks=(18, 14),
                                **fz_kwargs())
        d.id.write_direct_chunk((32, 16), bytes(part.id.read_direct_chunk((0, 0))[1]), 0)
    out = read_in_child(path, "d")
    assert "decodes to %d bytes but a chunk of this dataset is %d bytes" % (18 * 14, 32 * 16) in out, out
    with h5py.File(path, "r") as f:
        assert_same(f["d"][:32, :], a[:32, :])  # the other chunks still read


def test_frame_of_other_element_size_is_refused(tmp_path):
    """Same byte count, other element: a float32 frame in an int16 dataset."""
    path = tmp_path / "other.h5"
    with h5py.File(path, "w") as f:
        src = f.create_dataset("f", data=np.linspace(0, 1, 64, dtype="<f4"), chunks=(64,), **fz_kwargs())
        d = f.create_dataset("i", shape=(128,), dtype="<i2", chunks=(128,), **fz_kwargs())
        d.id.write_direct_chunk((0,), bytes(src.id.read_direct_chunk((0,))[1]), 0)
    out = read_in_child(path, "i")
    assert "frame holds 4-byte elements but the dataset's are 2 bytes" in out, out


def create_with_pipeline(f, name, data, chunks, filters):
    """A dataset whose pipeline is exactly `filters` ((id, cd_values) in
    order; "fletcher32" for HDF5's checksum), written whole."""
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk(chunks)
    for fid, values in filters:
        if fid == "fletcher32":
            dcpl.set_fletcher32()
        else:
            dcpl.set_filter(fid, h5py.h5z.FLAG_OPTIONAL, values)
    space = h5py.h5s.create_simple(data.shape)
    tid = h5py.h5t.py_create(data.dtype, logical=True)
    dsid = h5py.h5d.create(f.id, name.encode(), tid, space, dcpl=dcpl)
    dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data))
    return f[name]


@pytest.mark.parametrize("kind", ["bool", "V1", "float32"])
def test_byte_fallback_after_another_filter_still_reads(tmp_path, kind):
    """With fletcher32 first, the filter compresses fletcher32's output (the
    chunk + 4 bytes) as plain bytes: such frames are not the chunk's size, and
    the dataset's stored values say so (first-filter flag 0)."""
    raw = fz_samples.noisy((40, 40), "u1", 5)
    a = {"bool": raw.astype(np.bool_), "V1": raw.view("V1"), "float32": raw.astype("<f4") / 7}[kind]
    path = tmp_path / "fallback.h5"
    with h5py.File(path, "w") as f:
        d = create_with_pipeline(f, "d", a, (16, 16), [("fletcher32", None), (h5fz.FILTER_ID, (1,))])
        assert h5fz.parse_stored(h5fz.filter_values(d)[1])["first_filter"] == 0
        e = create_with_pipeline(f, "e", a, (16, 16), [(h5fz.FILTER_ID, (1,)), ("fletcher32", None)])
        assert h5fz.parse_stored(h5fz.filter_values(e)[1])["first_filter"] == 1
    with h5py.File(path, "r") as f:
        for name in ("d", "e"):
            assert f[name].id.read_direct_chunk((0, 0))[0] == 0  # every filter applied
            assert_same(f[name][()], a)


NO_PLUGIN_WRITER = r"""
import sys
import h5py, numpy as np
with h5py.File(sys.argv[1], "a") as f:
    # The filter is unavailable here (no HDF5_PLUGIN_PATH): h5py adds it as
    # optional, set_local never runs, the values stay in the user layout.
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((16,))
    dcpl.set_filter(32850, h5py.h5z.FLAG_OPTIONAL, (1,))
    h5py.h5d.create(f.id, b"u", h5py.h5t.NATIVE_UINT8, h5py.h5s.create_simple((16,)), dcpl=dcpl)
"""


def test_frame_under_values_set_local_never_saw_is_refused(tmp_path):
    path = tmp_path / "user_layout.h5"
    with h5py.File(path, "w") as f:
        frame = small_frame(f, np.uint8, 16)
    env = {k: v for k, v in os.environ.items() if k != "HDF5_PLUGIN_PATH"}
    env["HDF5_PLUGIN_PATH"] = str(tmp_path / "nothing-here")
    r = subprocess.run([sys.executable, "-c", NO_PLUGIN_WRITER, str(path)], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    with h5py.File(path, "a") as f:
        d = f["u"]
        assert not h5fz.is_stored_layout(h5fz.filter_values(d)[1])
        d.id.write_direct_chunk((0,), frame, 0)
    out = read_in_child(path, "u")
    assert "cd_values are not in the stored layout" in out, out
