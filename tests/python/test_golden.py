"""The HDF5 part of the golden corpus: files written by released versions of
H5Z-FZ (tests/golden/v*/h5/) read back bit-exactly, under every HDF5 version
the suite runs with. Each filtered dataset sits beside `<name>.expected`, an
uncompressed copy written at the same time."""

import glob
import os

import h5py
import pytest

from conftest import REPO, assert_same, check_chunks_filtered

GOLDEN_FILES = sorted(glob.glob(os.path.join(REPO, "tests", "golden", "v*", "h5", "*.h5")))


def test_corpus_exists():
    assert GOLDEN_FILES, "no golden HDF5 files under tests/golden/v*/h5"


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=[os.path.relpath(p, REPO) for p in GOLDEN_FILES])
def test_golden_file_reads_bit_exactly(plugin, path):
    with h5py.File(path, "r") as f:
        names = [n for n in f if not n.endswith(".expected")]
        assert len(names) >= 6
        for name in names:
            dset = f[name]
            n_chunks, stored = check_chunks_filtered(dset)
            assert n_chunks > 0
            assert_same(dset[()], f[name + ".expected"][()])
