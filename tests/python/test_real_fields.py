"""The real fields of shared/data (FZ_DATA overrides): bit-exact through the
lossless preset and stored smaller than raw. Missing data fails, never skips."""

import os

import numpy as np
import pytest
import h5py

import fz_samples
from conftest import assert_same, check_chunks_filtered, fz_kwargs

pytestmark = pytest.mark.usefixtures("plugin")

# chunk shapes chosen so most fields have ragged edge chunks
CHUNKS = {
    "vorticity.128_128_41": (16, 64, 64),
    "vorticity.512_512": (128, 200),
    "wmag91.float": (32, 32, 32),
    "999x999.float": (256, 256),
    "const32x32x59.float": (59, 32, 32),
    "pressure.384_384.f64": (100, 384),
}


def test_all_fields_present(data_dir):
    missing = [f for f, _, _ in fz_samples.REAL_FIELDS if not os.path.isfile(os.path.join(data_dir, f))]
    assert not missing, "missing real fields in %s: %s" % (data_dir, missing)


@pytest.mark.parametrize("name", [f for f, _, _ in fz_samples.REAL_FIELDS])
def test_real_field_lossless(tmp_path, data_dir, name):
    arr = fz_samples.load_real(name)
    path = tmp_path / "real.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("field", data=arr, chunks=CHUNKS[name], **fz_kwargs())
    with h5py.File(path, "r") as f:
        d = f["field"]
        stored = d.id.get_storage_size()
        nchunks, frame_bytes = check_chunks_filtered(d)
        assert frame_bytes == stored
        assert_same(d[()], arr)
    assert stored < arr.nbytes, "%s: stored %d bytes >= raw %d" % (name, stored, arr.nbytes)
    if name.startswith("const"):
        # two distinct values: lossless must do far better than 2x
        assert stored * 10 < arr.nbytes, stored


def test_real_field_big_endian_copy(tmp_path, data_dir):
    arr = fz_samples.load_real("wmag91.float").astype(">f4")
    path = tmp_path / "be.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("field", data=arr, chunks=(20, 91, 91), **fz_kwargs())
    with h5py.File(path, "r") as f:
        d = f["field"]
        assert d.dtype == np.dtype(">f4")
        check_chunks_filtered(d)
        assert d.id.get_storage_size() < arr.nbytes
        assert_same(d[()], arr)
