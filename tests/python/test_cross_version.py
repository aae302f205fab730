"""Files written under each HDF5 version (2.0 from pip h5py 3.16, 1.14 from the
venv's h5py 3.13, 1.10 from Debian's python3-h5py) read bit-exactly here."""

import numpy as np
import pytest
import h5py

import fz_samples
from conftest import INTERPRETERS, assert_same, check_chunks_filtered, require_interpreter

pytestmark = pytest.mark.usefixtures("plugin")


def test_interpreters_found(interpreters):
    usable = {k: v["hdf5"] for k, v in interpreters.items() if v["hdf5"]}
    assert usable, interpreters
    print("interpreters:", {k: (v["path"], v["hdf5"]) for k, v in interpreters.items()})


@pytest.mark.parametrize("label", [i[0] for i in INTERPRETERS])
def test_read_file_written_by(label, interpreters, sample_files):
    info = require_interpreter(interpreters, label)
    path, log = sample_files[label]
    assert path, "write_sample.py under %s (%s, HDF5 %s) failed:\n%s" % (
        label, info["path"], info["hdf5"], log)
    with h5py.File(path, "r") as f:
        assert f.attrs["hdf5_version"] == info["hdf5"]
        for name, (arr, chunks) in fz_samples.cross_version_arrays().items():
            d = f[name]
            assert d.chunks == chunks
            check_chunks_filtered(d)
            assert_same(d[()], arr)
        name, arr, chunks = fz_samples.cross_version_real()
        d = f[name]
        check_chunks_filtered(d)
        assert d.id.get_storage_size() < arr.nbytes
        assert_same(d[()], arr)
        expect = np.full((64, 64), -1e34, dtype="<f4")
        expect[5:30, 7:40] = fz_samples.smooth((25, 33), "<f4", 9)
        check_chunks_filtered(f["partial"], expect_all=False)
        assert_same(f["partial"][()], expect)


def test_frames_identical_across_versions(interpreters, sample_files):
    """The same data and options give the same frame bytes under every HDF5."""
    frames = {}
    for label, (path, _log) in sample_files.items():
        if not path:
            continue
        with h5py.File(path, "r") as f:
            d = f["wmag91_part"]
            frames[label] = [bytes(d.id.read_direct_chunk(d.id.get_chunk_info(i).chunk_offset)[1])
                             for i in range(d.id.get_num_chunks())]
    if len(frames) < 2:
        pytest.skip("fewer than two interpreters wrote files")
    first = next(iter(frames.values()))
    for label, fr in frames.items():
        assert fr == first, "frames written under %s differ" % label
